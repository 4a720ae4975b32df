"""Real traffic no one here wrote: the OpenAI recordings in ../shared/recordings.

Each stream gets exactly its true findings, listed below with the reason; each response body that
upstream's own JSON schema accepts validates and round-trips through the models byte for byte.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from openresponses_runtime import models
from openresponses_runtime.events import iter_sse
from openresponses_runtime.streaming import StreamChecker, check_sse

from ..conftest import RELEASES, SHARED, run_orspec

RECORDINGS = SHARED / "recordings"
STREAMS = RECORDINGS / "streams"
RESPONSES = RECORDINGS / "responses"

pytestmark = pytest.mark.skipif(not RECORDINGS.is_dir(), reason="../shared/recordings is not beside the project")

NO_DONE = ("done-marker", None)  # OpenAI ends a stream after its terminal event, without `data: [DONE]`
# Recorded before the 2026-04-24 release made `completed_at`, `presence_penalty` and
# `frequency_penalty` required on the response: every event carrying the response lacks them.
OLD_RESPONSE = "completed_at"

# stream -> [(rule, sequence_number), ...] in the order reported, and why each is true.
TRUE_FINDINGS: dict[str, tuple[list[tuple[str, int | None]], str]] = {
    "background_mode_streaming_vcr.0.sse": ([NO_DONE], "valid apart from the missing [DONE]"),
    "openai_include_raw_annotations_streaming.0.sse": (
        [NO_DONE],
        "web search progress events are unknown to the core and ignored; their sequence numbers leave no gap",
    ),
    "openai_include_raw_annotations_streaming.2.sse": ([NO_DONE], "valid apart from the missing [DONE]"),
    "openai_responses_compact_stateful_mode_stream.0.sse": ([NO_DONE], "valid apart from the missing [DONE]"),
    "openai_responses_compact_stateful_mode_stream.3.sse": ([NO_DONE], "valid apart from the missing [DONE]"),
    "openai_responses_model_file_search_tool_stream.3.sse": (
        [("schema", 0), ("schema", 1), ("schema", 20), NO_DONE],
        "recorded 2025-12: the response snapshots lack fields required since; `file_citation` annotations "
        "are an unknown annotation type, which is allowed",
    ),
    "openai_responses_model_mcp_list_tools_stream_backfills_missing_results.0.sse": (
        [("item-closed", 118), ("item-closed", 118), NO_DONE],
        "two of the three `mcp_list_tools` items are added but never get `response.output_item.done` "
        "(the very bug the recording's test is about); `mcp_list_tools` has no status, so none is demanded",
    ),
    "openai_responses_model_web_search_tool_stream.0.sse": (
        [("schema", 0), ("schema", 1), ("schema", 60), NO_DONE],
        "recorded 2025-09: old response snapshots; reasoning items carry no status, and their "
        "`encrypted_content` is re-encrypted in the terminal event, which is opaque and not compared",
    ),
    "openai_responses_moderation_stream.0.sse": ([NO_DONE], "reasoning without status, re-encrypted content"),
    "openai_responses_phase_streamed_on_part_start.1.sse": ([NO_DONE], "valid apart from the missing [DONE]"),
    "openai_responses_stream.0.sse": (
        [("schema", None)] * 11 + [NO_DONE],
        "recorded 2025-03, before events carried `sequence_number`: every event lacks it",
    ),
    "openai_responses_streaming_usage.0.sse": (
        [("schema", 0), ("schema", 1), ("schema", 13), NO_DONE],
        "recorded 2025-09: old response snapshots; reasoning without status, re-encrypted content",
    ),
}


def upstream_validator(name: str) -> jsonschema.Draft202012Validator:
    document = json.loads(RELEASES["2026-04-24"].read_text())
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    return jsonschema.Draft202012Validator(schema)


def test_every_recording_is_in_the_table():
    assert sorted(TRUE_FINDINGS) == sorted(p.name for p in STREAMS.glob("*.sse"))


@pytest.mark.parametrize("name", sorted(TRUE_FINDINGS))
def test_stream_gets_exactly_its_true_findings(name):
    expected, reason = TRUE_FINDINGS[name]
    violations = check_sse((STREAMS / name).read_bytes())
    assert [(v.rule, v.sequence_number) for v in violations] == expected, reason
    for violation in violations:
        if violation.rule == "schema" and violation.sequence_number is not None:
            assert OLD_RESPONSE in violation.message


def upstream_event_validators() -> dict[str, jsonschema.Draft202012Validator]:
    """Upstream's own schema for each event type, by its `type` value."""
    schemas = json.loads(RELEASES["2026-04-24"].read_text())["components"]["schemas"]
    out = {}
    for name, schema in schemas.items():
        tag = (schema.get("properties") or {}).get("type") or {}
        for value in tag.get("enum") or ([tag["const"]] if "const" in tag else []):
            if name.endswith("StreamingEvent") or value == "error":
                out[value] = upstream_validator(name)
    return out


@pytest.mark.parametrize("name", sorted(TRUE_FINDINGS))
def test_schema_findings_are_confirmed_by_upstreams_schema(name):
    """Every event the checker calls schema-invalid, upstream's own JSON schema rejects too."""
    validators = upstream_event_validators()
    checker = StreamChecker()
    flagged = 0
    for message in iter_sse((STREAMS / name).read_bytes()):
        before = len(checker.violations)
        checker.feed(message.event, message.data)
        if any(v.rule == "schema" for v in checker.violations[before:]):
            flagged += 1
            event = json.loads(message.data)
            assert list(validators[event["type"]].iter_errors(event)), f"upstream accepts {event['type']}"
    assert flagged == sum(rule == "schema" for rule, _ in TRUE_FINDINGS[name][0])


def test_a_deleted_text_done_is_reported():
    data = (STREAMS / "openai_responses_phase_streamed_on_part_start.1.sse").read_text()
    frames = data.split("\n\n")
    kept = [f for f in frames if '"type":"response.output_text.done"' not in f]
    assert len(kept) == len(frames) - 1
    rules = [(v.rule, v.is_warning) for v in check_sse("\n\n".join(kept))]
    assert ("text-done", False) in rules
    assert ("sequence-gap", True) in rules  # the deleted event leaves a hole in the numbering


@pytest.mark.process
def test_check_stream_allow_missing_done(tmp_path):
    clean = STREAMS / "background_mode_streaming_vcr.0.sse"
    strict = run_orspec("check-stream", str(clean))
    assert strict.returncode == 1 and "[done-marker]" in strict.stdout
    lenient = run_orspec("check-stream", "--allow-missing-done", str(clean))
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr
    assert "[done-marker]" in lenient.stdout and lenient.stdout.splitlines()[-1].startswith("OK: 17 events")
    # Any other finding still fails.
    broken = STREAMS / "openai_responses_model_mcp_list_tools_stream_backfills_missing_results.0.sse"
    other = run_orspec("check-stream", "--allow-missing-done", str(broken))
    assert other.returncode == 1 and "2 violations" in other.stderr
    # A stream that has `[DONE]` in the wrong place is not excused.
    early = tmp_path / "early.sse"
    early.write_text("data: [DONE]\n\n" + clean.read_text())
    assert run_orspec("check-stream", "--allow-missing-done", str(early)).returncode == 1


# -- response bodies ---------------------------------------------------------------------------


def bodies() -> list[Path]:
    return sorted(RESPONSES.glob("*.json")) if RESPONSES.is_dir() else []


@pytest.mark.parametrize("path", bodies(), ids=lambda p: p.stem)
def test_bodies_upstream_accepts_round_trip(path):
    body = json.loads(path.read_text())
    upstream_ok = not list(upstream_validator("ResponseResource").iter_errors(body))
    if not upstream_ok:
        # Older recordings lack fields the release requires; the models refuse them too.
        with pytest.raises(ValueError, match=OLD_RESPONSE):
            models.ResponseResource.model_validate(body)
        return
    parsed = models.ResponseResource.model_validate(body)
    assert parsed.model_dump(mode="json", exclude_unset=True) == body
    assert json.loads(parsed.model_dump_json(exclude_unset=True)) == body


def test_most_bodies_are_accepted_upstream():
    """The round-trip test is not vacuous: half the recordings pass upstream's schema."""
    validator = upstream_validator("ResponseResource")
    accepted = [p.stem for p in bodies() if not list(validator.iter_errors(json.loads(p.read_text())))]
    assert len(accepted) == 6, accepted


def test_unknown_annotations_round_trip():
    """OpenAI's `file_citation` is no core annotation; it parses as unknown and comes back unchanged."""
    frames = [
        json.loads(m.data)
        for m in iter_sse((STREAMS / "openai_responses_model_file_search_tool_stream.3.sse").read_bytes())
    ]
    item = next(
        e["item"] for e in frames if e["type"] == "response.output_item.done" and e["item"]["type"] == "message"
    )
    annotation = item["content"][0]["annotations"][0]
    assert annotation["type"] == "file_citation"
    message = models.Message.model_validate(item)
    assert type(message.content[0].annotations[0]).__name__ == "UnknownAnnotation"
    assert message.model_dump(mode="json", exclude_unset=True) == item


def test_json_schema_format_is_echoed():
    """`native_output` carries the schema it was given, which our spec types as an object."""
    body = json.loads((RESPONSES / "native_output.0.json").read_text())
    fmt = body["text"]["format"]
    assert fmt["type"] == "json_schema" and isinstance(fmt["schema"], dict)
    assert re.search("schema", str(list(upstream_validator("JsonSchemaResponseFormat").iter_errors(fmt))))
    parsed = models.JsonSchemaResponseFormat.model_validate(fmt)
    assert parsed.model_dump(mode="json", exclude_unset=True) == fmt
