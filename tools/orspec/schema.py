"""A typed view of the bundled spec, built once by the pipeline and read by every stage.

The bundle is a plain JSON document; this module says once what its parts mean: which component
schemas exist (their properties, required fields, defaults, vendor and release, and the shape of
their values: a small tree of references, unions, arrays, maps, literals and primitives, each
nullable or not, which every language's output renders), which unions
there are (their members, tags and fallbacks), which events the streaming union holds (with their
place in `state-machines.yaml`) and which HTTP operations the spec serves. Stages read the
`SpecModel` instead of walking raw dicts, and share its three helpers: `deref` (one way to follow
a `$ref`), `REF_PREFIX` (one spelling of the component-schema reference) and `union_of` (one way
to find a union's members).

This is the bottom of the toolchain: it imports no orspec module but `pointers`. What it reads of
the state machines and the releases it takes as the small protocols below, which
`statemachines.StateMachines` and `releases.Release` fill; `EventPlace` lives here for that reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Protocol

from jsonpointer import escape, unescape

from .pointers import MISSING, resolve_pointer

REF_PREFIX = "#/components/schemas/"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
EVENT_STREAM = "text/event-stream"
VENDOR = "x-openresponses-vendor"
ADDED_IN = "x-openresponses-added-in"
WEBSOCKET = "x-openresponses-websocket"
EVENT_UNION = "StreamingEvent"  # the name the streaming-event union takes in the models

# Unions that must accept types the spec does not know, and the model that keeps such values whole.
OPEN_UNIONS = {
    "ItemField": "UnknownItem",
    "ItemParam": "UnknownItem",
    "Tool": "UnknownTool",
    "ResponsesToolParam": "UnknownTool",
    EVENT_UNION: "UnknownEvent",
    "Annotation": "UnknownAnnotation",
}


# --------------------------------------------------------------------------------------------------
# The three shared helpers.


def schema_ref(name: str) -> str:
    """The `$ref` that points at component schema `name`."""
    return REF_PREFIX + escape(name)


def ref_name(ref: Any) -> str | None:
    """The component schema a `$ref` names (`#/components/schemas/X` -> `X`), else None."""
    if not isinstance(ref, str) or not ref.startswith(REF_PREFIX) or "/" in ref[len(REF_PREFIX) :]:
        return None
    return unescape(ref[len(REF_PREFIX) :])


def deref(node: Any, doc: dict) -> Any:
    """`node` with local `$ref`s followed to their target; None if one does not resolve.

    A cycle of references stops at the last node before it repeats.
    """
    seen = set()
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"] not in seen:
        seen.add(node["$ref"])
        target = resolve_pointer(doc, node["$ref"][1:]) if node["$ref"].startswith("#") else MISSING
        if target is MISSING:
            return None
        node = target
    return node


def union_of(node: Any) -> tuple[str, list[Any]] | None:
    """The union keyword (`oneOf` or `anyOf`) of a schema object and its members, if it is a union."""
    if not isinstance(node, dict):
        return None
    for key in ("oneOf", "anyOf"):
        if isinstance(node.get(key), list) and node[key]:
            return key, node[key]
    return None


MAX_TAG_DEPTH = 32  # unions nested in unions, followed this deep at most


def _descend(schema: dict, path: frozenset[int]) -> bool:
    """Whether to look into the members of a union met on `path` (the unions being looked into)."""
    return id(schema) not in path and len(path) <= MAX_TAG_DEPTH


def tag_values(schema: Any, prop: str, doc: dict, _path: frozenset[int] = frozenset()) -> list[Any] | None:
    """The fixed values a variant declares for its discriminator property, or None if not fixed.

    `_path` holds the schemas being looked into: a union that contains itself stops at once, where
    following it to the depth limit would take time exponential in its members.
    """
    schema = deref(schema, doc)
    if not isinstance(schema, dict) or not _descend(schema, _path):
        return None
    path = _path | {id(schema)}
    members = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(members, list) and members and not schema.get("properties"):
        # A union whose members all fix the same values (messages by role, say) fixes them too.
        found = [tag_values(m, prop, doc, path) for m in members]
        if all(found) and all(f == found[0] for f in found):
            return found[0]
    for part in schema.get("allOf") if isinstance(schema.get("allOf"), list) else ():
        found = tag_values(part, prop, doc, path)
        if found:
            return found
    properties = schema.get("properties")
    spec = deref(properties.get(prop), doc) if isinstance(properties, dict) and isinstance(prop, str) else None
    if isinstance(spec, dict) and isinstance(spec.get("anyOf"), list):
        # A nullable tag (`anyOf: [{enum: [x]}, {type: null}]`) still fixes its one non-null value.
        members = [deref(m, doc) for m in spec["anyOf"] if m != {"type": "null"}]
        spec = members[0] if len(members) == 1 else None
    if not isinstance(spec, dict):
        return None
    if "const" in spec:
        return [spec["const"]]
    if isinstance(spec.get("enum"), list):
        return spec["enum"]
    return None


def required_keys(schema: Any, doc: dict, _path: frozenset[int] = frozenset()) -> set[str]:
    """Keys every value of `schema` has: its own and its `allOf` parts'; for a union, the keys all
    of its members require."""
    if not isinstance(schema, dict) or not _descend(schema, _path):
        return set()
    path = _path | {id(schema)}
    members = schema.get("oneOf")
    if isinstance(members, list) and members and not schema.get("properties"):
        return set.intersection(*(required_keys(deref(m, doc), doc, path) for m in members))
    required = schema.get("required")
    found = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    for part in _list(schema.get("allOf")):
        found |= required_keys(deref(part, doc), doc, path)
    return found


def property_keys(schema: Any, doc: dict, _path: frozenset[int] = frozenset()) -> set[str]:
    """Keys `schema` defines, itself or in its `allOf` parts; for a union, the keys any of its members defines."""
    if not isinstance(schema, dict) or not _descend(schema, _path):
        return set()
    path = _path | {id(schema)}
    members = schema.get("oneOf")
    if isinstance(members, list) and not schema.get("properties"):
        return set().union(*(property_keys(deref(m, doc), doc, path) for m in members))
    props = schema.get("properties")
    found = set(props) if isinstance(props, dict) else set()
    for part in _list(schema.get("allOf")):
        found |= property_keys(deref(part, doc), doc, path)
    return found


def untagged_rules(typeless: dict[str, Any], doc: dict) -> tuple[str | None, list[tuple[str, str]]]:
    """How to tell apart union members that may omit their tag, given as {tag or name: schema}: (default, rules).

    Several may (item references, and messages, which `role` marks). A member that requires a key
    no other such member even defines is recognised by it, a rule (key, tag); the one member left
    without such a key is the default. (None, []) when that does not single out one default.
    """
    rules, defaults = [], []
    for tag, schema in typeless.items():
        others = set().union(*(property_keys(s, doc) for t, s in typeless.items() if t != tag))
        unique = sorted(required_keys(schema, doc) - others)
        if unique:
            rules.append((unique[0], tag))
        else:
            defaults.append(tag)
    return (defaults[0], rules) if len(defaults) == 1 else (None, [])


def declared_default(node: Any) -> Any:
    """The `default` a property declares, on itself or on its one non-null alternative; MISSING if none."""
    if not isinstance(node, dict):
        return MISSING
    if "default" in node:
        return node["default"]
    found = union_of(node)
    options = [o for o in found[1] if o != {"type": "null"}] if found else []
    for option in options:
        if isinstance(option, dict) and "default" in option:
            return option["default"]
    return MISSING


# --------------------------------------------------------------------------------------------------
# What the model reads of the state machines and the releases.


@dataclass(frozen=True)
class EventPlace:
    """Where one event type sits in the protocol (`state-machines.yaml`)."""

    type: str
    category: str
    applies_to: str
    machine: str | None  # the machine the event moves, if any
    targets: tuple[str, ...]  # the states it moves that machine to
    requires: dict[str, tuple[str, ...]]
    fields: tuple[str, ...]
    accumulates: tuple[str, str, str] | None  # (delta field, done event, done field)
    pointer: str


class Places(Protocol):
    """The state machines, as far as the model asks: the place of an event type."""

    def place(self, event_type: str) -> EventPlace | None: ...


class Dated(Protocol):
    """A frozen release, as far as the model asks: its date and its document."""

    @property
    def date(self) -> str: ...

    @property
    def document(self) -> dict: ...


# --------------------------------------------------------------------------------------------------
# The model.


@dataclass(frozen=True)
class Schema:
    """One component schema."""

    name: str
    node: Any
    properties: dict[str, Any]  # own properties (allOf parts included), by JSON name
    required: tuple[str, ...]
    defaults: dict[str, Any]  # the `default` each property declares, where it declares one
    vendor: str  # the extension fragment it came from, "" for the core
    added_in: str  # the release that introduced it, "" for the first release or unknown
    property_added_in: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Union:
    """A union of named schemas: a component schema that is one, or the streaming-event union."""

    name: str
    pointer: str
    keyword: str  # oneOf | anyOf
    members: tuple[str, ...]  # schema names, in order; inline members are left out
    tags: dict[str, tuple[Any, ...]]  # member -> the `type` values it fixes (empty if none)
    fallback: str | None  # the model that keeps values of types the spec does not know
    added_in: str


@dataclass(frozen=True)
class Event:
    """One event type of the streaming union, with its place in the state machines (if stated)."""

    type: str
    schema: str
    node: dict
    place: EventPlace | None

    @property
    def category(self) -> str | None:
        return self.place.category if self.place else None

    @property
    def lifecycle(self) -> str | None:
        """The machine the event applies to (response, item, content_part, ...)."""
        return self.place.applies_to if self.place else None

    @property
    def accumulates(self) -> tuple[str, str, str] | None:
        return self.place.accumulates if self.place else None


@dataclass(frozen=True)
class Response:
    status: str
    description: str
    content: dict[str, Any]  # media type -> schema node (None when the media type has no schema)


@dataclass(frozen=True)
class Parameter:
    """A path or query parameter of an operation."""

    name: str
    location: str  # path | query | header | cookie
    required: bool
    description: str
    schema: Any


@dataclass(frozen=True)
class Operation:
    """One HTTP operation of `paths`."""

    path: str
    method: str  # lower case, as in the spec
    operation_id: str  # as written; "" when absent
    summary: str
    description: str
    request: dict[str, Any]  # media type -> schema node
    request_required: bool
    responses: tuple[Response, ...]
    websocket: dict | None  # the path's `x-openresponses-websocket` block, on its POST operation
    added_in: str
    pointer: str
    vendor: str = ""  # the extension fragment that added it, "" for the core
    parameters: tuple[Parameter, ...] = ()  # the path's and its own, its own winning

    @property
    def request_schema(self) -> str | None:
        """The component schema of the request body (its first media type that names one)."""
        names = (ref_name(s.get("$ref")) for s in self.request.values() if isinstance(s, dict))
        return next((n for n in names if n), None)

    @property
    def content_types(self) -> tuple[str, ...]:
        return tuple(sorted(self.request))

    @property
    def stream(self) -> tuple[str, Any] | None:
        """(pointer, schema) of the event stream a successful call may answer with, if any."""
        for response in self.responses:
            if response.status.startswith("2") and EVENT_STREAM in response.content:
                at = f"{self.pointer}/responses/{escape(response.status)}/content/{escape(EVENT_STREAM)}/schema"
                return at, response.content[EVENT_STREAM]
        return None

    @property
    def streams(self) -> bool:
        return self.stream is not None


@dataclass
class SpecModel:
    document: dict
    schemas: dict[str, Schema]
    unions: dict[str, Union]
    events: list[Event]
    operations: list[Operation]
    machines: Any = None  # the `Places` given to `build` (a `StateMachines`), for the stages that draw or enforce them

    @cached_property
    def shapes(self) -> dict[str, Shape]:
        """The shape of every component schema, by name (worked out on first use)."""
        raw = (self.document.get("components") or {}).get("schemas")
        return {str(name): shape_of(node, self.document) for name, node in raw.items()} if isinstance(raw, dict) else {}

    def shape(self, node: Any) -> Shape:
        """The shape of a schema node of this document (a property, a parameter)."""
        return shape_of(node, self.document)

    def deref(self, node: Any) -> Any:
        return deref(node, self.document)

    def tags(self, node: Any, prop: str = "type") -> list[Any]:
        return [v for v in tag_values(node, prop, self.document) or [] if v is not None]

    @property
    def event_union(self) -> Union | None:
        return self.unions.get(EVENT_UNION)


def build(document: dict, machines: Places | None = None, releases: Sequence[Dated] = ()) -> SpecModel:
    """The model of a bundled document (already extended with its vendor fragments)."""
    born = _release_dates(releases)
    components = document.get("components") if isinstance(document.get("components"), dict) else {}
    raw = components.get("schemas") if isinstance(components.get("schemas"), dict) else {}
    schemas = {str(name): _schema(str(name), node, document, born) for name, node in raw.items()}
    unions: dict[str, Union] = {}
    for name, node in raw.items():
        union = _union(str(name), f"/components/schemas/{escape(str(name))}", node, document, schemas)
        if union:
            unions[union.name] = union
    operations = list(_operations(document))
    events: dict[str, Event] = {}
    for op in operations:
        found = op.stream
        if found is None:
            continue
        union = _union(EVENT_UNION, found[0], found[1], document, schemas)
        if union is None:
            continue
        unions.setdefault(EVENT_UNION, union)
        for member in union.members:
            for value in union.tags[member]:
                if isinstance(value, str) and value not in events:
                    place = machines.place(value) if machines else None
                    events[value] = Event(value, member, deref({"$ref": schema_ref(member)}, document), place)
    return SpecModel(document, schemas, unions, list(events.values()), operations, machines)


def stream_pointers(document: dict) -> list[str]:
    """Pointers to the streaming-event union(s) the operations answer with, a `$ref` followed to its schema."""
    out = []
    for op in _operations(document):
        found = op.stream
        if found is None:
            continue
        at, node = found
        name = ref_name(node.get("$ref")) if isinstance(node, dict) else None
        at = f"/components/schemas/{escape(name)}" if name else at
        if at not in out:
            out.append(at)
    return out


def event_union(document: dict) -> list[tuple[str, str, dict]]:
    """(type value, schema name, schema) for every event of the spec's streaming union."""
    return [(e.type, e.schema, e.node) for e in build(document).events]


def _release_dates(releases: Sequence[Dated]) -> dict[tuple[str, str | None], str]:
    """(schema, property or None) -> the release that introduced it, for all but the first release."""
    out: dict[tuple[str, str | None], str] = {}
    for release in releases[1:]:
        schemas = (release.document.get("components") or {}).get("schemas") or {}
        for name, node in schemas.items():
            out.setdefault((name, None), release.date)
            for prop in (node.get("properties") or {}) if isinstance(node, dict) else ():
                out.setdefault((name, prop), release.date)
    if releases:
        first = (releases[0].document.get("components") or {}).get("schemas") or {}
        for name, node in first.items():
            out.pop((name, None), None)
            for prop in (node.get("properties") or {}) if isinstance(node, dict) else ():
                out.pop((name, prop), None)
    return out


def _schema(name: str, node: Any, doc: dict, born: dict[tuple[str, str | None], str]) -> Schema:
    parts = [node] if isinstance(node, dict) else []
    if parts and isinstance(node.get("allOf"), list):
        parts += [p for p in node["allOf"] if isinstance(p, dict) and "$ref" not in p]
    properties: dict[str, Any] = {}
    required: list[str] = []
    for part in parts:
        if isinstance(part.get("properties"), dict):
            properties.update({str(k): v for k, v in part["properties"].items()})
        if isinstance(part.get("required"), list):
            required += [r for r in part["required"] if isinstance(r, str) and r not in required]
    defaults = {k: d for k, v in properties.items() if (d := declared_default(v)) is not MISSING}
    own = node if isinstance(node, dict) else {}
    vendor = str(own.get(VENDOR) or "")
    added = str(own.get(ADDED_IN) or ("" if vendor else born.get((name, None), "")))
    prop_added = {}
    for prop, prop_node in properties.items():
        stated = prop_node.get(ADDED_IN) if isinstance(prop_node, dict) else None
        inherited = isinstance(prop_node, dict) and VENDOR in prop_node
        date = stated or ("" if inherited or vendor else born.get((name, prop), ""))
        if date and date != added:
            prop_added[prop] = str(date)
    return Schema(name, node, properties, tuple(required), defaults, vendor, added, prop_added)


def _union(name: str, pointer: str, node: Any, doc: dict, schemas: dict[str, Schema]) -> Union | None:
    found = union_of(deref(node, doc))
    if found is None:
        return None
    keyword, members = found
    names = tuple(n for m in members if (n := ref_name(m.get("$ref") if isinstance(m, dict) else None)))
    if not names:
        return None
    tags = {n: tuple(tag_values({"$ref": schema_ref(n)}, "type", doc) or ()) for n in names}
    owner = schemas.get(name)
    return Union(name, pointer, keyword, names, tags, OPEN_UNIONS.get(name), owner.added_in if owner else "")


def _operations(doc: dict):
    paths = doc.get("paths") if isinstance(doc.get("paths"), dict) else {}
    for path, item in paths.items():
        if not isinstance(item, dict):
            continue
        websocket = item.get(WEBSOCKET) if isinstance(item.get(WEBSOCKET), dict) else None
        for method in HTTP_METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            body = op.get("requestBody") if isinstance(op.get("requestBody"), dict) else {}
            responses = op.get("responses") if isinstance(op.get("responses"), dict) else {}
            yield Operation(
                path=str(path),
                method=method,
                operation_id=op["operationId"] if isinstance(op.get("operationId"), str) else "",
                summary=" ".join(str(op.get("summary") or "").split()),
                description=str(op.get("description") or ""),
                request=_content(body),
                request_required=body.get("required") is True,
                responses=tuple(
                    Response(str(status), str(r.get("description") or ""), _content(r))
                    for status, r in ((status, deref(r, doc)) for status, r in responses.items())  # shared answers
                    if isinstance(r, dict)
                ),
                websocket=websocket if method == "post" else None,
                added_in=str(op.get(ADDED_IN) or ""),
                pointer=f"/paths/{escape(str(path))}/{method}",
                vendor=str(op.get(VENDOR) or ""),
                parameters=_parameters([*_list(item.get("parameters")), *_list(op.get("parameters"))], doc),
            )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _parameters(declared: list[Any], doc: dict) -> tuple[Parameter, ...]:
    """Each (name, location) once: an operation's own declaration replaces its path's."""
    found: dict[tuple[str, str], Parameter] = {}
    for node in declared:
        node = deref(node, doc)
        if not isinstance(node, dict) or not isinstance(node.get("name"), str):
            continue
        location = str(node.get("in") or "")
        found[node["name"], location] = Parameter(
            node["name"],
            location,
            node.get("required") is True,
            str(node.get("description") or ""),
            node.get("schema"),
        )
    return tuple(found.values())


def _content(holder: dict) -> dict[str, Any]:
    content = holder.get("content") if isinstance(holder.get("content"), dict) else {}
    return {str(media): (spec.get("schema") if isinstance(spec, dict) else None) for media, spec in content.items()}


_IDENTIFIER_WORDS = re.compile(r"[A-Za-z][a-z0-9]*|[0-9]+")


def handler_name(operation: Operation) -> str:
    """A Python identifier for an operation: its id in snake case (`createResponse` ->
    `create_response`), or one made from method and path when the id is missing or has no letters."""
    source = operation.operation_id or f"{operation.method} {operation.path}"
    words = [w.lower() for w in _IDENTIFIER_WORDS.findall(re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", source))]
    if not words or not any(w[0].isalpha() for w in words):
        words = [w.lower() for w in _IDENTIFIER_WORDS.findall(f"{operation.method} {operation.path}")]
    name = "_".join(words) or operation.method
    return f"op_{name}" if name[0].isdigit() else name


# --------------------------------------------------------------------------------------------------
# The shape of a value: one small tree per schema, which each language renders in its own syntax.


@dataclass(frozen=True, kw_only=True)
class Shape:
    """What a JSON value of a schema may be; `nullable` says whether `null` is one of its values too."""

    nullable: bool = False


@dataclass(frozen=True, kw_only=True)
class RefShape(Shape):
    name: str  # a component schema


@dataclass(frozen=True, kw_only=True)
class PrimitiveShape(Shape):
    kind: str  # string | integer | number | boolean | any | null | never
    constraints: tuple[
        tuple[str, Any], ...
    ] = ()  # (JSON Schema keyword, value): minLength, maximum, pattern, format, ...


@dataclass(frozen=True, kw_only=True)
class LiteralShape(Shape):
    values: tuple[Any, ...]  # strings, numbers or booleans; one of them


@dataclass(frozen=True, kw_only=True)
class ArrayShape(Shape):
    items: Shape
    constraints: tuple[tuple[str, Any], ...] = ()  # minItems, maxItems


@dataclass(frozen=True, kw_only=True)
class TupleShape(Shape):
    """An array whose first items each have their own shape (`prefixItems`)."""

    prefix: tuple[Shape, ...]
    rest: Shape | None  # the shape of any later item; None when there may be none (`items: false`)
    min_items: int = 0  # how many of the prefix must be there


@dataclass(frozen=True, kw_only=True)
class MapShape(Shape):
    values: Shape  # an object with any keys, each holding one of these
    constraints: tuple[tuple[str, Any], ...] = ()  # maxProperties
    patterns: tuple[tuple[str, Shape], ...] = ()  # (key pattern, shape of the values of keys it matches)


@dataclass(frozen=True)
class Property:
    name: str  # as on the wire
    shape: Shape
    required: bool
    description: str


@dataclass(frozen=True, kw_only=True)
class ObjectShape(Shape):
    properties: tuple[Property, ...]  # other keys are allowed and kept, unless `closed`
    patterns: tuple[tuple[str, Shape], ...] = ()  # (key pattern, shape of the values of keys it matches)
    closed: bool = False  # no keys but the properties and those the patterns match (`additionalProperties: false`)


@dataclass(frozen=True, kw_only=True)
class UnionShape(Shape):
    members: tuple[Shape, ...]  # told apart by value, not by a tag (tags are `SpecModel.unions`' business)


_CONSTRAINTS = {
    "string": ("minLength", "maxLength", "pattern", "format"),
    "integer": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "format"),
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "format"),
    "array": ("minItems", "maxItems"),
    "object": ("maxProperties",),
}
MAX_SHAPE_DEPTH = 24  # inline schemas nested this deep at most; deeper is `any`
NULL = {"type": "null"}


def shape_of(node: Any, doc: dict, depth: int = 0) -> Shape:
    """The shape of a schema node; a `$ref` to a component schema stays a reference."""
    if not isinstance(node, dict) or depth > MAX_SHAPE_DEPTH:
        return PrimitiveShape(kind="any")
    if node.get("x-openresponses-disallowed") is True or node.get("not") == {}:
        return PrimitiveShape(kind="never")  # a field that must be absent (or null)
    name = ref_name(node.get("$ref"))
    if name is not None:
        return RefShape(name=name)
    if isinstance(node.get("$ref"), str):  # into a schema (its `$defs`, say): the shape of what it points at
        target = deref(node, doc)
        return shape_of(target, doc, depth + 1) if target is not node else PrimitiveShape(kind="any")
    parts = node.get("allOf") if isinstance(node.get("allOf"), list) else []
    if parts:
        refs = [p for p in parts if isinstance(p, dict) and "$ref" in p]
        rest = {k: v for k, v in node.items() if k != "allOf"}
        if len(parts) == 1 and not (set(rest) - _ANNOTATIONS):
            return shape_of(parts[0], doc, depth + 1)
        if (
            len(refs) == 1
            and all(set(p) <= _ANNOTATIONS for p in parts if p not in refs)
            and not rest.get("properties")
        ):
            return shape_of(refs[0], doc, depth + 1)
        return _object_shape([node, *(deref(p, doc) for p in parts)], doc, depth)
    found = union_of(node)
    if found is not None and not node.get("properties"):
        members = [m for m in found[1] if m != NULL]
        shapes = _flatten([shape_of(m, doc, depth + 1) for m in members])
        nullable = len(members) < len(found[1]) or any(s.nullable for s in shapes)
        if not shapes:
            return PrimitiveShape(kind="null")
        if len(shapes) == 1:
            return _nullable(shapes[0], nullable)
        return UnionShape(members=tuple(_nullable(s, False) for s in shapes), nullable=nullable)
    if "const" in node:
        return _literal((node["const"],))
    if isinstance(node.get("enum"), list) and node["enum"]:
        return _literal(tuple(node["enum"]))
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        shapes = [shape_of({**node, "type": k}, doc, depth + 1) for k in kinds]
        if not shapes:
            return PrimitiveShape(kind="null")
        nullable = len(kinds) < len(kind)
        if len(shapes) == 1:
            return _nullable(shapes[0], nullable)
        return UnionShape(members=tuple(shapes), nullable=nullable)
    limits = tuple((k, node[k]) for k in _CONSTRAINTS.get(kind, ()) if k in node) if isinstance(kind, str) else ()
    if isinstance(node.get("prefixItems"), list):
        return _tuple_shape(node, doc, depth)
    if kind == "array":
        return ArrayShape(items=shape_of(node.get("items"), doc, depth + 1), constraints=limits)
    if kind == "object" or isinstance(node.get("properties"), dict) or isinstance(node.get("patternProperties"), dict):
        if node.get("properties"):
            return _object_shape([node], doc, depth)
        extra = node.get("additionalProperties")
        patterns = _patterns(node, doc, depth)
        values = shape_of(extra, doc, depth + 1) if isinstance(extra, dict) else PrimitiveShape(kind="any")
        if patterns and extra is False:  # only keys the patterns match: their values
            values = _one_of([s for _, s in patterns])
        elif patterns and isinstance(extra, dict):
            values = _one_of([*(s for _, s in patterns), values])
        elif patterns:
            values = PrimitiveShape(kind="any")
        return MapShape(values=values, constraints=limits, patterns=patterns)
    if kind in ("string", "integer", "number", "boolean", "null"):
        return PrimitiveShape(kind=kind, constraints=limits)
    return PrimitiveShape(kind="any")


_ANNOTATIONS = {"description", "title", "example", "examples", "x-enumDescriptions", ADDED_IN, VENDOR}


def _tuple_shape(node: dict, doc: dict, depth: int) -> TupleShape:
    prefix = tuple(shape_of(item, doc, depth + 1) for item in node["prefixItems"])
    items = node.get("items")
    rest = (
        None
        if items is False
        else shape_of(items, doc, depth + 1)
        if isinstance(items, dict)
        else PrimitiveShape(kind="any")
    )
    least = node.get("minItems")
    least = least if isinstance(least, int) and not isinstance(least, bool) else 0
    return TupleShape(prefix=prefix, rest=rest, min_items=min(least, len(prefix)))


def _patterns(node: dict, doc: dict, depth: int) -> tuple[tuple[str, Shape], ...]:
    found = node.get("patternProperties")
    if not isinstance(found, dict):
        return ()
    return tuple((str(pattern), shape_of(value, doc, depth + 1)) for pattern, value in found.items())


def _one_of(shapes: list[Shape]) -> Shape:
    flat = _flatten(shapes)
    if not flat:
        return PrimitiveShape(kind="never")
    return flat[0] if len(flat) == 1 else UnionShape(members=tuple(flat))


def _object_shape(parts: list[Any], doc: dict, depth: int) -> ObjectShape:
    props: dict[str, Any] = {}
    required: list[str] = []
    patterns: tuple[tuple[str, Shape], ...] = ()
    closed = False
    for part in parts:
        if not isinstance(part, dict):
            continue
        props.update({str(k): v for k, v in (part.get("properties") or {}).items()})
        required += [r for r in part.get("required") or () if isinstance(r, str)]
        patterns += _patterns(part, doc, depth)
        closed = closed or part.get("additionalProperties") is False
    return ObjectShape(
        patterns=patterns,
        closed=closed,
        properties=tuple(
            Property(
                name,
                shape_of(prop, doc, depth + 1),
                name in required,
                " ".join(str(prop.get("description") or "").split()) if isinstance(prop, dict) else "",
            )
            for name, prop in props.items()
        ),
    )


def _literal(values: tuple[Any, ...]) -> Shape:
    kept = tuple(v for v in values if v is None or isinstance(v, str | int | float | bool))
    non_null = tuple(v for v in kept if v is not None)
    if not non_null:
        return PrimitiveShape(kind="null")
    return LiteralShape(values=non_null, nullable=len(non_null) < len(kept))


def _nullable(shape: Shape, nullable: bool) -> Shape:
    return replace(shape, nullable=shape.nullable or nullable)


def _flatten(shapes: list[Shape]) -> list[Shape]:
    """Members of nested inline unions lifted into one list, each once."""
    out: list[Shape] = []
    for shape in shapes:
        for member in shape.members if isinstance(shape, UnionShape) else (shape,):
            member = _nullable(member, shape.nullable) if isinstance(shape, UnionShape) else member
            if member not in out:
                out.append(member)
    return out


# --------------------------------------------------------------------------------------------------
# What no type says: keywords checked at run time.

# Keywords neither language's types can say, checked as written by the runtime's small validator
# (`openresponses_runtime/_keywords.py`, `keywords.js`) rather than dropped.
RUNTIME_KEYWORDS = (
    "if",
    "then",
    "else",
    "propertyNames",
    "patternProperties",
    "prefixItems",
    "dependentRequired",
    "dependentSchemas",
    "contains",
    "minContains",
    "maxContains",
)


def runtime_checks(node: Any, depth: int = 0) -> dict | None:
    """The part of a schema that only a run-time check can enforce, or None if its types say it all.

    It keeps the path (`properties`, `items`, `allOf`) down to each such keyword and the keyword
    whole; a `$ref` is left out, since the schema it names checks itself. Beside `patternProperties`
    it keeps `additionalProperties` and the declared names, which decide what the patterns leave over.
    """
    if not isinstance(node, dict) or "$ref" in node or depth > MAX_SHAPE_DEPTH:
        return None
    out: dict[str, Any] = {k: node[k] for k in RUNTIME_KEYWORDS if k in node}
    if "contains" in out and "type" in node:
        out["type"] = node["type"]  # `contains` holds of arrays only
    if "prefixItems" in out and "items" in node:
        out["items"] = node["items"]  # what may follow the prefix
    elif isinstance(node.get("items"), dict) and (found := runtime_checks(node["items"], depth + 1)):
        out["items"] = found
    props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
    nested = {str(k): found for k, v in props.items() if (found := runtime_checks(v, depth + 1))}
    extra = node.get("additionalProperties")
    if "patternProperties" in out and extra is not None:
        out["additionalProperties"] = extra
    elif isinstance(extra, dict) and (found := runtime_checks(extra, depth + 1)):
        out["additionalProperties"] = found
    if "additionalProperties" in out:
        nested = {str(k): {} for k in props} | nested  # declared keys are not additional
    if nested:
        out["properties"] = nested
    parts = [found for p in _list(node.get("allOf")) if (found := runtime_checks(p, depth + 1))]
    if parts:
        out["allOf"] = parts
    found = union_of(node)
    members = [m for m in found[1] if m != NULL] if found else []
    if len(members) == 1 and (inner := runtime_checks(members[0], depth + 1)):
        out["anyOf"] = [inner, NULL]  # a nullable value, checked when it is not null
    return out or None
