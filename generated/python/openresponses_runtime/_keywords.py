"""Schema keywords no Python type can say (`if`/`then`/`else`, `propertyNames`, `patternProperties`,
`prefixItems`, ...), checked at run time rather than dropped.

The build gives each model that needs it the part of its schema such a check enforces (see
`orspec.schema.runtime_checks`); `checker` turns that into a validator that runs on the value as it
came, before pydantic reads it. A `$ref` to a component schema is checked by that schema's model.
What this checks is a subset of JSON Schema 2020-12: the keywords a spec puts under those above.
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


def checker(schema: dict, module: str) -> Callable[[Any], Any]:
    """A function that returns a value as it came if it meets `schema`, else raises ValueError.

    `module` names the models module whose classes the schema's `$ref`s name."""

    def check(value: Any) -> Any:
        problem = first_problem(schema, _plain(value), lambda name: _adapter(module, name), "")
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


@cache
def _pattern(text: str) -> re.Pattern:
    return re.compile(text)


def first_problem(schema: Any, value: Any, resolve: Callable[[str], TypeAdapter], at: str) -> str | None:
    """The first way `value` (at JSON pointer `at`) breaks `schema`, or None if it meets it."""
    if schema is True or schema == {}:
        return None
    if schema is False:
        return f"{at or '/'}: no value is allowed here"
    if not isinstance(schema, dict):
        return None

    def sub(node: Any, v: Any, where: str = at) -> str | None:
        return first_problem(node, v, resolve, where)

    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(REF_PREFIX):
        try:
            resolve(ref[len(REF_PREFIX) :]).validate_python(value)
        except ValidationError as exc:
            return f"{at or '/'}: {exc.errors()[0]['msg']}"
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if not any(_TYPES.get(k, lambda v: True)(value) for k in kinds):
            return f"{at or '/'}: expected {' or '.join(kinds)}"
    if "const" in schema and not _equal(value, schema["const"]):
        return f"{at or '/'}: must be {schema['const']!r}"
    if isinstance(schema.get("enum"), list) and not any(_equal(value, e) for e in schema["enum"]):
        return f"{at or '/'}: must be one of {schema['enum']!r}"
    for part in schema.get("allOf") or ():
        if problem := sub(part, value):
            return problem
    if isinstance(schema.get("anyOf"), list) and all(sub(m, value) for m in schema["anyOf"]):
        return f"{at or '/'}: matches none of the alternatives"
    if isinstance(schema.get("oneOf"), list) and sum(not sub(m, value) for m in schema["oneOf"]) != 1:
        return f"{at or '/'}: must match exactly one alternative"
    if "not" in schema and not sub(schema["not"], value):
        return f"{at or '/'}: must not match the schema under `not`"
    if "if" in schema:
        branch = "then" if not sub(schema["if"], value) else "else"
        if branch in schema and (problem := sub(schema[branch], value)):
            return problem
    if isinstance(value, dict):
        return _object(schema, value, sub, at)
    if isinstance(value, list | tuple):
        return _array(schema, value, sub, at)
    if isinstance(value, str):
        return _string(schema, value, at)
    if _TYPES["number"](value):
        return _number(schema, value, at)
    return None


def _object(schema: dict, value: dict, sub: Callable, at: str) -> str | None:
    for key in schema.get("required") or ():
        if key not in value:
            return f"{at}/{key}: required"
    for key, needed in (schema.get("dependentRequired") or {}).items():
        if key in value and (missing := [k for k in needed if k not in value]):
            return f"{at}/{missing[0]}: required when {key!r} is given"
    for key, node in (schema.get("dependentSchemas") or {}).items():
        if key in value and (problem := sub(node, value)):
            return problem
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        return f"{at or '/'}: at least {schema['minProperties']} keys"
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        return f"{at or '/'}: at most {schema['maxProperties']} keys"
    properties = schema.get("properties") or {}
    patterns = schema.get("patternProperties") or {}
    extra = schema.get("additionalProperties", True)
    names = schema.get("propertyNames")
    for key, item in value.items():
        where = f"{at}/{_escape(key)}"
        if names is not None and (problem := sub(names, key, where)):
            return f"{where}: the key breaks propertyNames ({problem.split(': ', 1)[-1]})"
        matched = key in properties
        if matched and (problem := sub(properties[key], item, where)):
            return problem
        for pattern, node in patterns.items():
            if _pattern(pattern).search(key):
                matched = True
                if problem := sub(node, item, where):
                    return problem
        if not matched and (problem := sub(extra, item, where)):
            return problem if extra is not False else f"{where}: no such key is allowed"
    return None


def _array(schema: dict, value: list | tuple, sub: Callable, at: str) -> str | None:
    if "minItems" in schema and len(value) < schema["minItems"]:
        return f"{at or '/'}: at least {schema['minItems']} items"
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        return f"{at or '/'}: at most {schema['maxItems']} items"
    prefix = schema.get("prefixItems") or []
    for i, item in enumerate(value):
        node = prefix[i] if i < len(prefix) else schema.get("items", True)
        if problem := sub(node, item, f"{at}/{i}"):
            return problem if node is not False else f"{at}/{i}: at most {len(prefix)} items"
    if "contains" in schema:
        found = sum(not sub(schema["contains"], item) for item in value)
        least, most = schema.get("minContains", 1), schema.get("maxContains", math.inf)
        if not least <= found <= most:
            return f"{at or '/'}: {found} items match `contains`, not between {least} and {most}"
    if schema.get("uniqueItems") is True:
        for i, item in enumerate(value):
            if any(_equal(item, other) for other in value[:i]):
                return f"{at}/{i}: items must be unique"
    return None


def _string(schema: dict, value: str, at: str) -> str | None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        return f"{at or '/'}: at least {schema['minLength']} characters"
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return f"{at or '/'}: at most {schema['maxLength']} characters"
    if isinstance(schema.get("pattern"), str) and not _pattern(schema["pattern"]).search(value):
        return f"{at or '/'}: does not match {schema['pattern']!r}"
    return None


def _number(schema: dict, value: float, at: str) -> str | None:
    checks = (
        ("minimum", lambda b: value >= b, "at least"),
        ("maximum", lambda b: value <= b, "at most"),
        ("exclusiveMinimum", lambda b: value > b, "more than"),
        ("exclusiveMaximum", lambda b: value < b, "less than"),
        ("multipleOf", lambda b: (value / b).is_integer(), "a multiple of"),
    )
    for keyword, holds, words in checks:
        bound = schema.get(keyword)
        if isinstance(bound, int | float) and not isinstance(bound, bool) and not holds(bound):
            return f"{at or '/'}: must be {words} {bound}"
    return None


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
