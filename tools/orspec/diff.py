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

`RULES` below states, for every kind, which effect applies.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jsonpointer import escape

from .bundle import bundle

__all__ = ["FORMATS", "RULES", "Change", "diff_documents", "diff_specs", "render"]

FORMATS = ("text", "md", "json")

#: kind -> how it is classified (see the module docstring for widen / narrow).
RULES: dict[str, str] = {
    "schema-added": "not breaking (what matters is who refers to it, reported separately)",
    "schema-removed": "breaks clients",
    "property-added": "optional: breaks servers in requests (they must accept it), nothing in responses "
    "(clients ignore unknown fields); required: breaks clients and servers in requests, servers in responses",
    "property-removed": "breaks clients",
    "required-added": "narrow: breaks clients in requests (they must now send it), servers in responses",
    "required-removed": "widen: breaks servers in requests, clients in responses (the field may now be missing)",
    "type-changed": "widen if types were only added, narrow if only removed, otherwise (or a different $ref) "
    "breaks both",
    "nullable-changed": "became nullable: widen; no longer nullable: narrow",
    "enum-value-added": "widen: breaks servers in requests, clients in responses (exhaustive switches)",
    "enum-value-removed": "narrow: breaks clients in requests, servers in responses",
    "variant-added": "widen (a new oneOf/anyOf member)",
    "variant-removed": "narrow",
    "composition-changed": "an allOf member added or removed: breaks both",
    "default-changed": "breaks both (behaviour when the field is omitted changes)",
    "discriminator-changed": "breaks both",
    "mapping-changed": "a discriminator mapping entry added: not breaking (it states what the variants already say); "
    "removed: breaks clients (generated code falls back to reading the tag as a schema name); "
    "pointed at another schema: breaks both",
    "constraint-changed": "tightened (lower max, higher min, new pattern, enum or limit): narrow; loosened: widen; "
    "otherwise both",
    "deprecated-changed": "not breaking",
    "description-changed": "not breaking (reported only with docs=True)",
    "path-added": "not breaking",
    "path-removed": "breaks clients",
    "operation-added": "not breaking",
    "operation-removed": "breaks clients",
    "operation-id-changed": "not breaking on the wire (generated client method names may change)",
    "parameter-added": "optional: breaks servers; required: breaks both",
    "parameter-removed": "breaks clients",
    "request-body-added": "optional: breaks servers; required: breaks both",
    "request-body-removed": "breaks clients",
    "response-added": "widen in responses: breaks clients (a new status to handle)",
    "response-removed": "breaks servers (they may still send it)",
    "media-type-added": "widen: breaks servers for request bodies, clients for responses",
    "media-type-removed": "breaks clients; for responses also servers",
    "security-scheme-added": "not breaking by itself (a requirement change is reported separately)",
    "security-scheme-removed": "breaks clients",
    "security-scheme-changed": "breaks both",
    "security-requirement-changed": "breaks both",
    "servers-changed": "breaks clients (the base URL they were told to use changed)",
    "info-changed": "not breaking",
    "extension-added": "not breaking (vendor extension outside schemas)",
    "extension-removed": "not breaking",
    "extension-changed": "not breaking",
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
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
SCHEMA_PREFIX = "#/components/schemas/"

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


def diff_specs(old_path: Path, new_path: Path, docs: bool = False) -> list[Change]:
    """Bundle two specs (directories or single files) and diff them. Raises SpecError on bad input."""
    return diff_documents(bundle(Path(old_path)).document, bundle(Path(new_path)).document, docs=docs)


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


# --- classification ---------------------------------------------------------------------------------


def _widen(where: frozenset[str]) -> tuple[bool, bool]:
    """The valid set grew: whoever receives the value breaks."""
    return RESPONSE in where, REQUEST in where


def _narrow(where: frozenset[str]) -> tuple[bool, bool]:
    """The valid set shrank: whoever sends the value breaks."""
    return REQUEST in where, RESPONSE in where


_BOTH_BREAK = (True, True)
_CLIENTS = (True, False)
_SERVERS = (False, True)
_NONE = (False, False)


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
    mapping: dict[str, str] = field(default_factory=dict)  # tag value -> schema (short name)
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
            node.ref = value.removeprefix(SCHEMA_PREFIX) if value.startswith(SCHEMA_PREFIX) else value
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
    if isinstance(value, str) and value.startswith(SCHEMA_PREFIX):
        return value[len(SCHEMA_PREFIX) :]
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
    def __init__(self, old: dict, new: dict, docs: bool):
        self.old, self.new, self.docs = old, new, docs
        self.changes: list[Change] = []
        self.old_schemas = _schemas(old)
        self.new_schemas = _schemas(new)
        old_dirs, new_dirs = _directions(old), _directions(new)
        self.directions = {
            name: frozenset(old_dirs.get(name, set()) | new_dirs.get(name, set())) or BOTH
            for name in {*self.old_schemas, *self.new_schemas}
        }
        self._norm_old: dict[str, _Schema] = {}
        self._norm_new: dict[str, _Schema] = {}
        self._expanding: set[tuple[str | None, str | None]] = set()

    def add(self, pointer: str, kind: str, message: str, effect: tuple[bool, bool]) -> None:
        self.changes.append(Change(pointer, kind, message, *effect))

    def run(self) -> None:
        self.compare_meta()
        self.compare_security()
        self.compare_schemas()
        self.compare_paths()

    # top level

    def compare_meta(self) -> None:
        old, new = self.old, self.new
        if old.get("openapi") != new.get("openapi"):
            self.add("/openapi", "info-changed", f"OpenAPI version {old.get('openapi')} -> {new.get('openapi')}", _NONE)
        if _canon(old.get("servers")) != _canon(new.get("servers")):
            urls = [[s.get("url") for s in d.get("servers") or [] if isinstance(s, dict)] for d in (old, new)]
            self.add("/servers", "servers-changed", f"servers {_fmt(urls[0])} -> {_fmt(urls[1])}", _CLIENTS)
        old_info, new_info = old.get("info") or {}, new.get("info") or {}
        for key in sorted({*old_info, *new_info}):
            a, b = old_info.get(key, _ABSENT), new_info.get(key, _ABSENT)
            if key == "description":
                if self.docs and a != b:
                    self.add("/info/description", "description-changed", "API description changed", _NONE)
            elif key not in ANNOTATIONS and _canon(_opt(a)) != _canon(_opt(b)):
                self.add(f"/info/{escape(key)}", "info-changed", f"info `{key}` {_show(a)} -> {_show(b)}", _NONE)
        self.compare_extensions(old, new, "")

    def compare_extensions(self, old: dict, new: dict, at: str) -> None:
        keys = {k for k in (*old, *new) if isinstance(k, str) and k.startswith("x-") and k not in ANNOTATIONS}
        for key in sorted(keys):
            pointer = f"{at}/{escape(key)}"
            if key not in new:
                self.add(pointer, "extension-removed", f"extension `{key}` removed", _NONE)
            elif key not in old:
                self.add(pointer, "extension-added", f"extension `{key}` added", _NONE)
            elif _canon(_short_refs(old[key])) != _canon(_short_refs(new[key])):
                self.add(pointer, "extension-changed", f"extension `{key}` changed", _NONE)
            elif self.docs and _descriptions(old[key]) != _descriptions(new[key]):
                self.add(pointer, "description-changed", f"description of extension `{key}` changed", _NONE)

    def compare_security(self) -> None:
        old_schemes = (self.old.get("components") or {}).get("securitySchemes") or {}
        new_schemes = (self.new.get("components") or {}).get("securitySchemes") or {}
        for name in sorted({*old_schemes, *new_schemes}):
            pointer = f"/components/securitySchemes/{escape(name)}"
            if name not in new_schemes:
                self.add(pointer, "security-scheme-removed", f"security scheme `{name}` removed", _CLIENTS)
            elif name not in old_schemes:
                self.add(
                    pointer,
                    "security-scheme-added",
                    f"security scheme `{name}` added ({_scheme(new_schemes[name])})",
                    _NONE,
                )
            elif _canon(old_schemes[name]) != _canon(new_schemes[name]):
                message = (
                    f"security scheme `{name}` changed: {_scheme(old_schemes[name])} -> {_scheme(new_schemes[name])}"
                )
                self.add(pointer, "security-scheme-changed", message, _BOTH_BREAK)
            elif self.docs and old_schemes[name].get("description") != new_schemes[name].get("description"):
                self.add(pointer, "description-changed", f"description of security scheme `{name}` changed", _NONE)
        self.compare_requirements(self.old.get("security"), self.new.get("security"), "/security", "document")

    def compare_requirements(self, old: Any, new: Any, pointer: str, scope: str) -> None:
        if _canon(_requirements(old)) != _canon(_requirements(new)):
            message = f"{scope} security requirement {_show_req(old)} -> {_show_req(new)}"
            self.add(pointer, "security-requirement-changed", message, _BOTH_BREAK)

    # schemas

    def norm_old(self, name: str) -> _Schema:
        if name not in self._norm_old:
            self._norm_old[name] = _normalise(self.old_schemas[name], f"/components/schemas/{escape(name)}")
        return self._norm_old[name]

    def norm_new(self, name: str) -> _Schema:
        if name not in self._norm_new:
            self._norm_new[name] = _normalise(self.new_schemas[name], f"/components/schemas/{escape(name)}")
        return self._norm_new[name]

    def compare_schemas(self) -> None:
        for name in sorted({*self.old_schemas, *self.new_schemas}):
            pointer = f"/components/schemas/{escape(name)}"
            if name not in self.new_schemas:
                self.add(pointer, "schema-removed", f"schema `{name}` removed", _CLIENTS)
            elif name not in self.old_schemas:
                self.add(pointer, "schema-added", f"schema `{name}` added", _NONE)
            else:
                self.compare(self.norm_old(name), self.norm_new(name), self.directions[name])

    def compare(self, old: _Schema, new: _Schema, where: frozenset[str]) -> None:
        at = new.at
        if self.docs and (old.description or "") != (new.description or ""):
            self.add(at, "description-changed", "description changed", _NONE)
        if old.ref != new.ref:
            if old.ref and new.ref:
                self.add(at, "type-changed", f"refers to `{new.ref}` instead of `{old.ref}`", _BOTH_BREAK)
                return
            # A reference on one side, an inline schema on the other: compare what they mean.
            if not self.compare_expanded(old, new, where):
                shown = [f"`$ref {n.ref}`" if n.ref else "an inline schema" for n in (old, new)]
                self.add(at, "type-changed", f"was {shown[0]}, now {shown[1]}", _BOTH_BREAK)
            return
        if old.nullable != new.nullable:
            message = "now nullable" if new.nullable else "no longer nullable"
            self.add(at, "nullable-changed", message, _widen(where) if new.nullable else _narrow(where))
        if _canon(_opt(old.default), strip=False) != _canon(_opt(new.default), strip=False):
            self.add(at, "default-changed", f"default {_show(old.default)} -> {_show(new.default)}", _BOTH_BREAK)
        if old.deprecated != new.deprecated:
            self.add(at, "deprecated-changed", "now deprecated" if new.deprecated else "no longer deprecated", _NONE)
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
            effect = _narrow(where) if new.items else _widen(where)
            self.add(at, "constraint-changed", "`items` schema " + ("added" if new.items else "removed"), effect)
        self.compare_additional(old, new, where, at)
        if old.variants and new.variants:
            self.compare_union(old, new, where, at)
        self.compare_all_of(old, new, where, at)
        if old.discriminator != new.discriminator:
            self.add(
                at,
                "discriminator-changed",
                f"discriminator {_show_canon(old.discriminator)} -> {_show_canon(new.discriminator)}",
                _BOTH_BREAK,
            )
        self.compare_mapping(old, new, at)
        self.compare_keywords(old, new, where, at)

    def compare_mapping(self, old: _Schema, new: _Schema, at: str) -> None:
        """Each discriminator value whose mapping entry appeared, disappeared or moved."""
        for tag in sorted({*old.mapping, *new.mapping}):
            a, b = old.mapping.get(tag), new.mapping.get(tag)
            pointer = f"{at}/discriminator/mapping/{escape(tag)}"
            if a is None:
                self.add(pointer, "mapping-changed", f"mapping `{tag}` -> {_show_canon(b)} added", _NONE)
            elif b is None:
                self.add(pointer, "mapping-changed", f"mapping `{tag}` -> {_show_canon(a)} removed", _CLIENTS)
            elif a != b:
                self.add(
                    pointer, "mapping-changed", f"mapping `{tag}` {_show_canon(a)} -> {_show_canon(b)}", _BOTH_BREAK
                )

    def compare_expanded(self, old: _Schema, new: _Schema, where: frozenset[str]) -> bool:
        """Compare a bare $ref with an inline schema by expanding the reference; False if not possible."""
        pair = (old.ref, new.ref)
        if pair in self._expanding:
            return False
        if old.ref and not old.structural() and old.ref in self.old_schemas:
            target = self.norm_old(old.ref)
            expanded = _Schema(**{**vars(target), "at": old.at})
            expanded.nullable = target.nullable or old.nullable
            if old.default is not _ABSENT:
                expanded.default = old.default
        elif new.ref and not new.structural() and new.ref in self.new_schemas:
            target = self.norm_new(new.ref)
            expanded = _Schema(**{**vars(target), "at": new.at})
            expanded.nullable = target.nullable or new.nullable
            if new.default is not _ABSENT:
                expanded.default = new.default
        else:
            return False
        self._expanding.add(pair)
        try:
            if old.ref:
                self.compare(expanded, new, where)
            else:
                self.compare(old, expanded, where)
        finally:
            self._expanding.discard(pair)
        return True

    def compare_types(self, old: _Schema, new: _Schema, where: frozenset[str], at: str) -> None:
        if old.types == new.types:
            return
        if not new.types or (old.types and new.types > old.types):
            effect = _widen(where)
        elif not old.types or new.types < old.types:
            effect = _narrow(where)
        else:
            effect = _BOTH_BREAK
        self.add(at, "type-changed", f"type {_types(old.types)} -> {_types(new.types)}", effect)

    def compare_enum(self, old: _Schema, new: _Schema, where: frozenset[str], at: str) -> None:
        if old.enum is None and new.enum is None:
            return
        if old.enum is None or new.enum is None:
            values = new.enum or old.enum or {}
            listed = ", ".join(sorted(values))
            if new.enum is not None:
                self.add(at, "constraint-changed", f"now restricted to enum [{listed}]", _narrow(where))
            else:
                self.add(at, "constraint-changed", f"enum [{listed}] restriction removed", _widen(where))
            return
        for key in sorted(new.enum.keys() - old.enum.keys()):
            self.add(at, "enum-value-added", f"enum value `{key}` added", _widen(where))
        for key in sorted(old.enum.keys() - new.enum.keys()):
            self.add(at, "enum-value-removed", f"enum value `{key}` removed", _narrow(where))

    def compare_properties(self, old: _Schema, new: _Schema, where: frozenset[str]) -> None:
        for name in sorted({*old.properties, *new.properties}):
            a, b = old.properties.get(name), new.properties.get(name)
            if b is None:
                assert a is not None
                self.add(a.at, "property-removed", f"property `{name}` removed", _CLIENTS)
            elif a is None:
                if name in new.required:
                    effect = (REQUEST in where, True)
                    self.add(b.at, "property-added", f"required property `{name}` added", effect)
                else:
                    self.add(b.at, "property-added", f"optional property `{name}` added", (False, REQUEST in where))
            else:
                self.compare(a, b, where)
        for name in sorted(new.required - old.required):
            if name in old.properties or name not in new.properties:
                where_at = new.properties[name].at if name in new.properties else f"{new.base}/required"
                self.add(where_at, "required-added", f"property `{name}` is now required", _narrow(where))
        for name in sorted(old.required - new.required):
            if name in new.properties:
                self.add(
                    new.properties[name].at, "required-removed", f"property `{name}` is now optional", _widen(where)
                )
            elif name not in old.properties:
                self.add(f"{new.base}", "required-removed", f"`{name}` is no longer required", _widen(where))

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
            shown = {
                0: "no additional properties",
                1: "additional properties of one schema",
                2: "any additional properties",
            }
            effect = _narrow(where) if rb < ra else _widen(where)
            self.add(at, "constraint-changed", f"{shown[ra]} -> {shown[rb]}", effect)

    def compare_union(self, old: _Schema, new: _Schema, where: frozenset[str], at: str) -> None:
        if old.union_kind != new.union_kind and old.union_kind and new.union_kind:
            self.add(at, "constraint-changed", f"`{old.union_kind}` became `{new.union_kind}`", _BOTH_BREAK)
        a = _variant_keys(self.flatten(old.variants, old.union_kind, self.old_schemas, self.norm_old))
        b = _variant_keys(self.flatten(new.variants, new.union_kind, self.new_schemas, self.norm_new))
        for key in sorted(b.keys() - a.keys()):
            self.add(b[key].at, "variant-added", f"variant {key} added", _widen(where))
        for key in sorted(a.keys() - b.keys()):
            self.add(a[key].at, "variant-removed", f"variant {key} removed", _narrow(where))
        for key in sorted(a.keys() & b.keys()):
            self.compare(a[key], b[key], where)

    def flatten(self, variants: list[_Schema], kind: str | None, schemas: dict, norm: Any) -> list[_Schema]:
        """Members that refer to a plain union of the same kind stand for that union's members: grouping
        variants under a named union (messages by role, say) accepts the same values."""
        out: list[_Schema] = []
        for v in variants:
            target = norm(v.ref) if v.ref and not v.structural() and v.ref in schemas else None
            plain = target is not None and target.union_kind == kind and not target.properties and not target.types
            if plain and all(m.ref and not m.structural() for m in target.variants):
                out += [_Schema(**{**vars(m), "at": v.at}) for m in target.variants]
            else:
                out.append(v)
        return out

    def compare_all_of(self, old: _Schema, new: _Schema, where: frozenset[str], at: str) -> None:
        a, b = _variant_keys(old.all_of), _variant_keys(new.all_of)
        for key in sorted(b.keys() - a.keys()):
            self.add(b[key].at, "composition-changed", f"allOf member {key} added", _BOTH_BREAK)
        for key in sorted(a.keys() - b.keys()):
            self.add(a[key].at, "composition-changed", f"allOf member {key} removed", _BOTH_BREAK)
        for key in sorted(a.keys() & b.keys()):
            self.compare(a[key], b[key], where)

    def compare_keywords(self, old: _Schema, new: _Schema, where: frozenset[str], at: str) -> None:
        for key in sorted({*old.keywords, *new.keywords}):
            a, b = old.keywords.get(key), new.keywords.get(key)
            if a == b:
                continue
            tighter = _tighter(key, a, b)
            effect = _BOTH_BREAK if tighter is None else _narrow(where) if tighter else _widen(where)
            self.add(at, "constraint-changed", f"`{key}` {_show_canon(a)} -> {_show_canon(b)}", effect)

    # paths

    def compare_paths(self) -> None:
        old_paths, new_paths = (
            d.get("paths") if isinstance(d.get("paths"), dict) else {} for d in (self.old, self.new)
        )
        for path in sorted({*old_paths, *new_paths}):
            pointer = f"/paths/{escape(path)}"
            if path not in new_paths:
                self.add(pointer, "path-removed", f"path `{path}` removed", _CLIENTS)
            elif path not in old_paths:
                self.add(pointer, "path-added", f"path `{path}` added", _NONE)
            else:
                self.compare_path_item(self.deref_old(old_paths[path]), self.deref_new(new_paths[path]), path, pointer)

    def compare_path_item(self, old: dict, new: dict, path: str, pointer: str) -> None:
        self.compare_extensions(old, new, pointer)
        self.compare_parameters(old.get("parameters"), new.get("parameters"), f"{pointer}/parameters", path)
        for method in HTTP_METHODS:
            at = f"{pointer}/{method}"
            where = f"{method.upper()} {path}"
            if method in old and method not in new:
                self.add(at, "operation-removed", f"operation {where} removed", _CLIENTS)
            elif method in new and method not in old:
                self.add(at, "operation-added", f"operation {where} added", _NONE)
            elif method in new:
                self.compare_operation(old[method], new[method], at, where)

    def compare_operation(self, old: dict, new: dict, at: str, where: str) -> None:
        if old.get("operationId") != new.get("operationId"):
            message = f"operationId of {where} {_show(old.get('operationId', _ABSENT))} -> {_show(new.get('operationId', _ABSENT))}"
            self.add(f"{at}/operationId", "operation-id-changed", message, _NONE)
        if self.docs:
            for key in ("summary", "description"):
                if old.get(key) != new.get(key):
                    self.add(f"{at}/{key}", "description-changed", f"{key} of {where} changed", _NONE)
        if old.get("deprecated", False) != new.get("deprecated", False):
            self.add(
                at, "deprecated-changed", f"{where} {'now' if new.get('deprecated') else 'no longer'} deprecated", _NONE
            )
        if "security" in old or "security" in new:
            self.compare_requirements(old.get("security"), new.get("security"), f"{at}/security", f"{where}")
        self.compare_extensions(old, new, at)
        self.compare_parameters(old.get("parameters"), new.get("parameters"), f"{at}/parameters", where)
        self.compare_request_body(old.get("requestBody"), new.get("requestBody"), f"{at}/requestBody", where)
        old_responses = old.get("responses") or {}
        new_responses = new.get("responses") or {}
        for status in sorted({*old_responses, *new_responses}, key=str):
            pointer = f"{at}/responses/{escape(str(status))}"
            if status not in new_responses:
                self.add(pointer, "response-removed", f"response {status} of {where} removed", _SERVERS)
            elif status not in old_responses:
                self.add(pointer, "response-added", f"response {status} of {where} added", _CLIENTS)
            else:
                a, b = self.deref_old(old_responses[status]), self.deref_new(new_responses[status])
                if self.docs and a.get("description") != b.get("description"):
                    self.add(
                        f"{pointer}/description",
                        "description-changed",
                        f"description of response {status} changed",
                        _NONE,
                    )
                self.compare_content(a.get("content"), b.get("content"), pointer, frozenset({RESPONSE}))
                if _canon(a.get("headers")) != _canon(b.get("headers")):
                    self.add(
                        f"{pointer}/headers", "constraint-changed", f"headers of response {status} changed", _BOTH_BREAK
                    )

    def compare_parameters(self, old: Any, new: Any, at: str, where: str) -> None:
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
            label = f"{key[0]} parameter `{key[1]}` of {where}"
            if key not in b:
                self.add(f"{at}/{a[key][0]}", "parameter-removed", f"{label} removed", _CLIENTS)
                continue
            i, p = b[key]
            if key not in a:
                required = p.get("required") is True
                self.add(
                    f"{at}/{i}",
                    "parameter-added",
                    f"{'required' if required else 'optional'} {label} added",
                    _BOTH_BREAK if required else _SERVERS,
                )
                continue
            q = a[key][1]
            if q.get("required", False) != p.get("required", False):
                kind = "required-added" if p.get("required") else "required-removed"
                self.add(
                    f"{at}/{i}",
                    kind,
                    f"{label} is now {'required' if p.get('required') else 'optional'}",
                    _narrow(request) if p.get("required") else _widen(request),
                )
            if "schema" in q and "schema" in p:
                self.compare(
                    _normalise(q["schema"], f"{at}/{a[key][0]}/schema"),
                    _normalise(p["schema"], f"{at}/{i}/schema"),
                    request,
                )
            self.compare_content(q.get("content"), p.get("content"), f"{at}/{i}", request)

    def compare_request_body(self, old: Any, new: Any, at: str, where: str) -> None:
        old, new = self.deref_old(old), self.deref_new(new)
        if not old and not new:
            return
        if not new:
            self.add(at, "request-body-removed", f"request body of {where} removed", _CLIENTS)
            return
        if not old:
            required = new.get("required") is True
            self.add(
                at,
                "request-body-added",
                f"{'required' if required else 'optional'} request body of {where} added",
                _BOTH_BREAK if required else _SERVERS,
            )
            return
        if old.get("required", False) != new.get("required", False):
            required = new.get("required") is True
            kind = "required-added" if required else "required-removed"
            self.add(
                at,
                kind,
                f"request body of {where} is now {'required' if required else 'optional'}",
                _CLIENTS if required else _SERVERS,
            )
        self.compare_content(old.get("content"), new.get("content"), at, frozenset({REQUEST}))

    def compare_content(self, old: Any, new: Any, at: str, where: frozenset[str]) -> None:
        old, new = old or {}, new or {}
        side = "request" if REQUEST in where else "response"
        for media in sorted({*old, *new}):
            pointer = f"{at}/content/{escape(media)}"
            if media not in new:
                effect = _CLIENTS if side == "request" else _BOTH_BREAK
                self.add(pointer, "media-type-removed", f"{side} media type `{media}` removed", effect)
            elif media not in old:
                self.add(pointer, "media-type-added", f"{side} media type `{media}` added", _widen(where))
            else:
                a, b = (old[media] or {}).get("schema"), (new[media] or {}).get("schema")
                if a is not None and b is not None:
                    self.compare(_normalise(a, f"{pointer}/schema"), _normalise(b, f"{pointer}/schema"), where)
                elif a is not None or b is not None:
                    self.add(
                        f"{pointer}/schema",
                        "type-changed",
                        f"schema of `{media}` {'added' if b else 'removed'}",
                        _BOTH_BREAK,
                    )

    def deref_old(self, node: Any) -> Any:
        return _deref_component(node, self.old)

    def deref_new(self, node: Any) -> Any:
        return _deref_component(node, self.new)


# --- helpers ---------------------------------------------------------------------------------------


def _schemas(doc: dict) -> dict[str, Any]:
    components = doc.get("components")
    schemas = components.get("schemas") if isinstance(components, dict) else None
    return schemas if isinstance(schemas, dict) else {}


def _deref_component(node: Any, doc: dict) -> Any:
    """Follow local `$ref`s to non-schema components (responses, request bodies, parameters, path items)."""
    seen: set[str] = set()
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/"):
        ref = node["$ref"]
        if ref in seen:
            return {}
        seen.add(ref)
        target: Any = doc
        for token in ref[2:].split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            target = target.get(token) if isinstance(target, dict) else None
        node = target if isinstance(target, dict) else {}
    return node


def _refs(node: Any) -> Iterator[str]:
    stack = [node]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and ref.startswith(SCHEMA_PREFIX):
                yield ref[len(SCHEMA_PREFIX) :].split("/")[0].replace("~1", "/").replace("~0", "~")
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
    schemas = _schemas(doc)
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
