"""Validate a bundled spec: the OpenAPI 3.1 schema, then orspec's own lints.

Every check returns problems as values; nothing is raised, so one run reports everything.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonpointer import escape
from openapi_spec_validator import OpenAPIV30SpecValidator, OpenAPIV31SpecValidator

from .bundle import Bundle, SourceMap
from .problems import Level, Problem

SCHEMA_PREFIX = "#/components/schemas/"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def validate(bundle: Bundle) -> list[Problem]:
    doc, sources = bundle.document, bundle.sources
    problems = list(check_openapi(doc, sources))
    problems += check_refs(doc, sources)
    problems += check_operation_ids(doc, sources)
    problems += check_discriminators(doc, sources)
    problems += check_unused_schemas(doc, sources)
    return sorted(set(problems), key=lambda p: (p.level != Level.ERROR, p.file, p.line, p.pointer, p.message))


def walk(node: Any, pointer: str = "") -> Iterator[tuple[str, Any]]:
    """Every (pointer, value) in a JSON document, depth first, parents before children."""
    stack = [(pointer, node)]
    while stack:
        at, value = stack.pop()
        yield at, value
        if isinstance(value, dict):
            stack.extend((f"{at}/{escape(k)}", v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{at}/{i}", v) for i, v in reversed(list(enumerate(value))))


def check_openapi(doc: dict, sources: SourceMap) -> Iterator[Problem]:
    version = str(doc.get("openapi", ""))
    if version.startswith("3.1"):
        validator = OpenAPIV31SpecValidator(doc)
    elif version.startswith("3.0"):
        validator = OpenAPIV30SpecValidator(doc)
    else:
        yield sources.problem("/openapi", f"unsupported OpenAPI version {version!r}; expected 3.1.x or 3.0.x")
        return
    try:
        for error in validator.iter_errors():
            pointer = "".join(f"/{escape(str(p))}" for p in error.path)
            yield sources.problem(pointer, error.message)
    except RecursionError:
        yield sources.problem("", "schemas are nested too deeply to validate")
    except Exception as exc:  # the validator can trip over input it was never meant to see
        yield sources.problem("", f"OpenAPI validation stopped: {exc}")


def check_refs(doc: dict, sources: SourceMap) -> Iterator[Problem]:
    for at, node in walk(doc):
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref.startswith("#") and resolve_pointer(doc, ref[1:]) is _MISSING:
                yield sources.problem(at, f"$ref {ref!r} does not resolve")


_MISSING = object()


def resolve_pointer(doc: Any, pointer: str) -> Any:
    from jsonpointer import unescape

    node = doc
    for token in pointer.split("/")[1:] if pointer else []:
        key = unescape(token)
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return _MISSING
    return node


def check_operation_ids(doc: dict, sources: SourceMap) -> Iterator[Problem]:
    seen: dict[str, str] = {}
    for path, item in (doc.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        for method in HTTP_METHODS:
            op = item.get(method)
            if isinstance(op, dict) and isinstance(op.get("operationId"), str):
                at = f"/paths/{escape(path)}/{method}/operationId"
                first = seen.setdefault(op["operationId"], at)
                if first != at:
                    yield sources.problem(at, f"duplicate operationId {op['operationId']!r} (first used at {first})")


def tag_values(schema: Any, prop: str, doc: dict) -> list[Any] | None:
    """The fixed values a variant declares for its discriminator property, or None if not fixed."""
    schema = deref(schema, doc)
    if not isinstance(schema, dict):
        return None
    for part in schema.get("allOf", []):
        found = tag_values(part, prop, doc)
        if found:
            return found
    spec = deref((schema.get("properties") or {}).get(prop), doc)
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


def deref(schema: Any, doc: dict) -> Any:
    seen = set()
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"] not in seen:
        seen.add(schema["$ref"])
        target = resolve_pointer(doc, schema["$ref"][1:]) if schema["$ref"].startswith("#") else _MISSING
        if target is _MISSING:
            return None
        schema = target
    return schema


def check_discriminators(doc: dict, sources: SourceMap) -> Iterator[Problem]:
    for at, node in walk(doc):
        if not (isinstance(node, dict) and isinstance(node.get("discriminator"), dict)):
            continue
        prop = node["discriminator"].get("propertyName")
        variants = node.get("oneOf") or node.get("anyOf") or []
        mapping = node["discriminator"].get("mapping") or {}
        for key, target in mapping.items():
            if not isinstance(target, str) or resolve_pointer(doc, target.removeprefix("#")) is _MISSING:
                yield sources.problem(
                    f"{at}/discriminator/mapping/{escape(key)}",
                    f"discriminator mapping {key!r} points at missing schema {target!r}",
                )
            elif not target.startswith("#"):
                yield sources.problem(
                    f"{at}/discriminator/mapping/{escape(key)}",
                    f"discriminator mapping {key!r} must be a local reference",
                )
        for i, variant in enumerate(variants):
            values = tag_values(variant, prop, doc)
            where = f"{at}/{'oneOf' if 'oneOf' in node else 'anyOf'}/{i}"
            name = variant.get("$ref", "").removeprefix(SCHEMA_PREFIX) if isinstance(variant, dict) else ""
            if not values:
                yield sources.problem(where, f"variant {name or i} has no fixed value for discriminator {prop!r}")
                continue
            target = deref(variant, doc)
            if isinstance(target, dict) and prop not in (target.get("required") or []):
                yield sources.problem(
                    where,
                    f"variant {name or i} does not require discriminator {prop!r}; "
                    "payloads that omit it cannot be told apart by it",
                    level=Level.WARNING,
                )
            for value in values:
                if value in mapping and mapping[value] != variant.get("$ref"):
                    yield sources.problem(
                        where, f"discriminator value {value!r} of {name} is mapped to {mapping[value]!r}"
                    )


def check_unused_schemas(doc: dict, sources: SourceMap) -> Iterator[Problem]:
    schemas = (doc.get("components") or {}).get("schemas") or {}
    used: set[str] = set()
    for at, node in walk(doc):
        if isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith(SCHEMA_PREFIX):
            name = node["$ref"][len(SCHEMA_PREFIX) :].split("/")[0]
            if not at.startswith(f"/components/schemas/{name}/"):
                used.add(name)
    for name in schemas:
        if escape(name) not in used:
            yield sources.problem(
                f"/components/schemas/{escape(name)}", f"schema {name!r} is never used", level=Level.WARNING
            )
