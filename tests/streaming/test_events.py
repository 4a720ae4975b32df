"""The state machines file, its validation, and the generated registry `openresponses_runtime.events`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from openresponses_runtime import events as ev
from openresponses_runtime import models
from orspec.bundle import bundle
from orspec.generate.registry import generate_registry
from orspec.pipeline import TEMPLATES, load_spec
from orspec.problems import SpecError
from orspec.schema import build, event_union
from orspec.statemachines import check_state_machines
from pydantic import ValidationError

from ..conftest import ROOT, run_orspec
from ..streams import Stream, bench_stream

SPEC = ROOT / "spec"


# -- the state machines file ---------------------------------------------------------------------


def test_spec_state_machines_are_clean():
    machines, problems = check_state_machines(bundle(SPEC))
    assert problems == []
    assert set(machines.machines) == {"response", "item", "content_part", "summary_part"}
    assert machines.machines["response"].terminal == ("completed", "incomplete", "failed")


def test_every_streaming_event_has_a_place():
    spec = load_spec(SPEC)  # with the vendor fragments merged in
    for value, _, _ in event_union(spec.document):
        assert spec.state_machines.place(value) is not None, value


@pytest.fixture
def spec_copy(tmp_path) -> Path:
    target = tmp_path / "spec"
    shutil.copytree(SPEC, target)
    return target


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_event_without_a_place_is_an_error(spec_copy):
    path = spec_copy / "state-machines.yaml"
    _edit(path, "  response.refusal.done:\n", "  response.refusal_gone.done:\n")
    with pytest.raises(SpecError) as info:
        load_spec(spec_copy)
    messages = [str(p) for p in info.value.problems]
    hit = [m for m in messages if "'response.refusal.done'" in m and "no place" in m]
    assert hit, messages
    assert hit[0].startswith(f"{path}:") or "state-machines.yaml:" in hit[0]
    line = int(hit[0].split("state-machines.yaml:")[1].split(":")[0])
    assert path.read_text().splitlines()[line - 1].startswith("events:")


def test_validate_cli_reports_the_state_machines_line(spec_copy):
    _edit(spec_copy / "state-machines.yaml", "  response.refusal.done:\n", "  response.refusal_gone.done:\n")
    proc = run_orspec("validate", "--spec", str(spec_copy))
    assert proc.returncode == 1
    line = next(x for x in proc.stderr.splitlines() if "'response.refusal.done'" in x and "no place" in x)
    assert re.match(
        r".*state-machines\.yaml:\d+: /events: event type 'response.refusal.done' \(schema "
        r"ResponseRefusalDoneStreamingEvent\) of the streaming union has no place",
        line,
    ), line


def test_unreachable_state_is_an_error(spec_copy):
    path = spec_copy / "state-machines.yaml"
    _edit(
        path,
        "      failed: Stopped because of an error.",
        "      cancelled: Nobody gets here.\n      failed: Stopped because of an error.",
    )
    with pytest.raises(SpecError) as info:
        load_spec(spec_copy)
    (problem,) = [p for p in info.value.problems if "unreachable" in p.message]
    assert problem.pointer == "/machines/response/states/cancelled"
    assert "state-machines.yaml" in problem.file
    assert path.read_text().splitlines()[problem.line - 1].strip().startswith("cancelled:")


def test_bad_references_are_errors(spec_copy):
    path = spec_copy / "state-machines.yaml"
    _edit(path, "transition: {machine: item, to: in_progress}", "transition: {machine: itme, to: in_progress}")
    _edit(
        path,
        "fields: [sequence_number, item_id, output_index, delta]",
        "fields: [sequence_number, item_id, output_index, delta, nonsense]",
    )
    with pytest.raises(SpecError) as info:
        load_spec(spec_copy)
    messages = " | ".join(p.message for p in info.value.problems)
    assert "unknown machine 'itme'" in messages
    assert "'nonsense'" in messages


def test_invalid_yaml_is_located(spec_copy):
    path = spec_copy / "state-machines.yaml"
    path.write_text("machines: [\n")
    with pytest.raises(SpecError) as info:
        load_spec(spec_copy)
    assert any("state-machines.yaml" in p.file and "invalid YAML" in p.message for p in info.value.problems)


def test_single_file_specs_need_no_state_machines(tmp_path):
    machines, problems = check_state_machines(bundle(SPEC / "openapi.yaml"))
    assert machines is not None  # beside spec/openapi.yaml
    shutil.copytree(SPEC, tmp_path / "s")
    (tmp_path / "s" / "state-machines.yaml").unlink()
    assert check_state_machines(bundle(tmp_path / "s")) == (None, [])


# -- the registry --------------------------------------------------------------------------------


def test_registry_covers_the_streaming_union():
    union = {value for value, _, _ in event_union(load_spec(SPEC).document)}
    assert set(ev.EVENT_TYPES) == union
    created = ev.EVENT_TYPES["response.created"]
    assert created.model is models.ResponseCreatedStreamingEvent
    assert (created.category, created.applies_to) == ("lifecycle", "response")
    assert created.transition == ev.Transition("response", ("created",))
    delta = ev.EVENT_TYPES["response.output_text.delta"]
    assert (delta.category, delta.applies_to, delta.transition) == ("delta", "content_part", None)
    assert delta.accumulates == ev.Accumulation("delta", "response.output_text.done", "text")
    assert "content_index" in delta.fields
    assert ev.EVENT_TYPES["error"].category == "error"
    assert {"response.completed", "response.incomplete", "response.failed"} == ev.TERMINAL_EVENT_TYPES
    for value, info in ev.EVENT_TYPES.items():
        assert info.type == value
        assert info.category in {"lifecycle", "delta", "error", "custom"}
        assert (info.category == "custom") == (":" in value)


def test_parse_event_from_bytes_str_and_dict():
    event = Stream().message("hi").events[4]
    assert event["type"] == "response.output_text.delta"
    for data in (json.dumps(event).encode(), json.dumps(event), event):
        parsed = ev.parse_event(data)
        assert isinstance(parsed, models.ResponseOutputTextDeltaStreamingEvent)
        assert parsed.delta == "hi" and parsed.sequence_number == 4


def test_every_event_of_a_bench_stream_parses_typed():
    for message in ev.iter_sse(bench_stream(20)):
        if message.is_done:
            continue
        parsed = ev.parse_event(message.data)
        assert type(parsed) is ev.EVENT_TYPES[message.event].model


def test_unknown_event_type_keeps_every_field():
    data = {"type": "acme:thing.happened", "sequence_number": 3, "nested": {"a": [1, 2]}, "n": None}
    for source in (json.dumps(data), json.dumps(data).encode(), data):
        parsed = ev.parse_event(source)
        assert isinstance(parsed, ev.GenericEvent)
        assert parsed.model_dump() == data
    assert ev.parse_event('{"type": "future.event"}').sequence_number is None


def test_known_event_breaking_its_schema_raises():
    with pytest.raises(ValidationError):
        ev.parse_event({"type": "response.output_text.delta", "sequence_number": 1})
    with pytest.raises(ValidationError):
        ev.parse_event(b'{"no_type": 1}')
    with pytest.raises(ValidationError):
        ev.parse_event(b"[1, 2]")
    with pytest.raises(ValidationError):
        ev.parse_event(b"{not json")


def test_iter_events_stops_at_done():
    stream = Stream().message("a").finish()
    parsed = list(ev.iter_events(stream.sse() + b"data: ignored\n\n"))
    assert [p.type for p in parsed] == [e["type"] for e in stream.events]


# -- SSE framing ---------------------------------------------------------------------------------

CAPTURE = (
    ": a comment, then a keep-alive\r\n"
    ":\r\n"
    "event: response.output_text.delta\r\n"
    'data: {"delta":"é€😀"}\r\n'
    "\r\n"
    "event: multi\n"
    "data: line one\n"
    "data:line two\n"
    "data: \n"
    "id: 7\n"
    "retry: 100\n"
    "\n"
    "data: no event name\r"
    "\r"
    "data: [DONE]\n"
    "\n"
).encode()
EXPECTED = [
    ev.SSEMessage("response.output_text.delta", '{"delta":"é€😀"}'),
    ev.SSEMessage("multi", "line one\nline two\n", "7"),
    ev.SSEMessage(None, "no event name", "7"),
    ev.SSEMessage(None, "[DONE]", "7"),
]


def test_iter_sse_whole_capture():
    assert list(ev.iter_sse(CAPTURE)) == EXPECTED
    assert list(ev.iter_sse(CAPTURE.decode())) == EXPECTED
    assert EXPECTED[-1].is_done and not EXPECTED[0].is_done


@pytest.mark.parametrize("size", [1, 2, 3, 5, 13])
def test_iter_sse_chunks_split_anywhere(size):
    chunks = [CAPTURE[i : i + size] for i in range(0, len(CAPTURE), size)]
    assert list(ev.iter_sse(chunks)) == EXPECTED


def test_iter_sse_every_two_way_split():
    for cut in range(len(CAPTURE) + 1):
        assert list(ev.iter_sse([CAPTURE[:cut], CAPTURE[cut:]])) == EXPECTED, cut


def test_iter_sse_lines_with_or_without_endings():
    lines = CAPTURE.decode().replace("\r\n", "\n").replace("\r", "\n").split("\n")
    assert list(ev.iter_sse(iter(lines))) == EXPECTED
    assert list(ev.iter_sse(line + "\n" for line in lines)) == EXPECTED


def test_iter_sse_delivers_an_unterminated_last_message():
    assert list(ev.iter_sse([b"event: x\ndata: 1\n\ndata: [DO", b"NE]"])) == [
        ev.SSEMessage("x", "1"),
        ev.SSEMessage(None, "[DONE]"),
    ]
    assert list(ev.iter_sse(b"event: only-a-name\n\n")) == []


def test_iter_sse_keeps_unicode_line_separators_inside_data():
    data = '{"delta":"a\u2028b\x85c"}'
    assert list(ev.iter_sse(f"data: {data}\n\n".encode())) == [ev.SSEMessage(None, data)]


# -- generation ----------------------------------------------------------------------------------


def test_spec_strings_are_escaped_in_generated_code():
    hostile = 'Ends with a quote" and """triple""" \\ backslash\nand a newline'
    document = {
        "openapi": "3.1.0",
        "paths": {
            "/r": {
                "post": {
                    "responses": {
                        "200": {
                            "content": {
                                "text/event-stream": {
                                    "schema": {
                                        "oneOf": [
                                            {"$ref": "#/components/schemas/ResponseCreatedStreamingEvent"},
                                            {"$ref": "#/components/schemas/Weird"},
                                        ]
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
        "components": {
            "schemas": {
                "ResponseCreatedStreamingEvent": {
                    "description": hostile,
                    "properties": {"type": {"enum": ["response.created"]}},
                },
                "Weird": {"description": "x", "properties": {"type": {"enum": ["evil'\"\\\n:type"]}}},
            }
        },
    }
    code = generate_registry(build(document), TEMPLATES)["python/openresponses_runtime/events.py"].decode()
    compile(code, "events.py", "exec")
    assert "'evil\\'\"\\\\\\n:type'" in code or '"evil\'\\"\\\\\\n:type"' in code


# -- the fast parsing path -----------------------------------------------------------------------
# `parse_event` validates through the adapter's core validator, called directly; it must agree
# with `EVENT_ADAPTER` (the union as pydantic builds it) on every input, typed or rejected.

DELTA = {
    "type": "response.output_text.delta",
    "sequence_number": 4,
    "item_id": "msg_1",
    "output_index": 0,
    "content_index": 0,
    "delta": "hi",
}


def _same_as_adapter(data):
    """`parse_event` and the plain adapter give equal results, or both refuse the data."""
    try:
        expected = ev.EVENT_ADAPTER.validate_json(data) if not isinstance(data, dict) else None
    except ValidationError:
        expected = None
    try:
        got = ev.parse_event(data)
    except ValidationError:
        assert expected is None or isinstance(expected, ev.GenericEvent)
        return None
    if expected is not None:
        assert type(got) is type(expected)
        assert got.model_dump() == expected.model_dump()
    return got


def test_parse_event_agrees_with_the_adapter_on_a_whole_stream():
    for message in ev.iter_sse(bench_stream(50)):
        if not message.is_done:
            assert _same_as_adapter(message.data) is not None
            assert _same_as_adapter(message.data.encode()) is not None


@pytest.mark.parametrize(
    "text",
    [
        '{ "type" : "response.output_text.delta", "sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"hi"}',
        '{"sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"hi","type":"response.output_text.delta"}',
        '{"type":"response.output_text\\u002edelta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"hi"}',
        '\n {"type":\t"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"hi"} \n',
    ],
    ids=["spaces", "type-last", "escaped-type", "whitespace"],
)
def test_type_is_read_as_json_not_as_text(text):
    for data in (text, text.encode(), bytearray(text.encode())):
        parsed = ev.parse_event(data)
        assert isinstance(parsed, models.ResponseOutputTextDeltaStreamingEvent)
        assert parsed.model_dump(exclude_unset=True) == DELTA


def test_the_last_of_duplicate_type_keys_decides():
    # JSON parsers keep the last duplicate; so must the dispatch on `type`.
    text = json.dumps(DELTA).replace('{"type"', '{"type": "response.created", "type"', 1)
    assert isinstance(ev.parse_event(text), models.ResponseOutputTextDeltaStreamingEvent)
    text = json.dumps(DELTA)[:-1] + ', "type": "acme:other"}'
    parsed = ev.parse_event(text)
    assert isinstance(parsed, ev.GenericEvent) and parsed.type == "acme:other" and parsed.delta == "hi"


def test_a_known_type_in_a_string_elsewhere_does_not_decide():
    data = {"type": "acme:wrapper", "note": '"type":"response.output_text.delta"', "delta": "x"}
    parsed = ev.parse_event(json.dumps(data))
    assert isinstance(parsed, ev.GenericEvent) and parsed.model_dump(exclude_unset=True) == data


@pytest.mark.parametrize(
    "data",
    [b"", b"{", b"[DONE]", b"null", b'"response.created"', b'{"type": 5}', b'{"type": null}', b'{"type":"x"', b"\xff"],
)
def test_rejected_data_raises_like_the_adapter(data):
    with pytest.raises(ValidationError):
        ev.parse_event(data)
    with pytest.raises(ValidationError):
        ev.EVENT_ADAPTER.validate_json(data)


def test_unknown_type_keeps_every_field_from_any_source():
    data = {"type": "future.event", "sequence_number": 7, "x": {"y": [1.5, None]}, "z": "é"}
    text = json.dumps(data)
    for source in (text, text.encode(), bytearray(text.encode()), data):
        parsed = ev.parse_event(source)
        assert isinstance(parsed, ev.GenericEvent) and parsed.model_dump() == data


def test_schema_errors_are_the_adapters():
    bad = json.dumps({**DELTA, "delta": 5, "output_index": "zero"})
    with pytest.raises(ValidationError) as fast:
        ev.parse_event(bad)
    with pytest.raises(ValidationError) as plain:
        ev.EVENT_ADAPTER.validate_json(bad)
    assert fast.value.errors(include_url=False) == plain.value.errors(include_url=False)


# -- the protocol tables the stream checker reads -------------------------------------------------


def test_protocol_tables_come_from_the_state_machines():
    assert ev.RESPONSE_STATUSES["response.created"] == ("queued", "in_progress")
    assert ev.RESPONSE_STATUSES["response.completed"] == ("completed",)
    assert {"message", "function_call", "function_call_output", "openai:web_search_call"} <= ev.ITEM_STATUS_TYPES
    assert not {"reasoning", "compaction"} & ev.ITEM_STATUS_TYPES
    assert {"encrypted_content"} == ev.OPAQUE_FIELDS
    assert ev.TEXT_PARTS["output_text"] == ("response.output_text.done", "text")
    assert ev.TEXT_PARTS["summary_text"] == ("response.reasoning_summary_text.done", "text")
    assert {"sequence-gap"} == ev.WARNING_RULES and set(ev.RULES) >= ev.WARNING_RULES


def test_status_types_must_match_the_spec(spec_copy):
    path = spec_copy / "state-machines.yaml"
    _edit(path, "status_types: [message, function_call, function_call_output]", "status_types: [message, reasoning]")
    with pytest.raises(SpecError) as info:
        load_spec(spec_copy)
    messages = [p.message for p in info.value.problems if "state-machines.yaml" in p.file]
    assert "item type 'reasoning' has no `status` property in the spec" in messages
    assert any("'function_call' requires `status` in the spec; list it under `status_types`" in m for m in messages)


def test_text_parts_and_warnings_name_real_events_and_rules(spec_copy):
    path = spec_copy / "state-machines.yaml"
    _edit(
        path,
        "refusal: {done: response.refusal.done, field: refusal}",
        "refusal: {done: response.refusal.over, field: refusal}",
    )
    _edit(path, "warnings: [sequence-gap]", "warnings: [sequence-gaps]")
    with pytest.raises(SpecError) as info:
        load_spec(spec_copy)
    messages = [p.message for p in info.value.problems]
    assert any("closed by 'response.refusal.over', which is not an event" in m for m in messages)
    assert "warning 'sequence-gaps' is not a rule listed under `rules`" in messages
