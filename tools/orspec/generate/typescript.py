"""The npm package `openresponses-runtime` in `generated/typescript/`: zod models, the event registry
and the operations table of the client, from the same schema model as the Python runtime.

Every component schema becomes a zod schema (`models.js`) and a TypeScript type of the same name
(`models.d.ts`), from its shape (`schema.shape_of`) over the document `normalize` prepares for the
Python models, so both languages see the same names and the same tagged unions. Tagged unions
dispatch on their tag (`type`, then `role` where types repeat) to one member's schema; an open
union keeps values of types the spec does not know whole, under `Unknown*`. What no type says
(`if`/`then`/`else`, `propertyNames`, `patternProperties`, ...: `normalize`'s `checks`) is checked
when a model parses, by the hand-written `keywords.js`, as the Python models do. The hand-written
modules (the client, the SSE reader, the union helper) are ordinary source beside them in
`generated/typescript/` (`project.TS_RUNTIME`), which the build never touches. Nothing here runs Node: `jsformat` lays the code out as Prettier would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .. import __version__ as GENERATOR_VERSION
from ..schema import (
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
    deref,
    ref_name,
    shape_of,
    tag_values,
)
from .client import client_operations, create_request_schema
from .jsformat import (
    Array,
    Arrow,
    Atom,
    Call,
    Expr,
    Object,
    TypeExpr,
    TypeGeneric,
    TypeLiteral,
    TypeUnion,
    comment,
    flat_type,
    key,
    literal,
    members,
    names_list,
    statement,
    type_alias,
)
from .normalize import TaggedUnion, class_names, normalize
from .server import is_create

ROOT = "typescript"
PACKAGE_NAME = "openresponses-runtime"
# The modules the package's index re-exports, and those importable on their own (`openresponses-runtime/sse`).
# `schemas` re-exports the models' zod schemas under declarations that name zod, which the root's
# never do: a consumer of the root does not make `tsc` load zod's (about 100,000 types).
INDEX = ("models", "events", "operations", "routes", "client", "sse")
SUBPATHS = ("models", "schemas", "events", "client", "sse")
# Hand-written folders importable on their own and not re-exported by the index: the stream checker
# (whose rule tables carry their own EVENT_TYPES) and the emitter for providers.
FOLDERS = {"streaming": "src/streaming", "server": "src/server"}
BINS = (("openresponses-check-stream", "bin/openresponses-check-stream.js"),)  # (command, module)
UNKNOWN_TYPE = """\
/**
 * The `type` of a value whose type the spec does not define: at run time, the string the value
 * carried. It is a string (`const t: string = value.type` compiles), but one no known type
 * matches (one that starts with U+0000, as no type of the spec or of a vendor does), so comparing
 * `value.type` with a known type still narrows to that type's member alone. A type the spec
 * does not know is compared as a plain string: `const t: string = value.type; t === "zeta:thing"`.
 */
export type UnknownType = `\\u0000${string}`;
"""
ZOD_RANGE = "^4.0.0"  # the one runtime dependency; zod 4's API (looseObject, z.int) is what the models use
# Fallback schemas of open unions (see `schema.OPEN_UNIONS` and `normalize`): what each keeps.
FALLBACKS = {
    "UnknownItem": "An item of a type this spec does not define; every field is kept.",
    "UnknownContent": "A content part of a type this spec does not define; every field is kept.",
    "UnknownAnnotation": "An annotation of a type this spec does not define; every field is kept.",
    "UnknownTool": "A tool of a type this spec does not define; every field is kept.",
    "UnknownEvent": "A streaming event of a type this spec does not define; every field is kept.",
}
_TS_PRIMITIVES = {
    "string": "string",
    "integer": "number",
    "number": "number",
    "boolean": "boolean",
    "any": "unknown",
    "null": "null",
    "never": "never",
}
_ZOD_PRIMITIVES = {
    "string": "z.string()",
    "integer": "z.int()",
    "number": "z.number()",
    "boolean": "z.boolean()",
    "any": "z.unknown()",
    "null": "z.null()",
    "never": "z.never()",
}
_ZOD_CHECKS = {
    "minLength": "min",
    "maxLength": "max",
    "minItems": "min",
    "maxItems": "max",
    "minimum": "min",
    "maximum": "max",
    "exclusiveMinimum": "gt",
    "exclusiveMaximum": "lt",
}


@dataclass(frozen=True)
class Tagged:
    """A union told apart by its tag: each member under its key (`tag` or `tag|role`)."""

    name: str
    variants: tuple[tuple[str, str], ...]  # (key, schema)
    second: str | None = None
    default_tag: str | None = None
    untagged: tuple[tuple[str, str], ...] = ()
    fallback: str | None = None


class _Models:
    """The models of one spec: shapes, tagged unions and the order to define them in."""

    def __init__(self, model: SpecModel):
        prepared = normalize(model.document)
        self.doc = prepared.document
        schemas = self.doc["components"]["schemas"]
        self.descriptions = {n: _words(s.get("description")) if isinstance(s, dict) else "" for n, s in schemas.items()}
        self.tagged = {n: _from_normalized(u) for n, u in prepared.tagged_unions.items()}
        self.checks = prepared.checks  # what only a run-time check enforces (`keywords.js`), by schema
        self.shapes: dict[str, Shape] = {}
        for name, node in schemas.items():
            if name in self.tagged:
                continue
            shape = shape_of(node, self.doc)
            simple = self.simple_union(name, shape)
            if simple:
                self.tagged[name] = simple
            else:
                self.shapes[name] = shape
        self.order = self._order(list(schemas))
        self.defined: set[str] = set()
        self.prefix = ""  # put before schema names in types ("models." outside models.d.ts)

    def simple_union(self, name: str, shape: Shape) -> Tagged | None:
        """A union of named schemas each fixing one distinct `type`, as a tagged union."""
        if not isinstance(shape, UnionShape) or shape.nullable:
            return None
        refs = [m.name for m in shape.members if isinstance(m, RefShape) and not m.nullable]
        if len(refs) != len(shape.members):
            return None
        tags = [tag_values({"$ref": REF_PREFIX + r}, "type", self.doc) for r in refs]
        if not all(t and len(t) == 1 and isinstance(t[0], str) for t in tags):
            return None
        keys = [t[0] for t in tags]
        if len(set(keys)) != len(keys):
            return None
        required = all("type" in (deref({"$ref": REF_PREFIX + r}, self.doc) or {}).get("required", []) for r in refs)
        return Tagged(name, tuple(zip(keys, refs, strict=True))) if required else None

    def _order(self, names: list[str]) -> list[str]:
        """Definition order: a schema after those it names outside tagged unions (cycles stay lazy)."""
        out: list[str] = []
        state: dict[str, int] = {}

        def visit(name: str) -> None:
            if state.get(name):
                return
            state[name] = 1
            for dep in _refs(self.shapes.get(name)):
                if dep in self.shapes or dep in self.tagged:
                    visit(dep)
            state[name] = 2
            out.append(name)

        for name in names:
            visit(name)
        return out

    # -- zod ----------------------------------------------------------------------------------------

    def zod(self, shape: Shape) -> Expr:
        expr = self._zod(shape)
        return Call("z.nullable", (expr,)) if shape.nullable else expr

    def _zod(self, shape: Shape) -> Expr:
        if isinstance(shape, RefShape):
            return Atom(shape.name) if shape.name in self.defined else Call("z.lazy", (Arrow(Atom(shape.name)),))
        if isinstance(shape, PrimitiveShape):
            return Atom(_ZOD_PRIMITIVES[shape.kind] + _checks(shape.constraints))
        if isinstance(shape, LiteralShape):
            if len(shape.values) == 1:
                return Call("z.literal", (Atom(literal(shape.values[0])),))
            items = Array(tuple(Atom(literal(v)) for v in shape.values))
            return Call("z.enum" if all(isinstance(v, str) for v in shape.values) else "z.literal", (items,))
        if isinstance(shape, ArrayShape):
            inner = Call("z.array", (self.zod(shape.items),))
            return Call("limitItems", (inner, *_limits(shape.constraints))) if shape.constraints else inner
        if isinstance(shape, MapShape):
            inner = Call("z.record", (Atom("z.string()"), self.zod(shape.values)))
            limit = dict(shape.constraints).get("maxProperties")
            return Call("limitKeys", (inner, Atom(str(limit)))) if limit is not None else inner
        if isinstance(shape, ObjectShape):
            props = tuple(
                (_js_key(p.name), self.zod(p.shape) if p.required else Call("z.optional", (self.zod(p.shape),)))
                for p in shape.properties
            )
            # Closed beside patterns, the run-time check closes it: the patterns' keys must pass.
            strict = shape.closed and not shape.patterns
            found = Call("z.strictObject" if strict else "z.looseObject", (Object(props),))
            if any(p.name in _INHERITED_KEYS for p in shape.properties):
                return Call("checked", (found, Atom("null"), Atom("schemas"), Atom("true")))
            return found
        if isinstance(shape, TupleShape):
            return self._tuples(shape)
        assert isinstance(shape, UnionShape)
        return Call("z.union", (Array(tuple(self.zod(m) for m in shape.members)),))

    def _tuples(self, shape: TupleShape) -> Expr:
        """One `z.tuple` per length the prefix allows, the longest followed by the rest, if any."""
        options: list[Expr] = []
        for n in range(shape.min_items, len(shape.prefix) + 1):
            items = Array(tuple(self.zod(s) for s in shape.prefix[:n]))
            full = n == len(shape.prefix) and shape.rest is not None
            options.append(Call("z.tuple", (items, self.zod(shape.rest)) if full else (items,)))
        return options[0] if len(options) == 1 else Call("z.union", (Array(tuple(options)),))

    def tagged_zod(self, union: Tagged) -> Expr:
        props: list[tuple[str, Expr]] = [("key", Atom('"type"'))]
        if union.second:
            props.append(("second", Atom(literal(union.second))))
        if union.default_tag:
            props.append(("defaultTag", Atom(literal(union.default_tag))))
        if union.untagged:
            rules = tuple(Array((Atom(literal(k)), Atom(literal(t)))) for k, t in union.untagged)
            props.append(("untagged", Array(rules)))
        variants = Object(tuple((key(k), Atom(s)) for k, s in union.variants))
        props.append(("variants", Arrow(variants)))
        if union.fallback:
            props.append(("fallback", Atom(union.fallback)))
        return Call("taggedUnion", (Object(tuple(props)),))

    def checked(self, name: str, expr: Expr) -> Expr:
        """`expr` with the run-time check of what its types cannot say, where there is any (`keywords.js`)."""
        rules = self.checks.get(name)
        return expr if rules is None else Call("checked", (expr, _json(rules), Atom("schemas")))

    # -- TypeScript ---------------------------------------------------------------------------------

    def ts(self, shape: Shape, depth: int = 1) -> TypeExpr:
        base = self._ts(shape, depth)
        if not shape.nullable:
            return base
        if isinstance(base, TypeUnion):
            return TypeUnion((*base.members, "null"))
        return TypeUnion((base, "null"))

    def _ts(self, shape: Shape, depth: int) -> TypeExpr:
        if isinstance(shape, RefShape):
            return self.prefix + shape.name
        if isinstance(shape, PrimitiveShape):
            return _TS_PRIMITIVES[shape.kind]
        if isinstance(shape, LiteralShape):
            values = tuple(literal(v) for v in shape.values)
            return values[0] if len(values) == 1 else TypeUnion(values)
        if isinstance(shape, ArrayShape):
            inner = self.ts(shape.items, depth)
            if isinstance(inner, str) and " " not in inner:
                return f"{inner}[]"
            return TypeGeneric("Array", (inner,))
        if isinstance(shape, MapShape):
            return TypeGeneric("Record", ("string", self.ts(shape.values, depth)))
        if isinstance(shape, TupleShape):
            options = []
            for n in range(shape.min_items, len(shape.prefix) + 1):
                items = [flat_type(self.ts(s, depth)) or "unknown" for s in shape.prefix[:n]]
                if n == len(shape.prefix) and shape.rest is not None:
                    rest = flat_type(self.ts(shape.rest, depth)) or "unknown"
                    items.append(f"...{rest}[]" if " " not in rest else f"...Array<{rest}>")
                options.append(f"[{', '.join(items)}]")
            return options[0] if len(options) == 1 else TypeUnion(tuple(options))
        if isinstance(shape, ObjectShape):
            return TypeLiteral(
                tuple(
                    (key(p.name) + ("" if p.required else "?"), self.ts(p.shape, depth + 1), p.description)
                    for p in shape.properties
                )
            )
        assert isinstance(shape, UnionShape)
        out: list[str | TypeLiteral] = []
        for member in shape.members:
            found = self.ts(member, depth)
            for one in found.members if isinstance(found, TypeUnion) else (found,):
                if one not in out:
                    out.append(one)
        return TypeUnion(tuple(out))

    # -- modules ------------------------------------------------------------------------------------

    def modules(self) -> tuple[str, str, str]:
        """`models.js` (the zod schemas), `models.d.ts` (the types alone, which never name zod, so
        that a consumer of the package's root does not make `tsc` load zod's declarations) and
        `schemas.d.ts` (each schema's zod type, for the `schemas` subpath)."""
        js = [
            'import * as z from "zod";\n\n',
            'import { checked } from "./keywords.js";\n',
            'import * as schemas from "./models.js";\n',
            'import { limitItems, limitKeys, taggedUnion } from "./union.js";\n',
        ]
        dts = [UNKNOWN_TYPE]
        zod = [
            'import type * as z from "zod";\n\nimport type * as models from "./models.js";\n',
            'import type { ObjectSchema } from "./union.js";\n\nexport type * from "./models.js";\n',
        ]

        def schema(name: str, kind: str, doc: str) -> None:
            zod.append(
                f"\n{doc}export declare const {name}: {kind}<models.{name}>;\n" + type_alias(name, f"models.{name}")
            )

        for name, text in FALLBACKS.items():
            js.append(f"\n/** {text} */\nexport const {name} = z.looseObject({{ type: z.string() }});\n")
            schema(name, "z.ZodType", f"/** {text} */\n")
            dts.append(
                f"\n/** {text} */\nexport interface {name} {{\n  type: UnknownType;\n  [key: string]: unknown;\n}}\n"
            )
        for name in self.order:
            doc = "".join(comment(self.descriptions.get(name, "")))
            if name in self.tagged:
                union = self.tagged[name]
                js.append(
                    f"\n{doc}" + statement(f"export const {name} = ", self.checked(name, self.tagged_zod(union))) + "\n"
                )
                kinds = TypeUnion(tuple(s for _, s in union.variants) + ((union.fallback,) if union.fallback else ()))
                schema(name, "z.ZodType", doc)
                dts.append(f"\n{doc}" + type_alias(name, kinds))
            else:
                shape = self.shapes[name]
                built = self.checked(name, self.zod(shape))
                js.append(f"\n{doc}" + statement(f"export const {name} = ", built) + "\n")
                # An object's schema keeps `.shape`, `.extend`, `.pick` and `.omit` in its type.
                kind = "ObjectSchema" if isinstance(built, Call) and built.callee == "z.looseObject" else "z.ZodType"
                schema(name, kind, doc)
                dts.append(f"\n{doc}")
                typed = self.ts(shape)
                if isinstance(typed, TypeLiteral):
                    body = "".join(members(typed, 1))
                    dts.append(f"export interface {name} {{\n{body}}}\n" if body else f"export interface {name} {{}}\n")
                else:
                    dts.append(type_alias(name, typed))
            self.defined.add(name)
        return "".join(js), "".join(dts), "".join(zod)


# Keys every JavaScript object inherits: an object that declares one has zod read only its own keys.
_INHERITED_KEYS = {
    "__proto__",
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
    "constructor",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
    "toString",
    "valueOf",
}


def _js_key(name: str) -> str:
    """An object literal's key; `__proto__` computed, since written plainly it sets the prototype."""
    return '["__proto__"]' if name == "__proto__" else key(name)


def _json(value: Any) -> Expr:
    """A JSON value as a JavaScript expression."""
    if isinstance(value, dict):
        return Object(tuple((_js_key(str(k)), _json(v)) for k, v in value.items()))
    if isinstance(value, list):
        return Array(tuple(_json(v) for v in value))
    return Atom(literal(value))


def _from_normalized(union: TaggedUnion) -> Tagged:
    variants = tuple((v.key if v.tag != "str" else "string", v.schema) for v in union.variants)
    return Tagged(union.name, variants, union.second_key, union.default_tag, tuple(union.untagged), union.fallback)


def _refs(shape: Shape | None) -> list[str]:
    if shape is None:
        return []
    if isinstance(shape, RefShape):
        return [shape.name]
    if isinstance(shape, ArrayShape):
        return _refs(shape.items)
    if isinstance(shape, MapShape):
        return _refs(shape.values)
    if isinstance(shape, ObjectShape):
        return [r for p in shape.properties for r in _refs(p.shape)]
    if isinstance(shape, UnionShape):
        return [r for m in shape.members for r in _refs(m)]
    if isinstance(shape, TupleShape):
        return [r for m in (*shape.prefix, *((shape.rest,) if shape.rest else ())) for r in _refs(m)]
    return []


def _checks(constraints: tuple[tuple[str, Any], ...]) -> str:
    out = ""
    for keyword, value in constraints:
        if keyword == "pattern" and isinstance(value, str):
            out += f".regex(new RegExp({literal(value)}))"
        elif keyword in _ZOD_CHECKS and isinstance(value, int | float) and not isinstance(value, bool):
            out += f".{_ZOD_CHECKS[keyword]}({literal(value)})"
    return out


def _limits(constraints: tuple[tuple[str, Any], ...]) -> tuple[Expr, ...]:
    found = dict(constraints)
    low, high = found.get("minItems"), found.get("maxItems")
    return (
        Atom(json.dumps(low) if low is not None else "0"),
        Atom(json.dumps(high) if high is not None else "Infinity"),
    )


def _words(text: Any) -> str:
    return " ".join(str(text or "").split())


# --------------------------------------------------------------------------------------------------
# The event registry and the operations table.


def _events(model: SpecModel, defined: set[str]) -> tuple[str, str]:
    classes = class_names(model.schemas)
    events = [e for e in model.events if e.schema in classes]
    machines = getattr(model.machines, "machines", {}) or {}
    js = ['import * as models from "./models.js";\n']
    entries = []
    for e in events:
        place = e.place
        props: list[tuple[str, Expr]] = [
            ("type", Atom(literal(e.type))),
            ("schema", Atom(f"models.{classes[e.schema]}")),
            ("category", Atom(literal(place.category if place else None))),
            ("appliesTo", Atom(literal(place.applies_to if place else None))),
        ]
        if place and place.machine:
            targets = Array(tuple(Atom(literal(t)) for t in place.targets))
            props.append(("transition", Object((("machine", Atom(literal(place.machine))), ("to", targets)))))
        else:
            props.append(("transition", Atom("null")))
        machine = machines.get(place.machine) if place and place.machine else None
        ends = bool(machine and place.machine == "response" and set(place.targets) <= set(machine.terminal))
        props.append(("terminal", Atom(literal(ends))))
        if place and place.accumulates:
            field, done, done_field = place.accumulates
            props.append(
                (
                    "accumulates",
                    Object(
                        (
                            ("field", Atom(literal(field))),
                            ("done", Atom(literal(done))),
                            ("doneField", Atom(literal(done_field))),
                        )
                    ),
                )
            )
        else:
            props.append(("accumulates", Atom("null")))
        entries.append((key(e.type), Call("Object.freeze", (Object(tuple(props)),))))
    js.append(
        "\n/** What the registry knows of each event type of the spec, by its `type`. */\n"
        + statement("export const EVENT_TYPES = ", Call("Object.freeze", (Object(tuple(entries)),)))
        + "\n"
    )
    js.append(
        """
const SCHEMAS = new Map(
  Object.values(EVENT_TYPES).map((entry) => [entry.type, entry.schema]),
);

/**
 * One event, typed: its own type's schema checks it (no scan of the whole union), and a type the
 * spec does not define parses as `UnknownEvent`, every field kept. Takes JSON text, bytes or a
 * parsed value; throws a `ZodError` when a known event breaks its schema.
 */
export function parseEvent(data) {
  const value =
    typeof data === "string"
      ? JSON.parse(data)
      : data instanceof Uint8Array
        ? JSON.parse(new TextDecoder().decode(data))
        : data;
  const type =
    value !== null && typeof value === "object" ? value.type : undefined;
  const schema = typeof type === "string" ? SCHEMAS.get(type) : undefined;
  return (schema ?? models.UnknownEvent).parse(value);
}

/** Whether `event` is of a type the spec defines (not an `UnknownEvent`). */
export function isKnownEvent(event) {
  return SCHEMAS.has(event.type);
}
"""
    )
    names = sorted({classes[e.schema] for e in events})
    own_union = "StreamingEvent" in defined  # the models name the stream's inline union so
    imported = ["StreamingEvent", "UnknownEvent", *names] if own_union else ["UnknownEvent", *names]
    dts = [names_list("import type ", imported, ' from "./models.js";')]
    known = TypeUnion(tuple(names)) if names else "never"
    dts.append("\n/** An event of a type the spec defines. */\n" + type_alias("KnownEvent", known))
    if own_union:
        dts.append("\nexport type { StreamingEvent };\n")
    else:
        dts.append(
            "\n/** Any event of a streamed response. */\nexport type StreamingEvent = KnownEvent | UnknownEvent;\n"
        )
    type_union = TypeUnion(tuple(literal(e.type) for e in events)) if events else "never"
    dts.append("\n/** Every event type of the spec's streaming union. */\n" + type_alias("EventType", type_union))
    dts.append(
        """
/** What the registry knows of one event type (from `spec/state-machines.yaml`). */
export interface EventInfo<T extends EventType = EventType> {
  type: T;
  /** Its zod schema (typed as such under `openresponses-runtime/schemas`). */
  schema: { parse(value: unknown): Extract<StreamingEvent, { type: T }> };
  category: string | null;
  appliesTo: string | null;
  transition: { machine: string; to: readonly string[] } | null;
  /** Whether the event ends the response (only `[DONE]` may follow). */
  terminal: boolean;
  accumulates: { field: string; done: string; doneField: string } | null;
}

/** What the registry knows of each event type of the spec, by its `type`. */
export declare const EVENT_TYPES: { readonly [T in EventType]: EventInfo<T> };

/**
 * One event, typed: its own type's schema checks it, and a type the spec does not define parses
 * as `UnknownEvent`, every field kept. Throws a `ZodError` when a known event breaks its schema.
 */
export declare function parseEvent(
  data: string | Uint8Array | Record<string, unknown>,
): StreamingEvent;

/** Whether `event` is of a type the spec defines (not an `UnknownEvent`). */
export declare function isKnownEvent(
  event: StreamingEvent,
): event is KnownEvent;
"""
    )
    return "".join(js), "".join(dts)


def _camel(name: str) -> str:
    head, *rest = [w for w in name.split("_") if w]
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _operations(model: SpecModel, models: _Models) -> tuple[str, str]:
    ops = client_operations(model)
    found = create_request_schema(model)
    request = class_names(model.schemas).get(found[0]) if found else None
    entries = []
    dts_methods: dict[str, list[str]] = {}
    query_types = []
    answer = _create_answer(model)
    for op in ops:
        group, name = _camel(op.group) if op.group else "", _camel(op.name)
        props: list[tuple[str, Expr]] = [
            ("group", Atom(literal(group))),
            ("name", Atom(literal(name))),
            ("method", Atom(literal(op.http_method))),
            ("path", Atom(literal(op.path))),
            ("pathParams", Array(tuple(Atom(literal(p.json_name)) for p in op.path_params))),
            ("query", Array(tuple(Atom(literal(p.json_name)) for p in op.query_params))),
            ("stream", Atom(literal(op.stream_param or None))),
            ("body", Atom(literal(op.body_model is not None))),
            ("returns", Atom(f"models.{op.returns}")),
        ]
        entries.append(Call("Object.freeze", (Object(tuple(props)),)))
        query_name = "".join(w[:1].upper() + w[1:] for w in (group + "_" + name).split("_") if w) + "Query"
        query_name = query_name[:1].upper() + query_name[1:]
        parameters = {p.json_name: p for p in op.query_params}
        shapes = []
        for p in op.query_params:
            schema = next(x.schema for x in _op_of(model, op).parameters if x.name == p.json_name)
            models.prefix = "models."
            shapes.append((key(p.json_name) + "?", models.ts(shape_of(schema, model.document)), p.description))
            models.prefix = ""
        query_types.append(f"\n/** The query of `{op.http_method} {op.path}`. */\n")
        body = "".join(members(TypeLiteral(tuple(shapes)), 1))
        query_types.append(
            f"export interface {query_name} {{\n{body}}}\n" if body else f"export interface {query_name} {{}}\n"
        )
        args = [f"{_camel(p.name)}: string" for p in op.path_params]
        level = 2 if group else 1
        doc = comment(f"{op.summary}: `{op.http_method} {op.path}`. {op.description}", level)
        lines = dts_methods.setdefault(group, [])
        if op.stream_param and op.stream_param in parameters:
            streaming = [*args, f"query: {query_name} & {{ {op.stream_param}: true }}", "options?: RequestOptions"]
            lines += [*doc, _method(name, streaming, "Promise<EventStream>", level)]
        query = [f"body: models.{op.body_model}"] if op.body_model else [f"query?: {query_name}"]
        plain = [*args, *query, "options?: RequestOptions"]
        returns = f"models.{op.returns}"
        returns = f"WithOutputText<{returns}>" if op.returns == answer else returns
        lines += [*doc, _method(name, plain, f"Promise<{returns}>", level)]
    js = ['import * as models from "./models.js";\n']
    js.append(
        "\n/** The operations on one stored response, as the client calls them. */\n"
        + statement("export const OPERATIONS = ", Call("Object.freeze", (Array(tuple(entries)),)))
        + "\n"
    )
    js.append(
        f"\n/** The create operation's request body. */\nexport const CREATE_REQUEST = {'models.' + request if request else 'null'};\n"
    )
    js.append(
        f"\n/** The create operation's answer. */\nexport const CREATE_RESPONSE = {'models.' + answer if answer else 'null'};\n"
    )
    dts = [
        'import type * as models from "./models.js";\n',
        'import type {\n  EventStream,\n  RequestOptions,\n  ResponseStream,\n  WithOutputText,\n} from "./client.js";\n',
    ]
    dts.append(
        """
/** One operation of the table the client builds its methods from. */
export interface OperationInfo {
  group: string;
  name: string;
  method: string;
  path: string;
  pathParams: readonly string[];
  query: readonly string[];
  stream: string | null;
  /** Whether the method takes a JSON body (then its argument after the path's ids). */
  body: boolean;
  returns: { parse(value: unknown): unknown };
}

/** The operations on one stored response, as the client calls them. */
export declare const OPERATIONS: readonly OperationInfo[];
"""
    )
    dts.append(
        f"\n/** The create operation's request body. */\nexport declare const CREATE_REQUEST: {_parser(request)};\n"
    )
    dts.append(
        f"\n/** The create operation's answer. */\nexport declare const CREATE_RESPONSE: {_parser(answer)};\n"
        f"\n/** The type of the create operation's answer, which streams build too. */\nexport type CreateAnswer = {'models.' + answer if answer else 'Record<string, unknown>'};\n"
    )
    dts.append(_create_body(model, found, request, answer))
    dts.append("".join(query_types))
    groups = sorted(g for g in dts_methods if g)
    body = "".join(dts_methods.get("", []))
    for group in groups:
        body += f"  {group}: {{\n" + "".join(dts_methods[group]) + "  };\n"
    create = ""
    if request and answer:
        create = (
            "  /** Create a response: `POST /responses`; with `stream: true`, its events as they come. */\n"
            + _method(
                "create",
                ["body: CreateBody & { stream: true }", "options?: RequestOptions"],
                "Promise<EventStream>",
            )
            + "  /** Create a response: `POST /responses`; with `stream: true`, its events as they come. */\n"
            + _method(
                "create", ["body: CreateBody", "options?: RequestOptions"], f"Promise<WithOutputText<models.{answer}>>"
            )
            + "  /** Create a response streamed, as openai-node's `responses.stream`: a `ResponseStream` at once. */\n"
            + _method("stream", ["body: CreateBody", "options?: RequestOptions"], "ResponseStream")
        )
    interface = (
        f"export interface Responses {{\n{create}{body}}}\n" if create or body else "export interface Responses {}\n"
    )
    dts.append(f"\n/** `client.responses`: create, and the operations on one stored response. */\n{interface}")
    return "".join(js), "".join(dts)


def _parser(name: str | None) -> str:
    """A schema's type in declarations that must not name zod: what it parses to."""
    return f"{{\n  parse(value: unknown): models.{name};\n}}" if name else "null"


def _create_body(model: SpecModel, found: tuple[str, dict] | None, request: str | None, answer: str | None) -> str:
    """`CreateBody`, the create request's body as the client takes it: where the request has an array
    `input` and the answer an `output`, the input may also carry the output's items as they came."""
    if request is None:
        return ""
    doc = "\n/** The create request's body, as `responses.create` takes it. */\n"
    answer_schema = next((s for s, c in class_names(model.schemas).items() if c == answer), None)
    output = model.schemas[answer_schema].node.get("properties", {}) if answer_schema else {}
    if "input" not in found[1].get("properties", {}) or "output" not in output:
        return f"{doc}export type CreateBody = models.{request};\n"
    given = f'models.{request}["input"]'
    item = TypeUnion((f"Extract<{given}, readonly unknown[]>[number]", f'models.{answer}["output"][number]'))
    return (
        "\n/** An item of the create request's `input`, or of its answer's `output` (to send back as it came). */\n"
        + type_alias("CreateInputItem", item)
        + "\n/** The create request's body, as `responses.create` takes it: its `input` may carry output items. */\n"
        + f'export type CreateBody = Omit<models.{request}, "input"> & {{\n  input?: {given} | CreateInputItem[];\n}};\n'
    )


def _create_answer(model: SpecModel) -> str | None:
    """The model of the create operation's JSON answer (`ResponseResource`), if the spec has one."""
    classes = class_names(model.schemas)
    for op in model.operations:
        if not is_create(op):
            continue
        for response in op.responses:
            schema = response.content.get("application/json") if response.status.startswith("2") else None
            name = ref_name(schema.get("$ref")) if isinstance(schema, dict) else None
            if name in classes:
                return classes[name]
    return None


def _op_of(model: SpecModel, op: Any):
    return next(o for o in model.operations if o.path == op.path and o.method.upper() == op.http_method)


def _method(name: str, args: list[str], returns: str, depth: int = 1) -> str:
    pad = "  " * depth
    flat = f"{pad}{name}({', '.join(args)}): {returns};\n"
    if len(flat) <= 81:
        return flat
    return f"{pad}{name}(\n" + "".join(f"{pad}  {a},\n" for a in args) + f"{pad}): {returns};\n"


# --------------------------------------------------------------------------------------------------
# The package.


def package_version(spec_version: str) -> str:
    """The npm version: the spec release as `year.month.day` (semver has no leading zeros), then the generator's."""
    parts = spec_version.strip().split("-")
    dated = len(parts) == 3 and all(p.isdigit() for p in parts)
    release = ".".join(str(int(p)) for p in parts) if dated else "0.0.0"
    return f"{release}-orspec.{GENERATOR_VERSION}"


def _package_json(document: dict) -> bytes:
    version = str((document.get("info") or {}).get("version", ""))
    manifest = {
        "name": PACKAGE_NAME,
        "version": package_version(version),
        "description": f"Open Responses {version}: zod models, the event registry and a fetch client, generated by orspec.",
        "license": "Apache-2.0",
        "type": "module",
        "main": "./index.js",
        "types": "./index.d.ts",
        "exports": {
            ".": {"types": "./index.d.ts", "default": "./index.js"},
            **{f"./{m}": {"types": f"./{m}.d.ts", "default": f"./{m}.js"} for m in SUBPATHS},
            **{f"./{m}": {"types": f"./{d}/index.d.ts", "default": f"./{d}/index.js"} for m, d in FOLDERS.items()},
            "./package.json": "./package.json",
        },
        **({"bin": dict(BINS)} if BINS else {}),
        "files": ["*.js", "*.d.ts", "README.md", "src", "bin"],
        "sideEffects": False,
        "engines": {"node": ">=20"},
        "dependencies": {"zod": ZOD_RANGE},
    }
    return (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode()


def _readme(document: dict) -> bytes:
    version = str((document.get("info") or {}).get("version", ""))
    # Starts with a blank line: the build puts its header comment above, and Prettier wants one after it.
    return f"""
# openresponses-runtime

The TypeScript runtime of [Open Responses](https://www.openresponses.org) release {version}, generated
by orspec from the same spec as the Python distribution of the same name: ESM JavaScript with
`.d.ts` declarations beside it, for Node 20 or later, Deno, Bun and browsers. Its one dependency is
zod 4.

```js
import {{ parseEvent, OpenResponses }} from "openresponses-runtime";
import {{ ResponseResource }} from "openresponses-runtime/schemas";

const response = ResponseResource.parse(JSON.parse(body));
const event = parseEvent(data); // one server-sent event's `data`
if (event.type === "response.output_text.delta") console.log(event.delta);

const client = new OpenResponses({{
  baseURL: "http://127.0.0.1:8000/v1",
  apiKey: "...",
}});
const stream = await client.responses.create({{
  model: "m",
  input: "hi",
  stream: true,
}});
for await (const event of stream) console.log(event.type);
```

- `models`: a TypeScript type for every component schema. Unknown fields and values of unknown
  `type`s are kept, so they round-trip.
- `schemas`: the zod schema of each, under the same name (`ObjectSchema`s keep `.shape` and
  `.extend`). Only this subpath's declarations import zod's: the root's do not, so a program that
  imports only the root makes `tsc` check about half as many types with `skipLibCheck` off.
- `events`: `parseEvent`, `EVENT_TYPES`, `isKnownEvent`.
- `client`: `OpenResponses`, over `fetch`, with retries, typed errors and `AbortSignal`;
  `responses.stream()` with `finalResponse()`, and `output_text` on a response. An answer or event
  that breaks the schema comes as it was sent and is reported (`onInvalid`, a stream's `issues`),
  or with `validate: "strict"` throws.
- `sse`: `readSSE`, server-sent events from a `fetch` body.

Install from a checkout with `npm install --install-links path/to/generated/typescript` (a plain
folder install links it, and zod is not found), or from the tarball `npm pack` makes of it.
""".encode()


def _index(modules: list[str]) -> tuple[str, str]:
    js = "".join(f'export * from "./{m}.js";\n' for m in modules)
    return js, js


def generate_typescript(model: SpecModel) -> dict[str, bytes]:
    """Every file of `generated/typescript/`, by its path under `generated/`."""
    models = _Models(model)
    models_js, models_dts, schemas_dts = models.modules()
    events_js, events_dts = _events(model, models.defined)
    ops_js, ops_dts = _operations(model, models)
    index_js, index_dts = _index(list(INDEX))
    out = {
        "models.js": models_js,
        "models.d.ts": models_dts,
        "schemas.js": 'export * from "./models.js";\n',
        "schemas.d.ts": schemas_dts,
        "events.js": events_js,
        "events.d.ts": events_dts,
        "operations.js": ops_js,
        "operations.d.ts": ops_dts,
        "index.js": index_js,
        "index.d.ts": index_dts,
    }
    files = {f"{ROOT}/{name}": text.encode() for name, text in out.items()}
    files[f"{ROOT}/package.json"] = _package_json(model.document)
    files[f"{ROOT}/README.md"] = _readme(model.document)
    return files
