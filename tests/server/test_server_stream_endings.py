"""Once a stream has begun, whatever breaks ends it the spec's way: `error`, `response.failed`, `[DONE]`.

A provider may raise an exception of any kind, not only an `Exception`; the emitter may meet a
value it cannot write as JSON; the provider's own numbers may break the response's `usage`. Each
of these once cut the stream short after its last good event, with no terminal event and no
`[DONE]` (uvicorn closed the connection), which a client cannot tell from a network failure.
"""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from openresponses_runtime.server import (
    MemoryStore,
    MessageEnd,
    MessageStart,
    TextDelta,
    UsageReport,
    VendorItem,
    create_app,
)
from openresponses_runtime.streaming import StreamChecker

from ..server_helpers import API_KEY, StepsProvider, live_server

HEADERS = {"Authorization": f"Bearer {API_KEY}"}


class Unusual(BaseException):
    """An exception that is no `Exception` (as a library's own control-flow exception may be)."""


def failed_stream(text: str) -> tuple[dict, dict]:
    """The `error` payload and the failed response of a stream that must pass the checker and end in `[DONE]`."""
    checker = StreamChecker()
    assert checker.check_sse(text) == [], (checker.violations, text)
    assert checker.terminal == "response.failed" and checker.counts["error"] == 1, text
    assert text.endswith("data: [DONE]\n\n"), text
    blocks = [block for block in text.split("\n\n") if block]
    error = json.loads(blocks[-3].split("data: ", 1)[1])
    failed = json.loads(blocks[-2].split("data: ", 1)[1])
    assert error["type"] == "error" and failed["type"] == "response.failed"
    return error["error"], failed["response"]


def stream(provider, body: dict | None = None) -> tuple[str, dict]:
    """The SSE text of one streamed response and the response as the store then holds it."""
    app = create_app(provider, store=MemoryStore(), api_keys=API_KEY, debug=True)
    with live_server(app) as base:
        text = httpx.post(
            base + "/responses", json={"input": "x", "stream": True, **(body or {})}, headers=HEADERS, timeout=30
        ).text
        response_id = json.loads(text.split("data: ", 1)[1].split("\n", 1)[0])["response"]["id"]
        stored = httpx.get(f"{base}/responses/{response_id}", headers=HEADERS, timeout=30).json()
    return text, stored


def test_an_unusual_exception_mid_stream_ends_it_failed():
    provider = StepsProvider([MessageStart(), TextDelta("partial ")], error=Unusual("stop"), raise_after=True)
    text, stored = stream(provider)
    error, failed = failed_stream(text)
    assert (error["type"], error["message"]) == ("server_error", "The provider failed: Unusual")
    assert failed["output"][0]["content"][0]["text"] == "partial "  # what the client was sent
    assert stored["status"] == "failed" and stored["error"]["message"] == "The provider failed: Unusual"


def test_an_unusual_exception_before_the_stream_is_a_500_with_the_error_object():
    app = create_app(StepsProvider(error=Unusual("stop")), store=MemoryStore(), api_keys=API_KEY, debug=True)
    with live_server(app) as base:
        answer = httpx.post(base + "/responses", json={"input": "x", "stream": True}, headers=HEADERS, timeout=30)
    assert answer.status_code == 500, answer.text
    error = answer.json()["error"]
    assert (error["type"], error["message"]) == ("server_error", "The provider failed: Unusual")


@pytest.mark.parametrize("more", [False, True], ids=["last-step", "steps-after-it"])
def test_a_value_no_json_holds_ends_the_stream_failed(more, caplog):
    """The vendor item cannot be written, nor can any response that holds it: the failed response
    leaves its output out, and the stream still ends; the server logs it once, uvicorn not at all."""
    steps = [MessageStart(), TextDelta("said"), VendorItem({"type": "acme:thing", "tags": {"a", "b"}})]
    text, stored = stream(StepsProvider([*steps, TextDelta("more"), MessageEnd()] if more else steps))
    error, failed = failed_stream(text)
    assert (error["type"], error["message"]) == ("server_error", "The server had an error while making the response.")
    assert failed["output"] == [] and stored["status"] == "failed" and stored["output"] == []
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in errors] == [f"response {failed['id']} broke off"]
    assert errors[0].exc_info is not None and errors[0].exc_info[0] is TypeError


def test_a_usage_the_response_cannot_state_ends_the_stream_failed():
    steps = [MessageStart(), TextDelta("hi"), MessageEnd(), UsageReport("many", 1)]  # type: ignore[arg-type]
    text, stored = stream(StepsProvider(steps))
    error, failed = failed_stream(text)
    assert error["message"] == "The server had an error while making the response."
    assert failed["output"][0]["content"][0]["text"] == "hi" and failed["usage"] is None
    assert stored["status"] == "failed"


@pytest.mark.parametrize(
    "steps",
    [[MessageStart(), TextDelta("cut ")], [MessageStart()], []],
    ids=["mid-text", "empty-message", "no-step"],
)
def test_a_provider_that_stops_early_still_ends_the_stream(steps):
    """A provider's steps ending is the end of its answer: whatever is open is closed, and the
    stream ends completed."""
    text, stored = stream(StepsProvider(steps))
    checker = StreamChecker()
    assert checker.check_sse(text) == [], checker.violations
    assert checker.terminal == "response.completed" and text.endswith("data: [DONE]\n\n")
    assert stored["status"] == "completed"
