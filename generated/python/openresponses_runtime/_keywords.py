"""Schema keywords no Python type can say (`if`/`then`/`else`, `propertyNames`, `patternProperties`,
`prefixItems`, ...), checked at run time rather than dropped.

The build gives each model that needs it the part of its schema such a check enforces (see
`orspec.schema.runtime_checks`); `checker` compiles that once into nested functions, each checking
one keyword, and runs them on the value as it came, before pydantic reads it (so a request pays for
the keywords its schema has, not for a walk over the schema). A `$ref` to a component schema is
checked by that schema's model. What this checks is a subset of JSON Schema 2020-12: the keywords a
spec puts under those above.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError, model_validator

REF_PREFIX = "#/components/schemas/"
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list | tuple),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}


Check = Callable[[Any, str], "str | None"]  # (value, JSON pointer) -> what is wrong, or None


def checker(schema: dict, module: str) -> Callable[[Any], Any]:
    """A function that returns a value as it came if it meets `schema`, else raises ValueError.

    `module` names the models module whose classes the schema's `$ref`s name."""
    compiled = compile_schema(schema, lambda name: _adapter(module, name))

    def check(value: Any) -> Any:
        problem = compiled(_plain(value), "") if compiled else None
        if problem:
            raise ValueError(problem)
        return value

    return check


def model_check(schema: dict, module: str) -> Any:
    """The `model_validator` a model class carries to check `schema` on what it is given."""
    check = checker(schema, module)
    return model_validator(mode="before")(classmethod(lambda cls, value: check(value)))


@cache
def _adapter(module: str, name: str) -> TypeAdapter:
    return TypeAdapter(getattr(sys.modules[module], name))


def _plain(value: Any) -> Any:
    """A model given in place of its JSON (in Python, not from the wire), as its JSON."""
    return value.model_dump(mode="json", exclude_unset=True) if isinstance(value, BaseModel) else value


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b and (isinstance(a, str) == isinstance(b, str))


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _all(checks: list[Check]) -> Check | None:
    """One check that runs `checks` in turn and reports the first problem; None if there are none."""
    if len(checks) < 2:
        return checks[0] if checks else None

    def run(value: Any, at: str) -> str | None:
        for check in checks:
            if problem := check(value, at):
                return problem
        return None

    return run


def _passes(check: Check | None, value: Any, at: str) -> bool:
    return check is None or not check(value, at)


def compile_schema(schema: Any, resolve: Callable[[str], TypeAdapter]) -> Check | None:
    """A check of `schema`: the first way a value (at a JSON pointer) breaks it; None if every value meets it."""
    if schema is False:
        return lambda value, at: f"{at or '/'}: no value is allowed here"
    if not isinstance(schema, dict) or not schema:
        return None
    sub = lambda node: compile_schema(node, resolve)  # noqa: E731
    checks: list[Check] = []
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(REF_PREFIX):
        checks.append(_ref(ref[len(REF_PREFIX) :], resolve))
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        tests = [_TYPES[k] for k in kinds if k in _TYPES]
        if len(tests) == len(kinds):
            words = " or ".join(kinds)
            checks.append(lambda v, at: None if any(t(v) for t in tests) else f"{at or '/'}: expected {words}")
    if "const" in schema:
        const = schema["const"]
        checks.append(lambda v, at: None if _equal(v, const) else f"{at or '/'}: must be {const!r}")
    if isinstance(schema.get("enum"), list):
        values = schema["enum"]
        checks.append(
            lambda v, at: None if any(_equal(v, e) for e in values) else f"{at or '/'}: must be one of {values!r}"
        )
    checks += [c for part in schema.get("allOf") or () if (c := sub(part))]
    if isinstance(schema.get("anyOf"), list):
        options = [sub(m) for m in schema["anyOf"]]
        checks.append(
            lambda v, at: (
                None if any(_passes(o, v, at) for o in options) else f"{at or '/'}: matches none of the alternatives"
            )
        )
    if isinstance(schema.get("oneOf"), list):
        options = [sub(m) for m in schema["oneOf"]]
        checks.append(
            lambda v, at: (
                None
                if sum(_passes(o, v, at) for o in options) == 1
                else f"{at or '/'}: must match exactly one alternative"
            )
        )
    if "not" in schema:
        negated = sub(schema["not"])
        checks.append(
            lambda v, at: f"{at or '/'}: must not match the schema under `not`" if _passes(negated, v, at) else None
        )
    if "if" in schema:
        checks.append(_conditional(sub(schema["if"]), sub(schema.get("then")), sub(schema.get("else"))))
    checks += _object(schema, sub) + _array(schema, sub) + _string(schema) + _number(schema)
    return _all(checks)


def _ref(name: str, resolve: Callable[[str], TypeAdapter]) -> Check:
    def check(value: Any, at: str) -> str | None:
        try:
            resolve(name).validate_python(value)
        except ValidationError as exc:
            return f"{at or '/'}: {exc.errors()[0]['msg']}"
        return None

    return check


def _conditional(condition: Check | None, then: Check | None, otherwise: Check | None) -> Check:
    def check(value: Any, at: str) -> str | None:
        branch = then if _passes(condition, value, at) else otherwise
        return branch(value, at) if branch else None

    return check


def _object(schema: dict, sub: Callable[[Any], Check | None]) -> list[Check]:
    checks: list[Check] = []
    required = [k for k in schema.get("required") or () if isinstance(k, str)]
    if required:
        checks.append(lambda v, at: next((f"{at}/{_escape(k)}: required" for k in required if k not in v), None))
    for key, needed in (schema.get("dependentRequired") or {}).items():
        checks.append(
            lambda v, at, key=key, needed=needed: next(
                (f"{at}/{_escape(k)}: required when {key!r} is given" for k in needed if key in v and k not in v), None
            )
        )
    for key, node in (schema.get("dependentSchemas") or {}).items():
        if (check := sub(node)) is not None:
            checks.append(lambda v, at, key=key, check=check: check(v, at) if key in v else None)
    if "minProperties" in schema:
        least = schema["minProperties"]
        checks.append(lambda v, at: f"{at or '/'}: at least {least} keys" if len(v) < least else None)
    if "maxProperties" in schema:
        most = schema["maxProperties"]
        checks.append(lambda v, at: f"{at or '/'}: at most {most} keys" if len(v) > most else None)
    properties = schema.get("properties") or {}
    declared = [(key, check) for key, node in properties.items() if (check := sub(node)) is not None]
    if declared:

        def each_property(value: dict, at: str) -> str | None:
            for key, check in declared:
                if key in value and (problem := check(value[key], f"{at}/{_escape(key)}")):
                    return problem
            return None

        checks.append(each_property)
    patterns = [(re.compile(p), sub(node)) for p, node in (schema.get("patternProperties") or {}).items()]
    extra = schema.get("additionalProperties", True)
    rest = sub(extra) if extra is not True else None
    names = sub(schema["propertyNames"]) if "propertyNames" in schema else None
    if patterns or rest or names:
        checks.append(_keys(set(properties), patterns, rest, extra is False, names))
    return [_only(dict, _all(checks))] if checks else []


def _keys(declared: set, patterns: list, rest: Check | None, closed: bool, names: Check | None) -> Check:
    """The rules for keys themselves (`propertyNames`) and for those the patterns match or leave over."""

    def check(value: dict, at: str) -> str | None:
        for key, item in value.items():
            where = f"{at}/{_escape(key)}"
            if names and (problem := names(key, where)):
                return f"{where}: the key breaks propertyNames ({problem.split(': ', 1)[-1]})"
            matched = key in declared
            for pattern, node in patterns:
                if pattern.search(key):
                    matched = True
                    if node and (problem := node(item, where)):
                        return problem
            if not matched and rest and (problem := rest(item, where)):
                return f"{where}: no such key is allowed" if closed else problem
        return None

    return check


def _array(schema: dict, sub: Callable[[Any], Check | None]) -> list[Check]:
    checks: list[Check] = []
    if "minItems" in schema:
        least = schema["minItems"]
        checks.append(lambda v, at: f"{at or '/'}: at least {least} items" if len(v) < least else None)
    if "maxItems" in schema:
        most = schema["maxItems"]
        checks.append(lambda v, at: f"{at or '/'}: at most {most} items" if len(v) > most else None)
    prefix = [sub(node) for node in schema.get("prefixItems") or ()]
    later = sub(schema["items"]) if "items" in schema else None
    if any(prefix) or later:
        closed = schema.get("items") is False

        def each_item(value: list, at: str) -> str | None:
            for i, item in enumerate(value):
                check = prefix[i] if i < len(prefix) else later
                if check and (problem := check(item, f"{at}/{i}")):
                    return f"{at}/{i}: at most {len(prefix)} items" if closed and i >= len(prefix) else problem
            return None

        checks.append(each_item)
    if "contains" in schema:
        wanted = sub(schema["contains"])
        least, most = schema.get("minContains", 1), schema.get("maxContains", math.inf)

        def contains(value: list, at: str) -> str | None:
            found = sum(_passes(wanted, item, at) for item in value)
            return (
                None
                if least <= found <= most
                else f"{at or '/'}: {found} items match `contains`, not between {least} and {most}"
            )

        checks.append(contains)
    if schema.get("uniqueItems") is True:
        checks.append(
            lambda v, at: next(
                (f"{at}/{i}: items must be unique" for i, x in enumerate(v) if any(_equal(x, y) for y in v[:i])), None
            )
        )
    return [_only((list, tuple), _all(checks))] if checks else []


def _string(schema: dict) -> list[Check]:
    checks: list[Check] = []
    if "minLength" in schema:
        least = schema["minLength"]
        checks.append(lambda v, at: f"{at or '/'}: at least {least} characters" if len(v) < least else None)
    if "maxLength" in schema:
        most = schema["maxLength"]
        checks.append(lambda v, at: f"{at or '/'}: at most {most} characters" if len(v) > most else None)
    if isinstance(schema.get("pattern"), str):
        pattern = re.compile(schema["pattern"])
        checks.append(lambda v, at: None if pattern.search(v) else f"{at or '/'}: does not match {pattern.pattern!r}")
    return [_only(str, _all(checks))] if checks else []


_BOUNDS = (
    ("minimum", lambda v, b: v >= b, "at least"),
    ("maximum", lambda v, b: v <= b, "at most"),
    ("exclusiveMinimum", lambda v, b: v > b, "more than"),
    ("exclusiveMaximum", lambda v, b: v < b, "less than"),
    ("multipleOf", lambda v, b: (v / b).is_integer(), "a multiple of"),
)


def _number(schema: dict) -> list[Check]:
    checks: list[Check] = []
    for keyword, holds, words in _BOUNDS:
        bound = schema.get(keyword)
        if isinstance(bound, int | float) and not isinstance(bound, bool):
            checks.append(
                lambda v, at, b=bound, holds=holds, words=words: (
                    None if holds(v, b) else f"{at or '/'}: must be {words} {b}"
                )
            )
    return [_only(_TYPES["number"], _all(checks))] if checks else []


def _only(kind: Any, check: Check | None) -> Check:
    """`check` for values of one JSON type (a Python type, or a test); others pass it."""
    test = kind if callable(kind) and not isinstance(kind, type | tuple) else (lambda v: isinstance(v, kind))
    return lambda v, at: check(v, at) if check and test(v) else None
