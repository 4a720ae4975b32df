"""JavaScript and TypeScript laid out as Prettier (3, default options) leaves them, without Node.

The generators build small expression trees (calls, arrays, objects, union types) and this module
prints them: on one line when they fit in 80 columns, otherwise broken the way Prettier breaks
them (a call hugs its last object or array argument, or puts each argument on its own line; an
object literal always has one property a line; a union type breaks before each `|`). The test
suite runs `prettier --check` over the output, so a layout this misses fails there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

WIDTH = 80
INDENT = "  "
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


@dataclass(frozen=True)
class Atom:
    """Text printed as it is: an identifier, a literal, a short member chain."""

    text: str


@dataclass(frozen=True)
class Call:
    callee: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Array:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Object:
    """An object literal: (printed key, value) pairs, always one a line (Prettier keeps that)."""

    props: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True)
class Arrow:
    """`() => body`, printed on one line when it fits, else with its body broken."""

    body: Expr


Expr = Atom | Call | Array | Object | Arrow


def string(value: str) -> str:
    """A string literal in Prettier's quotes: double, unless that needs more escapes than single."""
    doubled = json.dumps(value, ensure_ascii=False)
    if value.count('"') > value.count("'"):
        inner = doubled[1:-1].replace('\\"', '"').replace("'", "\\'")
        return f"'{inner}'"
    return doubled


def key(name: str) -> str:
    """An object key: bare when it is an identifier, else a string."""
    return name if _IDENTIFIER.match(name) else string(name)


def literal(value: object) -> str:
    if isinstance(value, str):
        return string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        return number(value)
    return json.dumps(value)


def number(value: float) -> str:
    """A number as Prettier prints it: `1e-5` (not `1e-05`), `2` (not `2.0`)."""
    if isinstance(value, int) or (value.is_integer() and abs(value) < 1e16):
        return str(int(value))
    text = repr(value).lower()
    return re.sub(r"e([+-]?)0*(\d)", lambda m: f"e{m.group(1).replace('+', '')}{m.group(2)}", text)


def _flat(expr: Expr) -> str | None:
    """`expr` on one line, or None if it must break (an object literal with properties)."""
    if isinstance(expr, Atom):
        return expr.text
    if isinstance(expr, Arrow):
        body = _flat(expr.body)
        return None if body is None else f"() => {body}"
    if isinstance(expr, Call):
        args = [_flat(a) for a in expr.args]
        return None if None in args else f"{expr.callee}({', '.join(args)})"
    if isinstance(expr, Array):
        items = [_flat(i) for i in expr.items]
        return None if None in items else f"[{', '.join(items)}]"
    return "{}" if not expr.props else None


def render(expr: Expr, column: int, depth: int, tail: int = 0) -> str:
    """`expr` printed from `column`, its broken lines indented `depth` levels, `tail` characters after it."""
    flat = _flat(expr)
    if flat is not None and column + len(flat) + tail <= WIDTH:
        return flat
    pad, inner = INDENT * depth, INDENT * (depth + 1)
    if isinstance(expr, Object):
        lines = [_property(k, v, depth + 1) for k, v in expr.props]
        return "{\n" + "\n".join(lines) + f"\n{pad}}}" if lines else "{}"
    if isinstance(expr, Array):
        lines = [f"{inner}{render(i, len(inner), depth + 1, 1)}," for i in expr.items]
        return "[\n" + "\n".join(lines) + f"\n{pad}]" if lines else "[]"
    if isinstance(expr, Arrow) and isinstance(expr.body, Object):
        return "() => (" + render(expr.body, column + 7, depth, tail + 1) + ")"
    if isinstance(expr, Arrow):
        return "() =>" + (f"\n{inner}" + render(expr.body, len(inner), depth + 1, tail))
    if isinstance(expr, Atom):
        return expr.text
    *first, last = expr.args or (Atom(""),)
    heads = [_flat(a) for a in first]
    if expr.args and isinstance(last, Object | Array | Arrow) and None not in heads:
        opening = f"{expr.callee}({''.join(h + ', ' for h in heads)}"
        hugged = render(last, column + len(opening), depth, tail + 1)
        if "\n" in hugged and column + len(opening) + len(hugged.split("\n", 1)[0]) <= WIDTH:
            return f"{opening}{hugged})"
    lines = [f"{inner}{render(a, len(inner), depth + 1, 1)}," for a in expr.args]
    return f"{expr.callee}(\n" + "\n".join(lines) + f"\n{pad})"


def _property(name: str, value: Expr, depth: int) -> str:
    """One `key: value,` line of an object; an atom too long for it goes on the next line, indented."""
    inner = INDENT * depth
    head = f"{inner}{name}:"
    # Prettier never breaks after the colon before a string literal, however long the line.
    breaks = not value.text.startswith(('"', "'")) if isinstance(value, Atom) else False
    if breaks and len(head) + 1 + len(value.text) + 1 > WIDTH:
        return f"{head}\n{inner}{INDENT}{value.text},"
    return f"{head} {render(value, len(head) + 1, depth, 1)},"


def statement(prefix: str, expr: Expr, depth: int = 0) -> str:
    """`prefix` (say `export const X = `) then `expr` and a semicolon."""
    column = len(INDENT * depth) + len(prefix)
    flat = _flat(expr)
    if flat is None or column + len(flat) + 1 > WIDTH:
        # Prettier breaks after `=` when the value is a plain call whose arguments cannot hug.
        body = render(expr, column, depth, 1)
        first = body.split("\n", 1)[0]
        if column + len(first) > WIDTH and isinstance(expr, Call | Atom):
            inner = INDENT * (depth + 1)
            return f"{prefix.rstrip()}\n{inner}{render(expr, len(inner), depth + 1, 1)};"
        return f"{prefix}{body};"
    return f"{prefix}{flat};"


# --------------------------------------------------------------------------------------------------
# TypeScript types.


@dataclass(frozen=True)
class TypeUnion:
    members: tuple[str | TypeLiteral | TypeGeneric, ...]


@dataclass(frozen=True)
class TypeGeneric:
    """`Name<A, B>`: `Array<...>` of a union, `Record<string, ...>`."""

    name: str
    args: tuple[TypeExpr, ...]


@dataclass(frozen=True)
class TypeLiteral:
    """An object type: (printed key and `?`, type, doc comment) triples, one a line."""

    props: tuple[tuple[str, TypeExpr, str], ...]
    index: str = ""  # the value type of an index signature, if any


TypeExpr = str | TypeUnion | TypeLiteral | TypeGeneric


def flat_type(t: TypeExpr) -> str | None:
    if isinstance(t, str):
        return t
    if isinstance(t, TypeLiteral):
        return None if t.props or t.index else "{}"
    if isinstance(t, TypeGeneric):
        args = [flat_type(a) for a in t.args]
        return None if None in args else f"{t.name}<{', '.join(args)}>"
    parts = [flat_type(m) for m in t.members]
    return None if None in parts else " | ".join(parts)


def render_type(t: TypeExpr, column: int, depth: int, tail: int = 1) -> str:
    """A type after `column` characters (a property's `name: `): flat, or broken as Prettier does."""
    flat = flat_type(t)
    if flat is not None and column + len(flat) + tail <= WIDTH:
        return flat
    pad, inner = INDENT * depth, INDENT * (depth + 1)
    if isinstance(t, TypeLiteral):
        return "{\n" + "".join(members(t, depth + 1)) + f"{pad}}}"
    if isinstance(t, str):
        return t
    if isinstance(t, TypeGeneric):
        (only,) = t.args if len(t.args) == 1 else (None,)
        only_flat = flat_type(only) if only is not None else None
        if isinstance(only, TypeLiteral):  # hugged: `Array<{` ... `}>`
            return f"{t.name}<{render_type(only, column, depth, tail)}>"
        if isinstance(only, TypeUnion) and (only_flat is None or len(inner) + len(only_flat) > WIDTH):
            return f"{t.name}<{_union_lines(only, depth)}\n{pad}>"
        args = ",\n".join(f"{inner}{render_type(a, len(inner), depth + 1, 0)}" for a in t.args)
        return f"{t.name}<\n{args}\n{pad}>"
    first = t.members[0]
    if len(t.members) == 2 and t.members[-1] == "null" and isinstance(first, TypeLiteral | TypeGeneric):
        return render_type(first, column, depth, tail + 7) + " | null"
    if flat is not None and len(inner) + len(flat) + tail <= WIDTH:
        return f"\n{inner}{flat}"
    return _union_lines(t, depth)


def _union_lines(t: TypeUnion, depth: int) -> str:
    """A union broken before each `|`; an object member's body indented past its `| `."""
    inner = INDENT * (depth + 1)
    return "".join(f"\n{inner}| {render_type(m, len(inner) + 2, depth + 2, 0)}" for m in t.members)


def members(t: TypeLiteral, depth: int) -> list[str]:
    """The lines of an object type's body, each property with its doc comment."""
    pad = INDENT * depth
    out = []
    for name, value, doc in t.props:
        out += comment(doc, depth)
        head = f"{pad}{name}:"
        rendered = render_type(value, len(head) + 1, depth, 1)
        out.append(f"{head}{rendered};\n" if rendered.startswith("\n") else f"{head} {rendered};\n")
    if t.index:
        out.append(f"{pad}[key: string]: {t.index};\n")
    return out


def type_alias(name: str, t: TypeExpr) -> str:
    prefix = f"export type {name} ="
    if isinstance(t, str) and len(prefix) + 1 + len(t) + 1 > WIDTH:
        return f"{prefix}\n{INDENT}{t};\n"
    rendered = render_type(t, len(prefix) + 1, 0, 1)
    return f"{prefix}{rendered};\n" if rendered.startswith("\n") else f"{prefix} {rendered};\n"


def comment(text: str, depth: int = 0) -> list[str]:
    """A `/** ... */` doc comment, its words wrapped to the width; none for empty text."""
    words = " ".join(text.split()).replace("*/", "*\\/").split(" ")
    if not text.strip():
        return []
    pad = INDENT * depth
    lines, line = [], ""
    for word in words:
        if line and len(pad) + 3 + len(line) + 1 + len(word) > WIDTH:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    if len(lines) == 1 and len(pad) + 7 + len(lines[0]) <= WIDTH:
        return [f"{pad}/** {lines[0]} */\n"]
    return [f"{pad}/**\n", *(f"{pad} * {w}\n" for w in lines), f"{pad} */\n"]


def names_list(prefix: str, names: Sequence[str], suffix: str) -> str:
    """`export { a, b } from "./x.js";` laid out as Prettier does (one name a line when too long)."""
    flat = f"{prefix}{{ {', '.join(names)} }}{suffix}"
    if len(flat) <= WIDTH:
        return flat + "\n"
    return prefix + "{\n" + "".join(f"{INDENT}{n},\n" for n in names) + "}" + suffix + "\n"
