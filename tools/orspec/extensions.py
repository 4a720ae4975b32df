"""Vendor extension fragments: check each one, then merge it into the bundled core spec.

A fragment is one file per vendor in `spec/extensions/`, a small OpenAPI document:

    x-openresponses-extension: {vendor: acme, title: Acme extensions}
    components:
      schemas:
        AcmeWebSearchCall:
          x-openresponses-kind: item        # item | event | tool | content; absent = helper
          ...
    x-openresponses-extends:                # optional fields added to core schemas
      ResponseResource:
        properties:
          "acme:cache_hit": {type: boolean}
    paths:                                  # operations the core leaves out
      /acme/things/{thing_id}:
        get: {operationId: getAcmeThing, ...}

Each kind joins the core unions listed in `KIND_UNIONS`, each operation joins the core's
`paths`; everything merged carries `x-openresponses-vendor: <slug>` so docs and diff can tell
where it came from.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonpointer import escape

from .bundle import Bundle
from .load import Document, display_path, load_file
from .pointers import resolve_pointer, walk
from .problems import Problem, SpecError
from .schema import HTTP_METHODS, REF_PREFIX, VENDOR, ref_name, schema_ref, stream_pointers, tag_values, union_of

BLOCK = "x-openresponses-extension"
EXTENDS = "x-openresponses-extends"
KIND = "x-openresponses-kind"
SLUG = re.compile(r"^[a-z][a-z0-9_-]*$")
PATH_PARAMETER = re.compile(r"\{([^{}]*)\}")
# What a fragment's `$ref` may name besides a schema: the core's shared error answers.
CORE_RESPONSES = "#/components/responses/"

# Where each kind of vendor schema joins the core: output and input items, tools as echoed and as
# sent, message content parts, and the streaming-event union (wherever the spec's operations
# answer with an event stream).
KIND_UNIONS: dict[str, tuple[str, ...]] = {
    "item": ("/components/schemas/ItemField", "/components/schemas/ItemParam"),
    "tool": ("/components/schemas/Tool", "/components/schemas/ResponsesToolParam"),
    "content": ("/components/schemas/Message/properties/content/items",),
    "event": (),
}
ITEM_PARAMS = "/components/schemas/ItemParam"
SERVER_GIVEN = ("id", "status")  # what a server gives an item it emits, which the client may drop
REQUIRED_BY_KIND = {"item": ("id", "type", "status"), "event": ("type", "sequence_number")}


@dataclass
class Fragment:
    doc: Document
    vendor: str
    title: str
    schemas: dict[str, Any] = field(default_factory=dict)
    extends: dict[str, Any] = field(default_factory=dict)
    paths: dict[str, Any] = field(default_factory=dict)

    def problem(self, pointer: str, message: str) -> Problem:
        return Problem(self.doc.display, self.doc.line_of(pointer), pointer, message)

    def kinds(self) -> Iterator[tuple[str, str, dict]]:
        for name, schema in self.schemas.items():
            if isinstance(schema, dict) and isinstance(schema.get(KIND), str):
                yield name, schema[KIND], schema

    def operations(self) -> Iterator[tuple[str, str, dict]]:
        """(path, method, operation) for every operation the fragment adds."""
        for path, item in self.paths.items():
            for method in HTTP_METHODS:
                if isinstance(item, dict) and isinstance(item.get(method), dict):
                    yield path, method, item[method]


def pascal(slug: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]", slug))


def fragment_files(bundle: Bundle) -> list[Path]:
    """Fragments live beside a spec directory's root file; a single-file spec has none."""
    folder = bundle.root / "extensions"
    if bundle.root_file.name not in ("openapi.yaml", "openapi.yml", "openapi.json") or not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml", ".json") and p.is_file())


def extend(bundle: Bundle) -> tuple[list[Fragment], list[Problem]]:
    """Check every fragment and merge the sound ones into `bundle.document` in place."""
    problems: list[Problem] = []
    fragments: list[Fragment] = []
    for path in fragment_files(bundle):
        try:
            doc = load_file(path)
        except SpecError as exc:
            problems += exc.problems
            continue
        fragment, found = _read(doc)
        problems += found
        if fragment:
            fragments.append(fragment)
    problems += _check_across(fragments, bundle.document)
    bad = {p.file for p in problems}
    for fragment in fragments:
        if fragment.doc.display not in bad:
            _merge(fragment, bundle)
    return fragments, problems


def _read(doc: Document) -> tuple[Fragment | None, list[Problem]]:
    data = doc.data
    shown = doc.display
    if not isinstance(data, dict) or not isinstance(data.get(BLOCK), dict):
        return None, [
            Problem(shown, 1, f"/{BLOCK}", f"not a vendor fragment: the `{BLOCK}` block (vendor, title) is missing")
        ]
    block = data[BLOCK]
    vendor = block.get("vendor")
    fragment = Fragment(doc, str(vendor), str(block.get("title", "")))
    problems: list[Problem] = []
    if not isinstance(vendor, str) or not SLUG.match(vendor):
        problems.append(fragment.problem(f"/{BLOCK}/vendor", f"vendor slug {vendor!r} must match {SLUG.pattern}"))
        return None, problems
    unknown = set(data) - {BLOCK, "components", EXTENDS, "paths", "openapi", "info"}
    for key in sorted(unknown):
        problems.append(fragment.problem(f"/{escape(key)}", f"unexpected top-level key {key!r} in a fragment"))
    components = data.get("components") or {}
    schemas = components.get("schemas") if isinstance(components, dict) else None
    fragment.schemas = schemas if isinstance(schemas, dict) else {}
    extends = data.get(EXTENDS) or {}
    fragment.extends = extends if isinstance(extends, dict) else {}
    paths = data.get("paths") or {}
    fragment.paths = paths if isinstance(paths, dict) else {}
    problems += _check_schemas(fragment)
    problems += _check_paths(fragment)
    return fragment, problems


def _tag_of(schema: dict) -> tuple[str | None, str]:
    """The schema's single fixed `type` value, or None with the reason."""
    properties = schema.get("properties")
    prop = properties.get("type") if isinstance(properties, dict) else None
    if not isinstance(prop, dict):
        return None, "has no `type` property"
    if "const" in prop:
        values = [prop["const"]]
    elif isinstance(prop.get("enum"), list):
        values = prop["enum"]
    else:
        return None, "does not fix `type` to a single value (use `enum: [...]` with one value, or `const`)"
    if len(values) != 1 or not isinstance(values[0], str):
        return None, f"fixes `type` to {len(values)} values; a discriminator must be one fixed string"
    return values[0], ""


def _check_schemas(fragment: Fragment) -> list[Problem]:
    problems: list[Problem] = []
    slug, prefix = fragment.vendor, pascal(fragment.vendor)
    base = "/components/schemas"
    for name, schema in fragment.schemas.items():
        at = f"{base}/{escape(name)}"
        if not name.lower().startswith(prefix.lower()) or len(name) == len(prefix):
            problems.append(fragment.problem(at, f"schema name {name!r} must start with the vendor prefix {prefix!r}"))
        if not isinstance(schema, dict):
            problems.append(fragment.problem(at, f"schema {name!r} must be a mapping"))
            continue
        kind = schema.get(KIND)
        if kind is None:
            continue
        if not isinstance(kind, str) or kind not in KIND_UNIONS:
            problems.append(
                fragment.problem(
                    f"{at}/{KIND}",
                    f"unknown {KIND} {kind!r} on {name!r}; expected one of " + ", ".join(sorted(KIND_UNIONS)),
                )
            )
            continue
        tag, why = _tag_of(schema)
        if tag is None:
            problems.append(fragment.problem(at, f"{kind} {name!r} {why}"))
        elif not tag.startswith(f"{slug}:") or len(tag) == len(slug) + 1:
            problems.append(
                fragment.problem(f"{at}/properties/type", f"{kind} type {tag!r} of {name!r} must be prefixed '{slug}:'")
            )
        required = schema.get("required") or []
        for needed in REQUIRED_BY_KIND.get(kind, ()):
            if needed not in required:
                problems.append(fragment.problem(f"{at}/required", f"custom {kind} {name!r} must require {needed!r}"))
        if kind == "event":
            seq = (schema.get("properties") or {}).get("sequence_number")
            if not (isinstance(seq, dict) and seq.get("type") == "integer"):
                problems.append(
                    fragment.problem(
                        f"{at}/properties/sequence_number",
                        f"custom event {name!r} must declare `sequence_number` as an integer",
                    )
                )
    for target, ext in fragment.extends.items():
        at = f"/{EXTENDS}/{escape(target)}"
        if not isinstance(ext, dict) or set(ext) - {"properties"}:
            problems.append(
                fragment.problem(
                    at, f"extension of {target!r} may only add `properties` (extension fields are optional)"
                )
            )
            continue
        for prop in ext.get("properties") or {}:
            if not prop.startswith(f"{slug}:") or len(prop) == len(slug) + 1:
                problems.append(
                    fragment.problem(
                        f"{at}/properties/{escape(prop)}",
                        f"extension field {prop!r} on {target!r} must be prefixed '{slug}:'",
                    )
                )
    for pointer, node in walk(fragment.doc.data):
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            problems += _check_ref(fragment, pointer, node["$ref"])
    return problems


def _check_ref(fragment: Fragment, pointer: str, ref: str) -> list[Problem]:
    if ref_name(ref) is None and not _core_response(ref):
        return [
            fragment.problem(
                pointer,
                f"$ref {ref!r} must point at a core schema or one of this fragment's own (`#/components/schemas/Name`)"
                f", or at a core error answer (`{CORE_RESPONSES}Name`)",
            )
        ]
    return []


def _core_response(ref: str) -> str | None:
    """The shared answer a `$ref` names (`#/components/responses/NotFound` -> `NotFound`), else None."""
    name = ref[len(CORE_RESPONSES) :] if ref.startswith(CORE_RESPONSES) else ""
    return name if name and "/" not in name else None


def _check_paths(fragment: Fragment) -> list[Problem]:
    """Each operation's path parameters are declared, on the operation or on its path."""
    problems: list[Problem] = []
    for path, item in fragment.paths.items():
        at = f"/paths/{escape(path)}"
        if not path.startswith("/") or not isinstance(item, dict):
            problems.append(fragment.problem(at, f"path {path!r} must start with '/' and hold a mapping of operations"))
            continue
        templated = PATH_PARAMETER.findall(path)
        for method in HTTP_METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            declared = {
                p.get("name")
                for p in [*(item.get("parameters") or []), *(op.get("parameters") or [])]
                if isinstance(p, dict) and p.get("in") == "path"
            }
            for name in templated:
                if name not in declared:
                    problems.append(
                        fragment.problem(
                            f"{at}/{method}",
                            f"path parameter {name!r} of {method.upper()} {path} is not declared: "
                            f"add `{{name: {name}, in: path, required: true}}` to its `parameters`",
                        )
                    )
    return problems


def _check_across(fragments: list[Fragment], core: dict) -> list[Problem]:
    """Collisions with the core and between fragments, and refs and targets that must exist."""
    problems: list[Problem] = []
    core_schemas = (core.get("components") or {}).get("schemas") or {}
    core_tags = {t for s in core_schemas.values() for t in tag_values(s, "type", core) or () if isinstance(t, str)}
    slugs: dict[str, Fragment] = {}
    names: dict[str, Fragment] = {}
    tags: dict[str, Fragment] = {}
    fields: dict[tuple[str, str], Fragment] = {}
    problems += _check_operations_across(fragments, core)
    for fragment in fragments:
        if fragment.vendor in slugs:
            first = slugs[fragment.vendor].doc.display
            problems.append(
                fragment.problem(f"/{BLOCK}/vendor", f"vendor slug {fragment.vendor!r} is already used by {first}")
            )
        slugs.setdefault(fragment.vendor, fragment)
        for name in fragment.schemas:
            at = f"/components/schemas/{escape(name)}"
            if name in core_schemas:
                problems.append(fragment.problem(at, f"schema name {name!r} collides with a core schema"))
            elif name in names:
                problems.append(fragment.problem(at, f"schema name {name!r} collides with {names[name].doc.display}"))
            names.setdefault(name, fragment)
        for name, _kind, schema in fragment.kinds():
            tag = _tag_of(schema)[0]
            at = f"/components/schemas/{escape(name)}/properties/type"
            if tag in core_tags:
                problems.append(fragment.problem(at, f"discriminator value {tag!r} of {name!r} collides with the core"))
            elif tag and tag in tags and tags[tag] is not fragment:
                problems.append(
                    fragment.problem(
                        at, f"discriminator value {tag!r} of {name!r} collides with {tags[tag].doc.display}"
                    )
                )
            if tag:
                tags.setdefault(tag, fragment)
        for target, ext in fragment.extends.items():
            at = f"/{EXTENDS}/{escape(target)}"
            target_schema = core_schemas.get(target)
            if not isinstance(target_schema, dict):
                problems.append(fragment.problem(at, f"extension target {target!r} is not a core schema"))
                continue
            for prop in ((ext or {}).get("properties") or {}) if isinstance(ext, dict) else {}:
                where = f"{at}/properties/{escape(prop)}"
                if prop in (target_schema.get("properties") or {}):
                    problems.append(
                        fragment.problem(
                            where, f"extension field {prop!r} redefines an existing property of {target!r}"
                        )
                    )
                elif (target, prop) in fields:
                    problems.append(
                        fragment.problem(
                            where,
                            f"extension field {prop!r} on {target!r} collides with "
                            f"{fields[(target, prop)].doc.display}",
                        )
                    )
                fields.setdefault((target, prop), fragment)
    for fragment in fragments:
        for pointer, node in walk(fragment.doc.data):
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                continue
            answer = _core_response(node["$ref"])
            if answer is not None and answer not in ((core.get("components") or {}).get("responses") or {}):
                problems.append(fragment.problem(pointer, f"$ref {node['$ref']!r} is not a core answer"))
            if node["$ref"].startswith(REF_PREFIX):
                name = ref_name(node["$ref"])
                if name is not None and name not in core_schemas and name not in fragment.schemas:
                    owner = names.get(name)
                    why = (
                        f"belongs to {owner.doc.display}; fragments may not depend on each other"
                        if owner
                        else "does not resolve"
                    )
                    problems.append(fragment.problem(pointer, f"$ref {node['$ref']!r} {why}"))
    return problems


def _check_operations_across(fragments: list[Fragment], core: dict) -> list[Problem]:
    """An operation (path and method) and its `operationId` belong to the core or one fragment only.

    Paths that differ only in their parameters' names (`/r/{id}`, `/r/{rid}`) are the same route."""
    problems: list[Problem] = []
    core_paths = core.get("paths") if isinstance(core.get("paths"), dict) else {}
    owners: dict[tuple[str, str], str] = {}
    ids: dict[str, str] = {}
    for path, item in core_paths.items():
        for method in HTTP_METHODS:
            op = item.get(method) if isinstance(item, dict) else None
            if isinstance(op, dict):
                owners[PATH_PARAMETER.sub("{}", path), method] = "the core"
                if isinstance(op.get("operationId"), str):
                    ids.setdefault(op["operationId"], f"the core's {method.upper()} {path}")
    for fragment in fragments:
        for path, method, op in fragment.operations():
            at = f"/paths/{escape(path)}/{method}"
            owner = owners.setdefault((PATH_PARAMETER.sub("{}", path), method), fragment.doc.display)
            if owner != fragment.doc.display:
                problems.append(
                    fragment.problem(
                        at, f"operation {method.upper()} {path} collides with {owner}'s; give it another path"
                    )
                )
            op_id = op.get("operationId")
            if not isinstance(op_id, str) or not op_id:
                problems.append(
                    fragment.problem(
                        at, f"operation {method.upper()} {path} needs an `operationId` (its handler's name)"
                    )
                )
                continue
            first = ids.setdefault(op_id, f"{method.upper()} {path} in {fragment.doc.display}")
            if not first.startswith(f"{method.upper()} {path} in "):
                problems.append(
                    fragment.problem(
                        f"{at}/operationId",
                        f"duplicate operationId {op_id!r}: {first} has it already; operationIds name handlers, "
                        "so each must be unique",
                    )
                )
    return problems


def _merge(fragment: Fragment, bundle: Bundle) -> None:
    doc = bundle.document
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in fragment.schemas.items():
        schemas[name] = {**copy.deepcopy(schema), VENDOR: fragment.vendor}
        bundle.sources.mount(f"/components/schemas/{escape(name)}", fragment.doc, f"/components/schemas/{escape(name)}")
    for name, kind, schema in fragment.kinds():
        for union_at in KIND_UNIONS[kind] or stream_pointers(doc):
            member = name
            if union_at == ITEM_PARAMS:  # sent back as input, an item may lack what the server gave it
                member = _input_form(schemas, name, schema, fragment, bundle)
            found = union_of(resolve_pointer(doc, union_at))
            if found and {"$ref": schema_ref(member)} not in found[1]:
                found[1].append({"$ref": schema_ref(member)})
    for target, ext in fragment.extends.items():
        props = schemas[target].setdefault("properties", {})
        for prop, schema in ext.get("properties", {}).items():
            props[prop] = {**copy.deepcopy(schema), VENDOR: fragment.vendor}
            at = f"/components/schemas/{escape(target)}/properties/{escape(prop)}"
            bundle.sources.mount(at, fragment.doc, f"/{EXTENDS}/{escape(target)}/properties/{escape(prop)}")
    paths = doc.setdefault("paths", {})
    for path, item in fragment.paths.items():
        at = f"/paths/{escape(path)}"
        if path not in paths:
            paths[path] = {k: copy.deepcopy(v) for k, v in item.items() if k not in HTTP_METHODS}
            bundle.sources.mount(at, fragment.doc, at)
        elif item.get("parameters"):  # a core path keeps its own parameters: the operations carry these
            item = {
                m: {**op, "parameters": [*item["parameters"], *(op.get("parameters") or [])]}
                for m, op in item.items()
                if m in HTTP_METHODS
            }
        for method in HTTP_METHODS:
            if isinstance(item.get(method), dict):
                paths[path][method] = {**copy.deepcopy(item[method]), VENDOR: fragment.vendor}
                bundle.sources.mount(f"{at}/{method}", fragment.doc, f"{at}/{method}")


def _input_form(schemas: dict[str, Any], name: str, schema: dict, fragment: Fragment, bundle: Bundle) -> str:
    """The name of a vendor item's input form, `<Name>Param`: the item as emitted, its `id` and
    `status` optional, as the core's input items have them, so that a client keeping history without
    server ids sends it back as it keeps it."""
    param = f"{name}Param"
    required = [key for key in schema.get("required") or () if key not in SERVER_GIVEN]
    form = {k: copy.deepcopy(v) for k, v in schema.items() if k not in (KIND, "required")}
    schemas[param] = {**form, **({"required": required} if required else {}), VENDOR: fragment.vendor}
    here = f"/components/schemas/{escape(name)}"
    bundle.sources.mount(f"/components/schemas/{escape(param)}", fragment.doc, here)
    return param


def describe(fragments: list[Fragment]) -> str:
    """What each vendor adds, for `orspec extensions list`."""
    lines = []
    for fragment in sorted(fragments, key=lambda f: f.vendor):
        lines.append(
            f"{fragment.vendor}  ({display_path(fragment.doc.path)}){'  ' + fragment.title if fragment.title else ''}"
        )
        for name, kind, schema in sorted(fragment.kinds(), key=lambda k: (k[1], k[0])):
            lines.append(f"  {kind:<8} {_tag_of(schema)[0]:<48} {name}")
        helpers = sorted(n for n, s in fragment.schemas.items() if not (isinstance(s, dict) and KIND in s))
        for name in helpers:
            lines.append(f"  {'schema':<8} {'':<48} {name}")
        for target, ext in sorted(fragment.extends.items()):
            for prop in sorted((ext or {}).get("properties") or {}):
                lines.append(f"  {'field':<8} {prop:<48} on {target}")
        for path, method, op in sorted(fragment.operations()):
            lines.append(f"  {'path':<8} {method.upper() + ' ' + path:<48} {op.get('operationId', '')}")
    return "\n".join(lines)
