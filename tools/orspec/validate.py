"""Validate a bundled spec: the OpenAPI 3.1 schema, then orspec's own lints.

Every check returns problems as values; nothing is raised, so one run reports everything.
"""

from __future__ import annotations

import functools
import json
import re
import reprlib
import string
from collections.abc import Callable, Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from jsonpointer import escape

from .bundle import Bundle, SourceMap
from .pointers import MISSING, resolve_pointer, walk
from .problems import Level, Problem
from .schema import HTTP_METHODS, REF_PREFIX, deref, ref_name, required_keys, tag_values, union_of, untagged_rules


def validate(bundle: Bundle) -> list[Problem]:
    doc, sources = bundle.document, bundle.sources
    problems = list(check_openapi(doc, sources))
    problems += check_refs(doc, sources)
    problems += check_operation_ids(doc, sources)
    problems += check_discriminators(doc, sources)
    problems += check_unused_schemas(doc, sources)
    return sorted(set(problems), key=lambda p: (p.level != Level.ERROR, p.file, p.line, p.pointer, p.message))


def check_openapi(doc: dict, sources: SourceMap) -> Iterator[Problem]:
    """The document against the OpenAPI schema, then every schema object against its meta-schema.

    openapi-spec-validator reports schema-object errors relative to the schema it was visiting,
    which cannot be located; orspec checks schema objects itself, from their absolute pointers.
    """
    if "openapi" not in doc:
        if "swagger" in doc:
            yield sources.problem("/swagger", "this is a Swagger 2.0 document; orspec reads OpenAPI 3.1 (or 3.0)")
        else:
            yield sources.problem("", "missing required field 'openapi' (the OpenAPI version, e.g. 3.1.0)")
        return
    version = str(doc["openapi"])
    if not version.startswith(("3.1", "3.0")):
        yield sources.problem("/openapi", f"unsupported OpenAPI version {version!r}; expected 3.1.x or 3.0.x")
        return
    try:
        fine = _quick_structural_check(version)(doc)
        structural = [] if fine else list(_structural_validator(version).iter_errors(doc))
        for error in structural:
            error = _closest(error)
            pointer = "".join(f"/{escape(str(p))}" for p in error.absolute_path)
            yield sources.problem(pointer, _message(error))
        yield from check_schema_objects(doc, sources, version.startswith("3.1"))
        if structural:
            return  # the parameter checks below assume a well-formed document
        for message in path_parameter_problems(doc):
            yield sources.problem("/paths", message)
    except RecursionError:
        yield sources.problem("", "schemas are nested too deeply to validate")
    except Exception as exc:  # the validator can trip over input it was never meant to see
        yield sources.problem("", f"OpenAPI validation stopped: {type(exc).__name__}: {exc}")


def path_parameter_problems(doc: dict) -> Iterator[str]:
    """A parameter listed twice (same `name` and `in`), and a path parameter the path's template and
    its parameters do not agree on: what openapi-spec-validator checks of the paths once schema
    objects are checked elsewhere, in its words. Done here because importing that package took a
    third of a cold `orspec build` (pydantic-settings, jsonschema-path), to run these two checks."""
    for url, path_item in (doc.get("paths") or {}).items():
        path_item = deref(path_item, doc)
        if not isinstance(path_item, dict):
            continue
        shared = _parameters(path_item, doc)
        yield from _duplicates(shared)
        for method, operation in path_item.items():
            if method not in HTTP_METHODS or not isinstance(operation, dict):
                continue
            own = _parameters(operation, doc)
            yield from _duplicates(own)
            declared = {p.get("name") for p in own + shared if p.get("in") == "path"}
            templated = {name for _, name, _, _ in _FORMATTER.parse(url) if name}
            for name in sorted(templated - declared) + sorted(declared - templated, key=str):
                yield f"Path parameter '{name}' for '{method}' operation in '{url}' was not resolved"


_FORMATTER = string.Formatter()


def _parameters(node: dict, doc: dict) -> list[dict]:
    found = [deref(parameter, doc) for parameter in node.get("parameters") or ()]
    return [parameter for parameter in found if isinstance(parameter, dict)]


def _duplicates(parameters: list[dict]) -> Iterator[str]:
    seen = set()
    for parameter in parameters:
        key = (parameter.get("name"), parameter.get("in"))
        if key in seen:
            yield f"Duplicate parameter '{parameter.get('name')}'"
        seen.add(key)


def _message(error: Any) -> str:
    """A validation error's message, with the offending value shortened to fit on one line."""
    message = " ".join(error.message.split())
    if len(message) <= 200:
        return message
    full, short = repr(error.instance), reprlib.repr(error.instance)
    return message.replace(full, short) if full in error.message else message[:200] + "…"


SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
SCHEMA_ONES = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
JSON_TYPES = ("string", "number", "integer", "boolean", "array", "object", "null")


def schema_roots(doc: dict) -> Iterator[tuple[str, Any]]:
    """(pointer, schema) of every top-level schema object: components, and `schema` fields elsewhere."""
    components = doc.get("components")
    schemas = components.get("schemas") if isinstance(components, dict) else None
    if isinstance(schemas, dict):
        for name, schema in schemas.items():
            yield f"/components/schemas/{escape(name)}", schema
    stack: list[tuple[str, Any]] = [(f"/{escape(k)}", v) for k, v in doc.items() if k != "components"]
    if isinstance(components, dict):
        stack += [(f"/components/{escape(k)}", v) for k, v in components.items() if k != "schemas"]
    while stack:
        at, node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "schema" and isinstance(value, dict | bool):
                    yield f"{at}/schema", value
                elif key not in ("example", "examples", "default"):
                    stack.append((f"{at}/{escape(key)}", value))
        elif isinstance(node, list):
            stack.extend((f"{at}/{i}", v) for i, v in enumerate(node))


def subschemas(pointer: str, schema: Any) -> Iterator[tuple[str, dict]]:
    """Every schema object inside `schema` (itself included), following only schema keywords."""
    stack = [(pointer, schema)]
    while stack:
        at, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield at, node
        for key in SCHEMA_ONES:
            if key in node:
                stack.append((f"{at}/{escape(key)}", node[key]))
        for key in SCHEMA_LISTS:
            if isinstance(node.get(key), list):
                stack.extend((f"{at}/{key}/{i}", v) for i, v in enumerate(node[key]))
        for key in SCHEMA_MAPS:
            if isinstance(node.get(key), dict):
                stack.extend((f"{at}/{escape(key)}/{escape(k)}", v) for k, v in node[key].items())


def check_schema_objects(doc: dict, sources: SourceMap, v31: bool) -> Iterator[Problem]:
    meta = _meta_validator(v31)
    valid = _quick_meta_check(v31)
    defaults = _DefaultChecker(doc, v31)
    for root, schema in schema_roots(doc):
        for error in () if valid(schema) else meta.iter_errors(schema):
            error = _closest(error)
            pointer = root + "".join(f"/{escape(str(p))}" for p in error.absolute_path)
            if error.validator == "format" and error.absolute_path and error.absolute_path[-1] == "pattern":
                continue  # check_schema_values says why the pattern does not compile
            message = _message(error)
            if error.absolute_path and error.absolute_path[-1] == "type" and error.validator == "anyOf":
                message = f"{error.instance!r} is not a type; use one of {', '.join(JSON_TYPES)}"
            yield sources.problem(pointer, message)
        yield from check_schema_values(root, schema, sources)
        for at, node in subschemas(root, schema):
            yield from check_required(at, node, sources)
            if "default" in node and "enum" not in node and "const" not in node:  # those two say it better
                # In a member of a union the default is usually meant for the union (`anyOf: [{type:
                # object, default: null}, {type: "null"}]`), so it is checked against the union.
                union = _UNION_MEMBER.match(at)
                message = defaults.problem(union.group(1) if union else at, node["default"])
                if message:
                    yield sources.problem(f"{at}/default", message)


@functools.cache
def _structural_validator(version: str) -> Any:
    """The OpenAPI document schema, checked by python-jsonschema whatever backend
    openapi-spec-validator would pick (jsonschema-rs words and locates its errors differently)."""
    from jsonschema.validators import validator_for

    # The file openapi-spec-validator's `schema_v31` / `schema_v30` hold, read as JSON (its own
    # reader parses it as YAML in pure Python, 0.06 s), found without importing that package (0.3 s).
    folder = "v3.1" if version.startswith("3.1") else "v3.0"
    package = find_spec("openapi_spec_validator")
    if package is None or not package.submodule_search_locations:
        raise ModuleNotFoundError("openapi-spec-validator is not installed")
    home = Path(next(iter(package.submodule_search_locations)))
    schema = json.loads((home / "resources" / "schemas" / folder / "schema.json").read_text())
    return validator_for(schema)(_static_meta_refs(schema))


def _static_meta_refs(schema: dict) -> dict:
    """The schema with each `{"$dynamicRef": "#meta"}` as a plain `$ref` to the one `$dynamicAnchor: meta`.

    In the OpenAPI 3.1 document schema that anchor is declared once (`$defs/schema`), so every
    dynamic reference resolves there: the same check, but python-jsonschema resolves a dynamic
    reference by searching the dynamic scope each time, which made it most of the validation time.
    """
    anchors = [at for at, node in walk(schema) if isinstance(node, dict) and node.get("$dynamicAnchor") == "meta"]
    if len(anchors) != 1:
        return schema  # not the shape this shortcut is sure of: keep the dynamic references

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            if node.get("$dynamicRef") == "#meta" and len(node) == 1:
                return {"$ref": "#" + anchors[0]}
            return {key: rewrite(value) for key, value in node.items()}
        if isinstance(node, list):
            return [rewrite(value) for value in node]
        return node

    return rewrite(schema)


def _closest(error: Any) -> Any:
    """For "valid under none of oneOf/anyOf" (a 3.0 schema is a Schema or a Reference, say), the
    member error that says what is actually wrong, located at its own path."""
    from jsonschema.exceptions import best_match

    while error.validator in ("oneOf", "anyOf") and error.context and not (error.path and error.path[-1] == "type"):
        deepest = max(len(e.absolute_path) for e in error.context)  # the branch that got furthest
        error = best_match(e for e in error.context if len(e.absolute_path) == deepest)
    return error


def _dialect(v31: bool) -> tuple[Any, Any, Any]:
    """The OpenAPI dialect's validator class, its format checker, and the registry holding its
    meta-schemas (as `check_schema` itself uses it)."""
    from openapi_schema_validator import OAS30Validator, OAS31Validator, oas30_format_checker, oas31_format_checker
    from openapi_schema_validator._specifications import REGISTRY

    cls, formats = (OAS31Validator, oas31_format_checker) if v31 else (OAS30Validator, oas30_format_checker)
    return cls, formats, REGISTRY


@functools.cache
def _meta_validator(v31: bool) -> Any:
    from jsonschema.validators import validator_for

    cls, formats, registry = _dialect(v31)
    return validator_for(cls.META_SCHEMA, default=cls)(cls.META_SCHEMA, format_checker=formats, registry=registry)


@functools.cache
def _quick_meta_check(v31: bool) -> Callable[[Any], bool]:
    """A fast yes for schema objects that pass the meta-schema check (see `_fast_yes`).

    python-jsonschema's own format checker answers for every format it asserts, so jsonschema-rs
    accepts no value it would reject.
    """
    cls, formats, registry = _dialect(v31)

    def conforms(name: str) -> Callable[[Any], bool]:
        return lambda value: formats.conforms(value, name)

    resources = [(uri, registry[uri].contents) for uri in registry]
    return _fast_yes(cls.META_SCHEMA, resources, {name: conforms(name) for name in formats.checkers})


@functools.cache
def _quick_structural_check(version: str) -> Callable[[Any], bool]:
    """A fast yes for documents that pass `_structural_validator` (which asserts no formats)."""
    return _fast_yes(_structural_validator(version).schema, [], None)


def _fast_yes(schema: dict, resources: list[tuple[str, Any]], formats: dict | None) -> Callable[[Any], bool]:
    """`valid(instance)`: True when jsonschema-rs (Rust) finds `instance` valid under `schema`.

    A first pass only: where it says no (or cannot read the value), python-jsonschema checks again
    and words and locates the errors, so reports stay exactly python-jsonschema's. With `formats`,
    those formats are asserted through the given checkers; without, none are (as in python).
    Checking the OpenAI spec's 2,400 schema objects takes 0.03 s this way, against ~6 s.
    """
    try:
        import jsonschema_rs

        validator = jsonschema_rs.validator_for(
            schema,
            registry=jsonschema_rs.Registry(resources) if resources else None,
            formats=formats,
            validate_formats=formats is not None,
        )
    except Exception:  # not installed, or a schema this engine cannot compile: python checks everything
        return lambda instance: False

    def valid(instance: Any) -> bool:
        try:
            return validator.is_valid(instance)
        except Exception:  # a value it cannot convert
            return False

    return valid


def _same(a: Any, b: Any) -> bool:
    """JSON equality: `True` is not `1`, and `1.0` is `1`."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) or (
        type(a) in (int, float) and type(b) in (int, float) and a == b
    )


def check_schema_values(root: str, schema: Any, sources: SourceMap) -> Iterator[Problem]:
    """Defaults that their own schema forbids, and patterns that are not regular expressions."""
    for at, node in subschemas(root, schema):
        enum = node.get("enum")
        if enum == []:
            yield sources.problem(f"{at}/enum", "enum is empty, so no value is valid; list at least one")
        if "default" in node and isinstance(enum, list) and enum:
            default = node["default"]
            if not any(_same(default, v) for v in enum):
                yield sources.problem(f"{at}/default", f"default {default!r} is not one of the enum values {enum!r}")
        if "default" in node and "const" in node and not _same(node["default"], node["const"]):
            yield sources.problem(f"{at}/default", f"default {node['default']!r} differs from const {node['const']!r}")
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            try:
                re.compile(pattern)
            except re.error as exc:
                yield sources.problem(f"{at}/pattern", f"pattern {pattern!r} is not a valid regular expression: {exc}")


_UNION_MEMBER = re.compile(r"^(.*)/(?:anyOf|oneOf)/\d+$")
_ALL_OF_MEMBER = re.compile(r"/allOf/\d+$")


class _DefaultChecker:
    """Validates a schema's `default` against the schema itself, `$ref`s resolved in the document."""

    URI = "urn:orspec:spec"

    def __init__(self, doc: dict, v31: bool):
        self.doc = doc
        self.v31 = v31
        self._cls: Any = None
        self._registry: Any = None

    def problem(self, at: str, default: Any) -> str | None:
        if self._cls is None:  # built on first use: most schemas have no default
            from openapi_schema_validator import OAS30Validator, OAS31Validator
            from referencing import Registry
            from referencing.jsonschema import DRAFT4, DRAFT202012

            self._cls = OAS31Validator if self.v31 else OAS30Validator
            spec = DRAFT202012 if self.v31 else DRAFT4
            self._registry = Registry().with_resource(self.URI, spec.create_resource(self.doc))
        validator = self._cls({"$ref": f"{self.URI}#{at}"}, registry=self._registry)
        try:
            error = next(iter(validator.iter_errors(default)), None)
        except Exception:  # an unresolvable or malformed schema is reported by the other checks
            return None
        if error is None:
            return None
        return f"default {reprlib.repr(default)} does not match its own schema: {_message(error)}"


def check_required(at: str, node: dict, sources: SourceMap) -> Iterator[Problem]:
    """A `required` entry names a property the schema defines.

    Only where the schema lists its properties itself: with `allOf`, `anyOf`, `oneOf`, `$ref` or
    `patternProperties` the property may be defined elsewhere.
    """
    required, properties = node.get("required"), node.get("properties")
    if not isinstance(required, list) or not isinstance(properties, dict):
        return
    if any(key in node for key in ("allOf", "anyOf", "oneOf", "$ref", "patternProperties", "dependentSchemas")):
        return
    if _ALL_OF_MEMBER.search(at):  # the other members of the `allOf` may define it
        return
    for i, name in enumerate(required):
        if isinstance(name, str) and name not in properties:
            yield sources.problem(
                f"{at}/required/{i}", f"required property {name!r} is not one of the schema's properties"
            )


def check_refs(doc: dict, sources: SourceMap) -> Iterator[Problem]:
    for at, node in walk(doc):
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref.startswith("#") and resolve_pointer(doc, ref[1:]) is MISSING:
                yield sources.problem(f"{at}/$ref", f"$ref {ref!r} does not resolve")


def check_operation_ids(doc: dict, sources: SourceMap) -> Iterator[Problem]:
    seen: dict[str, str] = {}
    paths = doc.get("paths")
    for path, item in paths.items() if isinstance(paths, dict) else ():
        if not isinstance(item, dict):
            continue
        for method in HTTP_METHODS:
            op = item.get(method)
            if isinstance(op, dict) and isinstance(op.get("operationId"), str):
                at = f"/paths/{escape(path)}/{method}/operationId"
                first = seen.setdefault(op["operationId"], at)
                if first != at:
                    yield sources.problem(at, f"duplicate operationId {op['operationId']!r} (first used at {first})")


def check_discriminators(doc: dict, sources: SourceMap) -> Iterator[Problem]:
    for at, node in walk(doc):
        if not (isinstance(node, dict) and isinstance(node.get("discriminator"), dict)):
            continue
        prop = node["discriminator"].get("propertyName")
        keyword, variants = union_of(node) or ("oneOf", [])
        mapping = node["discriminator"].get("mapping") or {}
        if not isinstance(prop, str) or not isinstance(variants, list) or not isinstance(mapping, dict):
            continue  # the OpenAPI schema check reports the malformed discriminator
        refs = [v.get("$ref") for v in variants if isinstance(v, dict)]
        for key, target in mapping.items():
            where = f"{at}/discriminator/mapping/{escape(key)}"
            if not isinstance(target, str) or resolve_pointer(doc, target.removeprefix("#")) is MISSING:
                yield sources.problem(where, f"discriminator mapping {key!r} points at missing schema {target!r}")
            elif not target.startswith("#"):
                yield sources.problem(where, f"discriminator mapping {key!r} must be a local reference")
            elif target not in refs:
                yield sources.problem(
                    where, f"discriminator mapping {key!r} points at {target!r}, which is not one of the variants"
                )
            else:
                fixed = tag_values({"$ref": target}, prop, doc)
                if fixed and key not in fixed:
                    shown = ", ".join(repr(v) for v in fixed)
                    yield sources.problem(
                        where,
                        f"discriminator mapping {key!r} points at {target.removeprefix(REF_PREFIX)}, "
                        f"whose {prop!r} is {shown}",
                    )
        typeless: dict[str, Any] = {}  # variant -> schema, for those that may omit the discriminator
        for i, variant in enumerate(variants):
            values = tag_values(variant, prop, doc)
            where = f"{at}/{keyword}/{i}"
            ref = variant.get("$ref") if isinstance(variant, dict) else None
            name = ref_name(ref) or ""
            if not values:
                yield sources.problem(where, f"variant {name or i} has no fixed value for discriminator {prop!r}")
                continue
            target = deref(variant, doc)
            if prop not in required_keys(target, doc):
                typeless[name or str(i)] = target
            for value in values:
                if isinstance(value, str) and value in mapping and mapping[value] != ref:
                    yield sources.problem(
                        where, f"discriminator value {value!r} of {name} is mapped to {mapping[value]!r}"
                    )
        # One variant may omit the tag: a payload without it is that one. More need a key that tells them apart.
        if len(typeless) > 1 and untagged_rules(typeless, doc)[0] is None:
            yield sources.problem(
                at,
                f"variants {', '.join(typeless)} do not require discriminator {prop!r} and no key they require "
                f"tells them apart; require {prop!r} in all but one of them",
                level=Level.WARNING,
            )


def check_unused_schemas(doc: dict, sources: SourceMap) -> Iterator[Problem]:
    components = doc.get("components")
    schemas = components.get("schemas") if isinstance(components, dict) else None
    if not isinstance(schemas, dict):
        return
    used: set[str] = set()
    for at, node in walk(doc):
        if isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith(REF_PREFIX):
            name = node["$ref"][len(REF_PREFIX) :].split("/")[0]
            if not at.startswith(f"/components/schemas/{name}/"):
                used.add(name)
    for name in schemas:
        if escape(name) not in used:
            yield sources.problem(
                f"/components/schemas/{escape(name)}", f"schema {name!r} is never used", level=Level.WARNING
            )
