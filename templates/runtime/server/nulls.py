"""Explicit `null`s that the spec does not allow in a request.

The generated models type every optional field as `X | None`, so that clients stay liberal in
what they accept from servers. A server must be strict in what it takes: `"top_p": null` is no
valid request where the spec does not make `top_p` nullable. `disallowed_null` walks a request
along the spec's own schemas (`request_schemas.SCHEMAS`, generated from the bundled document)
and returns the JSON path of the first `null` its schema does not admit.
"""

from __future__ import annotations

from typing import Any

from .request_schemas import ROOTS, SCHEMAS

__all__ = ["disallowed_null"]

_PREFIX = "#/components/schemas/"
_MAX_DEPTH = 64


def disallowed_null(data: Any, model: type) -> str | None:
    """The JSON path (`input[0].content`) of a `null` in `data` that the schema of request model
    `model` forbids; None if there is none (or the model is not a request body of the spec)."""
    schema = SCHEMAS.get(ROOTS.get(model.__name__, ""))
    return None if schema is None else _walk(data, schema, "", 0)


def _resolve(schema: Any) -> Any:
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < _MAX_DEPTH:
        ref = schema["$ref"]
        name = ref[len(_PREFIX) :].replace("~1", "/").replace("~0", "~") if ref.startswith(_PREFIX) else None
        schema = SCHEMAS.get(name, {})
        seen += 1
    return schema if isinstance(schema, dict) else {}


def _admits_null(schema: Any, depth: int = 0) -> bool:
    schema = _resolve(schema)
    if depth > _MAX_DEPTH:
        return True  # unknown: the models have had their say
    if schema.get("not") == {}:
        return False  # a field that must be left out
    types = schema.get("type")
    if types is not None and "null" not in (types if isinstance(types, list) else [types]):
        return False
    if "enum" in schema and None not in schema["enum"]:
        return False
    if "const" in schema and schema["const"] is not None:
        return False
    members = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(members, list) and not any(_admits_null(m, depth + 1) for m in members):
        return False
    return all(_admits_null(m, depth + 1) for m in schema.get("allOf") or ())


def _kind(value: Any) -> str:
    return "object" if isinstance(value, dict) else "array" if isinstance(value, list) else "scalar"


def _fits(schema: Any, kind: str, depth: int = 0) -> bool:
    """Whether a union member could hold a value of this JSON kind (object, array, other)."""
    schema = _resolve(schema)
    types = schema.get("type")
    members = schema.get("oneOf") or schema.get("anyOf")
    if types is None and isinstance(members, list):
        return any(_fits(m, kind, depth + 1) for m in members) if depth < _MAX_DEPTH else False
    if types is None:
        return kind == "object" and "properties" in schema or kind == "array" and "items" in schema
    types = types if isinstance(types, list) else [types]
    return kind in types if kind != "scalar" else bool(set(types) - {"object", "array"})


def _member(value: Any, schema: dict) -> Any:
    """The union member that describes `value`: by the discriminator mapping, else the only fit."""
    members = schema.get("oneOf") or schema.get("anyOf")
    if not isinstance(members, list):
        return None
    discriminator = schema.get("discriminator")
    if isinstance(value, dict) and isinstance(discriminator, dict):
        target = (discriminator.get("mapping") or {}).get(value.get(discriminator.get("propertyName")))
        if target is not None:
            return {"$ref": target}
    fits = [m for m in members if _fits(m, _kind(value))]
    if len(fits) > 1 and isinstance(value, dict):  # no discriminator: members that fix `type` may tell
        fits = [m for m in fits if value.get("type") in _fixed(_resolve(m).get("properties", {}).get("type"))]
    return fits[0] if len(fits) == 1 else None  # several could: leave it to the models


def _forbids_null(schema: dict, key: str, depth: int = 0) -> bool:
    """Whether `schema` (or every member of it, for a union) forbids a null `key`."""
    members = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(members, list) and "properties" not in schema:
        return depth < _MAX_DEPTH and all(_forbids_null(_resolve(m), key, depth + 1) for m in members)
    prop = (schema.get("properties") or {}).get(key)
    return prop is not None and not _admits_null(prop)


def _fixed(schema: Any) -> list:
    schema = _resolve(schema)
    return [schema["const"]] if "const" in schema else list(schema.get("enum") or ())


def _walk(value: Any, schema: Any, path: str, depth: int) -> str | None:
    schema = _resolve(schema)
    if value is None:
        return None if _admits_null(schema) else (path or "body")
    if depth > _MAX_DEPTH or not isinstance(value, dict | list):
        return None
    member = _member(value, schema)
    if member is not None and (found := _walk(value, member, path, depth + 1)):
        return found
    if member is None and isinstance(value, dict) and (members := schema.get("oneOf") or schema.get("anyOf")):
        # No one member to follow (the tag itself may be the null): a null that every member
        # that could hold this object forbids is forbidden.
        candidates = [_resolve(m) for m in members if _fits(m, "object")]
        for key, item in value.items():
            if item is None and candidates and all(_forbids_null(c, key) for c in candidates):
                return f"{path}.{key}" if path else key
    for part in schema.get("allOf") or ():
        if found := _walk(value, part, path, depth + 1):
            return found
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None and (found := _walk(item, sub, f"{path}.{key}" if path else key, depth + 1)):
                return found
    elif isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            if found := _walk(item, schema["items"], f"{path}[{i}]", depth + 1):
                return found
    return None
