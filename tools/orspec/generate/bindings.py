"""The binding between the hand-written runtime and a spec: the classes the runtime works with,
found by their place on the wire rather than by their component names.

The runtime (Python and TypeScript) is written once, for every spec; a spec names its schemas as
it likes (`ResponseResource` here, `Response` in OpenAI's). So the build finds each class by the
role it plays on the wire and writes it into a small module, `openresponses_runtime/bindings.py`
and the npm package's `bindings.{js,d.ts}`, which the hand-written modules import instead of
naming models:

- the response object: the JSON answer of the create operation (`POST /responses`);
- the create request: that operation's JSON request body;
- an output item: the items of the response's `output` array;
- the function tool: the member of the create body's `tools` union tagged `function`;
- the compacted object: the JSON answer of `POST /responses/compact`;
- the `include` values the create body accepts;
- the streaming events the emitter writes, by their `type` values in the event registry.

What the spec lacks is one located warning (`file:line: /pointer: message`) and is left out of the
binding (None in Python, `null` in TypeScript): the package still imports, and the part of the
runtime that needs it says so when used.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..bundle import SourceMap
from ..problems import Level, Problem
from ..schema import Operation, SpecModel, ref_name
from .jsformat import Array, Atom, Object, comment, key, names_list, statement, string
from .normalize import class_names
from .package import PACKAGE
from .pyformat import format_python

PYTHON_OUTPUT = f"{PACKAGE}/bindings.py"
TS_OUTPUTS = ("typescript/bindings.js", "typescript/bindings.d.ts")
JSON_MEDIA = "application/json"
CREATE = ("post", "/responses")
COMPACT = ("post", "/responses/compact")

# The events the emitter writes, by role: the `type` values that spell each, this project's first
# (the reasoning text events are `response.reasoning_text.*` in OpenAI's spec).
EVENT_ROLES: dict[str, tuple[str, ...]] = {
    "created": ("response.created",),
    "in_progress": ("response.in_progress",),
    "completed": ("response.completed",),
    "incomplete": ("response.incomplete",),
    "failed": ("response.failed",),
    "error": ("error",),
    "item_added": ("response.output_item.added",),
    "item_done": ("response.output_item.done",),
    "part_added": ("response.content_part.added",),
    "part_done": ("response.content_part.done",),
    "text_delta": ("response.output_text.delta",),
    "text_done": ("response.output_text.done",),
    "refusal_delta": ("response.refusal.delta",),
    "refusal_done": ("response.refusal.done",),
    "reasoning_delta": ("response.reasoning.delta", "response.reasoning_text.delta"),
    "reasoning_done": ("response.reasoning.done", "response.reasoning_text.done"),
    "summary_part_added": ("response.reasoning_summary_part.added",),
    "summary_part_done": ("response.reasoning_summary_part.done",),
    "summary_delta": ("response.reasoning_summary_text.delta",),
    "summary_done": ("response.reasoning_summary_text.done",),
    "arguments_delta": ("response.function_call_arguments.delta",),
    "arguments_done": ("response.function_call_arguments.done",),
}


@dataclass(frozen=True)
class Bindings:
    """Each role's component schema (None where the spec has none) and what the spec lacks."""

    response: str | None
    create_body: str | None
    output_item: str | None
    function_tool: str | None
    compact: str | None
    include: tuple[str, ...]
    events: dict[str, str]  # role -> the `type` value the spec gives it
    usage_details: dict[str, dict[str, int]]  # the usage's detail objects: the counts each requires, as 0
    problems: tuple[Problem, ...]


def operation(model: SpecModel, method: str, path: str) -> Operation | None:
    """The operation at `method` and `path` (a path template under the servers' base path)."""
    return next((op for op in model.operations if (op.method, op.path) == (method, path)), None)


def json_answer(op: Operation) -> str | None:
    """The component schema of an operation's first 2xx JSON answer."""
    for response in op.responses:
        node = response.content.get(JSON_MEDIA)
        if response.status.startswith("2") and isinstance(node, dict) and (name := ref_name(node.get("$ref"))):
            return name
    return None


def bind(model: SpecModel, sources: SourceMap) -> Bindings:
    """Find every role in `model`; one warning for each the spec does not fill."""
    problems: list[Problem] = []

    def lacks(pointer: str, message: str) -> None:
        problems.append(sources.problem(pointer, message, level=Level.WARNING))

    create = operation(model, *CREATE)
    response = body = item = tool = None
    include: tuple[str, ...] = ()
    if create is None:
        lacks("/paths", "no `POST /responses` operation: the runtime cannot serve or call create")
    else:
        response = json_answer(create)
        if response is None:
            lacks(
                f"{create.pointer}/responses",
                "create answers no JSON object by reference: the runtime has no response model",
            )
        body = next((n for m, n in _request_names(create) if m == JSON_MEDIA), None)
        if body is None:
            lacks(
                f"{create.pointer}/requestBody",
                "create takes no JSON body by reference: the runtime has no request model",
            )
    if response is not None:
        item = _item_name(model, _property(model, model.schemas[response].node, "output"))
        if item is None:
            lacks(
                _schema_pointer(response),
                "the response's `output` holds no named item schema: output items go unchecked",
            )
    if body is not None:
        node = model.schemas[body].node
        tool = _member_tagged(model, _item_name(model, _property(model, node, "tools")), "function")
        if tool is None:
            lacks(
                _schema_pointer(body),
                "the create body's `tools` has no member tagged `function`: tools are not checked",
            )
        include = _enum_values(model, _property(model, node, "include"))
    compact_op = operation(model, *COMPACT)
    compact = json_answer(compact_op) if compact_op else None
    registry = {event.type for event in model.events if event.schema.isidentifier()}
    events = {
        role: found for role, types in EVENT_ROLES.items() if (found := next((t for t in types if t in registry), None))
    }
    absent = [types[0] for role, types in EVENT_ROLES.items() if role not in events]
    if absent and create is not None:
        where = model.event_union.pointer if model.event_union else create.pointer
        shown = ", ".join(absent[:4]) + (f" and {len(absent) - 4} more" if len(absent) > 4 else "")
        lacks(where, f"the streaming events lack {shown}: the server cannot stream what needs them")
    details = _usage_details(model, model.schemas[response].node) if response else {}
    return Bindings(response, body, item, tool, compact, include, events, details, tuple(problems))


def _usage_details(model: SpecModel, response: Any) -> dict[str, dict[str, int]]:
    """The integer counts each detail object of the response's `usage` requires (OpenAI's
    `input_tokens_details` requires `cache_write_tokens` too), each 0 until a provider reports it."""
    usage = _non_null(model, _property(model, response, "usage"))
    out = {}
    for name, node in object_fields(model, usage)[0].items():
        properties, required = object_fields(model, _non_null(model, node))
        counts = {k: 0 for k, v in properties.items() if k in required and model.deref(v).get("type") == "integer"}
        if counts:
            out[name] = counts
    return out


def _schema_pointer(name: str) -> str:
    return "/components/schemas/" + name.replace("~", "~0").replace("/", "~1")


def _request_names(op: Operation) -> list[tuple[str, str]]:
    return [
        (media, name)
        for media, node in op.request.items()
        if isinstance(node, dict) and (name := ref_name(node.get("$ref")))
    ]


def _property(model: SpecModel, node: Any, name: str, depth: int = 0) -> Any:
    """The schema of property `name` of an object schema, looked for through `allOf` and references."""
    node = model.deref(node)
    if not isinstance(node, dict) or depth > 16:
        return None
    properties = node.get("properties")
    if isinstance(properties, dict) and name in properties:
        return properties[name]
    parts = node.get("allOf") if isinstance(node.get("allOf"), list) else ()
    return next((found for part in parts if (found := _property(model, part, name, depth + 1)) is not None), None)


def object_fields(model: SpecModel, node: Any, depth: int = 0) -> tuple[dict[str, Any], set[str]]:
    """An object schema's properties, in the spec's order, and its required names, through `allOf`
    and references (OpenAI's response object is mostly made of referenced parts)."""
    node = model.deref(node)
    if not isinstance(node, dict) or depth > 16:
        return {}, set()
    own = node.get("properties")
    properties: dict[str, Any] = {str(k): v for k, v in own.items()} if isinstance(own, dict) else {}
    required = {r for r in node.get("required") or () if isinstance(r, str)}
    for part in node.get("allOf") if isinstance(node.get("allOf"), list) else ():
        more, needed = object_fields(model, part, depth + 1)
        properties |= {k: v for k, v in more.items() if k not in properties}
        required |= needed
    return properties, required


def _non_null(model: SpecModel, node: Any) -> Any:
    """A schema node with a nullable wrapper (`anyOf: [X, {type: null}]`) taken off."""
    node = model.deref(node) if isinstance(node, dict) and "$ref" not in node else node
    if isinstance(node, dict):
        for key in ("anyOf", "oneOf"):
            members = [m for m in node.get(key) or () if m != {"type": "null"}]
            if isinstance(node.get(key), list) and len(members) == 1:
                return members[0]
    return node


def _item_name(model: SpecModel, node: Any) -> str | None:
    """The component schema an array property's items refer to, through references and nullability."""
    for _ in range(8):  # a chain of references this long is no array of items
        node = _non_null(model, node)
        if not isinstance(node, dict):
            return None
        if name := ref_name(node.get("$ref")):
            target = model.schemas.get(name)
            if target is None or target.node.get("type") != "array":
                return None
            node = target.node
            continue
        items = node.get("items")
        name = ref_name(items.get("$ref")) if isinstance(items, dict) else None
        return name if name in model.schemas else None
    return None


def _member_tagged(model: SpecModel, union: str | None, tag: str) -> str | None:
    found = model.unions.get(union) if union else None
    return next((m for m in found.members if tag in found.tags.get(m, ())), None) if found else None


def _enum_values(model: SpecModel, node: Any) -> tuple[str, ...]:
    """The string values an array property's items may take, when they are an enum."""
    node = _non_null(model, node)
    node = model.deref(node) if isinstance(node, dict) else None
    items = model.deref(_non_null(model, node.get("items"))) if isinstance(node, dict) else None
    values = items.get("enum") if isinstance(items, dict) else None
    return tuple(v for v in values if isinstance(v, str)) if isinstance(values, list) else ()


def generate_bindings(model: SpecModel, found: Bindings) -> dict[str, bytes]:
    classes = class_names(model.schemas)
    roles = {
        "ResponseObject": (found.response, "the create operation's JSON answer"),
        "CreateBody": (found.create_body, "the create operation's JSON request body"),
        "OutputItem": (found.output_item, "the items of the response's `output`"),
        "FunctionTool": (found.function_tool, "the member of the create body's `tools` tagged `function`"),
        "CompactObject": (found.compact, "the JSON answer of `POST /responses/compact`"),
    }
    bound = {role: (classes[name] if name else None, what) for role, (name, what) in roles.items()}
    missing = [str(replace(p, file=Path(p.file).name)) for p in found.problems]  # the same on every machine
    return {
        PYTHON_OUTPUT: format_python(_python(bound, found, missing), filename="bindings.py").encode(),
        TS_OUTPUTS[0]: _typescript_js(bound, found, missing).encode(),
        TS_OUTPUTS[1]: _typescript_dts(bound).encode(),
    }


def _python(bound: dict[str, tuple[str | None, str]], found: Bindings, missing: list[str]) -> str:
    lines = [
        '"""The spec\'s classes bound to the roles the hand-written runtime gives them, found by their',
        "place on the wire (see `tools/orspec/generate/bindings.py`); a role the spec does not fill is",
        '`None`, and `MISSING` says why, one located line each."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        "from . import models",
        "",
        '__all__ = ["EVENTS", "INCLUDE", "MISSING", "USAGE_DETAILS", ' + ", ".join(f'"{r}"' for r in bound) + "]",
        "",
    ]
    for role, (name, what) in bound.items():
        lines += [f"#: {what}", f"{role}: Any = models.{name}" if name else f"{role}: Any = None", ""]
    lines += [
        "#: The `type` of each event the emitter writes, by role; a role the spec has no event for is absent.",
        f"EVENTS: dict[str, str] = {found.events!r}",
        "",
        "#: The counts each detail object of the response's `usage` requires, 0 until a provider reports them.",
        f"USAGE_DETAILS: dict[str, dict[str, int]] = {found.usage_details!r}",
        "",
        "#: The values the create body's `include` accepts.",
        f"INCLUDE: frozenset[str] = frozenset({found.include!r})",
        "",
        "#: What the spec lacks that the runtime would use, as the build reported it.",
        f"MISSING: tuple[str, ...] = {tuple(missing)!r}",
    ]
    return "\n".join(lines) + "\n"


def _reexports(bound: dict[str, tuple[str | None, str]]) -> list[str]:
    """`export { Model as Role } from "./models.js"`: the zod schema and, in the declarations, its type."""
    names = [f"{name} as {role}" for role, (name, _) in bound.items() if name]
    lines = comment("The zod schemas (and types) of the roles the spec fills; see MISSING for the rest.")
    return [*lines, names_list("export ", names, ' from "./models.js";')] if names else []


def _typescript_js(bound: dict[str, tuple[str | None, str]], found: Bindings, missing: list[str]) -> str:
    out = _reexports(bound)
    for role, (name, what) in bound.items():
        if not name:
            out += ["\n", *comment(f"The spec defines no {what}."), f"export const {role} = null;\n"]
    out += ["\n", *comment("The `type` of each event the emitter writes, by role.")]
    events = Object(tuple((key(role), Atom(string(value))) for role, value in found.events.items()))
    out.append(statement("export const EVENTS = ", events) + "\n\n")
    out += comment("What the spec lacks that the runtime would use, as the build reported it.")
    out.append(statement("export const MISSING = ", Array(tuple(Atom(string(m)) for m in missing))) + "\n")
    return "".join(out)


def _typescript_dts(bound: dict[str, tuple[str | None, str]]) -> str:
    out = _reexports(bound)
    for role, (name, what) in bound.items():
        if not name:
            out += ["\n", *comment(f"The spec defines no {what}.")]
            out.append(f"export declare const {role}: null;\nexport type {role} = Record<string, unknown>;\n")
    out += ["\n", *comment("The `type` of each event the emitter writes, by role.")]
    out.append("export declare const EVENTS: Readonly<Record<string, string>>;\n")
    out += comment("What the spec lacks that the runtime would use, as the build reported it.")
    out.append("export declare const MISSING: readonly string[];\n")
    return "".join(out)
