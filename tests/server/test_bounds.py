"""Bounds on one request, each at its edge: input items, tools, the context a
`previous_response_id` loads, a key's share of the streams, non-streamed creates at once; and the
clean refusals (deep nesting with a lone surrogate, a `starting_after` beyond 2^53)."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading

import httpx
import pytest
from openresponses_runtime.server import Bounds, DemoProvider, MemoryStore, MessageStart, TextDelta, create_app

from .. import cpu_time
from ..server_helpers import API_KEY, free_port, live_server, served_process

KEY_A, KEY_B = "sk-bounds-a", "sk-bounds-b"


def _headers(key: str = KEY_A) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _post(base: str, body: dict, key: str = KEY_A, path: str = "/responses") -> httpx.Response:
    return httpx.post(base + path, json={"model": "demo", **body}, headers=_headers(key), timeout=30)


def _refused(answer: httpx.Response, status: int, code: str, param: str) -> dict:
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["param"]) == (code, param), error
    return error


TOOL = {"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}}


def test_input_items_and_tools_are_bounded_at_their_edge():
    app = create_app(DemoProvider(), store=MemoryStore(), api_keys=KEY_A, bounds=Bounds(max_input_items=3, max_tools=2))
    with live_server(app) as base:
        item = {"role": "user", "content": "hi"}
        assert _post(base, {"input": [item] * 3}).status_code == 200
        error = _refused(_post(base, {"input": [item] * 4}), 400, "too_many_items", "input")
        assert "at most 3" in error["message"]
        assert _post(base, {"input": "hi", "tools": [TOOL] * 2}).status_code == 200
        _refused(_post(base, {"input": "hi", "tools": [TOOL] * 3}), 400, "too_many_tools", "tools")
        compact = _post(base, {"input": [item] * 4}, path="/responses/compact")
        _refused(compact, 400, "too_many_items", "input")


def test_the_context_a_previous_response_loads_is_bounded():
    store = MemoryStore()
    app = create_app(DemoProvider(), store=store, api_keys=KEY_A, bounds=Bounds(max_context_bytes=20_000))
    with live_server(app) as base:
        first = _post(base, {"input": "x" * 4_000}).json()["id"]
        second = _post(base, {"input": "y" * 4_000, "previous_response_id": first}).json()
        assert second["status"] == "completed"
        size = sum(len(record) for record in store._records.values())
        assert size > 20_000  # the two turns are past the bound, the first alone is not
        error = _refused(
            _post(base, {"input": "z", "previous_response_id": second["id"]}),
            400,
            "context_too_large",
            "previous_response_id",
        )
        assert "Compact it" in error["message"]
        assert _post(base, {"input": "z", "previous_response_id": first}).status_code == 200


class Gate:
    """Text until `opened` is set: a response that holds its slot as long as the test wants."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.running = 0

    async def respond(self, request):
        self.running += 1
        try:
            yield MessageStart()
            while not self.opened.is_set():
                await asyncio.sleep(0.01)
            yield TextDelta("done")
        finally:
            self.running -= 1


def _wait(condition, seconds: float = 10) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_one_key_cannot_take_every_stream_slot():
    gate = Gate()
    app = create_app(gate, store=MemoryStore(), api_keys=[KEY_A, KEY_B], max_streams=4)  # two a key by default
    with live_server(app, lifespan="on") as base:
        held = [_post(base, {"input": "hold", "background": True}) for _ in range(2)]
        assert [answer.status_code for answer in held] == [200, 200]
        _wait(lambda: gate.running == 2)
        error = _refused(_post(base, {"input": "one more", "background": True}), 503, "too_many_streams", "stream")
        assert "Your API key" in error["message"]
        assert _post(base, {"input": "B's", "background": True}, KEY_B).status_code == 200
        gate.opened.set()


def test_non_streamed_creates_beyond_the_cap_get_503_with_retry_after():
    gate = Gate()
    app = create_app(gate, store=MemoryStore(), api_keys=KEY_A, max_pending=2)
    with live_server(app) as base:
        answers: list[httpx.Response] = []
        threads = [threading.Thread(target=lambda: answers.append(_post(base, {"input": "wait"}))) for _ in range(2)]
        for thread in threads:
            thread.start()
        _wait(lambda: gate.running == 2)
        refused = _post(base, {"input": "third"})
        _refused(refused, 503, "server_busy", "stream")
        assert refused.headers["retry-after"] == "1"
        body = {"model": "demo", "input": "streams are counted apart", "stream": True}
        with httpx.stream("POST", base + "/responses", json=body, headers=_headers(), timeout=30) as streamed:
            assert streamed.status_code == 200  # the gate is closed, yet a stream gets its slot
        gate.opened.set()
        for thread in threads:
            thread.join(30)
        assert [answer.status_code for answer in answers] == [200, 200]
        assert _post(base, {"input": "again"}).status_code == 200


def _create_on_a_socket(base: str, key: str) -> socket.socket:
    """A non-streamed create sent on a raw connection, left waiting for its answer until closed."""
    body = json.dumps({"model": "demo", "input": "wait"}).encode()
    port = int(base.rsplit(":", 1)[1].split("/")[0])
    sock = socket.create_connection(("127.0.0.1", port))
    head = f"POST /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
    head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    sock.sendall(head.encode() + body)
    return sock


def test_one_key_s_creates_keep_no_other_key_out_and_a_client_gone_gives_its_place_back():
    """Key B's creates, their clients gone, held every place until the provider was done (16 s in the
    review, the upstream timeout behind a gateway), and key A got 503s meanwhile."""
    gate = Gate()
    app = create_app(gate, store=MemoryStore(), api_keys=[KEY_A, KEY_B], max_pending=4)  # two a key by default
    with live_server(app) as base:
        left = [_create_on_a_socket(base, KEY_B) for _ in range(2)]
        _wait(lambda: gate.running == 2)
        error = _refused(_post(base, {"input": "B's third"}, KEY_B), 503, "server_busy", "stream")
        assert "Your API key" in error["message"]
        answers: list[httpx.Response] = []
        a = threading.Thread(target=lambda: answers.append(_post(base, {"input": "A's"}, KEY_A)))
        a.start()
        _wait(lambda: gate.running == 3)  # A has places of its own
        for sock in left:
            sock.close()
        _wait(lambda: gate.running == 1, cpu_time.scaled(5))  # B's responses stopped: nobody would read them
        b = threading.Thread(target=lambda: answers.append(_post(base, {"input": "B's again"}, KEY_B)))
        b.start()
        _wait(lambda: gate.running == 2)  # B's places are free again
        gate.opened.set()
        for thread in (a, b):
            thread.join(cpu_time.scaled(30))
        assert [answer.status_code for answer in answers] == [200, 200]


@pytest.mark.parametrize("depth", [400, 900, 990, 5000])
def test_deep_nesting_with_a_lone_surrogate_is_invalid_json(depth):
    app = create_app(DemoProvider(), store=MemoryStore(), api_keys=KEY_A)
    nested = "[" * depth + '"\\ud800"' + "]" * depth
    body = '{"model": "m", "input": "hi", "metadata": {"a": ' + nested + "}}"
    with live_server(app) as base:
        answer = httpx.post(
            base + "/responses", content=body, headers={**_headers(), "Content-Type": "application/json"}
        )
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_json"
    assert "Traceback" not in answer.text and len(answer.content) < 500


def test_a_starting_after_beyond_2_to_the_53_is_a_400():
    app = create_app(DemoProvider(), store=MemoryStore(), api_keys=KEY_A)
    with live_server(app, lifespan="on") as base:
        run = _post(base, {"input": "hi", "background": True, "stream": True})
        response_id = json.loads(run.text.split("data: ", 1)[1].split("\n", 1)[0])["response"]["id"]
        for value in (str(2**53 + 1), "9" * 30):
            answer = httpx.get(
                base + f"/responses/{response_id}?stream=true&starting_after={value}", headers=_headers(), timeout=30
            )
            _refused(answer, 400, "invalid_value", "starting_after")


def test_the_published_document_states_the_bound_on_starting_after():
    """Schemathesis drew a schema-valid `starting_after` the server refused (ST202): the bound is published."""
    from openresponses_runtime.server.lifecycle import MAX_SEQUENCE

    from ..conftest import ROOT

    document = json.loads((ROOT / "generated" / "openapi.json").read_text())
    (parameter,) = [
        p for p in document["paths"]["/responses/{response_id}"]["get"]["parameters"] if p["name"] == "starting_after"
    ]
    assert parameter["schema"]["maximum"] == MAX_SEQUENCE


def _turn(ws, **body) -> dict:
    """One WebSocket turn; its last event (`response.completed`, or the error envelope)."""
    ws.send(json.dumps({"type": "response.create", "model": "demo", **body}))
    while True:
        event = json.loads(ws.recv(timeout=10))
        if event["type"] in ("response.completed", "response.failed", "error"):
            return event


@pytest.mark.parametrize("bound", [{"websocket_cache_turns": 2}, {"websocket_cache_bytes": 6_000}])
def test_the_websocket_cache_keeps_only_its_newest_store_false_turns(bound):
    from websockets.sync.client import connect

    store = MemoryStore()
    app = create_app(DemoProvider(), store=store, api_keys=KEY_A, **bound)
    with (
        live_server(app) as base,
        connect(base.replace("http://", "ws://") + "/responses", additional_headers=_headers(), open_timeout=10) as ws,
    ):
        ids = [_turn(ws, input="x" * 1_000, store=False)["response"]["id"] for _ in range(3)]
        forgotten = _turn(ws, input="go on", store=False, previous_response_id=ids[0])
        assert (forgotten["status"], forgotten["error"]["code"]) == (404, "previous_response_not_found")
        assert _turn(ws, input="go on", store=False, previous_response_id=ids[2])["type"] == "response.completed"
        stored = _turn(ws, input="kept by the store")["response"]["id"]
        for _ in range(3):
            _turn(ws, input="x" * 1_000, store=False)
        assert _turn(ws, input="go on", previous_response_id=stored)["type"] == "response.completed"
    assert len(store) == 2  # the stored turn and the one continuing it; no store: false turn


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"s": {"type": "string", "minLength": 5_000_000}}, "required": ["s"]},
        {"type": "array", "minItems": 1000, "items": {"type": "array", "minItems": 1000, "items": {"minLength": 4000}}},
    ],
)
def test_the_demo_clamps_what_a_schema_asks_it_to_build(schema):
    app = create_app(DemoProvider(), store=MemoryStore(), api_keys=KEY_A)
    text = {"format": {"type": "json_schema", "name": "big", "schema": schema}}
    with live_server(app) as base:
        answer = _post(base, {"input": "hi", "text": text, "store": False})
    assert answer.status_code == 200, answer.text
    assert 4_000 < len(answer.content) < 300_000  # asked for megabytes, given at most a quarter of one


@pytest.mark.slow  # waits out a retention of seconds
@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_retention_forgets_old_responses_and_their_run_frames(kind, tmp_path):
    import sqlite3
    import time

    from .test_lifecycle import _postgres_url

    store = {"memory": MemoryStore, "sqlite": lambda: str(tmp_path / "r.sqlite3"), "postgres": _postgres_url}[kind]()
    app = create_app(DemoProvider(), store=store, api_keys=KEY_A, retention=5)
    with live_server(app, lifespan="on") as base:
        old = _post(base, {"input": "old", "background": True, "stream": True})
        old_id = json.loads(old.text.split("data: ", 1)[1].split("\n", 1)[0])["response"]["id"]
        time.sleep(3)
        young = _post(base, {"input": "young"}).json()["id"]
        assert httpx.get(base + f"/responses/{old_id}", headers=_headers()).status_code == 200
        _wait(lambda: httpx.get(base + f"/responses/{old_id}", headers=_headers()).status_code == 404, 10)
        assert httpx.get(base + f"/responses/{young}", headers=_headers()).status_code == 200  # not yet 5 s old
    if kind == "sqlite":
        with sqlite3.connect(tmp_path / "r.sqlite3") as db:
            assert db.execute("SELECT count(*) FROM run_frames WHERE id = ?", (old_id,)).fetchone() == (0,)
            assert db.execute("SELECT count(*) FROM runs WHERE id = ?", (old_id,)).fetchone() == (0,)


@pytest.mark.process
def test_orspec_serve_takes_each_bound_as_an_option():
    """`--max-input-items`, `--max-tools`, `--max-context-bytes` and `--max-body-bytes` reach the app."""
    port = free_port()
    argv = [sys.executable, "-m", "orspec", "serve", "--delay", "0", "--port", str(port), "--api-key", API_KEY]
    argv += ["--store", "memory:", "--max-input-items", "2", "--max-tools", "1", "--max-context-bytes", "1000"]
    argv += ["--max-body-bytes", "4000"]
    headers = {"Authorization": f"Bearer {API_KEY}"}
    tool = {"type": "function", "name": "f", "parameters": {"type": "object"}}
    item = {"type": "message", "role": "user", "content": "hi"}
    with served_process(argv, port=port) as base:

        def ask(body: dict) -> httpx.Response:
            return httpx.post(base + "/responses", json={"model": "m", **body}, headers=headers, timeout=30)

        assert ask({"input": [item, item]}).status_code == 200
        refused = ask({"input": [item] * 3}).json()["error"]
        assert (refused["code"], refused["param"]) == ("too_many_items", "input")
        refused = ask({"input": "hi", "tools": [tool, {**tool, "name": "g"}]}).json()["error"]
        assert (refused["code"], refused["param"]) == ("too_many_tools", "tools")
        first = ask({"input": "x" * 2000}).json()["id"]  # stored: more than 1,000 bytes of context
        refused = ask({"input": "more", "previous_response_id": first}).json()["error"]
        assert (refused["code"], refused["param"]) == ("context_too_large", "previous_response_id")
        assert ask({"input": "x" * 5000}).status_code == 413
