"""Reshape a bundled spec into the form that datamodel-code-generator turns into good models.

The wire meaning never changes here; only spelling does:
- `allOf: [{$ref}, {description}]` becomes `$ref` with a sibling description;
- a nullable primitive written as `anyOf: [P, {type: 'null'}]` becomes `type: [p, 'null']`;
- a one-member `oneOf`/`anyOf` without a discriminator becomes its member;
- every union whose members each fix a distinct `type` gets a discriminator;
- unions that cannot be told apart by one property (input messages share `type: message` and
  differ by `role`; tool choice mixes a string enum with objects) are recorded as `TaggedUnion`s
  and rendered by orspec itself with a callable pydantic `Discriminator`;
- the streaming-event union of `text/event-stream` gets the name `StreamingEvent`;
- keywords no Python type can say (`schema.RUNTIME_KEYWORDS`) are recorded per schema, to be
  checked at run time, and loosened here: `patternProperties` to the values they allow,
  `prefixItems` closed by `items: false` to tuples (one per length it allows), the rest dropped;
- an enum that mixes JSON types becomes a union of constants, so `true` stays `true`, not `1`.
"""

from __future__ import annotations

import copy
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from jsonpointer import escape, unescape

from ..pointers import resolve_pointer
from ..schema import (
    EVENT_UNION,
    OPEN_UNIONS,
    REF_PREFIX,
    RUNTIME_KEYWORDS,
    deref,
    required_keys,
    runtime_checks,
    stream_pointers,
    tag_values,
    union_of,
    untagged_rules,
)

ANNOTATIONS = {"description", "title", "example", "examples", "x-enumDescriptions", "x-openresponses-added-in"}


@dataclass
class Variant:
    schema: str  # component schema name
    tag: str  # its `type` value, or "str" for a plain string member
    second: str | None = None  # its value of the union's second key, where `type` repeats

    @property
    def key(self) -> str:
        """The tag the callable discriminator returns for this member."""
        return self.tag if self.second is None else f"{self.tag}|{self.second}"


@dataclass
class TaggedUnion:
    name: str
    variants: list[Variant]
    second_key: str | None = None  # e.g. "role" for input messages
    default_tag: str | None = None  # the member whose `type` may be omitted (item references)
    untagged: list[tuple[str, str]] = field(default_factory=list)  # (key, tag): a typeless value with `key` is `tag`
    fallback: str | None = None  # the model for types the spec does not know, if the union is open
    description: str = ""


@dataclass
class ModelInput:
    document: dict[str, Any]
    tagged_unions: dict[str, TaggedUnion] = field(default_factory=dict)
    inline_names: dict[tuple[str, ...], str] = field(default_factory=dict)
    checks: dict[str, dict] = field(default_factory=dict)  # schema -> what only a run-time check enforces


def normalize(bundled: dict[str, Any]) -> ModelInput:
    doc = copy.deepcopy(bundled)
    schemas: dict[str, Any] = doc.setdefault("components", {}).setdefault("schemas", {})
    _hoist_defs(doc, schemas)
    _rename_schemas(doc, schemas)
    for name in list(schemas):
        schemas[name] = _simplify(schemas[name])
    _name_event_union(doc, schemas)
    result = ModelInput(doc)
    for name in list(schemas):
        schemas[name] = _tag_unions(schemas[name], name, doc, result)
    result.checks = {name: found for name, node in schemas.items() if (found := runtime_checks(node))}
    return result


LITERAL_MARK = "__orspec_literal_{}__"  # stands for a mixed enum until models.py writes its Literal


def loosen(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list]]:
    """A copy of a normalised document with what only a run-time check enforces spelt as types can
    say it (see the module's docstring), for datamodel-code-generator; and the enums that mix JSON
    types, each under the one-value string enum that stands for it (`LITERAL_MARK`), which would
    otherwise come out as a Python `Enum` where `True` and `1` are one member."""
    literals: dict[str, list] = {}
    schemas = {name: _loosen(node, literals) for name, node in doc["components"]["schemas"].items()}
    return {**doc, "components": {**doc["components"], "schemas": schemas}}, literals  # `_loosen` copies


def _loosen(node: Any, literals: dict[str, list]) -> Any:
    if isinstance(node, list):
        return [_loosen(v, literals) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: (_loosen(v, literals) if k not in _VALUES else v) for k, v in node.items()}
    patterns = node.pop("patternProperties", None)
    if isinstance(patterns, dict):
        extra = node.pop("additionalProperties", None)
        node.setdefault("type", "object")
        if not node.get("properties"):
            # a map: its values are what the patterns (and any other key) allow
            values = [*patterns.values(), *([extra] if isinstance(extra, dict) else [])]
            closed = extra is False or isinstance(extra, dict)
            node["additionalProperties"] = (
                {"anyOf": values} if closed and len(values) > 1 else values[0] if closed else {}
            )
    prefix = node.pop("prefixItems", None)
    for keyword in RUNTIME_KEYWORDS:
        node.pop(keyword, None)
    if isinstance(prefix, list) and node.get("items") is False:
        node = _tuples(node, prefix)
    elif isinstance(prefix, list):  # a list of any of the items; the positions are checked at run time
        rest = [node["items"]] if isinstance(node.get("items"), dict) else [{}] if "items" not in node else []
        members = [*prefix, *rest]
        node["items"] = {} if {} in members else members[0] if len(members) == 1 else {"anyOf": members}
    values = node.get("enum")
    if isinstance(values, list) and _mixed(values):
        mark = LITERAL_MARK.format(len(literals))
        literals[mark] = values
        node = {
            **{k: v for k, v in node.items() if k not in ("enum", "type", "default")},
            "type": "string",
            "enum": [mark],
        }
    return node


_VALUES = ("enum", "default", "const", "example", "examples")


def _tuples(node: dict, prefix: list) -> dict:
    """An array of at most `len(prefix)` items, one tuple per length it allows (`minItems` up)."""
    rest = {k: v for k, v in node.items() if k not in ("prefixItems", "items", "minItems", "maxItems", "type")}
    least = node.get("minItems") if isinstance(node.get("minItems"), int) else 0
    most = min(len(prefix), node["maxItems"]) if isinstance(node.get("maxItems"), int) else len(prefix)
    options = [
        {"type": "array", "prefixItems": prefix[:n], "items": False, "minItems": n, "maxItems": n}
        for n in range(min(least, most), most + 1)
    ]
    return {**rest, **options[0]} if len(options) == 1 else {**rest, "anyOf": options}


def _mixed(values: list) -> bool:
    """Whether an enum mixes JSON types (or holds booleans, which Python counts as numbers)."""
    kinds = {type(v) for v in values if v is not None}
    return len(kinds) > 1 or bool in kinds


# Names the generated module imports or defines itself; a schema may not take them as its class name.
RESERVED_NAMES = {
    "Annotated",
    "Any",
    "BaseModel",
    "ConfigDict",
    "Discriminator",
    "Enum",
    "Field",
    "Literal",
    "OpenResponsesModel",
    "RootModel",
    "StrEnum",
    "Tag",
    "TypeAliasType",
    "Union",
    "UnknownAnnotation",
    "UnknownContent",
    "UnknownEvent",
    "UnknownItem",
    "UnknownTool",
    "UnknownType",
}
_CLASS_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")


def ascii_name(name: str) -> str:
    """`name` in ASCII: accents dropped (`Café` → `Cafe`), any other character outside ASCII as
    `U` and its code point in hex (`Größe` → `GroU00dfe`, `太陽` → `U592aU967d`)."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    return "".join(c if c.isascii() else f"U{ord(c):04x}" for c in plain)


def class_name(name: str) -> str:
    """The class name a person would give schema `name`: `x-rate` → `XRate`, `3d` → `Schema3d`,
    `Café` → `Cafe` (see `ascii_name`)."""
    words = [w for w in re.split(r"[^0-9A-Za-z]+", ascii_name(name)) if w]
    out = "".join(w[:1].upper() + w[1:] for w in words) or "Schema"
    if not out[0].isalpha():
        out = "Schema" + out
    return out


def class_names(schema_names: Iterable[str]) -> dict[str, str]:
    """The class name of every component schema in the generated models, by schema name.

    Names that are already plain class names (`ResponseResource`) are kept; any other (`class`,
    `x-rate`, `a.b`, `3d`, `Foo_Bar`, `Field`) gets one a person would choose, unique even
    ignoring case. Other generators that name models (the server's routes, say) use this too.
    """
    names = list(schema_names)
    out: dict[str, str] = {}
    taken = {n for n in names if _CLASS_NAME.match(n) and n not in RESERVED_NAMES} | RESERVED_NAMES
    folded = {t.lower() for t in taken}
    for name in names:
        if _CLASS_NAME.match(name) and name not in RESERVED_NAMES:
            out[name] = name
            continue
        base = class_name(name)
        if base in RESERVED_NAMES:
            base += "Model"
        new, n = base, 1
        while new.lower() in folded:
            n += 1
            new = f"{base}{n}"
        folded.add(new.lower())
        out[name] = new
    return out


def _hoist_defs(doc: dict, schemas: dict) -> None:
    """Each `$defs` entry of a component schema becomes a component schema of its own, named after
    the entry (`Leaf`) or, where that is taken, after its owner too (`TreeLeaf`), so that both
    languages give it one class; every `$ref` to it follows."""
    moved: dict[str, str] = {}  # old reference -> new
    for owner in list(schemas):
        node = schemas[owner]
        defs = node.pop("$defs", None) if isinstance(node, dict) else None
        for entry, schema in (defs or {}).items() if isinstance(defs, dict) else ():
            base = class_name(entry)
            name = base if base not in schemas else class_name(f"{owner}-{entry}")
            n = 1
            while name in schemas:
                n += 1
                name = f"{class_name(f'{owner}-{entry}')}{n}"
            schemas[name] = schema
            moved[f"{REF_PREFIX}{escape(owner)}/$defs/{escape(str(entry))}"] = REF_PREFIX + escape(name)
    if not moved:
        return
    stack: list[Any] = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("$ref") in moved:
                node["$ref"] = moved[node["$ref"]]
            stack.extend(v for k, v in node.items() if k not in _VALUES)
        elif isinstance(node, list):
            stack.extend(node)


def _rename_schemas(doc: dict, schemas: dict) -> None:
    """Rename every schema to its class name (see `class_names`), and point every `$ref` at it.

    datamodel-code-generator would otherwise choose its own names (and read a dot as a module
    path); choosing them here means orspec knows the class of every schema. The name only
    chooses the class name; the wire format is unaffected.
    """
    renames = {old: new for old, new in class_names(schemas).items() if old != new}
    if not renames:
        return
    for name in list(schemas):
        schemas[renames.get(name, name)] = schemas.pop(name)  # keeps the spec's order
    prefix = REF_PREFIX

    def rename(ref: str) -> str:
        if not ref.startswith(prefix):
            return ref
        name, sep, rest = ref[len(prefix) :].partition("/")
        name = unescape(name)
        return prefix + escape(renames[name]) + sep + rest if name in renames else ref

    stack: list[Any] = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                node["$ref"] = rename(node["$ref"])
            mapping = node.get("mapping") if isinstance(node.get("mapping"), dict) else {}
            for key, value in mapping.items():
                if isinstance(value, str):
                    mapping[key] = rename(value)
            stack.extend(v for k, v in node.items() if k not in ("enum", "const", "default", "example", "examples"))
        elif isinstance(node, list):
            stack.extend(node)


def _simplify(node: Any) -> Any:
    if isinstance(node, list):
        return [_simplify(v) for v in node]
    if not isinstance(node, dict):
        return node
    if node.get("x-openresponses-disallowed") is True:
        # A field that must not be sent: only an absent (or null) value validates.
        return {"type": "null", **{k: v for k, v in node.items() if k in ANNOTATIONS}}
    node = {
        k: (_simplify(v) if k not in ("enum", "default", "const", "example", "examples") else v)
        for k, v in node.items()
    }
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) >= 1:
        refs = [m for m in all_of if isinstance(m, dict) and "$ref" in m]
        extras = [m for m in all_of if m not in refs]
        if len(refs) == 1 and all(isinstance(m, dict) and set(m) <= ANNOTATIONS for m in extras):
            merged = {k: v for m in extras for k, v in m.items()}
            rest = {k: v for k, v in node.items() if k != "allOf"}
            node = {**refs[0], **merged, **rest}
    for key in ("anyOf", "oneOf"):
        members = node.get(key)
        if not isinstance(members, list):
            continue
        non_null = [m for m in members if m != {"type": "null"}]
        nullable = len(non_null) < len(members)
        if nullable and len(non_null) == 1 and _is_plain_primitive(non_null[0]):
            inner = dict(non_null[0])
            rest = {k: v for k, v in node.items() if k != key}
            inner["type"] = [inner["type"], "null"]
            if "description" in inner and "description" not in rest:
                rest["description"] = inner.pop("description")
            else:
                inner.pop("description", None)
            return {**inner, **rest}
        if nullable and len(non_null) == 1 and isinstance(non_null[0], dict):
            # Annotations written on the member belong to the field.
            member = non_null[0]
            lifted = {k: v for k, v in member.items() if k in ANNOTATIONS and k not in node}
            if lifted:
                node = {**lifted, **node, key: [{k: v for k, v in member.items() if k not in lifted}, *members[1:]]}
                node[key] = [m if m == {"type": "null"} else node[key][0] for m in members]
        if nullable and not non_null:
            rest = {k: v for k, v in node.items() if k != key}
            return {"type": "null", **rest}
        if not nullable and len(members) == 1 and isinstance(members[0], dict) and "discriminator" not in node:
            rest = {k: v for k, v in node.items() if k != key}
            return {**members[0], **rest}
        if (
            nullable
            and len(non_null) == 1
            and isinstance(non_null[0], dict)
            and set(non_null[0]) - ANNOTATIONS == {"oneOf"}
        ):
            inner = non_null[0]["oneOf"]
            if isinstance(inner, list) and len(inner) == 1:
                node = {**node, key: [inner[0], {"type": "null"}]}
    return node


def _is_plain_primitive(schema: Any) -> bool:
    return (
        isinstance(schema, dict)
        and isinstance(schema.get("type"), str)
        and schema["type"] in ("string", "integer", "number", "boolean")
        and not ({"$ref", "oneOf", "anyOf", "allOf"} & set(schema))
    )


def _name_event_union(doc: dict, schemas: dict) -> None:
    """An inline streaming-event union becomes component schema `StreamingEvent`, so it has a class."""
    for at in stream_pointers(doc):
        media = resolve_pointer(doc, at.removesuffix("/schema"))
        if at.startswith("/components/") or not isinstance(media, dict) or union_of(media.get("schema")) is None:
            continue
        if EVENT_UNION not in schemas:
            schemas[EVENT_UNION] = {
                **media["schema"],
                "description": "Any event of a streamed response, told apart by `type`.",
            }
        media["schema"] = {"$ref": REF_PREFIX + EVENT_UNION}


def _tag_unions(node: Any, owner: str, doc: dict, result: ModelInput, path: str = "") -> Any:
    """Add discriminators where members fix distinct `type` values; record the harder cases."""
    if isinstance(node, list):
        return [_tag_unions(v, owner, doc, result, path) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: _tag_unions(v, owner, doc, result, f"{path}/{k}") for k, v in node.items()}
    members = (union_of(node) or ("", None))[1]
    fallback = _open_kind(owner, path)
    if not isinstance(members, list) or len(members) < (1 if fallback else 2):
        return node
    refs = [m for m in members if isinstance(m, dict) and "$ref" in m]
    if len(refs) < len([m for m in members if m != {"type": "null"}]):
        return node  # mixes inline schemas: not a polymorphic union of named types
    if len(refs) == 1 and not fallback and "oneOf" in (deref(refs[0], doc) or {}):
        return node  # a (nullable) reference to a union, which is tagged where it is defined
    # Only string tags can discriminate; anything else (in a spec built with --lenient) is left alone.
    tags = [t if t and all(isinstance(v, str) for v in t) else None for t in (tag_values(m, "type", doc) for m in refs)]
    enums = [m for m, t in zip(refs, tags, strict=True) if not t and _is_string_enum(deref(m, doc))]
    objects = [(m, t) for m, t in zip(refs, tags, strict=True) if t]
    if len(objects) + len(enums) != len(refs) or not objects:
        return node
    flat = [t[0] for _, t in objects if len(t) == 1]
    optional = [t[0] for m, t in objects if "type" not in required_keys(deref(m, doc), doc)]
    simple = len(flat) == len(objects) and len(set(flat)) == len(flat) and not enums and not optional
    if simple and not fallback:
        node.setdefault("discriminator", {"propertyName": "type"})
        return node
    union = _tagged_union(objects, enums, doc)
    if union is None:
        return node
    union.fallback = fallback
    if len(set(optional)) == 1:
        union.default_tag = optional[0]
    elif len(optional) > 1:
        typeless = {t[0]: deref(m, doc) for m, t in objects if t[0] in optional}
        union.default_tag, union.untagged = untagged_rules(typeless, doc)
    if path:  # an inline union: hoist it under a name derived from its owner and field
        key = tuple(v.schema for v in union.variants)
        suffix = "Part" if fallback == "UnknownContent" else ""
        name = result.inline_names.get(key)
        if name is None:
            base = owner + "".join(p[:1].upper() + p[1:] for p in _field_words(path)) + suffix
            name, n = base, 1
            while name in doc["components"]["schemas"] or name in RESERVED_NAMES:  # never replace a schema
                n += 1
                name = f"{base}{n}"
        if name not in result.tagged_unions:
            union.name = name
            result.inline_names[key] = name
            result.tagged_unions[name] = union
            doc["components"]["schemas"][name] = {
                k: v for k, v in node.items() if k not in ANNOTATIONS | {"discriminator"}
            }
        return {"$ref": REF_PREFIX + name, **{k: v for k, v in node.items() if k in ANNOTATIONS}}
    union.name = owner
    result.tagged_unions[owner] = union
    node.pop("discriminator", None)
    return node


CONTENT_FIELDS = {"content", "part", "summary", "output"}


def _open_kind(owner: str, path: str) -> str | None:
    if not path:
        return OPEN_UNIONS.get(owner)
    words = [p for p in path.split("/") if p and p not in ("items", "oneOf", "anyOf") and not p.isdigit()]
    if len(words) == 2 and words[0] == "properties" and words[1] in CONTENT_FIELDS:
        return "UnknownContent"
    return None


def _field_words(path: str) -> list[str]:
    parts = [p for p in path.split("/") if p and p not in ("properties", "items", "oneOf", "anyOf") and not p.isdigit()]
    return [w for p in parts for w in re.split(r"[^0-9A-Za-z]+", p) if w]


def _is_string_enum(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "string" and isinstance(schema.get("enum"), list)


def _tagged_union(objects: list, enums: list, doc: dict) -> TaggedUnion | None:
    variants: list[Variant] = []
    by_tag: dict[str, list[str]] = {}
    for ref, tags in objects:
        if len(tags) != 1:
            return None
        by_tag.setdefault(tags[0], []).append(ref["$ref"].removeprefix(REF_PREFIX))
    second_key = None
    for tag, names in by_tag.items():
        if len(names) == 1:
            variants.append(Variant(names[0], tag))
            continue
        second_key = "role"
        for name in names:
            roles = tag_values({"$ref": REF_PREFIX + name}, second_key, doc)
            if not roles or len(roles) != 1:
                return None
            variants.append(Variant(name, tag, roles[0]))
    for ref in enums:
        variants.append(Variant(ref["$ref"].removeprefix(REF_PREFIX), "str"))
    tags = [v.key for v in variants]
    if len(set(tags)) != len(tags):
        return None
    return TaggedUnion("", variants, second_key)
