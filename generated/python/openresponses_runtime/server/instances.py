"""One valid, deterministic instance of a JSON Schema: what the demo model passes as a function's
arguments and answers under a `json_schema` text format, so that real agents can act on it.

It covers what tool and output schemas use in practice (`$ref` into `$defs`/`definitions`, `enum`,
`const`, `default`, `anyOf`/`oneOf`/`allOf`, typed objects, arrays, strings with a `format` or length
bounds, numbers within bounds and steps). A `pattern` is not solved: the string stays as it would be.
What a schema asks is clamped (`MAX_STRING`, `MAX_ITEMS`, `MAX_VALUES`): a 200-byte request must not
make the server build megabytes.
Numbers are whole wherever the schema allows, since clients often read a `number` as an integer.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["instance_of"]

_DATE, _TIME = "2026-01-01", "00:00:00Z"
_FORMATS = {
    "date-time": f"{_DATE}T{_TIME}",  # RFC 3339: a full date, "T", a full time
    "date": _DATE,
    "time": _TIME,
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "hostname": "example.com",
}
_MAX_DEPTH = 32  # recursive schemas (a tree of nodes) stop at their first optional way out
# What a client's schema may make the demo build, whatever it asks (`minLength: 5000000`, arrays of
# arrays with `minItems`): past these the instance is cut short, and may then not be valid.
MAX_STRING = 4096  # characters a string is padded to
MAX_ITEMS = 64  # items an array is given
MAX_VALUES = 10_000  # values an instance holds in all
MAX_PADDING = 64 * 1024  # characters strings are padded with, in all


def instance_of(schema: Any, name: str = "value") -> Any:
    """A value valid against `schema`; `name` (a property's name) makes strings readable."""
    return _Instance(schema if isinstance(schema, dict) else {}).of(schema, name, 0)


class _Instance:
    def __init__(self, root: dict[str, Any]):
        self.root = root
        self.left = MAX_VALUES
        self.padding = MAX_PADDING

    def of(self, schema: Any, name: str, depth: int) -> Any:
        self.left -= 1
        if not isinstance(schema, dict):
            return f"example {name}" if schema is not False else None
        schema = self._resolved(schema)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return schema["enum"][0]
        if "default" in schema:
            return schema["default"]
        if isinstance(schema.get("examples"), list) and schema["examples"]:
            return schema["examples"][0]
        for key in ("anyOf", "oneOf"):
            if schema.get(key):
                return self.of(self._simplest(schema[key]), name, depth + 1)
        if schema.get("allOf"):
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                part = self._resolved(part) if isinstance(part, dict) else {}
                merged["properties"] = {**merged.get("properties", {}), **part.get("properties", {})}
                merged["required"] = [*merged.get("required", []), *part.get("required", [])]
                merged.update({k: v for k, v in part.items() if k not in ("properties", "required")})
            return self.of(merged, name, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):  # ["string", "null"]: the first that is not null
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, name, depth)
        if kind in ("integer", "number"):
            return _number(schema, integer=kind == "integer")
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        text = _string(schema, name, self.padding)
        self.padding -= len(text)
        return text

    def _resolved(self, schema: dict[str, Any]) -> dict[str, Any]:
        seen = 0
        while isinstance(schema.get("$ref"), str) and seen < _MAX_DEPTH:
            target: Any = self.root
            for part in schema["$ref"].removeprefix("#").strip("/").split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part, {}) if isinstance(target, dict) and part else target
            schema = {
                **(target if isinstance(target, dict) else {}),
                **{k: v for k, v in schema.items() if k != "$ref"},
            }
            seen += 1
        return schema

    def _simplest(self, options: list[Any]) -> Any:
        """The first option that is not `null` (an optional field gets a value)."""
        for option in options:
            resolved = self._resolved(option) if isinstance(option, dict) else option
            if not (isinstance(resolved, dict) and resolved.get("type") == "null"):
                return option
        return options[0]

    def _object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        properties = schema.get("properties") or {}
        required = schema.get("required")
        # Only what is required when the schema says so: an agent acts on every argument it is given.
        names = [key for key in properties if key in required] if isinstance(required, list) else list(properties)
        if depth >= _MAX_DEPTH:
            names = [key for key in names if isinstance(required, list) and key in required]
        return {key: self.of(properties[key], key, depth + 1) for key in names}

    def _array(self, schema: dict[str, Any], name: str, depth: int) -> list[Any]:
        least = schema.get("minItems", 1 if depth < _MAX_DEPTH else 0)
        count = min(max(least, 0), schema.get("maxItems", least if least > 1 else 1), MAX_ITEMS)
        count = count if self.left > count else 0  # the instance is as large as it may be
        items = schema.get("prefixItems") or []
        values = [self.of(items[i], name, depth + 1) for i in range(min(count, len(items)))]
        rest = self._resolved(schema["items"]) if isinstance(schema.get("items"), dict) else {}
        choices = rest.get("enum") if schema.get("uniqueItems") and rest.get("enum") else None
        while len(values) < count:
            values.append(choices[len(values) % len(choices)] if choices else self.of(rest, name, depth + 1))
        return values


def _number(schema: dict[str, Any], *, integer: bool) -> int | float:
    low, high = schema.get("minimum"), schema.get("maximum")
    above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    step = schema.get("multipleOf")

    def fits(value: float) -> bool:
        return (
            (low is None or value >= low)
            and (high is None or value <= high)
            and (above is None or value > above)
            and (below is None or value < below)
            and (not step or math.isclose(value / step, round(value / step)))
            and (not integer or float(value).is_integer())
        )

    lowest = max((v for v in (low, above) if isinstance(v, int | float)), default=None)
    highest = min((v for v in (high, below) if isinstance(v, int | float)), default=None)
    unit = step or 1
    # 1 when allowed, else the first whole numbers (or multiples of the step) up from the lowest
    # bound, or down from the highest.
    up = math.ceil((math.ceil(lowest) if lowest is not None else 1) / unit) * unit
    down = math.floor((math.floor(highest) if highest is not None else 1) / unit) * unit
    for value in (1, up, up + unit, up + 2 * unit, down, down - unit, down - 2 * unit):
        if fits(value):
            return int(value) if float(value).is_integer() else value
    if lowest is not None and highest is not None:  # no whole number fits (0 < x < 1): the middle
        return (lowest + highest) / 2
    return 0


def _string(schema: dict[str, Any], name: str, padding: int = MAX_STRING) -> str:
    text = _FORMATS.get(schema.get("format", ""), f"example {name}")
    least, most = min(schema.get("minLength", 0), MAX_STRING, len(text) + max(padding, 0)), schema.get("maxLength")
    if len(text) < least:
        text += "x" * (least - len(text))
    return text[:most] if isinstance(most, int) else text
