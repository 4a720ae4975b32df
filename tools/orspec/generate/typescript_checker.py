"""The TypeScript package's stream protocol: the tables its stream checker reads.

`typescript/src/streaming/protocol.js` (with its `.d.ts`) holds what the stream checker, the
accumulator and the emitter read from `spec/state-machines.yaml` and the spec's streaming union:
the same tables the Python registry (`generate/registry.py`) writes into `events.py`. The engine
that applies them is hand-written JavaScript beside it in `generated/typescript/`, ordinary source
the build never touches; the pipeline puts the generated header on this module's first line.

Strings from the spec reach JavaScript as JSON string literals, which are JavaScript string
literals. The layout is the one Prettier gives (double quotes, two-space indent, trailing commas),
so `prettier --check` passes on the output.
"""

from __future__ import annotations

import json

from ..project import CORE_STATE_MACHINES
from ..schema import SpecModel
from ..statemachines import load_state_machines
from .registry import protocol, registry_events

TYPESCRIPT = "typescript"
PROTOCOL = f"{TYPESCRIPT}/src/streaming/protocol"
_WIDTH = 80  # Prettier's print width


def _js(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _key(name: str) -> str:
    return name if name.isidentifier() and name.isascii() else _js(name)


def _array(values: list[str] | tuple[str, ...], indent: int, prefix: str, suffix: str) -> str:
    """A string array as Prettier lays it out: on one line if it fits, else one element a line."""
    inline = "[" + ", ".join(_js(v) for v in values) + "]"
    if indent + len(prefix) + len(inline) + len(suffix) <= _WIDTH:
        return inline
    pad = " " * (indent + 2)
    return "[\n" + "".join(f"{pad}{_js(v)},\n" for v in values) + " " * indent + "]"


def _frozen_set(name: str, doc: str, values: list[str]) -> str:
    prefix = f"export const {name} = new Set("
    return f"/** {doc} */\n{prefix}{_array(sorted(values), 0, prefix, ');')});\n"


def _object_lines(entries: list[tuple[str, str]], indent: int) -> str:
    pad = " " * indent
    return "".join(f"{pad}{key}: {value},\n" for key, value in entries)


def _value_line(key: str, value: str, indent: int) -> str:
    """`key: value,` with a long string value broken onto its own line, as Prettier does."""
    line = f"{' ' * indent}{key}: {value},"
    if len(line) <= _WIDTH or not value.startswith('"'):
        return line + "\n"
    return f"{' ' * indent}{key}:\n{' ' * (indent + 2)}{value},\n"


def protocol_module(model: SpecModel) -> str:
    machines = model.machines or load_state_machines(CORE_STATE_MACHINES)[0]
    tables = protocol(machines, model.document) if machines else None
    rules = dict(sorted(model.machines.rules.items())) if model.machines else {}
    pattern = model.machines.custom_pattern.pattern if model.machines and model.machines.custom_pattern else None
    out = [
        "// The stream protocol as data, from spec/state-machines.yaml and the spec's streaming union:",
        "// the tables the stream checker, the accumulator and the emitter read.",
        "",
        "/**",
        " * The protocol's view of every event type of the spec's streaming union, by its `type` value",
        " * (the package's `EVENT_TYPES` is the registry with each type's zod schema).",
        " */",
        "export const EVENT_PROTOCOL = {",
    ]
    for event in registry_events(model):
        out.append(f"  {_key(event.type)}: {{")
        out.append(f"    schema: {_js(event.model)},")
        out.append(f"    category: {_js(event.category)},")
        out.append(f"    appliesTo: {_js(event.applies_to)},")
        if event.requires:
            out.append("    requires: {")
            for machine, states in event.requires:
                prefix = f"{_key(machine)}: "
                out.append(f"      {prefix}{_array(states, 6, prefix, ',')},")
            out.append("    },")
        else:
            out.append("    requires: {},")
        prefix = "fields: "
        out.append(f"    {prefix}{_array(event.fields, 4, prefix, ',')},")
        if event.accumulates:
            field, done, done_field = event.accumulates
            out.append("    accumulates: {")
            out.append(_value_line("field", _js(field), 6).rstrip("\n"))
            out.append(_value_line("done", _js(done), 6).rstrip("\n"))
            out.append(_value_line("doneField", _js(done_field), 6).rstrip("\n"))
            out.append("    },")
        else:
            out.append("    accumulates: null,")
        out.append("  },")
    out.append("};")
    out.append("")
    text = "\n".join(out) + "\n"
    if tables is not None:
        text += _frozen_set(
            "TERMINAL_EVENT_TYPES", "The events that end a response; only `[DONE]` may follow one.", tables.terminal
        )
        text += "\n/** The `response.status` values each response lifecycle event may carry. */\n"
        text += "export const RESPONSE_STATUSES = {\n"
        text += "".join(
            _value_line(_key(kind), _array(statuses, 2, f"{_key(kind)}: ", ","), 2)
            for kind, statuses in tables.response_statuses.items()
        )
        text += "};\n\n"
        text += _frozen_set(
            "ITEM_STATUS_TYPES",
            "The item types that carry a `status`; others finish without one.",
            tables.item_status_types,
        )
        text += "\n" + _frozen_set(
            "OPAQUE_FIELDS",
            "Item fields a server may re-encode between an item's `.done` and the terminal event.",
            tables.opaque_fields,
        )
        text += "\n/** Part types whose text streams: the event that closes the text, and the field holding it. */\n"
        text += "export const TEXT_PARTS = {\n"
        text += _object_lines(
            [
                (_key(part), "{ done: " + _js(done) + ", field: " + _js(field) + " }")
                for part, (done, field) in tables.text_parts.items()
            ],
            2,
        )
        text += "};\n\n"
        text += _frozen_set(
            "WARNING_RULES", "The rules whose findings are warnings rather than errors.", tables.warnings
        )
    text += "\n/** The stream rules of the state machines, by the id the stream checker reports. */\n"
    entries = "".join(_value_line(_key(rule), _js(description), 2) for rule, description in rules.items())
    text += f"export const RULES = {{\n{entries}}};\n\n" if entries else "export const RULES = {};\n\n"
    text += "/** Vendor event types (`<vendor>:<name>`) match this pattern. */\n"
    text += f"export const CUSTOM_EVENT_PATTERN = {_regex(pattern)};\n"
    return text


def _regex(pattern: str | None) -> str:
    if pattern is None:
        return "null"
    return f"new RegExp({_js(pattern)})"


DECLARATIONS = """/** What the protocol says of one event type. */
export interface EventProtocol {
  /** The name of its schema in the spec (and of its model). */
  readonly schema: string;
  readonly category: string | null;
  readonly appliesTo: string | null;
  /** The state each machine must be in for the event to be valid. */
  readonly requires: Readonly<Record<string, readonly string[]>>;
  readonly fields: readonly string[];
  /** The increment it carries, and the `.done` event and field that hold them joined. */
  readonly accumulates: {
    readonly field: string;
    readonly done: string;
    readonly doneField: string;
  } | null;
}

export declare const EVENT_PROTOCOL: Readonly<Record<string, EventProtocol>>;
export declare const TERMINAL_EVENT_TYPES: ReadonlySet<string>;
export declare const RESPONSE_STATUSES: Readonly<
  Record<string, readonly string[]>
>;
export declare const ITEM_STATUS_TYPES: ReadonlySet<string>;
export declare const OPAQUE_FIELDS: ReadonlySet<string>;
export declare const TEXT_PARTS: Readonly<
  Record<string, { readonly done: string; readonly field: string }>
>;
export declare const WARNING_RULES: ReadonlySet<string>;
export declare const RULES: Readonly<Record<string, string>>;
export declare const CUSTOM_EVENT_PATTERN: RegExp | null;
"""


def generate_typescript_checker(model: SpecModel) -> dict[str, bytes]:
    return {
        f"{PROTOCOL}.js": protocol_module(model).encode(),
        f"{PROTOCOL}.d.ts": DECLARATIONS.encode(),
    }
