"""The Python client on real traffic: every recorded OpenAI stream and body of `../shared/recordings`,
served as it was recorded, reads to its end; the events and answers that break the spec's schema are
passed on and reported, or with `validate="strict"` raise a readable error."""

from __future__ import annotations

import json

import pytest
from openresponses_runtime import models
from openresponses_runtime.client import APIResponseValidationError, Client, response_text
from openresponses_runtime.events import iter_sse

from ..recordings_server import BODIES, STREAMS, invalid_events, name_of, recordings_server, request_id


@pytest.fixture(scope="module")
def base():
    with recordings_server() as url:
        yield url


def test_the_recordings_break_the_schema_in_places():
    """What the tests below rely on: some recordings carry events the spec's schema refuses."""
    assert sum(bool(invalid_events(path)) for path in STREAMS) >= 4


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
def test_every_recorded_stream_reads_to_its_end(base, path):
    told = []
    client = Client(base_url=base, api_key="sk-test", on_invalid=told.append, max_retries=0)
    with client.responses.create(model=name_of(path), input="hi", stream=True) as stream:
        events = list(stream)
        final = stream.final_response()
    recorded = [json.loads(m.data) for m in iter_sse(path.read_bytes())]
    assert [e.type for e in events] == [e["type"] for e in recorded]
    reported = [(i.type, i.sequence_number) for i in stream.issues if i.type is not None]
    assert reported == invalid_events(path)
    assert told == stream.issues and stream.request_id == request_id(path)
    last = recorded[-1]["response"]
    assert final.id == last["id"] and final.status == last["status"] == "completed"
    assert len(final.output) == len(last["output"])
    deltas = "".join(e["delta"] for e in recorded if e["type"] == "response.output_text.delta")
    assert response_text(final) == deltas


@pytest.mark.parametrize("path", [p for p in STREAMS if invalid_events(p)], ids=lambda p: p.stem)
def test_strict_mode_stops_at_the_first_invalid_event_and_says_why(base, path):
    client = Client(base_url=base, api_key="sk-test", validate="strict", max_retries=0)
    kind, sequence = invalid_events(path)[0]
    with pytest.raises(APIResponseValidationError) as info:
        list(client.responses.create(model=name_of(path), input="hi", stream=True))
    error = info.value
    assert (error.event_type, error.status_code, error.request_id) == (kind, 200, request_id(path))
    assert str(error).startswith(f"event {kind}")
    assert error.issues and all(issue.path and issue.message for issue in error.issues)
    assert "Field required" in str(error) and "ValidationError" not in str(error)


@pytest.mark.parametrize("path", BODIES, ids=lambda p: p.stem)
def test_every_recorded_body_is_read(base, path):
    told = []
    client = Client(base_url=base, api_key="sk-test", on_invalid=told.append, max_retries=0)
    response = client.responses.create(model=name_of(path), input="hi")
    recorded = json.loads(path.read_text())
    assert response.id == recorded["id"] and len(response.output) == len(recorded["output"])
    valid = True
    try:
        models.ResponseResource.model_validate(recorded)
    except ValueError:
        valid = False
    assert len(told) == (0 if valid else 1)
    assert all(report.type is None and report.issues for report in told)
