"""Structural differences between two bundled OpenAPI documents, each classified as breaking or not.

Both documents are normalised first, so that spellings with the same wire meaning compare equal:

- `allOf: [{$ref: X}, {description: ...}]` (one reference plus annotation-only members) is `$ref: X`;
- `anyOf: [S, {type: 'null'}]`, `oneOf: [S, {type: 'null'}]`, `type: [t, 'null']` and OpenAPI 3.0's
  `nullable: true` all mean "S, nullable"; `const: v` is `enum: [v]`;
- annotation keys (`description`, `title`, `example(s)`, `x-enumDescriptions`, `x-unionDisplay`,
  `x-unionTitle`, `x-openresponses-added-in`) are ignored, unless `docs=True`, which reports
  description changes (never breaking);
- a `$ref` and an inline schema with the same structure are equal.

Component schemas are compared by name, their properties recursively (inline objects, array items,
`oneOf`/`anyOf` variants matched by reference name or fixed `type` value); paths by path and method,
with request and response media types; security schemes and security requirements; servers and info.

Classification. "Breaking for clients" means a client written against OLD may fail against a server
that follows NEW; "breaking for servers" means a server written against OLD no longer serves clients
that follow NEW. Which one a change breaks depends on where the schema travels: in requests (client
to server), in responses (server to client), or both (used on both sides, or not reachable from any
path, which is treated conservatively as both). Most kinds follow one of two effects:

- widen (the set of valid values grows): breaks whoever *receives* the value, i.e. servers for
  request schemas, clients for response schemas;
- narrow (the set of valid values shrinks): breaks whoever *sends* the value, i.e. clients for
  request schemas, servers for response schemas.

`RULES` is the whole classification, one row per fact: its kind, whom it breaks (never, always, or
only where the schema travels in requests or in responses) and its message. `_Differ` is only the
walker: it pairs up the two documents (component schemas from `orspec.schema`, normalised below)
and reports each difference it finds by rule id.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jsonpointer import escape, unescape

from .bundle import bundle
from .schema import HTTP_METHODS, REF_PREFIX, VENDOR, build, deref

__all__ = ["FORMATS", "RULES", "Breaks", "Change", "Rule", "diff_documents", "diff_specs", "render"]

FORMATS = ("text", "md", "json")


class Breaks(enum.Enum):
    """When a change breaks one side: never, always, or only where the schema travels one way."""

    NEVER = "never"
    ALWAYS = "always"
    IN_REQUESTS = "in requests"
    IN_RESPONSES = "in responses"

    def applies(self, where: frozenset[str]) -> bool:
        if self is Breaks.IN_REQUESTS:
            return REQUEST in where
        if self is Breaks.IN_RESPONSES:
            return RESPONSE in where
        return self is Breaks.ALWAYS


@dataclass(frozen=True)
class Rule:
    """One row of the table: what changed, whom it breaks, and how the change is told."""

    kind: str
    clients: Breaks
    servers: Breaks
    message: str  # a `str.format` template over the facts the walker reports

    def change(self, pointer: str, where: frozenset[str], **facts: Any) -> Change:
        return Change(
            pointer, self.kind, self.message.format(**facts), self.clients.applies(where), self.servers.applies(where)
        )


N, A, RQ, RS = Breaks.NEVER, Breaks.ALWAYS, Breaks.IN_REQUESTS, Breaks.IN_RESPONSES
# Widen (the valid set grows) breaks whoever receives the value: clients for responses, servers for
# requests. Narrow (it shrinks) breaks whoever sends it: clients for requests, servers for responses.
WIDEN, NARROW = (RS, RQ), (RQ, RS)

#: rule id -> Rule. The walker below only finds facts; every classification and message is here.
RULES: dict[str, Rule] = {
    rule_id: Rule(kind, clients, servers, message)
    for rule_id, kind, (clients, servers), message in (
        # document
        ("openapi-version", "info-changed", (N, N), "OpenAPI version {old} -> {new}"),
        ("servers", "servers-changed", (A, N), "servers {old} -> {new}"),
        ("info", "info-changed", (N, N), "info `{key}` {old} -> {new}"),
        ("info-description", "description-changed", (N, N), "API description changed"),
        ("extension-added", "extension-added", (N, N), "extension `{key}` added"),
        ("extension-removed", "extension-removed", (N, N), "extension `{key}` removed"),
        ("extension-changed", "extension-changed", (N, N), "extension `{key}` changed"),
        ("extension-description", "description-changed", (N, N), "description of extension `{key}` changed"),
        # security
        ("scheme-added", "security-scheme-added", (N, N), "security scheme `{name}` added ({scheme})"),
        ("scheme-removed", "security-scheme-removed", (A, N), "security scheme `{name}` removed"),
        ("scheme-changed", "security-scheme-changed", (A, A), "security scheme `{name}` changed: {old} -> {new}"),
        ("scheme-description", "description-changed", (N, N), "description of security scheme `{name}` changed"),
        ("requirement", "security-requirement-changed", (A, A), "{scope} security requirement {old} -> {new}"),
        # schemas
        ("schema-added", "schema-added", (N, N), "schema `{name}` added"),
        ("schema-removed", "schema-removed", (A, N), "schema `{name}` removed"),
        ("description", "description-changed", (N, N), "description changed"),
        ("ref-target", "type-changed", (A, A), "refers to `{new}` instead of `{old}`"),
        ("ref-inline", "type-changed", (A, A), "was {old}, now {new}"),
        ("types-widened", "type-changed", WIDEN, "type {old} -> {new}"),
        ("types-narrowed", "type-changed", NARROW, "type {old} -> {new}"),
        ("types-changed", "type-changed", (A, A), "type {old} -> {new}"),
        ("nullable-added", "nullable-changed", WIDEN, "now nullable"),
        ("nullable-removed", "nullable-changed", NARROW, "no longer nullable"),
        ("default", "default-changed", (A, A), "default {old} -> {new}"),
        ("deprecated", "deprecated-changed", (N, N), "{state} deprecated"),
        ("items-added", "constraint-changed", NARROW, "`items` schema added"),
        ("items-removed", "constraint-changed", WIDEN, "`items` schema removed"),
        ("enum-restricted", "constraint-changed", NARROW, "now restricted to enum [{values}]"),
        ("enum-unrestricted", "constraint-changed", WIDEN, "enum [{values}] restriction removed"),
        ("enum-value-added", "enum-value-added", WIDEN, "enum value `{value}` added"),
        ("enum-value-removed", "enum-value-removed", NARROW, "enum value `{value}` removed"),
        ("property-removed", "property-removed", (A, N), "property `{name}` removed"),
        ("property-added-required", "property-added", (RQ, A), "required property `{name}` added"),
        ("property-added-optional", "property-added", (N, RQ), "optional property `{name}` added"),
        ("required-added", "required-added", NARROW, "property `{name}` is now required"),
        ("required-removed", "required-removed", WIDEN, "property `{name}` is now optional"),
        ("required-removed-unlisted", "required-removed", WIDEN, "`{name}` is no longer required"),
        ("additional-narrowed", "constraint-changed", NARROW, "{old} -> {new}"),
        ("additional-widened", "constraint-changed", WIDEN, "{old} -> {new}"),
        ("union-keyword", "constraint-changed", (A, A), "`{old}` became `{new}`"),
        ("variant-added", "variant-added", WIDEN, "variant {key} added"),
        ("variant-removed", "variant-removed", NARROW, "variant {key} removed"),
        ("all-of-added", "composition-changed", (A, A), "allOf member {key} added"),
        ("all-of-removed", "composition-changed", (A, A), "allOf member {key} removed"),
        ("discriminator", "discriminator-changed", (A, A), "discriminator {old} -> {new}"),
        # A mapping entry states what the variants already say; without it, tools read the tag as a
        # schema name, and one pointing elsewhere changes which schema a value is read with.
        ("mapping-added", "mapping-changed", (N, N), "mapping `{tag}` -> {new} added"),
        ("mapping-removed", "mapping-changed", (A, N), "mapping `{tag}` -> {old} removed"),
        ("mapping-moved", "mapping-changed", (A, A), "mapping `{tag}` {old} -> {new}"),
        ("keyword-tightened", "constraint-changed", NARROW, "`{key}` {old} -> {new}"),
        ("keyword-loosened", "constraint-changed", WIDEN, "`{key}` {old} -> {new}"),
        ("keyword-changed", "constraint-changed", (A, A), "`{key}` {old} -> {new}"),
        # paths and operations
        ("path-added", "path-added", (N, N), "path `{path}` added{detail}"),
        ("path-removed", "path-removed", (A, N), "path `{path}` removed"),
        ("operation-added", "operation-added", (N, N), "operation {op} added{detail}"),
        ("operation-removed", "operation-removed", (A, N), "operation {op} removed"),
        ("operation-id", "operation-id-changed", (N, N), "operationId of {op} {old} -> {new}"),
        ("operation-text", "description-changed", (N, N), "{key} of {op} changed"),
        ("operation-deprecated", "deprecated-changed", (N, N), "{op} {state} deprecated"),
        ("response-added", "response-added", (A, N), "response {status} of {op} added"),
        # An error status (4xx, 5xx) newly documented breaks nobody: any HTTP server may answer one,
        # so a client already handles it by its class, and the error object is the one it knows.
        ("error-response-added", "response-added", (N, N), "error response {status} of {op} added"),
        ("response-removed", "response-removed", (N, A), "response {status} of {op} removed"),
        ("response-description", "description-changed", (N, N), "description of response {status} changed"),
        ("response-headers", "constraint-changed", (A, A), "headers of response {status} changed"),
        ("parameter-added-required", "parameter-added", (A, A), "required {label} added"),
        ("parameter-added-optional", "parameter-added", (N, A), "optional {label} added"),
        ("parameter-removed", "parameter-removed", (A, N), "{label} removed"),
        ("parameter-required", "required-added", NARROW, "{label} is now required"),
        ("parameter-optional", "required-removed", WIDEN, "{label} is now optional"),
        ("body-added-required", "request-body-added", (A, A), "required request body of {op} added"),
        ("body-added-optional", "request-body-added", (N, A), "optional request body of {op} added"),
        ("body-removed", "request-body-removed", (A, N), "request body of {op} removed"),
        ("body-required", "required-added", (A, N), "request body of {op} is now required"),
        ("body-optional", "required-removed", (N, A), "request body of {op} is now optional"),
        ("media-type-added", "media-type-added", WIDEN, "{side} media type `{media}` added"),
        ("media-type-removed", "media-type-removed", (A, RS), "{side} media type `{media}` removed"),
        ("media-schema", "type-changed", (A, A), "schema of `{media}` {state}"),
    )
}

ANNOTATIONS = frozenset(
    {
        "description",
        "title",
        "example",
        "examples",
        "x-enumDescriptions",
        "x-unionDisplay",
        "x-unionTitle",
        "x-openresponses-added-in",
        "$comment",
    }
)

REQUEST = "request"
RESPONSE = "response"
BOTH = frozenset({REQUEST, RESPONSE})

# Constraint keywords whose value bounds from above (smaller = tighter) or below (larger = tighter),
# and flags that tighten when true.
_UPPER = frozenset({"maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum", "maxContains"})
_LOWER = frozenset({"minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum", "minContains"})
_FLAGS = frozenset({"uniqueItems", "readOnly", "writeOnly", "x-openresponses-disallowed"})


@dataclass(frozen=True, order=True)
class Change:
    """One structural difference, located by a JSON pointer into NEW (into OLD when removed)."""

    pointer: str
    kind: str
    message: str
    breaking_for_clients: bool = False
    breaking_for_servers: bool = False

    @property
    def breaking(self) -> bool:
        return self.breaking_for_clients or self.breaking_for_servers

    @property
    def label(self) -> str:
        who = [w for w, b in (("clients", self.breaking_for_clients), ("servers", self.breaking_for_servers)) if b]
        return f"BREAKING({','.join(who)})" if who else "non-breaking"

    def __str__(self) -> str:
        return f"{self.label} {self.pointer or '/'}: {self.message}"


def diff_specs(old_path: Path, new_path: Path, docs: bool = False, extensions: bool = False) -> list[Change]:
    """Bundle two specs (directories or single files) and diff them. Raises SpecError on bad input.

    `extensions`: merge each spec directory's vendor fragments first, so what they add (operations,
    schemas, fields) is compared too; by default only the core is."""
    return diff_documents(_document(Path(old_path), extensions), _document(Path(new_path), extensions), docs=docs)


def _document(path: Path, extensions: bool) -> dict:
    bundled = bundle(path)
    if extensions:
        from .extensions import extend
        from .problems import SpecError, errors

        found = errors(extend(bundled)[1])
        if found:
            raise SpecError(found)
    return bundled.document


def diff_documents(old: dict, new: dict, *, docs: bool = False) -> list[Change]:
    """Every structural difference from `old` to `new`, sorted by pointer, then kind, then message."""
    differ = _Differ(old, new, docs)
    differ.run()
    return sorted(set(differ.changes))


# --- rendering ------------------------------------------------------------------------------------


def render(changes: Iterable[Change], fmt: str) -> str:
    """Render changes as `text` (one line each), `md` (tables by breaking / not) or `json`."""
    ordered = sorted(changes)
    if fmt == "json":
        return json.dumps([asdict(c) for c in ordered], indent=2, ensure_ascii=False) + "\n"
    if fmt == "text":
        if not ordered:
            return "no structural differences\n"
        return "".join(f"{c}\n" for c in ordered)
    if fmt == "md":
        return _render_md(ordered)
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _render_md(changes: list[Change]) -> str:
    if not changes:
        return "No structural differences.\n"
    breaking = [c for c in changes if c.breaking]
    compatible = [c for c in changes if not c.breaking]
    out: list[str] = []
    if breaking:
        out += [f"## Breaking changes ({len(breaking)})", ""]
        out += ["| Pointer | Change | Clients | Servers | Details |", "|---|---|---|---|---|"]
        for c in breaking:
            marks = ("yes" if c.breaking_for_clients else "", "yes" if c.breaking_for_servers else "")
            out.append(f"| `{_md(c.pointer or '/')}` | {c.kind} | {marks[0]} | {marks[1]} | {_md(c.message)} |")
        out.append("")
    if compatible:
        out += [f"## Non-breaking changes ({len(compatible)})", ""]
        out += ["| Pointer | Change | Details |", "|---|---|---|"]
        out += [f"| `{_md(c.pointer or '/')}` | {c.kind} | {_md(c.message)} |" for c in compatible]
        out.append("")
    return "\n".join(out)


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


# --- normalised schemas -----------------------------------------------------------------------------

_ABSENT: Any = object()


@dataclass
class _Schema:
    """A schema with spelling differences removed; `at` is where it sits, `base` where its keywords live."""

    at: str
    base: str
    ref: str | None = None  # component name for local schema refs, else the raw ref
    types: frozenset[str] = frozenset()
    nullable: bool = False
    enum: dict[str, Any] | None = None  # canonical JSON -> value
    properties: dict[str, _Schema] = field(default_factory=dict)
    required: frozenset[str] = frozenset()
    items: _Schema | None = None
    additional: Any = _ABSENT  # absent, a bool, or a _Schema
    union_kind: str | None = None  # "oneOf" or "anyOf"
    variants: list[_Schema] = field(default_factory=list)
    all_of: list[_Schema] = field(default_factory=list)
    default: Any = _ABSENT
    discriminator: str | None = None  # canonical JSON, without the mapping
    mapping: dict[str, str] = field(default_factory=dict)  # tag value -> schema (canonical short name)
    deprecated: bool = False
    keywords: dict[str, Any] = field(default_factory=dict)  # constraints and anything else, canonical
    description: str | None = None

    def structural(self) -> bool:
        """Whether anything besides a $ref is said here."""
        return bool(
            self.types
            or self.enum is not None
            or self.properties
            or self.required
            or self.items
            or self.additional is not _ABSENT
            or self.variants
            or self.all_of
            or self.discriminator
            or self.mapping
            or self.keywords
        )


def _added_by(*operations: Any) -> str:
    """`; by the `v` fragment` when a vendor fragment added the operations, else ""."""
    vendors = sorted({str(op.get(VENDOR)) for op in operations if isinstance(op, dict) and op.get(VENDOR)})
    return f"; by the {', '.join(f'`{v}`' for v in vendors)} fragment" if vendors else ""


def _canon(value: Any, *, strip: bool = True) -> str:
    """Canonical JSON for comparing; annotations stripped at any depth unless strip=False."""
    return json.dumps(_strip(value) if strip else value, sort_keys=True, ensure_ascii=False)


def _strip(value: Any) -> Any:
    """`value` without annotation keys at any depth, refs shortened to schema names."""
    if isinstance(value, list):
        return [_strip(v) for v in value]
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ANNOTATIONS}
    return value


def _is_null(node: Any) -> bool:
    return isinstance(node, dict) and {k: v for k, v in node.items() if k not in ANNOTATIONS} == {"type": "null"}


def _annotation_only(node: Any) -> bool:
    return isinstance(node, dict) and all(k in ANNOTATIONS for k in node)


def _unwrap(raw: dict, base: str) -> tuple[dict, str, bool]:
    """Peel nullable unions and single-member allOfs; returns (schema, where it lives, nullable)."""
    nullable = False
    while True:
        raw = dict(raw)
        if raw.pop("nullable", False) is True:
            nullable = True
        types = raw.get("type")
        if isinstance(types, list) and "null" in types and len(types) > 1:
            nullable = True
            rest = [t for t in types if t != "null"]
            raw["type"] = rest[0] if len(rest) == 1 else rest
        peeled = _peel_null_union(raw, base) or _peel_all_of(raw, base)
        if peeled is None:
            return raw, base, nullable
        raw, base, was_nullable = peeled
        nullable = nullable or was_nullable


def _peel_null_union(raw: dict, base: str) -> tuple[dict, str, bool] | None:
    """`anyOf: [S, {type: null}]` (or oneOf) -> S, merged with the outer keywords."""
    for key in ("anyOf", "oneOf"):
        members = raw.get(key)
        if not isinstance(members, list) or not any(_is_null(m) for m in members):
            continue
        keep = [(i, m) for i, m in enumerate(members) if not _is_null(m)]
        if len(keep) != 1 or not isinstance(keep[0][1], dict):
            return None  # several members: the union stays, _normalise marks it nullable
        i, member = keep[0]
        outer = {k: v for k, v in raw.items() if k != key}
        if any(k in member and k not in ANNOTATIONS for k in outer):
            return None
        merged = {**member, **outer}
        if "description" not in outer and "description" in member:
            merged["description"] = member["description"]
        return merged, f"{base}/{key}/{i}", True
    return None


def _peel_all_of(raw: dict, base: str) -> tuple[dict, str, bool] | None:
    """`allOf: [{$ref: X}, {description: ...}]` -> `{$ref: X, description: ...}`."""
    members = raw.get("allOf")
    if not isinstance(members, list):
        return None
    structural = [(i, m) for i, m in enumerate(members) if not _annotation_only(m)]
    if len(structural) != 1 or not isinstance(structural[0][1], dict):
        return None
    i, member = structural[0]
    outer = {k: v for k, v in raw.items() if k != "allOf"}
    if any(k in member and k not in ANNOTATIONS for k in outer):
        return None
    notes = {k: v for m in members if _annotation_only(m) for k, v in m.items()}
    merged = {**notes, **member, **outer}
    if "description" not in outer and "description" in notes:
        merged["description"] = notes["description"]
    return merged, f"{base}/allOf/{i}", False


def _normalise(raw: Any, at: str) -> _Schema:
    if not isinstance(raw, dict):
        return _Schema(at, at, keywords={"schema": _canon(raw)})
    raw, base, nullable = _unwrap(raw, at)
    if _never(raw):  # every spelling of "no value is valid" is `not: {}`
        raw = {**{k: v for k, v in raw.items() if k in ANNOTATIONS or k.startswith("x-")}, "not": {}}
    node = _Schema(at, base, nullable=nullable)
    if isinstance(raw.get("description"), str):
        node.description = raw["description"]
    for key, value in raw.items():
        if key in ANNOTATIONS:
            continue
        if key == "$ref" and isinstance(value, str):
            node.ref = value.removeprefix(REF_PREFIX) if value.startswith(REF_PREFIX) else value
        elif key == "type":
            node.types = frozenset([value] if isinstance(value, str) else value)
        elif key in ("enum", "const"):
            values = value if key == "enum" and isinstance(value, list) else [value]
            node.enum = {_canon(v, strip=False): v for v in values}
        elif key == "properties" and isinstance(value, dict):
            node.properties = {k: _normalise(v, f"{base}/properties/{escape(k)}") for k, v in value.items()}
        elif key == "required" and isinstance(value, list):
            node.required = frozenset(value)
        elif key == "items" and isinstance(value, dict):
            node.items = _normalise(value, f"{base}/items")
        elif key == "additionalProperties":
            if isinstance(value, dict) and not _strip(value):
                value = True
            node.additional = _normalise(value, f"{base}/additionalProperties") if isinstance(value, dict) else value
        elif key in ("oneOf", "anyOf") and isinstance(value, list) and node.union_kind is None:
            node.union_kind = key
            node.variants = [_normalise(v, f"{base}/{key}/{i}") for i, v in enumerate(value) if not _is_null(v)]
            node.nullable = node.nullable or len(node.variants) < len(value)
        elif key == "allOf" and isinstance(value, list):
            node.all_of = [_normalise(v, f"{base}/allOf/{i}") for i, v in enumerate(value) if not _annotation_only(v)]
        elif key == "default":
            node.default = value
        elif key == "discriminator":
            mapping = value.get("mapping") if isinstance(value, dict) else None
            if isinstance(mapping, dict):
                node.mapping = {str(k): _canon(_short_refs(v)) for k, v in mapping.items()}
                value = {k: v for k, v in value.items() if k != "mapping"}
            node.discriminator = _canon(_short_refs(value))
        elif key == "deprecated":
            node.deprecated = value is True
        else:
            node.keywords[key] = _canon(value)
    if node.enum and len(node.enum) > 1 and "null" in node.enum and (node.nullable or not node.types):
        node.nullable = True  # `enum: [a, null]` is a nullable `enum: [a]`
        del node.enum["null"]
    return node


def _never(raw: dict) -> bool:
    """A string schema whose length bounds exclude each other (upstream's way to forbid a field)."""
    low, high = raw.get("minLength"), raw.get("maxLength")
    return raw.get("type") == "string" and isinstance(low, int) and isinstance(high, int) and low > high


def _short_refs(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _short_refs(v) for k, v in value.items()}
    if isinstance(value, str) and value.startswith(REF_PREFIX):
        return value[len(REF_PREFIX) :]
    return value


def _variant_keys(variants: list[_Schema]) -> dict[str, _Schema]:
    """Key union members by what identifies them: a $ref name, a fixed `type` value, or their types."""
    out: dict[str, _Schema] = {}
    for i, v in enumerate(variants):
        if v.ref and not v.structural():
            key = f"`{v.ref}`"
        else:
            tag = v.properties.get("type")
            if tag is not None and tag.enum and len(tag.enum) == 1:
                key = f"`type: {next(iter(tag.enum))}`"
            elif v.types and len(v.types) == 1 and not v.properties:
                key = f"inline {next(iter(v.types))}" + (f" enum {sorted(v.enum)}" if v.enum else "")
            else:
                key = f"inline member {i}"
        while key in out:
            key += "'"
        out[key] = v
    return out


def _fmt(value: Any) -> str:
    return "`" + json.dumps(value, ensure_ascii=False) + "`"


def _types(types: frozenset[str]) -> str:
    return "`" + " | ".join(sorted(types)) + "`" if types else "any type"


# --- the differ -------------------------------------------------------------------------------------


class _Differ:
    """Walks both documents side by side and reports each fact it finds under a rule of `RULES`."""

    def __init__(self, old: dict, new: dict, docs: bool):
        self.old, self.new, self.docs = old, new, docs
        self.changes: list[Change] = []
        self.old_schemas = {n: s.node for n, s in build(old).schemas.items()}
        self.new_schemas = {n: s.node for n, s in build(new).schemas.items()}
        old_dirs, new_dirs = _directions(old), _directions(new)
        self.directions = {
            name: frozenset(old_dirs.get(name, set()) | new_dirs.get(name, set())) or BOTH
            for name in {*self.old_schemas, *self.new_schemas}
        }
        self._norm: dict[tuple[bool, str], _Schema] = {}
        self._expanding: set[tuple[str | None, str | None]] = set()

    def emit(self, rule: str, pointer: str, where: frozenset[str] = BOTH, **facts: Any) -> None:
        self.changes.append(RULES[rule].change(pointer, where, **facts))

    def run(self) -> None:
        self.compare_meta()
        self.compare_security()
        self.compare_schemas()
        self.compare_paths()

    # top level

    def compare_meta(self) -> None:
        old, new = self.old, self.new
        if old.get("openapi") != new.get("openapi"):
            self.emit("openapi-version", "/openapi", old=old.get("openapi"), new=new.get("openapi"))
        if _canon(old.get("servers")) != _canon(new.get("servers")):
            urls = [[s.get("url") for s in d.get("servers") or [] if isinstance(s, dict)] for d in (old, new)]
            self.emit("servers", "/servers", old=_fmt(urls[0]), new=_fmt(urls[1]))
        old_info, new_info = old.get("info") or {}, new.get("info") or {}
        for key in sorted({*old_info, *new_info}):
            a, b = old_info.get(key, _ABSENT), new_info.get(key, _ABSENT)
            if key == "description":
                if self.docs and a != b:
                    self.emit("info-description", "/info/description")
            elif key not in ANNOTATIONS and _canon(_opt(a)) != _canon(_opt(b)):
                self.emit("info", f"/info/{escape(key)}", key=key, old=_show(a), new=_show(b))
        self.compare_extensions(old, new, "")

    def compare_extensions(self, old: dict, new: dict, at: str) -> None:
        keys = {k for k in (*old, *new) if isinstance(k, str) and k.startswith("x-") and k not in ANNOTATIONS}
        for key in sorted(keys):
            pointer = f"{at}/{escape(key)}"
            if key not in new:
                self.emit("extension-removed", pointer, key=key)
            elif key not in old:
                self.emit("extension-added", pointer, key=key)
            elif _canon(_short_refs(old[key])) != _canon(_short_refs(new[key])):
                self.emit("extension-changed", pointer, key=key)
            elif self.docs and _descriptions(old[key]) != _descriptions(new[key]):
                self.emit("extension-description", pointer, key=key)

    def compare_security(self) -> None:
        old_schemes = (self.old.get("components") or {}).get("securitySchemes") or {}
        new_schemes = (self.new.get("components") or {}).get("securitySchemes") or {}
        for name in sorted({*old_schemes, *new_schemes}):
            pointer = f"/components/securitySchemes/{escape(name)}"
            if name not in new_schemes:
                self.emit("scheme-removed", pointer, name=name)
            elif name not in old_schemes:
                self.emit("scheme-added", pointer, name=name, scheme=_scheme(new_schemes[name]))
            elif _canon(old_schemes[name]) != _canon(new_schemes[name]):
                old_scheme, new_scheme = _scheme(old_schemes[name]), _scheme(new_schemes[name])
                self.emit("scheme-changed", pointer, name=name, old=old_scheme, new=new_scheme)
            elif self.docs and old_schemes[name].get("description") != new_schemes[name].get("description"):
                self.emit("scheme-description", pointer, name=name)
        self.compare_requirements(self.old.get("security"), self.new.get("security"), "/security", "document")

    def compare_requirements(self, old: Any, new: Any, pointer: str, scope: str) -> None:
        if _canon(_requirements(old)) != _canon(_requirements(new)):
            self.emit("requirement", pointer, scope=scope, old=_show_req(old), new=_show_req(new))

    # schemas

    def norm(self, new: bool, name: str) -> _Schema:
        if (new, name) not in self._norm:
            raw = (self.new_schemas if new else self.old_schemas)[name]
            self._norm[(new, name)] = _normalise(raw, f"/components/schemas/{escape(name)}")
        return self._norm[(new, name)]

    def compare_schemas(self) -> None:
        for name in sorted({*self.old_schemas, *self.new_schemas}):
            pointer = f"/components/schemas/{escape(name)}"
            if name not in self.new_schemas:
                self.emit("schema-removed", pointer, name=name)
            elif name not in self.old_schemas:
                self.emit("schema-added", pointer, name=name)
            else:
                self.compare(self.norm(False, name), self.norm(True, name), self.directions[name])

    def compare(self, old: _Schema, new: _Schema, where: frozenset[str]) -> None:
        at = new.at
        if self.docs and (old.description or "") != (new.description or ""):
            self.emit("description", at)
        if old.ref != new.ref:
            if old.ref and new.ref:
                self.emit("ref-target", at, old=old.ref, new=new.ref)
                return
            # A reference on one side, an inline schema on the other: compare what they mean.
            if not self.compare_expanded(old, new, where):
                shown = [f"`$ref {n.ref}`" if n.ref else "an inline schema" for n in (old, new)]
                self.emit("ref-inline", at, old=shown[0], new=shown[1])
            return
        if old.nullable != new.nullable:
            self.emit("nullable-added" if new.nullable else "nullable-removed", at, where)
        if _canon(_opt(old.default), strip=False) != _canon(_opt(new.default), strip=False):
            self.emit("default", at, old=_show(old.default), new=_show(new.default))
        if old.deprecated != new.deprecated:
            self.emit("deprecated", at, state="now" if new.deprecated else "no longer")
        if bool(old.variants) != bool(new.variants):
            # One side is a union, the other a single schema: compare it as a union of one.
            self.compare_union(_as_union(old), _as_union(new), where, at)
            return
        self.compare_types(old, new, where, at)
        self.compare_enum(old, new, where, at)
        self.compare_properties(old, new, where)
        if old.items and new.items:
            self.compare(old.items, new.items, where)
        elif old.items or new.items:
            self.emit("items-added" if new.items else "items-removed", at, where)
        self.compare_additional(old, new, where, at)
        if old.variants and new.variants:
            self.compare_union(old, new, where, at)
        self.compare_all_of(old, new, where, at)
        if old.discriminator != new.discriminator:
            self.emit("discriminator", at, old=_show_canon(old.discriminator), new=_show_canon(new.discriminator))
        for tag in sorted({*old.mapping, *new.mapping}):
            a, b = old.mapping.get(tag), new.mapping.get(tag)
            pointer = f"{at}/discriminator/mapping/{escape(tag)}"
            if a is None:
                self.emit("mapping-added", pointer, tag=tag, new=_show_canon(b))
            elif b is None:
                self.emit("mapping-removed", pointer, tag=tag, old=_show_canon(a))
            elif a != b:
                self.emit("mapping-moved", pointer, tag=tag, old=_show_canon(a), new=_show_canon(b))
        self.compare_keywords(old, new, where, at)

    def compare_expanded(self, old: _Schema, new: _Schema, where: frozenset[str]) -> bool:
        """Compare a bare $ref with an inline schema by expanding the reference; False if not possible."""
        pair = (old.ref, new.ref)
        if pair in self._expanding:
            return False
        if old.ref and not old.structural() and old.ref in self.old_schemas:
            bare, side = old, False
        elif new.ref and not new.structural() and new.ref in self.new_schemas:
            bare, side = new, True
        else:
            return False
        target = self.norm(side, bare.ref)
        expanded = _Schema(**{**vars(target), "at": bare.at})
        expanded.nullable = target.nullable or bare.nullable
        if bare.default is not _ABSENT:
            expanded.default = bare.default
        self._expanding.add(pair)
        try:
            self.compare(old, expanded, where) if side else self.compare(expanded, new, where)
        finally:
            self._expanding.discard(pair)
        return True

    def compare_types(self, old: _Schema, new: _Schema, where: frozenset[str], at: str) -> None:
        if old.types == new.types:
            return
        if not new.types or (old.types and new.types > old.types):
            rule = "types-widened"
        elif not old.types or new.types < old.types:
            rule = "types-narrowed"
        else:
            rule = "types-changed"
        self.emit(rule, at, where, old=_types(old.types), new=_types(new.types))

    def compare_enum(self, old: _Schema, new: _Schema, where: frozenset[str], at: str) -> None:
        if old.enum is None and new.enum is None:
            return
        if old.enum is None or new.enum is None:
            listed = ", ".join(sorted(new.enum or old.enum or {}))
            self.emit("enum-restricted" if new.enum is not None else "enum-unrestricted", at, where, values=listed)
            return
        for key in sorted(new.enum.keys() - old.enum.keys()):
            self.emit("enum-value-added", at, where, value=key)
        for key in sorted(old.enum.keys() - new.enum.keys()):
            self.emit("enum-value-removed", at, where, value=key)

    def compare_properties(self, old: _Schema, new: _Schema, where: frozenset[str]) -> None:
        for name in sorted({*old.properties, *new.properties}):
            a, b = old.properties.get(name), new.properties.get(name)
            if b is None:
                assert a is not None
                self.emit("property-removed", a.at, where, name=name)
            elif a is None:
                rule = "property-added-required" if name in new.required else "property-added-optional"
                self.emit(rule, b.at, where, name=name)
            else:
                self.compare(a, b, where)
        for name in sorted(new.required - old.required):
            if name in old.properties or name not in new.properties:
                where_at = new.properties[name].at if name in new.properties else f"{new.base}/required"
                self.emit("required-added", where_at, where, name=name)
        for name in sorted(old.required - new.required):
            if name in new.properties:
                self.emit("required-removed", new.properties[name].at, where, name=name)
            elif name not in old.properties:
                self.emit("required-removed-unlisted", new.base, where, name=name)

    def compare_additional(self, old: _Schema, new: _Schema, where: frozenset[str], at: str) -> None:
        a, b = old.additional, new.additional
        if isinstance(a, _Schema) and isinstance(b, _Schema):
            self.compare(a, b, where)
            return
        # Rank how much each spelling lets through: false < a schema < true (or absent).
        rank = {False: 0, True: 2}
        ra = 1 if isinstance(a, _Schema) else rank.get(a, 2)
        rb = 1 if isinstance(b, _Schema) else rank.get(b, 2)
        if ra != rb:
            shown = ("no additional properties", "additional properties of one schema", "any additional properties")
            rule = "additional-narrowed" if rb < ra else "additional-widened"
            self.emit(rule, at, where, old=shown[ra], new=shown[rb])

    def compare_union(self, old: _Schema, new: _Schema, where: frozenset[str], at: str) -> None:
        if old.union_kind != new.union_kind and old.union_kind and new.union_kind:
            self.emit("union-keyword", at, old=old.union_kind, new=new.union_kind)
        a = _variant_keys(self.flatten(old.variants, old.union_kind, False))
        b = _variant_keys(self.flatten(new.variants, new.union_kind, True))
        for key in sorted(b.keys() - a.keys()):
            self.emit("variant-added", b[key].at, where, key=key)
        for key in sorted(a.keys() - b.keys()):
            self.emit("variant-removed", a[key].at, where, key=key)
        for key in sorted(a.keys() & b.keys()):
            self.compare(a[key], b[key], where)

    def flatten(self, variants: list[_Schema], kind: str | None, new: bool) -> list[_Schema]:
        """Members that refer to a plain union of the same kind stand for that union's members: grouping
        variants under a named union (messages by role, say) accepts the same values."""
        out: list[_Schema] = []
        for v in variants:
            schemas = self.new_schemas if new else self.old_schemas
            target = self.norm(new, v.ref) if v.ref and not v.structural() and v.ref in schemas else None
            plain = target is not None and target.union_kind == kind and not target.properties and not target.types
            if plain and all(m.ref and not m.structural() for m in target.variants):
                out += [_Schema(**{**vars(m), "at": v.at}) for m in target.variants]
            else:
                out.append(v)
        return out

    def compare_all_of(self, old: _Schema, new: _Schema, where: frozenset[str], at: str) -> None:
        a, b = _variant_keys(old.all_of), _variant_keys(new.all_of)
        for key in sorted(b.keys() - a.keys()):
            self.emit("all-of-added", b[key].at, key=key)
        for key in sorted(a.keys() - b.keys()):
            self.emit("all-of-removed", a[key].at, key=key)
        for key in sorted(a.keys() & b.keys()):
            self.compare(a[key], b[key], where)

    def compare_keywords(self, old: _Schema, new: _Schema, where: frozenset[str], at: str) -> None:
        for key in sorted({*old.keywords, *new.keywords}):
            a, b = old.keywords.get(key), new.keywords.get(key)
            if a == b:
                continue
            tighter = _tighter(key, a, b)
            rule = "keyword-changed" if tighter is None else "keyword-tightened" if tighter else "keyword-loosened"
            self.emit(rule, at, where, key=key, old=_show_canon(a), new=_show_canon(b))

    # paths

    def compare_paths(self) -> None:
        old_paths, new_paths = (
            d.get("paths") if isinstance(d.get("paths"), dict) else {} for d in (self.old, self.new)
        )
        for path in sorted({*old_paths, *new_paths}):
            pointer = f"/paths/{escape(path)}"
            if path not in new_paths:
                self.emit("path-removed", pointer, path=path)
            elif path not in old_paths:
                item = self.deref_new(new_paths[path])
                methods = [m.upper() for m in HTTP_METHODS if isinstance(item.get(m), dict)]
                detail = f" ({', '.join(methods)}{_added_by(*(item[m.lower()] for m in methods))})" if methods else ""
                self.emit("path-added", pointer, path=path, detail=detail)
            else:
                self.compare_path_item(self.deref_old(old_paths[path]), self.deref_new(new_paths[path]), path, pointer)

    def compare_path_item(self, old: dict, new: dict, path: str, pointer: str) -> None:
        self.compare_extensions(old, new, pointer)
        self.compare_parameters(old.get("parameters"), new.get("parameters"), f"{pointer}/parameters", path)
        for method in HTTP_METHODS:
            at = f"{pointer}/{method}"
            op = f"{method.upper()} {path}"
            if method in old and method not in new:
                self.emit("operation-removed", at, op=op)
            elif method in new and method not in old:
                by = _added_by(new[method])
                self.emit("operation-added", at, op=op, detail=f" ({by.removeprefix('; ')})" if by else "")
            elif method in new:
                self.compare_operation(old[method], new[method], at, op)

    def compare_operation(self, old: dict, new: dict, at: str, op: str) -> None:
        if old.get("operationId") != new.get("operationId"):
            old_id, new_id = (_show(d.get("operationId", _ABSENT)) for d in (old, new))
            self.emit("operation-id", f"{at}/operationId", op=op, old=old_id, new=new_id)
        if self.docs:
            for key in ("summary", "description"):
                if old.get(key) != new.get(key):
                    self.emit("operation-text", f"{at}/{key}", key=key, op=op)
        if old.get("deprecated", False) != new.get("deprecated", False):
            self.emit("operation-deprecated", at, op=op, state="now" if new.get("deprecated") else "no longer")
        if "security" in old or "security" in new:
            self.compare_requirements(old.get("security"), new.get("security"), f"{at}/security", op)
        self.compare_extensions(old, new, at)
        self.compare_parameters(old.get("parameters"), new.get("parameters"), f"{at}/parameters", op)
        self.compare_request_body(old.get("requestBody"), new.get("requestBody"), f"{at}/requestBody", op)
        old_responses = old.get("responses") or {}
        new_responses = new.get("responses") or {}
        for status in sorted({*old_responses, *new_responses}, key=str):
            pointer = f"{at}/responses/{escape(str(status))}"
            if status not in new_responses:
                self.emit("response-removed", pointer, status=status, op=op)
            elif status not in old_responses:
                kind = "error-response-added" if str(status)[:1] in "45" else "response-added"
                self.emit(kind, pointer, status=status, op=op)
            else:
                a, b = self.deref_old(old_responses[status]), self.deref_new(new_responses[status])
                if self.docs and a.get("description") != b.get("description"):
                    self.emit("response-description", f"{pointer}/description", status=status)
                self.compare_content(a.get("content"), b.get("content"), pointer, frozenset({RESPONSE}))
                if _canon(a.get("headers")) != _canon(b.get("headers")):
                    self.emit("response-headers", f"{pointer}/headers", status=status)

    def compare_parameters(self, old: Any, new: Any, at: str, op: str) -> None:
        def keyed(params: Any, deref: Any) -> dict[tuple[str, str], tuple[int, dict]]:
            out = {}
            for i, p in enumerate(params or []):
                p = deref(p)
                if isinstance(p, dict):
                    out[(str(p.get("in")), str(p.get("name")))] = (i, p)
            return out

        a, b = keyed(old, self.deref_old), keyed(new, self.deref_new)
        request = frozenset({REQUEST})
        for key in sorted({*a, *b}):
            label = f"{key[0]} parameter `{key[1]}` of {op}"
            if key not in b:
                self.emit("parameter-removed", f"{at}/{a[key][0]}", label=label)
                continue
            i, p = b[key]
            if key not in a:
                required = p.get("required") is True
                self.emit(
                    "parameter-added-required" if required else "parameter-added-optional", f"{at}/{i}", label=label
                )
                continue
            q = a[key][1]
            if q.get("required", False) != p.get("required", False):
                rule = "parameter-required" if p.get("required") else "parameter-optional"
                self.emit(rule, f"{at}/{i}", request, label=label)
            if "schema" in q and "schema" in p:
                self.compare(
                    _normalise(q["schema"], f"{at}/{a[key][0]}/schema"),
                    _normalise(p["schema"], f"{at}/{i}/schema"),
                    request,
                )
            self.compare_content(q.get("content"), p.get("content"), f"{at}/{i}", request)

    def compare_request_body(self, old: Any, new: Any, at: str, op: str) -> None:
        old, new = self.deref_old(old), self.deref_new(new)
        if not old and not new:
            return
        if not new:
            self.emit("body-removed", at, op=op)
            return
        if not old:
            self.emit("body-added-required" if new.get("required") is True else "body-added-optional", at, op=op)
            return
        if old.get("required", False) != new.get("required", False):
            self.emit("body-required" if new.get("required") is True else "body-optional", at, op=op)
        self.compare_content(old.get("content"), new.get("content"), at, frozenset({REQUEST}))

    def compare_content(self, old: Any, new: Any, at: str, where: frozenset[str]) -> None:
        old, new = old or {}, new or {}
        side = "request" if REQUEST in where else "response"
        for media in sorted({*old, *new}):
            pointer = f"{at}/content/{escape(media)}"
            if media not in new:
                self.emit("media-type-removed", pointer, where, side=side, media=media)
            elif media not in old:
                self.emit("media-type-added", pointer, where, side=side, media=media)
            else:
                a, b = (old[media] or {}).get("schema"), (new[media] or {}).get("schema")
                if a is not None and b is not None:
                    self.compare(_normalise(a, f"{pointer}/schema"), _normalise(b, f"{pointer}/schema"), where)
                elif a is not None or b is not None:
                    self.emit("media-schema", f"{pointer}/schema", media=media, state="added" if b else "removed")

    def deref_old(self, node: Any) -> Any:
        return _deref_component(node, self.old)

    def deref_new(self, node: Any) -> Any:
        return _deref_component(node, self.new)


# --- helpers ---------------------------------------------------------------------------------------


def _deref_component(node: Any, doc: dict) -> Any:
    """Follow local `$ref`s to non-schema components (responses, request bodies, parameters, path items)."""
    target = deref(node, doc)
    return target if isinstance(target, dict) and "$ref" not in target else {}


def _refs(node: Any) -> Iterator[str]:
    stack = [node]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and ref.startswith(REF_PREFIX):
                yield unescape(ref[len(REF_PREFIX) :].split("/")[0])
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def _directions(doc: dict) -> dict[str, set[str]]:
    """For each component schema: whether it travels in requests, responses, or both."""
    seeds: dict[str, list[Any]] = {REQUEST: [], RESPONSE: []}
    for item in (doc.get("paths") if isinstance(doc.get("paths"), dict) else {}).values():
        item = _deref_component(item, doc)
        if not isinstance(item, dict):
            continue
        seeds[REQUEST].append([_deref_component(p, doc) for p in item.get("parameters") or []])
        for key, value in item.items():
            if key in HTTP_METHODS and isinstance(value, dict):
                seeds[REQUEST].append([_deref_component(p, doc) for p in value.get("parameters") or []])
                seeds[REQUEST].append(_deref_component(value.get("requestBody"), doc))
                seeds[RESPONSE].append([_deref_component(r, doc) for r in (value.get("responses") or {}).values()])
            elif key.startswith("x-") and isinstance(value, dict):
                # Message schemas of other transports (e.g. x-openresponses-websocket): client* ones are requests.
                for name, part in value.items():
                    seeds[REQUEST if name.lower().startswith("client") else RESPONSE].append(part)
    schemas = {n: s.node for n, s in build(doc).schemas.items()}
    found: dict[str, set[str]] = {}
    for direction, roots in seeds.items():
        todo = list(_refs(roots))
        while todo:
            name = todo.pop()
            if direction in found.setdefault(name, set()):
                continue
            found[name].add(direction)
            todo.extend(_refs(schemas.get(name)))
    return found


def _as_union(node: _Schema) -> _Schema:
    if node.variants:
        return node
    single = _Schema(**{**vars(node), "nullable": False, "default": _ABSENT, "description": None})
    return _Schema(node.at, node.base, union_kind=None, variants=[single])


def _tighter(key: str, old: str | None, new: str | None) -> bool | None:
    """True if going from old to new tightens keyword `key`, False if it loosens, None if unclear."""
    a = json.loads(old) if old is not None else None
    b = json.loads(new) if new is not None else None
    if key in _FLAGS:
        return bool(b) if bool(a) != bool(b) else None
    if key in _UPPER | _LOWER or key in ("pattern", "format", "multipleOf", "propertyNames", "not", "contains"):
        if a is None:
            return True
        if b is None:
            return False
        if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
            return b < a if key in _UPPER else b > a if key in _LOWER else None
    return None


def _opt(value: Any) -> Any:
    return None if value is _ABSENT else ["set", value]


def _show(value: Any) -> str:
    return "(none)" if value is _ABSENT else _fmt(value)


def _show_canon(value: str | None) -> str:
    return "(none)" if value is None else f"`{value}`"


def _descriptions(value: Any) -> str:
    if isinstance(value, dict):
        return json.dumps(
            {k: _descriptions(v) for k, v in value.items() if k == "description" or isinstance(v, dict | list)}
        )
    if isinstance(value, list):
        return json.dumps([_descriptions(v) for v in value])
    return json.dumps(value)


def _scheme(scheme: Any) -> str:
    if not isinstance(scheme, dict):
        return _fmt(scheme)
    parts = [f"{k}: {scheme[k]}" for k in ("type", "scheme", "in", "name", "bearerFormat") if k in scheme]
    return ", ".join(parts) or "empty"


def _requirements(value: Any) -> Any:
    """Security requirements as a sorted list (alternatives are unordered); absent is 'none'."""
    if not isinstance(value, list):
        return []
    return sorted(
        _canon({k: sorted(v) if isinstance(v, list) else v for k, v in r.items()}) for r in value if isinstance(r, dict)
    )


def _show_req(value: Any) -> str:
    if not isinstance(value, list) or not value:
        return "(none)"
    alternatives = [" + ".join(sorted(r)) or "anonymous" for r in value if isinstance(r, dict)]
    return "`" + " or ".join(alternatives) + "`"
