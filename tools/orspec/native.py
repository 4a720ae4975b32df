"""OpenAI's own names as data: load `spec/openai-native.yaml` and check it against the spec.

The file lists request parameters and tool types that OpenAI's Responses API defines and this spec
does not, each with a line saying what it is. The server reads them (generated into
`openresponses_runtime.server.native`) to say what it ignored; a name there is never one the spec
or a fragment defines, since a defined name is honoured rather than ignored.
`check_native_names` loads the file and reports, as located problems, a malformed file, a malformed
name and a name the spec also defines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from jsonpointer import escape

from .bundle import Bundle
from .load import Document, load_file
from .problems import Problem, SpecError
from .schema import deref, tag_values, union_of

FILE_NAME = "openai-native.yaml"
KINDS = ("parameters", "tools")
# OpenAI's spelling: lower case words joined by `_`. A vendor-prefixed name belongs in a fragment.
NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


@dataclass(frozen=True)
class NativeNames:
    """Name -> what it is, for each kind; empty for a spec without the file."""

    parameters: dict[str, str] = field(default_factory=dict)
    tools: dict[str, str] = field(default_factory=dict)


def check_native_names(bundle: Bundle) -> tuple[NativeNames, list[Problem]]:
    """The spec's native names, and every problem with them (none without the file)."""
    path = bundle.root / FILE_NAME
    if not path.is_file():
        return NativeNames(), []
    try:
        doc = load_file(path)
    except SpecError as exc:
        return NativeNames(), exc.problems
    problems: list[Problem] = []
    data = doc.data
    if not isinstance(data, dict):
        return NativeNames(), [_problem(doc, "", "the file must be a mapping with `parameters` and `tools`")]
    for key in data:
        if key not in KINDS:
            problems.append(
                _problem(doc, f"/{escape(str(key))}", f"unknown key {key!r}: expected one of {', '.join(KINDS)}")
            )
    defined = {"parameters": defined_parameters(bundle.document), "tools": defined_tool_types(bundle.document)}
    found: dict[str, dict[str, str]] = {}
    for kind in KINDS:
        found[kind] = {}
        names = data.get(kind, {})
        if not isinstance(names, dict):
            problems.append(_problem(doc, f"/{kind}", f"`{kind}` must map each name to what it is"))
            continue
        for name, description in names.items():
            at = f"/{kind}/{escape(str(name))}"
            if not isinstance(name, str) or not NAME.match(name):
                problems.append(
                    _problem(doc, at, f"{name!r} is not an OpenAI name: lower case letters, digits and `_`, at most 64")
                )
            elif name in defined[kind]:
                problems.append(
                    _problem(doc, at, f"{name!r} is defined by the spec, so it is not native: remove it from this list")
                )
            elif not isinstance(description, str) or not description.strip():
                problems.append(_problem(doc, at, f"{name!r} needs a description: one line saying what it is"))
            else:
                found[kind][name] = " ".join(description.split())
    names = NativeNames(**{kind: dict(sorted(found[kind].items())) for kind in KINDS})
    return names, sorted(problems, key=lambda p: (p.line, p.pointer))


def defined_parameters(document: dict) -> set[str]:
    """Every top-level property of a request body or WebSocket client message (fragments' included)."""
    return {name for schema in _request_schemas(document) for name in _properties(schema, document)}


def defined_tool_types(document: dict) -> set[str]:
    """Every `type` of a tool a request may carry in `tools`."""
    types: set[str] = set()
    for schema in _request_schemas(document):
        tools = deref(_properties(schema, document).get("tools"), document)
        nullable = union_of(tools)  # `anyOf: [{type: array, ...}, {type: null}]`
        for array in nullable[1] if nullable else [tools]:
            array = deref(array, document)
            found = union_of(deref(array.get("items"), document)) if isinstance(array, dict) else None
            for member in found[1] if found else ():
                types.update(v for v in tag_values(member, "type", document) or () if isinstance(v, str))
    return types


def _request_schemas(document: dict) -> list[Any]:
    schemas = []
    for item in (document.get("paths") or {}).values():
        if not isinstance(item, dict):
            continue
        schemas.append((item.get("x-openresponses-websocket") or {}).get("clientMessage"))
        for op in item.values():
            content = ((op.get("requestBody") or {}).get("content") or {}) if isinstance(op, dict) else {}
            schemas += [media.get("schema") for media in content.values() if isinstance(media, dict)]
    return [s for s in schemas if s is not None]


def _properties(schema: Any, document: dict, depth: int = 0) -> dict[str, Any]:
    """A schema's properties, those of its `allOf` parts included."""
    schema = deref(schema, document)
    if not isinstance(schema, dict) or depth > 16:
        return {}
    found: dict[str, Any] = {}
    for part in schema.get("allOf") if isinstance(schema.get("allOf"), list) else ():
        found.update(_properties(part, document, depth + 1))
    if isinstance(schema.get("properties"), dict):
        found.update(schema["properties"])
    return found


def _problem(doc: Document, pointer: str, message: str) -> Problem:
    return Problem(doc.display, doc.line_of(pointer), pointer, message)
