"""Vendor fragments: every rule has its own located message, and merged vendor types round-trip."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from openresponses_runtime import models
from orspec.cli import main
from orspec.publish import event_union
from pydantic import TypeAdapter

from ..conftest import ROOT, run_orspec, spec_with_vendor

FIXTURES = ROOT / "tests" / "fixtures" / "fragments"
CASES = sorted(p.stem for p in FIXTURES.glob("*.yaml"))
EXPECT_OVERRIDES = {"empty": "file is empty"}


def expectation(case: str) -> str:
    if case in EXPECT_OVERRIDES:
        return EXPECT_OVERRIDES[case]
    first = (FIXTURES / f"{case}.yaml").read_text().splitlines()[0]
    assert first.startswith("# expect: "), case
    return first.removeprefix("# expect: ")


@pytest.fixture
def spec_copy(tmp_path, monkeypatch) -> Path:
    """spec/ with the `acme` fixture fragment, so that a broken fragment can collide with another fragment."""
    monkeypatch.chdir(tmp_path)
    return spec_with_vendor(tmp_path)


def test_corpus_is_large_enough():
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES)
def test_broken_fragment_is_refused_with_its_rule(spec_copy, capsys, case):
    target = spec_copy / "extensions" / f"{case}.yaml"
    shutil.copy(FIXTURES / f"{case}.yaml", target)
    code = main(["validate", "--spec", str(spec_copy)])
    err = capsys.readouterr().err
    assert code == 1, err
    lines = [line for line in err.splitlines() if expectation(case) in line]
    assert lines, (expectation(case), err)
    assert all(re.match(r"spec/extensions/\S+\.yaml:\d+: /\S*: ", line) for line in lines), lines
    assert "Traceback" not in err


def test_cli_refuses_a_broken_fragment_without_traceback(spec_copy):
    shutil.copy(FIXTURES / "unknown_kind.yaml", spec_copy / "extensions" / "zeta.yaml")
    result = run_orspec("validate", "--spec", str(spec_copy), cwd=spec_copy.parent)
    assert result.returncode == 1
    assert "spec/extensions/zeta.yaml:6: /components/schemas/ZetaCall/x-openresponses-kind: unknown" in result.stderr
    assert "Traceback" not in result.stderr


def refs(schemas: dict, name: str) -> list[str]:
    """The schema names a union of components refers to."""
    return [v["$ref"].rsplit("/", 1)[1] for v in schemas[name]["oneOf"]]


def test_shipped_fragments_merge_with_provenance():
    bundled = json.loads((ROOT / "generated" / "openapi.json").read_text())
    schemas = bundled["components"]["schemas"]
    vendors = {s["x-openresponses-vendor"] for s in schemas.values() if "x-openresponses-vendor" in s}
    assert vendors == {"anthropic", "gemini", "openai"}  # the fictional `acme` is a test fixture only
    assert {"OpenaiWebSearchCall", "AnthropicMcpToolUse"} <= set(refs(schemas, "ItemField"))
    # each vendor item goes back as input in its input form: `id` and `status` optional, the rest as emitted
    assert {"OpenaiWebSearchCallParam", "AnthropicMcpToolResultParam", "GeminiPartParam"} <= set(
        refs(schemas, "ItemParam")
    )
    for name in ("OpenaiWebSearchCall", "AnthropicMcpToolResult", "GeminiPart"):
        param = schemas[f"{name}Param"]
        assert param["properties"] == schemas[name]["properties"]
        assert set(param.get("required", ())) == set(schemas[name]["required"]) - {"id", "status"}
    assert {"GeminiPart", "GeminiGrounding"} <= set(refs(schemas, "ItemField"))
    assert {"OpenaiWebSearchTool", "AnthropicServerTool"} <= set(refs(schemas, "Tool")) & set(
        refs(schemas, "ResponsesToolParam")
    )
    media = bundled["paths"]["/responses"]["post"]["responses"]["200"]["content"]["text/event-stream"]
    stream = event_union(media["schema"])["oneOf"]  # published framed as SSE messages
    assert "#/components/schemas/OpenaiWebSearchCallSearchingEvent" in {v["$ref"] for v in stream}
    assert schemas["CreateResponseBody"]["properties"]["anthropic:mcp_servers"]["x-openresponses-vendor"] == "anthropic"


def test_no_fictional_vendor_ships():
    # `acme` is the tests' example vendor (tests/fixtures/spec-with-vendor): the spec and everything
    # built from it (models, npm package, docs, openapi.json, bindings) name no vendor that does not exist.
    shipped = [
        path
        for folder in (ROOT / "spec", ROOT / "generated")
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        and not any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(folder).parts)
    ]
    assert len(shipped) > 100
    assert [str(path) for path in shipped if re.search(rb"(?i)acme", path.read_bytes())] == []


def test_a_fragment_of_every_kind_merges_with_provenance(vendor_build):
    # The `acme` fixture fragment declares one extension of each kind, the response field included.
    bundled = json.loads((vendor_build / "openapi.json").read_text())
    schemas = bundled["components"]["schemas"]
    vendors = {s["x-openresponses-vendor"] for s in schemas.values() if "x-openresponses-vendor" in s}
    assert vendors == {"acme", "anthropic", "gemini", "openai"}
    assert {"OpenaiWebSearchCall", "AnthropicMcpToolUse", "AcmeWebSearchCall"} <= set(refs(schemas, "ItemField"))
    assert "AcmeWebSearchCallParam" in refs(schemas, "ItemParam")
    assert {"OpenaiWebSearchTool", "AcmeSearchTool"} <= set(refs(schemas, "Tool")) & set(
        refs(schemas, "ResponsesToolParam")
    )
    assert "AcmeAudioClipContent" in [
        v["$ref"].rsplit("/", 1)[1] for v in schemas["Message"]["properties"]["content"]["items"]["oneOf"]
    ]
    media = bundled["paths"]["/responses"]["post"]["responses"]["200"]["content"]["text/event-stream"]
    stream = event_union(media["schema"])["oneOf"]  # published framed as SSE messages
    assert {
        "#/components/schemas/OpenaiWebSearchCallSearchingEvent",
        "#/components/schemas/AcmeSearchProgressEvent",
    } <= {v["$ref"] for v in stream}
    field = schemas["ResponseResource"]["properties"]["acme:cache_hit"]
    assert field["x-openresponses-vendor"] == "acme" and "acme:cache_hit" not in schemas["ResponseResource"]["required"]


def test_extensions_list():
    result = run_orspec("extensions", "list")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(r"^openai\s+\(spec/extensions/openai.yaml\)", out, re.M)
    assert re.search(r"^\s+item\s+openai:web_search_call\s+OpenaiWebSearchCall$", out, re.M)
    assert re.search(r"^\s+event\s+openai:response.web_search_call.searching\s+", out, re.M)
    assert re.search(r"^\s+field\s+anthropic:mcp_servers\s+on CreateResponseBody$", out, re.M)
    assert re.search(r"^\s+path\s+GET /responses/\{response_id\}/input_items\s+listInputItems$", out, re.M)


def test_fragment_operations_merge_with_provenance():
    bundled = json.loads((ROOT / "generated" / "openapi.json").read_text())
    retrieve = bundled["paths"]["/responses/{response_id}"]["get"]
    assert retrieve["operationId"] == "getResponse"
    assert retrieve["x-openresponses-vendor"] == "openai"
    assert [p["name"] for p in bundled["paths"]["/responses/{response_id}"]["parameters"]] == ["response_id"]
    assert "x-openresponses-vendor" not in bundled["paths"]["/responses"]["post"]


def test_a_fragment_operation_the_runtime_does_not_implement_validates_as_a_listed_stub(spec_copy, capsys):
    shutil.copy(ROOT / "tests" / "fixtures" / "operations" / "zeta_stub.yaml", spec_copy / "extensions" / "zeta.yaml")
    code = main(["validate", "--spec", str(spec_copy)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.splitlines()[0] == (
        "stub: GET /v1/zeta/things/{thing_id} (getZetaThing) answers 501 until the provider defines get_zeta_thing()"
    )


WEB_SEARCH = {
    "type": "openai:web_search_call",
    "id": "ws_1",
    "status": "completed",
    "action": {"type": "search", "query": "open responses", "sources": [{"type": "url", "url": "https://a.example"}]},
}
UNKNOWN = {"type": "zeta:thing", "id": "z_1", "status": "completed", "payload": {"nested": [1, {"x": None}]}}


def round_trip(adapter: TypeAdapter, value: dict) -> object:
    parsed = adapter.validate_python(value)
    assert adapter.dump_python(parsed, mode="json", exclude_unset=True) == value
    return parsed


def test_known_vendor_item_parses_typed():
    parsed = round_trip(TypeAdapter(models.ItemField), WEB_SEARCH)
    assert type(parsed) is models.OpenaiWebSearchCall
    assert type(parsed.action) is models.OpenaiWebSearchActionSearch
    assert type(round_trip(TypeAdapter(models.ItemParam), WEB_SEARCH)) is models.OpenaiWebSearchCallParam
    without = {k: v for k, v in WEB_SEARCH.items() if k not in ("id", "status")}  # as a client may keep it
    assert type(round_trip(TypeAdapter(models.ItemParam), without)) is models.OpenaiWebSearchCallParam


@pytest.mark.parametrize(
    ("alias", "value", "fallback"),
    [
        ("ItemField", UNKNOWN, "UnknownItem"),
        ("ItemParam", UNKNOWN, "UnknownItem"),
        ("Tool", {"type": "zeta:calculator", "precision": 12}, "UnknownTool"),
        ("ResponsesToolParam", {"type": "zeta:calculator"}, "UnknownTool"),
        ("MessageContentPart", {"type": "zeta:hologram", "frames": [1, 2]}, "UnknownContent"),
        ("StreamingEvent", {"type": "zeta:response.tick", "sequence_number": 4, "extra": {"a": 1}}, "UnknownEvent"),
    ],
)
def test_unknown_types_round_trip_losslessly(alias, value, fallback):
    parsed = round_trip(TypeAdapter(getattr(models, alias)), value)
    assert type(parsed).__name__ == fallback


def test_known_type_with_bad_fields_is_not_swallowed_by_the_fallback():
    bad = dict(WEB_SEARCH, action={"type": "search"})  # query missing
    with pytest.raises(Exception) as info:
        TypeAdapter(models.ItemField).validate_python(bad)
    assert "query" in str(info.value)


def test_response_with_vendor_items_and_fields_round_trips(shared, vendor_models):
    data = json.loads((shared / "examples" / "ResponseResource.valid.json").read_text())
    data["output"] = [*data["output"], WEB_SEARCH, UNKNOWN]
    data["acme:cache_hit"] = True  # declared by the `acme` fixture fragment
    data["zeta:region"] = "eu-west"  # an extension field no fragment declares
    parsed = vendor_models.ResponseResource.model_validate(data)
    assert [type(i).__name__ for i in parsed.output][-2:] == ["OpenaiWebSearchCall", "UnknownItem"]
    assert parsed.acme_cache_hit is True
    assert parsed.model_dump(mode="json", exclude_unset=True) == data


@pytest.mark.process
def test_stream_mixing_core_and_vendor_events_parses_typed(shared, vendor_models):
    stream = subprocess.run(
        [sys.executable, str(shared / "bench" / "make_stream.py"), "20"], capture_output=True, text=True, check=True
    ).stdout
    events = [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: {")]
    seq = max(e["sequence_number"] for e in events)
    events += [
        {
            "type": "openai:response.web_search_call.in_progress",
            "sequence_number": seq + 1,
            "output_index": 9,
            "item_id": "ws_1",
        },
        {
            "type": "acme:response.search.progress",
            "sequence_number": seq + 2,
            "output_index": 9,
            "item_id": "ws_1",
            "pages_read": 3,
        },
        {"type": "zeta:response.tick", "sequence_number": seq + 3},
    ]
    adapter = TypeAdapter(vendor_models.StreamingEvent)  # the `acme` event is the fixture fragment's
    parsed = [round_trip(adapter, e) for e in events]
    names = [type(p).__name__ for p in parsed]
    assert names[-3:] == ["OpenaiWebSearchCallInProgressEvent", "AcmeSearchProgressEvent", "UnknownEvent"]
    assert "UnknownEvent" not in names[:-1]
