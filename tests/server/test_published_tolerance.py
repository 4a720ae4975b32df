"""The published document says what the default server does with what the spec does not define:
a body with an unknown parameter or tool type is valid against it, and the server takes it and
names both in `OpenResponses-Ignored`; what the document refuses, the server refuses too."""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest
from openresponses_runtime.server import DemoProvider, MemoryStore, create_app
from orspec.publish import IGNORED_TOOL, published

from ..conftest import ROOT
from ..server_helpers import API_KEY, live_server

DOCUMENT = json.loads((ROOT / "generated" / "openapi.json").read_text())


def _ignored_tool() -> dict:
    tools = DOCUMENT["components"]["schemas"]["CreateResponseBody"]["properties"]["tools"]["anyOf"][0]
    known, ignored = tools["items"]["anyOf"]
    assert known == {"$ref": "#/components/schemas/ResponsesToolParam"}
    assert ignored["title"] == IGNORED_TOOL and ignored["x-openresponses-ignored"] == "tool"
    return ignored


def _valid(component: str, body: dict) -> bool:
    schema = {"$ref": f"#/components/schemas/{component}", "components": DOCUMENT["components"]}
    return jsonschema.Draft202012Validator(schema).is_valid(body)


TAKEN = {"model": "demo", "input": "hi", "x_new_parameter": 1, "tools": [{"type": "web_search_preview"}]}
# Refused by the server, and by the document: a function tool with a bad name is not an unknown tool.
BAD_FUNCTION = {"model": "demo", "input": "hi", "tools": [{"type": "function", "name": 5}]}
NO_TYPE = {"model": "demo", "input": "hi", "tools": [{"name": "f"}]}


@pytest.fixture(scope="module")
def servers():
    tolerant = create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys=API_KEY)
    strict = create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys=API_KEY, strict=True)
    with live_server(tolerant) as tolerant_url, live_server(strict) as strict_url:
        yield tolerant_url, strict_url


def _post(base: str, body: dict) -> httpx.Response:
    return httpx.post(base + "/responses", json=body, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30)


def test_what_the_default_server_ignores_the_document_admits_and_notes(servers):
    tolerant, strict = servers
    assert _valid("CreateResponseBody", TAKEN)
    answer = _post(tolerant, TAKEN)
    assert answer.status_code == 200, answer.text
    assert answer.headers["openresponses-ignored"] == "parameter:x_new_parameter, tool:web_search_preview"
    refused = _post(strict, TAKEN)
    assert refused.status_code == 400 and refused.json()["error"]["code"] in (
        "unknown_parameter",
        "unsupported_tool_type",
    )
    body = DOCUMENT["components"]["schemas"]["CreateResponseBody"]
    note = body["x-openresponses-ignored"]
    assert set(note) == {"parameters", "tools", "strict"} and "OpenResponses-Ignored" in note["parameters"]
    compact = DOCUMENT["components"]["schemas"]["CompactResponseMethodPublicBody"]
    assert set(compact["x-openresponses-ignored"]) == {"parameters", "strict"}  # no tools to widen there
    assert _valid("CompactResponseMethodPublicBody", {"model": "demo", "x_new_parameter": 1})


@pytest.mark.parametrize("body", [BAD_FUNCTION, NO_TYPE], ids=["bad-function", "no-type"])
def test_what_the_server_refuses_the_document_refuses(servers, body):
    tolerant, _ = servers
    assert not _valid("CreateResponseBody", body)
    assert _post(tolerant, body).status_code == 400


def test_every_type_the_document_excludes_the_server_reads():
    """The ignored tool's `not` lists exactly the types the server does not ignore."""
    from openresponses_runtime import models
    from openresponses_runtime._base import UnknownTool
    from pydantic import TypeAdapter, ValidationError

    tools = TypeAdapter(models.ResponsesToolParam)

    def read(kind: str) -> bool:  # a type the models know: a variant of its own, which may want more fields
        try:
            return not isinstance(tools.validate_python({"type": kind}), UnknownTool)
        except ValidationError:
            return True

    excluded = _ignored_tool()["properties"]["type"]["not"]["enum"]
    assert {kind for kind in excluded if read(kind)} | {"namespace"} == set(excluded)  # namespace: see acceptance
    assert not read("web_search_preview")


def test_only_the_request_bodies_change_and_publishing_twice_changes_nothing():
    from orspec.pipeline import load_spec

    spec = load_spec(ROOT / "spec").document
    once = published(spec)
    assert published(once) == once
    schemas, before = once["components"]["schemas"], spec["components"]["schemas"]
    changed = {name for name in before if schemas[name] != before[name]}
    assert set(schemas) == set(before)  # no component added
    assert changed == {"CreateResponseBody", "CompactResponseMethodPublicBody"}  # the request bodies alone
