"""The cap on concurrent streams (`create_app(max_streams=...)`): a stream, a WebSocket turn or a
background run beyond it is refused with 503 `too_many_streams` and `Retry-After` before it begins,
non-streamed requests are not counted, and every way a stream ends gives its slot back."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator

import httpx
import pytest
from openresponses_runtime.server import (
    MemoryStore,
    MessageStart,
    ProviderError,
    ProviderRequest,
    Step,
    StoreUnavailable,
    TextDelta,
    create_app,
)
from openresponses_runtime.streaming import StreamChecker

from ..server_helpers import API_KEY, live_server, metrics_text, observed, ws_turn

HEADERS = {"Authorization": f"Bearer {API_KEY}"}


def refusal(limit: int = 2) -> dict:
    message = f"The server is generating its maximum of {limit} streams at once; retry shortly."
    return {"type": "server_error", "code": "too_many_streams", "param": None, "message": message}


class HeldProvider:
    """Streams a `hold <name>` request until `let(name)`, then ends it (or fails it, after
    `fail(name)`); `tick <name>` likewise, with a delta every 20 ms meanwhile, as a model would;
    `fail now` fails before its first step; anything else is answered at once."""

    def __init__(self) -> None:
        self.gates: dict[str, threading.Event] = defaultdict(threading.Event)
        self.failing: set[str] = set()
        self.running = 0

    def let(self, name: str) -> None:
        self.gates[name].set()

    def fail(self, name: str) -> None:
        self.failing.add(name)
        self.let(name)

    async def respond(self, request: ProviderRequest) -> AsyncIterator[Step]:
        text = request.input[-1]["content"][0]["text"]
        if text == "fail now":
            raise ProviderError("the upstream refused the connection")
        self.running += 1
        try:
            yield MessageStart()
            yield TextDelta("started ")
            if text.startswith(("hold ", "tick ")):
                name = text.split(" ", 1)[1]
                deadline = time.monotonic() + 20  # never a hung test
                while not self.gates[name].is_set() and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
                    if text.startswith("tick "):
                        yield TextDelta(".")
                if name in self.failing:
                    raise ProviderError("the upstream went away")
            yield TextDelta("done")
        finally:
            self.running -= 1


def app_with(provider, max_streams=2, store=None, **options):
    store = MemoryStore() if store is None else store
    return create_app(provider, store=store, api_keys=API_KEY, max_streams=max_streams, **options)


class Held:
    """A streamed request, opened and read up to its first event; `finish()` reads the rest."""

    def __init__(self, base: str, name: str):
        body = {"input": f"hold {name}", "stream": True}
        self.context = httpx.stream("POST", base + "/responses", json=body, headers=HEADERS, timeout=20)
        self.response = self.context.__enter__()
        assert self.response.status_code == 200, self.response.read()
        self.chunks = self.response.iter_text()
        self.text = next(self.chunks)

    def finish(self) -> str:
        self.text += "".join(self.chunks)
        self.close()
        return self.text

    def close(self) -> None:
        self.context.__exit__(None, None, None)


def stream(base: str, text: str = "hi") -> httpx.Response:
    return httpx.post(base + "/responses", json={"input": text, "stream": True}, headers=HEADERS, timeout=20)


def assert_refused(answer: httpx.Response, limit: int = 2) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["retry-after"] == "2"
    assert answer.json() == {"error": refusal(limit)}


def assert_completed(text: str) -> None:
    checker = StreamChecker()
    assert checker.check_sse(text) == [], checker.violations
    assert checker.terminal == "response.completed" and text.endswith("data: [DONE]\n\n")


def wait_until_free(app, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while app.state.openresponses.active and time.monotonic() < deadline:
        time.sleep(0.01)
    assert app.state.openresponses.active == 0


def test_beyond_the_cap_a_stream_is_refused_before_it_begins_and_a_plain_request_is_not_counted():
    provider = HeldProvider()
    app = app_with(provider, observability=observed())
    with live_server(app) as base:
        first, second = Held(base, "a"), Held(base, "b")
        held = {"b": second}
        try:
            assert app.state.openresponses.active == 2
            refused = stream(base)
            assert_refused(refused)
            assert provider.running == 2  # the provider was never called for it
            plain = httpx.post(base + "/responses", json={"input": "hi"}, headers=HEADERS, timeout=20)
            assert plain.status_code == 200 and plain.json()["status"] == "completed"
            provider.let("a")
            assert_completed(first.finish())
            assert_completed(stream(base).text)  # a slot is free again, and given back at its end
            held["c"] = Held(base, "c")  # with `b`, the cap again
            assert_refused(stream(base))
        finally:
            for name, one in held.items():
                provider.let(name)
                assert_completed(one.finish())
        metrics = metrics_text(base.removesuffix("/v1"))
    assert (
        'openresponses_requests_total{code="too_many_streams",operation="createResponse",status="503"} 2.0' in metrics
    )
    assert app.state.openresponses.active == 0


@pytest.mark.parametrize("no_cap", [None, 0])
def test_no_cap_with_none_or_0(no_cap):
    provider = HeldProvider()
    app = app_with(provider, max_streams=no_cap)
    with live_server(app) as base:
        held = [Held(base, str(n)) for n in range(5)]
        try:
            assert_completed(stream(base).text)
        finally:
            for n, one in enumerate(held):
                provider.let(str(n))
                assert_completed(one.finish())


def test_a_client_that_leaves_gives_its_slot_back():
    provider = HeldProvider()
    app = app_with(provider, max_streams=1)
    with live_server(app) as base:
        Held(base, "left").close()  # gone while the provider waits, before the stream's end
        wait_until_free(app)
        assert_completed(stream(base).text)


def test_a_provider_failure_before_or_during_the_stream_gives_its_slot_back():
    provider = HeldProvider()
    app = app_with(provider, max_streams=1)
    with live_server(app) as base:
        early = stream(base, "fail now")
        assert early.status_code == 500 and early.json()["error"]["code"] == "provider_error"
        assert app.state.openresponses.active == 0
        held = Held(base, "broken")
        provider.fail("broken")
        text = held.finish()
        assert '"code":"provider_error"' in text.replace(" ", "") and text.endswith("data: [DONE]\n\n")
        assert_completed(stream(base).text)
    assert app.state.openresponses.active == 0


class UnavailableStore(MemoryStore):
    async def put(self, record):
        raise StoreUnavailable()


def test_a_store_failure_at_the_end_gives_the_slot_back():
    app = app_with(HeldProvider(), max_streams=1, store=UnavailableStore())
    with live_server(app) as base:
        for _ in range(2):  # the second is served, not refused: the first gave its slot back
            answer = stream(base)
            assert answer.status_code == 200 and '"code":"store_unavailable"' in answer.text.replace(" ", "")
    assert app.state.openresponses.active == 0


def test_a_websocket_turn_beyond_the_cap_gets_the_error_envelope_and_the_connection_goes_on():
    from websockets.sync.client import connect

    provider = HeldProvider()
    app = app_with(provider, observability=observed())
    with live_server(app) as base:
        url = base.replace("http://", "ws://") + "/responses"
        with connect(url, additional_headers=HEADERS) as ws, connect(url, additional_headers=HEADERS) as other:
            http_held = Held(base, "http")
            ws.send(json.dumps({"type": "response.create", "model": "demo", "input": "hold turn"}))
            assert json.loads(ws.recv(timeout=10))["type"] == "response.created"  # the turn holds the second slot
            assert_refused(stream(base))
            (refused,) = ws_turn(other, input="hi")
            assert refused == {
                "type": "error",
                "status": 503,
                "error": {**refusal(), "headers": {"Retry-After": "2"}},
            }
            provider.let("turn")
            while json.loads(ws.recv(timeout=10))["type"] != "response.completed":
                pass
            assert ws_turn(other, input="hi")[-1]["type"] == "response.completed"  # the same connection, served
            warm_up = ws_turn(other, input="hi", generate=False)  # no model runs: no slot taken
            assert warm_up[-1]["type"] == "response.completed"
            provider.let("http")
            assert_completed(http_held.finish())
        metrics = metrics_text(base.removesuffix("/v1"))
    assert app.state.openresponses.active == 0
    assert (
        'openresponses_requests_total{code="too_many_streams",operation="createResponse",status="503"} 2.0' in metrics
    )


def test_a_websocket_client_that_leaves_mid_turn_gives_its_slot_back():
    from websockets.sync.client import connect

    provider = HeldProvider()
    app = app_with(provider, max_streams=1)
    with live_server(app) as base:
        with connect(base.replace("http://", "ws://") + "/responses", additional_headers=HEADERS) as ws:
            ws.send(json.dumps({"type": "response.create", "model": "demo", "input": "tick away"}))
            assert json.loads(ws.recv(timeout=10))["type"] == "response.created"
            assert app.state.openresponses.active == 1
        wait_until_free(app)  # at the next delta, which finds the client gone
        assert provider.running == 0
        assert_completed(stream(base).text)


def test_a_background_run_holds_a_slot_while_it_runs_and_a_refused_one_is_not_stored():
    provider = HeldProvider()
    app = app_with(provider, max_streams=1)
    with live_server(app, lifespan="on") as base:
        started = httpx.post(
            base + "/responses", json={"input": "hold bg", "background": True}, headers=HEADERS, timeout=20
        )
        assert started.status_code == 200 and started.json()["status"] == "in_progress"
        assert_refused(stream(base), limit=1)
        refused = httpx.post(base + "/responses", json={"input": "hi", "background": True}, headers=HEADERS)
        assert_refused(refused, limit=1)
        provider.let("bg")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            polled = httpx.get(f"{base}/responses/{started.json()['id']}", headers=HEADERS, timeout=10).json()
            if polled["status"] != "in_progress":
                break
            time.sleep(0.02)
        assert polled["status"] == "completed"
        wait_until_free(app)
        assert_completed(stream(base).text)
    assert len(app.state.openresponses.store._records) == 2  # the run and the last stream: nothing of the refused


def test_a_negative_cap_is_refused():
    with pytest.raises(ValueError, match=r"max_streams must be 0 \(no cap\) or more, not -1"):
        app_with(HeldProvider(), max_streams=-1)
