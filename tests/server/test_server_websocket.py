"""WebSocket mode on `/v1/responses`, driven by a plain `websockets` client."""

from __future__ import annotations

import json

import pytest
from openresponses_runtime import models
from openresponses_runtime.server import DemoProvider, MemoryStore, ModelError, TextDelta, create_app
from openresponses_runtime.streaming import StreamChecker
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from ..server_helpers import API_KEY, RecordingProvider, live_server, ws_turn


class FailsOnRequest:
    """The demo model, except that a message containing "fail" fails after some text."""

    def __init__(self):
        self.inner = RecordingProvider(DemoProvider())

    async def respond(self, request):
        last = request.input[-1]
        if "fail" in json.dumps(last):
            yield TextDelta("about to fail ")
            raise ModelError("the model fell over")
        async for step in self.inner.respond(request):
            yield step


@pytest.fixture(scope="module")
def ws_url():
    app = create_app(FailsOnRequest(), store=MemoryStore(), api_keys=API_KEY, debug=True)
    with live_server(app) as base:
        yield base.replace("http://", "ws://") + "/responses"


def open_ws(url, key=API_KEY):
    return connect(url, additional_headers={"Authorization": f"Bearer {key}"}, open_timeout=10)


def check(events: list[dict]) -> StreamChecker:
    checker = StreamChecker()
    for event in events:
        checker.feed_event(event, event["type"])
    checker.feed(None, "[DONE]")  # WebSocket mode has no marker; the checker wants one
    assert checker.finish() == [], checker.violations
    return checker


def test_turns_with_connection_local_store(ws_url):
    with open_ws(ws_url) as ws:
        first = ws_turn(ws, input="hello socket", store=False)
        assert check(first).terminal == "response.completed"
        first_id = first[-1]["response"]["id"]
        second = ws_turn(ws, input="again", previous_response_id=first_id)
        check(second)
        final = second[-1]["response"]
        assert final["previous_response_id"] == first_id
        assert final["output"][0]["content"][0]["text"] == "You said: again"
    with open_ws(ws_url) as other:  # store: false lived only on the first connection
        (error,) = ws_turn(other, input="x", previous_response_id=first_id)
        envelope = models.WebSocketErrorEvent.model_validate(error)
        assert envelope.status == 404 and envelope.error.code == "previous_response_not_found"
        # a stored response whose chain reaches a `store: false` one cannot be rebuilt elsewhere
        (error,) = ws_turn(other, input="y", previous_response_id=final["id"])
        assert error["status"] == 404 and first_id in error["error"]["message"]
        # ...but a stored chain can be continued from any connection
        stored = ws_turn(other, input="kept")[-1]["response"]["id"]
    with open_ws(ws_url) as third:
        assert ws_turn(third, input="z", previous_response_id=stored)[-1]["type"] == "response.completed"


def test_invalid_messages_get_error_envelopes(ws_url):
    with open_ws(ws_url) as ws:
        (error,) = ws_turn(ws, input="x", stream=False)  # `stream: true` is what WebSocket does; `false` is not
        assert error["status"] == 400 and error["error"]["param"] == "stream"
        ws.send("{not json")
        error = json.loads(ws.recv(timeout=10))
        assert error["status"] == 400 and error["error"]["code"] == "invalid_json"
        ws.send(json.dumps({"type": "session.update"}))
        error = json.loads(ws.recv(timeout=10))
        assert error["status"] == 400 and error["error"]["code"] == "unknown_message_type"
        models.WebSocketErrorEvent.model_validate(error)
        assert ws_turn(ws, input="still open")[-1]["type"] == "response.completed"


def test_failed_continuation_evicts_the_previous_response(ws_url):
    with open_ws(ws_url) as ws:
        first = ws_turn(ws, input="remember me", store=False)
        first_id = first[-1]["response"]["id"]
        failed = ws_turn(ws, input="please fail now", previous_response_id=first_id)
        checker = check(failed)
        assert checker.terminal == "response.failed" and failed[-2]["error"]["type"] == "model_error"
        (error,) = ws_turn(ws, input="retry", previous_response_id=first_id)
        assert error["status"] == 404 and error["error"]["code"] == "previous_response_not_found"


def test_websocket_needs_the_api_key(ws_url):
    with pytest.raises(InvalidStatus) as info:
        open_ws(ws_url, key="wrong")
    assert info.value.response.status_code == 401
    assert json.loads(info.value.response.body)["error"]["code"] == "invalid_api_key"


def test_a_message_nested_past_the_parser_s_depth_is_an_error_envelope_and_the_socket_goes_on(ws_url):
    """Was: a RecursionError in the handler, the connection dropped without a close frame."""
    depth = 100_000
    deep = '{"type": "response.create", "model": "demo", "input": ' + "[" * depth + "]" * depth + "}"
    with open_ws(ws_url) as ws:
        ws.send(deep)
        refused = json.loads(ws.recv(timeout=10))
        assert refused["type"] == "error" and refused["status"] == 400, refused
        after = ws_turn(ws, input="still here", store=False)
        assert check(after).terminal == "response.completed"
