"""The reference docs: Markdown pages for mkdocs under `generated/docs/`.

The spec is read once into a small model (pages of schema entries, the event catalogue, the HTTP
operations) that the templates in `templates/docs/` render. Every string from the spec is untrusted:
it reaches Markdown only through the filters below (`md_cell` for table cells, `md_text` for prose,
`md_inline` for headings and link text, `anchor` for ids), which escape everything Markdown, HTML,
the `attr_list` extension or a Jinja-templating plugin could interpret. Values built here in Python
that already hold Markdown (types with links, enum lists) are assembled from the same escapers and
are named `*_md`.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from jinja2 import StrictUndefined
from jinja2.sandbox import SandboxedEnvironment

from ..schema import (
    EVENT_STREAM,
    REF_PREFIX,
    ArrayShape,
    LiteralShape,
    MapShape,
    ObjectShape,
    PrimitiveShape,
    RefShape,
    Shape,
    SpecModel,
    TupleShape,
    UnionShape,
    union_of,
)
from .history import History
from .history import badges as badge_steps
from .history import subject as pointer_subject
from .normalize import class_names
from .samples import Sample, samples
from .server import stubs

OUT = "docs"

# Reference pages in the order the spec's README lists the domain files.
DOMAINS: dict[str, tuple[str, str]] = {
    "items": ("Items", "Input item params and output items, told apart by `type` (and `role` for messages)."),
    "content": ("Content", "Content parts of messages and reasoning, annotations and log probabilities."),
    "tools": ("Tools", "Function tools as sent and as echoed, and every form of `tool_choice`."),
    "configuration": ("Configuration", "Request and response settings: text format, reasoning, truncation and more."),
    "responses": ("Responses", "The create-response body, the response resource, usage and compaction."),
    "events": ("Events", "Every streaming event schema and the WebSocket messages."),
    "errors": ("Errors", "The error object of a failed response and the streaming error payload."),
}
OTHER = "other"
_RESERVED = {"index", "http-api", "event-catalogue"}  # pages that are not schema pages (nor `http-*`)

# --------------------------------------------------------------------------------------------------
# Escaping: the only way spec text reaches the page.

_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_CHARS = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "|": "&#124;",
    "{": "&#123;",
    "}": "&#125;",
    "`": "&#96;",
    "~": "&#126;",
    "\\": "\\\\",
    "*": "\\*",
    "_": "\\_",
    "[": "\\[",
    "]": "\\]",
    "#": "\\#",
}
_TABLE = str.maketrans(_CHARS)
# What would open a block (list, admonition, ordered list) at the start of a paragraph.
_BLOCK_START = re.compile(r"^(\d*)([-+!.)])")


def _escape_plain(text: str) -> str:
    """Every character Markdown, HTML, attr_list or Jinja could act on, made literal."""
    return text.translate(_TABLE)


def _escape_inline(text: str) -> str:
    """One line of spec text: balanced backtick spans become `<code>`, everything else literal."""
    out, pos = [], 0
    for match in _CODE_SPAN.finditer(text):
        out.append(_escape_plain(text[pos : match.start()]))
        out.append(f"<code>{_escape_plain(match.group(1))}</code>")
        pos = match.end()
    out.append(_escape_plain(text[pos:]))
    return "".join(out)


def _lines(value: Any) -> list[str]:
    text = "" if value is None else str(value)
    return [" ".join(line.split()) for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]


def md_inline(value: Any) -> str:
    """A single line (headings, link text): newlines become spaces."""
    return _escape_inline(" ".join(_lines(value)).strip())


def md_cell(value: Any) -> str:
    """A Markdown table cell: no raw `|`, newlines as `<br>`, nothing interpreted."""
    lines = _lines(value)
    while lines and not lines[-1]:
        lines.pop()
    return "<br>".join(_escape_inline(line) for line in lines)


def md_text(value: Any) -> str:
    """Prose: paragraphs kept (blank lines), lines within a paragraph joined, nothing interpreted."""
    paragraphs, current = [], []
    for line in _lines(value):
        if line:
            current.append(line)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(_BLOCK_START.sub(r"\1\\\2", _escape_inline(p)) for p in paragraphs)


def anchor(value: Any) -> str:
    """An HTML id safe for `attr_list` and URLs."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", str(value)) or "-"


def attr(value: Any) -> str:
    """Text for a double-quoted attribute of a raw HTML block: HTML-escaped, on one line, and with no
    brace left for a Jinja-templating plugin (Markdown leaves raw HTML blocks alone)."""
    text = html.escape(str(value), quote=True)
    return text.replace("{", "&#123;").replace("}", "&#125;").replace("\r", "").replace("\n", "&#10;")


def tooltip(value: Any) -> str:
    """Plain text for a `title` in a Markdown line: Markdown would render backticks inside the
    attribute as HTML, and a browser shows an escaped double quote there as written."""
    return attr(str(value).replace("`", "").replace('"', "'"))


def fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in `text`, so that nothing in it closes it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def code(value: Any) -> str:
    """A literal value shown as code, e.g. a default or an enum value."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return f"<code>{md_inline(text) or '&#160;'}</code>"


# --------------------------------------------------------------------------------------------------
# The model the templates read.


@dataclass
class Field:
    name: str
    type_md: str
    required: bool
    nullable: bool
    default_md: str
    values_md: str
    description: str
    disallowed: bool = False
    added_in: str = ""
    vendor: str = ""
    history: list[Any] = field(default_factory=list)  # history.Step, oldest first


@dataclass
class Variant:
    schema_md: str
    tags_md: str


@dataclass
class Entry:
    name: str
    anchor: str
    page: str
    description: str
    kind: str  # object | enum | union | value
    fields: list[Field] = field(default_factory=list)
    values: list[tuple[str, str]] = field(default_factory=list)  # (code markdown, description)
    variants: list[Variant] = field(default_factory=list)
    discriminator: str = ""
    extends_md: str = ""
    type_md: str = ""
    added_in: str = ""
    vendor: str = ""
    example: str = ""
    history: list[Any] = field(default_factory=list)
    names_md: str = ""  # its names in the generated Python and TypeScript packages


@dataclass
class Page:
    slug: str
    title: str
    intro: str
    entries: list[Entry]


@dataclass
class Event:
    type: str
    anchor: str
    schema: str
    link_md: str
    description: str
    fields: list[Field]
    category: str
    history: list[Any] = field(default_factory=list)
    added_in: str = ""  # the badges' fields; an event's history is its schema's
    vendor: str = ""


@dataclass
class Operation:
    method: str
    path: str
    operation_id: str
    summary: str
    description: str
    requests: list[tuple[str, str]]  # (media type, type markdown)
    responses: list[tuple[str, str, str, str]]  # (status, description, media type, type markdown)
    added_in: str
    vendor: str = ""
    parameters: list[tuple[str, str, str, bool, str]] = field(
        default_factory=list
    )  # name, in, type, required, description
    example: str = ""  # the JSON request body the console starts from, "" for an operation without one
    history: list[Any] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)  # from the spec's examples of its request body
    console: str = ""  # JSON for the console's fields: the parameters, the models of the examples
    response_example: tuple[str, str] | None = None  # (status, JSON) of its first JSON success answer
    stub: str = ""  # the provider method that implements it, when the runtime leaves it to the provider


@dataclass
class OperationGroup:
    """The operations one source adds, on a page of their own: the core's on `http-api`, a fragment's
    on `http-<fragment>`."""

    slug: str
    title: str
    vendor: str  # "" for the core
    fragment: str  # the fragment's file stem, "" for the core
    operations: list[Operation]


@dataclass
class WebSocket:
    path: str
    description: str
    client_md: str
    error_md: str


@dataclass
class Diagram:
    name: str
    description: str
    mermaid: str  # a stateDiagram-v2, built only from sanitised identifiers


def _mermaid_id(value: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", str(value)) or "_"


def _mermaid_label(value: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_.:-]", "_", str(value))


def lifecycle_diagrams(machines: Any) -> list[Diagram]:
    """One state diagram per machine of `spec/state-machines.yaml` (the parsed StateMachines)."""
    out = []
    for name, machine in (getattr(machines, "machines", None) or {}).items():
        lines = ["stateDiagram-v2"]
        mentioned: set[str] = set()
        for t in getattr(machine, "transitions", ()):
            target = _mermaid_id(t.target)
            for source in t.sources if t.sources is not None else ("[*]",):
                src = source if source == "[*]" else _mermaid_id(source)
                lines.append(f"    {src} --> {target} : {_mermaid_label(t.on)}")
                mentioned |= {src, target}
        for state in getattr(machine, "terminal", ()):
            lines.append(f"    {_mermaid_id(state)} --> [*]")
            mentioned.add(_mermaid_id(state))
        lines += [f"    {_mermaid_id(s)}" for s in getattr(machine, "states", {}) if _mermaid_id(s) not in mentioned]
        out.append(Diagram(str(name), str(getattr(machine, "description", "") or ""), "\n".join(lines)))
    return out


# Catalogue sections by the category `spec/state-machines.yaml` gives each event (the registry's
# `EVENT_TYPES[...].category`); the file's own description of a category is the section's intro.
EVENT_CATEGORIES = {
    "lifecycle": ("Lifecycle events", "Events that move the response, an item, a content part or a summary part."),
    "delta": ("Deltas and done events", "Stream content into an open part, then give its final value."),
    "error": ("Errors", "A failure during streaming; `response.failed` follows when the response cannot continue."),
    "custom": ("Vendor events", "Events of vendor extensions, named `<vendor>:<name>`."),
    OTHER: ("Other events", "Events the spec's state machines do not place."),
}


# --------------------------------------------------------------------------------------------------
# Reading the spec.


def _name_domain(name: str) -> str:
    """Where a schema belongs when the spec is one file (e.g. an upstream release)."""
    rules = (
        ("events", r"Event$|^WebSocket"),
        ("errors", r"^Error"),
        ("content", r"Content|Annotation|LogProb|Citation|Detail(Enum)?$"),
        ("tools", r"Tool|SpecificFunction|EmptyModel"),
        ("items", r"Item|Message|FunctionCall|ReasoningBody|CompactionBody"),
        ("responses", r"Response(Resource|Body)|Usage|TokensDetails|IncompleteDetails|Compact"),
        ("configuration", r"Enum$|Param$|Format|TextField|^Reasoning$"),
    )
    for domain, pattern in rules:
        if re.search(pattern, name):
            return domain
    return OTHER


def schema_domain(name: str, sources: Any, root_file: Path | None) -> str:
    """The stem of the file a schema is written in; a name heuristic for schemas in the root file."""
    if sources is not None:
        file, _ = sources.locate(f"{REF_PREFIX[1:]}{name.replace('~', '~0').replace('/', '~1')}")
        if file and (root_file is None or PurePath(file).name != root_file.name):
            slug = anchor(PurePath(file).stem.lower())
            return f"{slug}-schemas" if slug in _RESERVED or slug.startswith("http-") else slug
    return _name_domain(name)


_JSON_KINDS = {str: "string", bool: "boolean", int: "integer", float: "number"}


class _Reader:
    def __init__(self, model: SpecModel, domains: dict[str, str]):
        self.model = model
        self.document = model.document
        self.domains = domains

    # -- types --------------------------------------------------------------------------------------

    def deref(self, schema: Any) -> dict:
        target = self.model.deref(schema)
        return target if isinstance(target, dict) and "$ref" not in target else {}

    def link(self, name: str, page: str) -> str:
        target = self.domains.get(name)
        if target is None:
            return md_inline(name)
        where = "" if target == page else f"{target}.md"
        return f"[{md_inline(name)}]({where}#{anchor(name)})"

    def _split_null(self, schema: dict) -> tuple[list[Any], bool]:
        """The non-null alternatives of a schema, and whether null is allowed."""
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                rest = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
                if len(rest) < len(options):
                    return rest, True
        types = schema.get("type")
        if isinstance(types, list) and "null" in types:
            return [{**schema, "type": [t for t in types if t != "null"]}], True
        if "enum" in schema and None in (schema.get("enum") or []):
            return [schema], True
        return [schema], False

    def type_md(self, schema: Any, page: str) -> str:
        """The type of a schema node, from its shape (`schema.shape_of`), as the client and TypeScript read it."""
        return self.shape_md(self.model.shape(schema), page)

    def shape_md(self, shape: Shape, page: str) -> str:
        text = self._shape_md(shape, page)
        return f"{text} or null" if shape.nullable and text != "null" else text

    def _shape_md(self, shape: Shape, page: str) -> str:
        if isinstance(shape, RefShape):
            return self.link(shape.name, page)
        if isinstance(shape, LiteralShape):  # its values are listed beside it (`values_md`): their JSON types
            return " or ".join(dict.fromkeys(_JSON_KINDS[type(v)] for v in shape.values))
        if isinstance(shape, ArrayShape):
            return f"array of {self.shape_md(shape.items, page)}"
        if isinstance(shape, TupleShape):
            items = ", ".join(self.shape_md(s, page) for s in shape.prefix)
            more = f", then any number of {self.shape_md(shape.rest, page)}" if shape.rest is not None else ""
            return f"array of {items}{more}"
        if isinstance(shape, MapShape):
            any_value = isinstance(shape.values, PrimitiveShape) and shape.values.kind == "any"
            return "object" if any_value and not shape.nullable else f"map of {self.shape_md(shape.values, page)}"
        if isinstance(shape, ObjectShape):
            return "object"
        if isinstance(shape, UnionShape):
            return " or ".join(dict.fromkeys(self.shape_md(m, page) for m in shape.members))
        assert isinstance(shape, PrimitiveShape)
        if shape.kind in ("any", "never"):
            return shape.kind
        found = dict(shape.constraints).get("format")
        return md_inline(shape.kind) + (f" ({md_inline(found)})" if isinstance(found, str) else "")

    def description(self, schema: Any) -> str:
        """The schema's own description, else the one on its single non-null alternative."""
        if not isinstance(schema, dict):
            return ""
        if isinstance(schema.get("description"), str):
            return schema["description"]
        options, _ = self._split_null(schema)
        for option in options:
            if isinstance(option, dict) and option is not schema:
                text = self.description(option) if "$ref" not in option else option.get("description")
                if isinstance(text, str) and text:
                    return text
        return ""

    def values_md(self, schema: Any, *, describe: bool) -> str:
        """Enum values of a field (inline or through a reference), with their descriptions if asked."""
        options, _ = self._split_null(schema) if isinstance(schema, dict) else ([], False)
        for option in options:
            if not isinstance(option, dict):
                continue
            target = self.deref(option) if "$ref" in option else option
            if "$ref" not in option and not ("enum" in option or "const" in option):
                nested, _ = self._split_null(option)
                if len(nested) == 1 and nested[0] is not option:
                    return self.values_md(nested[0], describe=describe)
            values = target.get("enum") if isinstance(target.get("enum"), list) else None
            if values is None and "const" in target:
                values = [target["const"]]
            if values is None:
                continue
            notes = target.get("x-enumDescriptions") if describe and "$ref" not in option else None
            notes = notes if isinstance(notes, dict) else {}
            shown = []
            for value in values:
                if value is None:
                    continue
                note = notes.get(value) if isinstance(value, str) else None
                shown.append(f"{code(value)}: {md_cell(note)}" if note else code(value))
            return "<br>".join(shown)
        return ""

    # -- schema entries -----------------------------------------------------------------------------

    def fields(self, schema: dict, page: str, owner: str = "") -> list[Field]:
        props = schema.get("properties")
        born = self.model.schemas[owner].property_added_in if owner in self.model.schemas else {}
        if not isinstance(props, dict):
            return []
        listed = schema.get("required") if isinstance(schema.get("required"), list) else []
        required = {name for name in listed if isinstance(name, str)}
        out = []
        for name, prop in props.items():
            prop = prop if isinstance(prop, dict) else {}
            shape = self.model.shape(prop)
            default = prop.get("default")
            if default is None:
                options, _ = self._split_null(prop)
                default = next((o.get("default") for o in options if isinstance(o, dict) and "default" in o), None)
            out.append(
                Field(
                    name=str(name),
                    type_md=self.shape_md(shape, page),
                    required=name in required,
                    nullable=shape.nullable or (isinstance(shape, PrimitiveShape) and shape.kind == "null"),
                    default_md=code(default) if default is not None else "",
                    values_md=self.values_md(prop, describe=True),
                    description=self.description(prop),
                    disallowed=prop.get("x-openresponses-disallowed") is True,
                    added_in=born.get(str(name), ""),
                    vendor=str(prop.get("x-openresponses-vendor") or ""),
                )
            )
        return out

    def tags(self, schema: Any, prop: str) -> list[Any]:
        return self.model.tags(schema, prop)

    def variants(self, options: list[Any], discriminator: str, page: str) -> list[Variant]:
        tagged = [(o, self.tags(o, discriminator)) for o in options]
        counts: dict[str, int] = {}
        for _, values in tagged:
            for value in values:
                counts[json.dumps(value)] = counts.get(json.dumps(value), 0) + 1
        out = []
        for option, values in tagged:
            parts = [code(v) for v in values]
            if any(counts[json.dumps(v)] > 1 for v in values):
                # Several variants share the tag (messages all say `type: "message"`): show what else differs.
                target = self.deref(option)
                for prop in (target.get("properties") or {}) if isinstance(target.get("properties"), dict) else ():
                    if prop != discriminator:
                        extra = self.tags(option, prop)
                        if len(extra) == 1:
                            parts.append(f"{md_inline(prop)} {code(extra[0])}")
            out.append(Variant(self.type_md(option, page), ", ".join(parts)))
        return out

    def entry(self, name: str, schema: Any, page: str) -> Entry:
        schema = schema if isinstance(schema, dict) else {}
        entry = Entry(
            name=name,
            anchor=anchor(name),
            page=page,
            description=self.description(schema) if "$ref" not in schema else str(schema.get("description") or ""),
            kind="value",
            added_in=self.model.schemas[name].added_in if name in self.model.schemas else "",
            vendor=str(schema.get("x-openresponses-vendor") or ""),
        )
        parts = [schema]
        if isinstance(schema.get("allOf"), list):
            parts = [p for p in schema["allOf"] if isinstance(p, dict)]
            bases = [p for p in parts if "$ref" in p]
            entry.extends_md = ", ".join(self.type_md(b, page) for b in bases)
            parts = [p for p in parts if "$ref" not in p]
        fields = [f for part in parts for f in self.fields(part, page, name)]
        union = next((schema[k] for k in ("oneOf", "anyOf") if isinstance(schema.get(k), list)), None)
        if fields or entry.extends_md:
            entry.kind = "object"
            entry.fields = fields
        elif isinstance(schema.get("enum"), list):
            entry.kind = "enum"
            notes = schema.get("x-enumDescriptions") if isinstance(schema.get("x-enumDescriptions"), dict) else {}
            entry.values = [(code(v), str(notes.get(v) or "") if isinstance(v, str) else "") for v in schema["enum"]]
        elif union:
            entry.kind = "union"
            disc = schema.get("discriminator") if isinstance(schema.get("discriminator"), dict) else {}
            entry.discriminator = str(disc.get("propertyName") or "type")
            entry.variants = self.variants([o for o in union if isinstance(o, dict)], entry.discriminator, page)
        else:
            entry.type_md = self.type_md(schema, page)
        entry.example = example_json(example_for(self.document, name))
        return entry


# --------------------------------------------------------------------------------------------------
# Examples: deterministic payloads built from the schemas.

_STRINGS = {"date-time": "2026-01-01T00:00:00Z", "uri": "https://example.com/", "email": "user@example.com"}


def example_for(document: dict, name: str) -> Any:
    """An example value of `components/schemas/<name>`: required fields, first variants, first enum values."""
    schemas = (document.get("components") or {}).get("schemas") or {}
    return _example(schemas, {"$ref": REF_PREFIX + name}, (), "")


def example_json(value: Any) -> str:
    """Pretty JSON for a fenced block. With indent=2 a structural `{` is never followed by `{`, `%`
    or `#`, so those pairs only occur inside strings, where `\\u007b` means the same `{`."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return re.sub(r"\{(?=[{%#])", r"\\u007b", text)


def _example(schemas: dict, schema: Any, stack: tuple[str, ...], key: str) -> Any:
    if not isinstance(schema, dict):
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = ref[len(REF_PREFIX) :] if ref.startswith(REF_PREFIX) else ""
        if target not in schemas or stack.count(target) >= 1 or len(stack) > 8:
            return None
        return _example(schemas, schemas[target], (*stack, target), key)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return next((v for v in schema["enum"] if v is not None), None)
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    if isinstance(schema.get("allOf"), list):
        merged: dict = {}
        for part in schema["allOf"]:
            value = _example(schemas, part, stack, key)
            if isinstance(value, dict):
                merged.update(value)
        return merged
    for union in ("oneOf", "anyOf"):
        options = schema.get(union)
        if isinstance(options, list) and options:
            concrete = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
            for option in concrete or options:
                value = _example(schemas, option, stack, key)
                if value is not None or option is (concrete or options)[-1]:
                    return value
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and isinstance(schema.get("properties"), dict)):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = schema.get("required") if isinstance(schema.get("required"), list) else []
        out = {}
        for prop, sub in props.items():
            if prop in required and not (isinstance(sub, dict) and sub.get("x-openresponses-disallowed")):
                out[prop] = _example(schemas, sub, stack, prop)
        extra = schema.get("additionalProperties")
        if not props and isinstance(extra, dict):
            out["key"] = _example(schemas, extra, stack, "key")
        return out
    if kind == "array":
        if len(stack) > 4 and not schema.get("minItems"):
            return []
        item = _example(schemas, schema.get("items"), stack, key)
        return [] if item is None and not schema.get("minItems") else [item]
    if kind == "string":
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _STRINGS:
            return _STRINGS[fmt]
        text = re.sub(r"[^a-z0-9_]", "_", key.lower()) or "text"
        if key == "id" or key.endswith("_id"):
            text = f"{key}_123"
        lo, hi = schema.get("minLength"), schema.get("maxLength")
        if isinstance(hi, int):
            text = text[:hi]
        if isinstance(lo, int) and len(text) < lo:
            text = text + "x" * (lo - len(text))
        return text
    if kind in ("integer", "number"):
        value = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = value if isinstance(value, int | float) and not isinstance(value, bool) else 0
        if "exclusiveMinimum" in schema:
            value += 1
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return None


# --------------------------------------------------------------------------------------------------
# Events and HTTP operations.


def operations(reader: _Reader, fallback: dict | None = None) -> tuple[list[Operation], list[WebSocket]]:
    """The operations and WebSocket modes; an operation whose request body has no example in this
    document starts its console and its samples from the ones `fallback` (another version's
    document) gives it."""
    ops, sockets = [], []
    websockets = {op.path for op in reader.model.operations if op.websocket is not None}
    stubbed = {(route.method, route.spec_path): route.implement for route in stubs(reader.model)}
    for op in reader.model.operations:
        ws = op.websocket
        if ws is not None:
            sockets.append(
                WebSocket(
                    op.path,
                    str(ws.get("description") or ""),
                    reader.type_md(ws.get("clientMessage"), "http-api") if ws.get("clientMessage") else "",
                    reader.type_md(ws.get("errorMessage"), "http-api") if ws.get("errorMessage") else "",
                )
            )
        requests = [(media, reader.type_md(schema, "http-api")) for media, schema in op.request.items()]
        responses = []
        for response in op.responses:
            for media, schema in response.content.items() or [("", None)]:
                shown = _stream_type(reader, schema) if media == EVENT_STREAM else None
                responses.append(
                    (
                        response.status,
                        response.description,
                        media,
                        shown or (reader.type_md(schema, "http-api") if schema else ""),
                    )
                )
        parameters = [
            (p.name, p.location, reader.type_md(p.schema, "http-api"), p.required, p.description) for p in op.parameters
        ]
        media = _media(reader.document, op.path, op.method, "application/json")
        if not request_examples(media) and fallback:
            media = {
                **media,
                **{
                    k: v
                    for k, v in _media(fallback, op.path, op.method, "application/json").items()
                    if k in ("example", "examples")
                },
            }  # the samples too: a release's reader runs the same calls
        example = next(
            (request_example(reader, s, media) for m, s in op.request.items() if m == "application/json"), None
        )
        ops.append(
            Operation(
                op.method.upper(),
                op.path,
                op.operation_id,
                op.summary,
                op.description,
                requests,
                responses,
                op.added_in,
                op.vendor,
                parameters,
                "" if example is None else json.dumps(example, indent=2, ensure_ascii=False),
                samples=samples(
                    op.operation_id,
                    op.method,
                    op.path,
                    request_examples(media) if op.request else [("", "", None)],
                    [p.name for p in op.parameters if p.location == "path"],
                ),
                console=console_fields(
                    reader, op.parameters, request_examples(media), op.method == "post" and op.path in websockets
                ),
                response_example=response_example(reader, op),
                stub=stubbed.get((op.method.upper(), op.path)) or "",
            )
        )
    return ops, sockets


def response_example(reader: _Reader, op: Any) -> tuple[str, str] | None:
    """(status, JSON) of the operation's first success with a JSON body: the spec's example of it,
    else one built from its schema."""
    for response in op.responses:
        schema = response.content.get("application/json")
        if response.status.startswith("2") and schema is not None:
            node: Any = (reader.document.get("paths") or {}).get(op.path) or {}
            for key in (op.method.lower(), "responses", response.status, "content", "application/json"):
                node = node.get(key) if isinstance(node, dict) else None
            media = node if isinstance(node, dict) else {}
            return response.status, example_json(request_example(reader, schema, media))
    return None


def console_fields(
    reader: _Reader, parameters: Any, examples: list[tuple[str, str, Any]], websocket: bool = False
) -> str:
    """What the console offers beside the body, as JSON: a field per path, query and header
    parameter (its choices when its schema lists them), the models the spec's examples name, and
    whether the operation runs over WebSocket too."""
    fields = []
    for p in parameters:
        if p.location not in ("path", "query", "header"):
            continue
        schema = reader.deref(p.schema) if isinstance(p.schema, dict) else {}
        items = reader.deref(schema.get("items")) if isinstance(schema.get("items"), dict) else {}
        choices = (
            schema.get("enum") or items.get("enum") or (["true", "false"] if schema.get("type") == "boolean" else [])
        )
        field_ = {"name": p.name, "in": p.location, "required": p.required, "list": schema.get("type") == "array"}
        if choices:
            field_["choices"] = [str(c).lower() if isinstance(c, bool) else str(c) for c in choices]
        if "default" in schema:
            field_["default"] = (
                json.dumps(schema["default"]) if not isinstance(schema["default"], str) else schema["default"]
            )
        fields.append(field_)
    models = sorted({v["model"] for _, _, v in examples if isinstance(v, dict) and isinstance(v.get("model"), str)})
    shown = {"parameters": fields, "models": models, "websocket": websocket}
    return json.dumps(shown, separators=(",", ":"), ensure_ascii=False)


def _media(document: dict, path: str, method: str, media: str) -> dict:
    """The request body's media type object of an operation ({} if it has none)."""
    node: Any = document.get("paths") or {}
    for key in (path, method.lower(), "requestBody", "content", media):
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def request_examples(media: dict) -> list[tuple[str, str, Any]]:
    """The spec's named examples of a request body: (name, summary, value)."""
    named = media.get("examples") if isinstance(media.get("examples"), dict) else {}
    out = [
        (str(name), str(ex.get("summary") or ""), ex["value"])
        for name, ex in named.items()
        if isinstance(ex, dict) and "value" in ex
    ]
    if not out and "example" in media:
        out.append(("example", "", media["example"]))
    return out


def request_example(reader: _Reader, schema: Any, media: dict | None = None) -> Any:
    """The spec's (first) example of a request body, else one built from its schema (see `example_for`)."""
    given = request_examples(media or {})
    if given:
        return given[0][2]
    for node in (schema, reader.deref(schema)):
        if isinstance(node, dict):
            if "example" in node:
                return node["example"]
            if isinstance(node.get("examples"), list) and node["examples"]:
                return node["examples"][0]
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if isinstance(ref, str) and ref.startswith(REF_PREFIX):
        return example_for(reader.document, ref[len(REF_PREFIX) :])
    return _example({}, schema, (), "")


def operation_groups(
    model: SpecModel, ops: list[Operation], sources: Any, titles: dict[str, str]
) -> list[OperationGroup]:
    """The core's operations first, then each fragment's, in the order of their files."""
    groups: dict[str, OperationGroup] = {}
    for spec_op, op in zip(model.operations, ops, strict=True):
        stem = Path(sources.locate(spec_op.pointer)[0]).stem if spec_op.vendor and sources is not None else ""
        if spec_op.vendor and not stem:
            stem = spec_op.vendor
        if stem not in groups:
            slug = f"http-{anchor(stem)}" if stem else "http-api"
            title = f"HTTP API: {titles.get(stem) or stem}" if stem else "HTTP API"
            groups[stem] = OperationGroup(slug, title, spec_op.vendor, stem, [])
        groups[stem].operations.append(op)
    core = groups.pop("", None)
    return ([core] if core else []) + [groups[k] for k in sorted(groups)]


def _stream_type(reader: _Reader, schema: Any) -> str | None:
    found = union_of(reader.model.deref(schema))
    if found is not None:
        return f"one of {len(found[1])} [streaming events](event-catalogue.md)"
    return None


def security(document: dict) -> list[tuple[str, str]]:
    schemes = ((document.get("components") or {}).get("securitySchemes")) or {}
    out = []
    for name, scheme in schemes.items() if isinstance(schemes, dict) else ():
        scheme = scheme if isinstance(scheme, dict) else {}
        kind = " ".join(str(scheme.get(k)) for k in ("type", "scheme", "in", "name") if scheme.get(k))
        out.append((f"{name}: {kind}", str(scheme.get("description") or "")))
    return out


# --------------------------------------------------------------------------------------------------
# Rendering.


def environment(templates: Path) -> SandboxedEnvironment:
    from jinja2 import FileSystemLoader

    env = SandboxedEnvironment(
        loader=FileSystemLoader(str(templates)),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # output is Markdown; spec strings go through the filters below
    )
    env.filters.update(
        md_cell=md_cell,
        md_text=md_text,
        md_inline=md_inline,
        anchor=anchor,
        code=code,
        attr=attr,
        tooltip=tooltip,
        badge_steps=badge_steps,
        fence=fence,
    )
    return env


def reference_pages(
    model: SpecModel, sources: Any = None, root_file: Path | None = None, titles: dict[str, str] | None = None
) -> list[Page]:
    schemas = model.schemas
    domains = {name: schema_domain(name, sources, root_file) for name in schemas}
    reader = _Reader(model, domains)
    order = list(DOMAINS) + sorted({d for d in domains.values() if d not in DOMAINS})
    pages = []
    for slug in order:
        names = [n for n in schemas if domains[n] == slug]
        if not names:
            continue
        title, intro = DOMAINS.get(slug, (slug.replace("-", " ").replace("_", " ").capitalize(), ""))
        if slug == OTHER:
            title, intro = "Other schemas", "Schemas that belong to none of the core domains."
        elif slug not in DOMAINS and (titles or {}).get(slug):
            title, intro = str((titles or {})[slug]), f"Schemas from the `{slug}` extension fragment."
        pages.append(Page(slug, title, intro, [reader.entry(n, schemas[n].node, slug) for n in names]))
    return pages


def event_sections(model: SpecModel, reader: _Reader) -> list[tuple[str, str, str, list[Event]]]:
    """The catalogue's sections: (category, title, intro, events), in `EVENT_CATEGORIES` order."""
    events, used = [], set()
    for event in model.events:
        slug = "event-" + anchor(event.type)
        while slug in used:
            slug += "-"
        used.add(slug)
        schema = reader.deref(event.node)
        events.append(
            Event(
                event.type,
                slug,
                event.schema,
                reader.link(event.schema, "event-catalogue"),
                reader.description(schema),
                reader.fields(schema, "event-catalogue", event.schema),
                event.category if event.category in EVENT_CATEGORIES else OTHER,
            )
        )
    stated = model.machines.categories if model.machines else {}
    return [
        (key, title, stated.get(key) or intro, [e for e in events if e.category == key])
        for key, (title, intro) in EVENT_CATEGORIES.items()
        if any(e.category == key for e in events)
    ]


def package_names(cls: str) -> str:
    """Where a schema's model is in the generated packages: one name, the same in both."""
    return (
        f"Python: {code('openresponses_runtime.models.' + cls)} · "
        f"TypeScript: {code(cls)} (the zod schema and its type) from {code('openresponses-runtime/models')}"
    )


def generate_docs(
    model: SpecModel,
    templates: Path,
    sources: Any = None,
    root_file: Path | None = None,
    titles: dict[str, str] | None = None,
    *,
    client_page: bool = True,
    history: History | None = None,
    version: str = "",
    examples_from: dict | None = None,
) -> dict[str, bytes]:
    """`generated/docs/*.md` from the spec's model.

    `sources` (the bundle's source map) and `root_file` put each schema on the page of the file it
    is written in; `titles` names pages by file stem (e.g. vendor fragments by their own title).
    The model's state machines, when the spec has them, give the events their catalogue sections
    and the catalogue its lifecycle diagrams. `client_page`: the reference is the generated packages'
    (a release's is not): the index links the generated client's page, and each schema shows its
    names in the Python and TypeScript packages. `history` puts "added in", "changed in" and "removed in"
    badges on schemas, fields, events and operations, and `version`'s changes on a page of their own.
    `examples_from` (the draft's document, for a release's reference): where the consoles of
    operations without request examples of their own take theirs; and their samples too.
    """
    env = environment(templates)
    document = model.document
    pages = reference_pages(model, sources, root_file, titles or {})
    domains = {e.name: p.slug for p in pages for e in p.entries}
    if client_page:
        classes = class_names(model.schemas)
        for entry in (e for p in pages for e in p.entries if e.name in classes):
            entry.names_md = package_names(classes[entry.name])
    reader = _Reader(model, domains)
    categories = event_sections(model, reader)
    events = [e for _, _, _, section in categories for e in section]
    ops, sockets = operations(reader, examples_from)
    groups = operation_groups(model, ops, sources, titles or {})
    if history is not None:
        _add_history(history, pages, events, ops)
    changes = history.changes.get(version) if history is not None else None
    info = document.get("info") if isinstance(document.get("info"), dict) else {}
    root_security = [next(iter(r), "") for r in document.get("security") or [] if isinstance(r, dict) and r]
    errors = {n: reader.link(n, "http-api") for n in ("Error", "ErrorPayload") if n in model.schemas}

    context = {
        "info": {k: str(info.get(k) or "") for k in ("title", "version", "description")},
        "pages": pages,
        "schema_index": sorted(((e.name, p.slug, e.anchor, p.title) for p in pages for e in p.entries), key=_index_key),
        "categories": categories,
        "events": events,
        "operations": groups[0].operations if groups and not groups[0].vendor else [],
        "groups": groups,
        "websockets": sockets,
        "security": security(document),
        "root_security": [str(s) for s in root_security],
        "errors": errors,
        "diagrams": lifecycle_diagrams(model.machines) if model.machines is not None else [],
        "client_page": client_page,
        "changes_page": changes is not None,
        # The stream rules page (generate/rules.py) is the draft's, beside its index.
        "rules_page": client_page and bool(getattr(model.machines, "rules", None)),
        "servers": [str(s.get("url")) for s in document.get("servers") or [] if isinstance(s, dict) and s.get("url")],
    }
    out = {
        f"{OUT}/index.md": env.get_template("docs/index.md.jinja").render(**context),
        f"{OUT}/http-api.md": env.get_template("docs/http-api.md.jinja").render(**context),
    }
    group_template = env.get_template("docs/http-operations.md.jinja")
    for group in groups:
        if group.vendor:
            out[f"{OUT}/{group.slug}.md"] = group_template.render(group=group, **context)
    if events:
        out[f"{OUT}/event-catalogue.md"] = env.get_template("docs/event-catalogue.md.jinja").render(**context)
    if changes is not None:
        out[f"{OUT}/changes.md"] = env.get_template("docs/changes.md.jinja").render(
            version=version,
            previous=history.previous.get(version, ""),
            client_changes=_changes_for(changes, "clients", domains, _operation_links(groups)),
            server_changes=_changes_for(changes, "servers", domains, _operation_links(groups)),
            **context,
        )
    schema_template = env.get_template("docs/schemas.md.jinja")
    for page in pages:
        out[f"{OUT}/{page.slug}.md"] = schema_template.render(page=page, **context)
    return {path: _tidy(text).encode() for path, text in sorted(out.items())}


def _add_history(history: History, pages: list[Page], events: list[Event], ops: list[Operation]) -> None:
    for page in pages:
        for entry in page.entries:
            entry.history = history.of_schema(entry.name)
            for f in entry.fields:
                f.history = history.of_schema(entry.name, f.name)
    for event in events:
        event.history = history.of_schema(event.schema)
        for f in event.fields:
            f.history = history.of_schema(event.schema, f.name)
    for op in ops:
        op.history = history.of_operation(op.method, op.path)


def _operation_links(groups: list[OperationGroup]) -> dict[str, str]:
    """`METHOD /path` -> where the operation is described (page and anchor)."""
    return {
        f"{op.method} {op.path}": f"{group.slug}.md#op-{anchor(op.operation_id or op.method + op.path)}"
        for group in groups
        for op in group.operations
    }


def _changes_for(
    changes: list[Any], side: str, domains: dict[str, str], operations: dict[str, str]
) -> list[tuple[bool, str, str]]:
    """(breaking for `side`, what it is about as Markdown, the change's message), breaking ones first."""
    rows = []
    for change in changes:
        breaking = change.breaking_for_clients if side == "clients" else change.breaking_for_servers
        subject = subject_md(change.pointer, domains, operations)
        rows.append((breaking, subject, change.message))
    return sorted(rows, key=lambda row: not row[0])


def subject_md(pointer: str, domains: dict[str, str], operations: dict[str, str]) -> str:
    """What a change's pointer names, linked to its entry when this version's reference has it."""
    found = pointer_subject(pointer)
    if found is None:
        return code(pointer)
    (kind, name, prop), _ = found
    if kind == "schema":
        label = f"{name}.{prop}" if prop else name
        shown = f"[{md_inline(label)}]({domains[name]}.md#{anchor(name)})" if name in domains else md_inline(label)
        return shown
    if kind == "operation" and name in operations:
        return f"[{md_inline(name)}]({operations[name]})"
    return code(name)


def _index_key(row: tuple[str, str, str, str]) -> tuple[str, str]:
    return (row[0].lower(), row[0])


def _tidy(text: str) -> str:
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"
