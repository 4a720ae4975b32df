"""`orspec proxy`: byte-transparent forwarding, checks and diagnoses, records without secrets.

Upstreams run on loopback in this process: the generated server with the demo model (made
deterministic, so a direct and a proxied request can be compared byte for byte), and small
deliberately broken servers that replay scripted or recorded SSE.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from itertools import count
from pathlib import Path

import httpx
import pytest
from openresponses_runtime.server import DemoProvider, MemoryStore, create_app
from openresponses_runtime.server import app as server_app
from openresponses_runtime.server import compaction as server_compaction
from openresponses_runtime.server import emitter as server_emitter
from openresponses_runtime.server import resource as server_resource
from openresponses_runtime.server import sealing as server_sealing
from openresponses_runtime.server import turns as server_turns
from openresponses_runtime.streaming import StreamChecker
from orspec.proxy import ProxyApp, ProxyConfig, Recorder
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from .. import cpu_time, streams
from ..server_helpers import API_KEY, EndlessProvider, live_server

AUTH = {"Authorization": f"Bearer {API_KEY}"}
# Response headers that differ between any two requests, proxied or not.
_PER_REQUEST_HEADERS = {"date"}


@pytest.fixture
def deterministic(monkeypatch):
    """Ids from a counter, a fixed clock and a fixed sealing nonce in the server, so equal requests give
    equal bytes (a nonce used twice under one key is unsafe outside a test that compares bytes).

    Returns a function that restarts the ids."""
    counter = {"ids": count()}

    def new_id(prefix: str) -> str:
        return f"{prefix}_{next(counter['ids']):06d}"

    clock = types.SimpleNamespace(time=lambda: 1_790_000_000.0, monotonic=time.monotonic)
    for module in (server_app, server_turns, server_emitter, server_compaction):
        monkeypatch.setattr(module, "new_id", new_id)
    for module in (server_app, server_resource, server_emitter):
        monkeypatch.setattr(module, "time", clock)
    monkeypatch.setattr(server_sealing, "os", types.SimpleNamespace(urandom=bytes, environ=os.environ))

    def restart() -> None:
        counter["ids"] = count()

    return restart


@contextmanager
def proxy(upstream: str, tmp_path: Path, **config):
    """The proxy on loopback in front of `upstream`; yields (base URL, recorder)."""
    recorder = Recorder(tmp_path / "records", bodies=config.pop("bodies", False), console=None)
    app = ProxyApp(ProxyConfig(upstream=upstream, **config), recorder)
    with live_server(app, server_header=False, date_header=False, lifespan="on") as base:
        yield base, recorder
    recorder.close()


def records(recorder: Recorder, n: int = 1) -> list[dict]:
    """The records once `n` are written: each is written as its exchange ends, just after the client's last byte."""
    deadline = time.monotonic() + 10
    while recorder.exchanges < n and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # and no more than `n` come
    return [json.loads(line) for line in recorder.path.read_text().splitlines()]


def _headers(response: httpx.Response) -> list[tuple[str, str]]:
    return [(k, v) for k, v in response.headers.multi_items() if k not in _PER_REQUEST_HEADERS]


@pytest.fixture
def demo_upstream(deterministic):
    app = create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys=API_KEY)
    with live_server(app) as base:
        yield base


# -- transparency -------------------------------------------------------------------------------

REQUESTS = [
    ("/responses", {"model": "demo", "input": "Say something long enough to stream a few words."}),
    ("/responses", {"model": "demo", "input": "Stream this please", "stream": True}),
    (
        "/responses",
        {
            "model": "demo",
            "input": "call get_weather for Paris",
            "stream": True,
            "tools": [
                {
                    "type": "function",
                    "name": "get_weather",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                }
            ],
        },
    ),
    ("/responses", {"model": "demo", "input": "think first", "reasoning": {"summary": "auto"}, "stream": True}),
    ("/responses/compact", {"model": "demo", "input": "compact me"}),
    ("/responses", {"model": "demo", "input": [{"type": "bogus"}]}),  # a 400 from the upstream
    ("/responses", {"model": "demo", "input": "no key"}),  # sent without a key: a 401
]


@pytest.mark.parametrize(("path", "body"), REQUESTS, ids=lambda v: v if isinstance(v, str) else None)
def test_answers_are_byte_identical_to_a_direct_connection(demo_upstream, deterministic, tmp_path, path, body):
    headers = {} if body["input"] == "no key" else AUTH
    raw = json.dumps(body).encode()
    with proxy(demo_upstream, tmp_path) as (base, recorder), httpx.Client() as client:
        for _ in range(2):  # the second time over a kept-alive connection
            deterministic()
            direct = client.post(
                demo_upstream + path, content=raw, headers={**headers, "content-type": "application/json"}
            )
            deterministic()
            proxied = client.post(base + path, content=raw, headers={**headers, "content-type": "application/json"})
            assert proxied.status_code == direct.status_code
            assert proxied.content == direct.content
            assert _headers(proxied) == _headers(direct)
        found = records(recorder, 2)
    assert len(found) == 2
    assert all(r["status"] == direct.status_code and r["upstream_status"] == direct.status_code for r in found)
    assert not any(r["violations"] or r["response_problems"] or r["diagnoses"] for r in found)
    expected_transport = "sse" if body.get("stream") and direct.status_code == 200 else "json"
    assert {r["transport"] for r in found} == {expected_transport}
    if direct.status_code == 200 and path == "/responses":
        assert found[0]["response_id"] == "resp_000000"
    if body.get("stream"):
        assert found[0]["events"]["response.completed"] == 1


def test_streams_reach_the_client_event_by_event(tmp_path):
    """The proxy does not wait for more data: each event arrives while the upstream holds the next."""
    release = threading.Event()
    frames = _frames(_simple_stream())

    async def endpoint(request):
        async def body():
            yield frames[0]
            await asyncio.to_thread(release.wait, 5)
            for frame in frames[1:]:
                yield frame

        return StreamingResponse(body(), media_type="text/event-stream")

    upstream = Starlette(routes=[Route("/v1/responses", endpoint, methods=["POST"])])
    body = {"model": "m", "input": "x", "stream": True}
    with (
        live_server(upstream) as up,
        proxy(up, tmp_path) as (base, _),
        httpx.Client(timeout=5) as client,
        client.stream("POST", base + "/responses", json=body) as response,
    ):
        chunks = response.iter_raw()
        first = next(chunks)
        assert first == frames[0]  # arrived while the upstream still holds the rest
        release.set()
        rest = b"".join(chunks)
    assert first + rest == b"".join(frames)


def test_websocket_messages_are_identical_to_a_direct_connection(demo_upstream, deterministic, tmp_path):
    turn = json.dumps({"type": "response.create", "model": "demo", "input": "hello over a socket"})
    with proxy(demo_upstream, tmp_path) as (base, recorder):
        got = {}
        for name, url in (("direct", demo_upstream), ("proxied", base)):
            deterministic()
            with connect(url.replace("http", "ws") + "/responses", additional_headers=AUTH) as ws:
                ws.send(turn)
                messages = []
                while not messages or json.loads(messages[-1])["type"] != "response.completed":
                    messages.append(ws.recv(timeout=5))
                ws.send(json.dumps({"type": "response.create", "model": 7}))  # refused by the upstream
                messages.append(ws.recv(timeout=5))
            got[name] = messages
        assert got["proxied"] == got["direct"]
        assert json.loads(got["proxied"][-1])["status"] == 400
        found = records(recorder, 2)
    turns = [r for r in found if r["transport"] == "websocket"]
    assert [t["status"] for t in turns] == [200, 400]
    assert turns[0]["events"]["response.completed"] == 1 and not turns[0]["violations"]
    assert turns[1]["request_problems"] and not turns[1]["violations"]
    # Without a key the upstream refuses the handshake, and so does the proxy, with the same answer.
    with proxy(demo_upstream, tmp_path) as (base, _):
        refusals = []
        for url in (demo_upstream, base):
            with pytest.raises(InvalidStatus) as refused:
                connect(url.replace("http", "ws") + "/responses")
            refusals.append((refused.value.response.status_code, refused.value.response.body))
    assert refusals[0] == refusals[1] and refusals[0][0] == 401


# -- checks on a broken upstream ------------------------------------------------------------------


def _simple_stream(*, seq_gap: int | None = None, skip_item_done: bool = False) -> list[dict]:
    """A small valid text stream, optionally broken."""
    response = streams.response(text={"format": {"type": "text"}, "verbosity": "medium"})
    item = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    done_part = {**part, "text": "Hi"}
    done_item = {**item, "status": "completed", "content": [done_part]}
    at = {"item_id": "msg_1", "output_index": 0}
    events = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.content_part.added", **at, "content_index": 0, "part": part},
        {"type": "response.output_text.delta", **at, "content_index": 0, "delta": "Hi", "logprobs": []},
        {"type": "response.output_text.done", **at, "content_index": 0, "text": "Hi", "logprobs": []},
        {"type": "response.content_part.done", **at, "content_index": 0, "part": done_part},
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "completed_at": 2, "output": [done_item]},
        },
    ]
    if skip_item_done:
        events = [e for e in events if e["type"] != "response.output_item.done"]
    for seq, event in enumerate(events):
        event["sequence_number"] = seq
    if seq_gap is not None:
        events[seq_gap]["sequence_number"] = events[seq_gap - 1]["sequence_number"]
    return events


def _frames(events: list[dict], *, done: bool = True) -> list[bytes]:
    frames = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
    return frames + ([b"data: [DONE]\n\n"] if done else [])


def scripted_upstream(script):
    """A server whose `/v1/responses` streams what `script()` (an async generator of bytes) yields."""

    async def endpoint(request):
        await request.body()
        return StreamingResponse(script(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/responses", endpoint, methods=["POST"])])


def _replay(frames: list[bytes]):
    async def script():
        for frame in frames:
            yield frame

    return script


def _stream_through(base: str, **options) -> bytes:
    with httpx.Client(timeout=10) as client:
        response = client.post(base + "/responses", json={"model": "m", "input": "x", "stream": True}, **options)
        return response.content


@pytest.mark.parametrize(
    ("broken", "rule", "seq"),
    [({"skip_item_done": True}, "item-closed", 7), ({"seq_gap": 5}, "sequence", 4)],
    ids=["skipped-output_item.done", "bad-sequence_number"],
)
def test_broken_streams_are_reported_by_rule_and_passed_on_unchanged(tmp_path, broken, rule, seq):
    frames = _frames(_simple_stream(**broken))
    with live_server(scripted_upstream(_replay(frames))) as up, proxy(up, tmp_path) as (base, recorder):
        assert _stream_through(base) == b"".join(frames)
        (record,) = records(recorder)
    found = [(v["rule"], v["sequence_number"]) for v in record["violations"]]
    assert (rule, seq) in found
    # A skipped item also changes the output; a repeated number makes the next one jump (a gap warning).
    assert {rule for rule, _ in found} <= {rule, "terminal-output", "sequence-gap"}
    assert record["diagnoses"] == []


def _tool_call_start() -> list[dict]:
    events = _simple_stream()[:2]
    call = {
        "id": "fc_1",
        "type": "function_call",
        "status": "in_progress",
        "call_id": "call_1",
        "name": "f",
        "arguments": "",
    }
    events += [
        {"type": "response.output_item.added", "output_index": 0, "item": call, "sequence_number": 2},
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 0,
            "delta": '{"ci',
            "sequence_number": 3,
        },
    ]
    return events


def test_a_stalled_tool_argument_stream_is_caught_within_the_timeout_and_ended_cleanly(tmp_path):
    frames = _frames(_tool_call_start(), done=False)
    keep_alive_sent = threading.Event()

    async def script():  # the arguments stop, but the connection stays busy with keep-alive comments
        for frame in frames:
            yield frame
        for _ in range(200):
            await asyncio.sleep(0.05)
            keep_alive_sent.set()
            yield b": keep-alive\n\n"

    with (
        live_server(scripted_upstream(script)) as up,
        proxy(up, tmp_path, tool_timeout=0.4, stall_timeout=30) as (base, recorder),
    ):
        started = time.monotonic()
        body = _stream_through(base)
        elapsed = time.monotonic() - started
        (record,) = records(recorder)
    assert 0.4 <= elapsed < cpu_time.scaled(3), elapsed
    assert body.startswith(b"".join(frames))
    assert [d["kind"] for d in record["diagnoses"]] == ["tool-args-stall"]
    assert "fc_1" in record["diagnoses"][0]["message"]
    # The client got a clean end: the error event, response.failed and [DONE], and a stream that checks.
    assert StreamChecker().check_sse(body) == []
    tail = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: {")][-2:]
    assert [e["type"] for e in tail] == ["error", "response.failed"]
    assert tail[0]["error"]["code"] == "tool_args_stall"
    assert body.endswith(b"data: [DONE]\n\n")


def test_a_silent_stream_is_diagnosed_as_stalled(tmp_path):
    frames = _frames(_simple_stream()[:3], done=False)

    async def script():
        for frame in frames:
            yield frame
        await asyncio.sleep(30)

    with live_server(scripted_upstream(script)) as up, proxy(up, tmp_path, stall_timeout=0.3) as (base, recorder):
        body = _stream_through(base)
        (record,) = records(recorder)
    assert [d["kind"] for d in record["diagnoses"]] == ["stream-stall"]
    assert record["total_ms"] < cpu_time.scaled(3) * 1000
    assert b'"type": "response.failed"' in body or b'"type":"response.failed"' in body


def test_an_upstream_dying_mid_stream_gives_the_client_a_clean_end(tmp_path):
    frames = _frames(_simple_stream()[:5], done=False)

    async def script():
        for frame in frames:
            yield frame
        raise RuntimeError("the upstream process died")

    with live_server(scripted_upstream(script)) as up, proxy(up, tmp_path) as (base, recorder):
        body = _stream_through(base)
        (record,) = records(recorder)
    assert body.startswith(b"".join(frames))
    assert StreamChecker().check_sse(body) == []  # ends with error, response.failed and [DONE]
    assert [d["kind"] for d in record["diagnoses"]] == ["upstream-died"]
    assert record["events"]["response.output_text.delta"] == 1
    assert record["violations"] == []


def test_a_stream_without_a_terminal_event_is_diagnosed(tmp_path):
    frames = _frames(_simple_stream()[:5])
    with live_server(scripted_upstream(_replay(frames))) as up, proxy(up, tmp_path) as (base, recorder):
        assert _stream_through(base) == b"".join(frames)
        (record,) = records(recorder)
    assert "no-terminal" in [d["kind"] for d in record["diagnoses"]]
    assert "one-terminal" in [v["rule"] for v in record["violations"]]


@pytest.mark.slow
def test_real_openai_streams_pass_unchanged_and_a_missing_done_is_its_own_finding(shared, tmp_path):
    """The recordings from api.openai.com omit `[DONE]`: noted as `no-done-marker`, not as a broken stream."""
    captures = sorted((shared / "recordings" / "streams").glob("*.sse"))
    assert captures
    for capture in captures:
        raw = capture.read_bytes()
        chunks = [raw[i : i + 700] for i in range(0, len(raw), 700)]  # split anywhere, as a network would
        with (
            live_server(scripted_upstream(_replay(chunks))) as up,
            proxy(up, tmp_path / capture.stem) as (base, recorder),
        ):
            assert _stream_through(base) == raw, capture.name
            (record,) = records(recorder)
        assert "done-marker" not in [v["rule"] for v in record["violations"]], capture.name
        assert [d["kind"] for d in record["diagnoses"]] == ["no-done-marker"], capture.name
        expected = StreamChecker()
        expected.check_sse(raw)
        assert record["events"] == dict(expected.counts), capture.name


# -- concurrency, disconnects, upstream failures ------------------------------------------------


@pytest.mark.slow
def test_fifty_concurrent_streams_are_kept_apart_and_all_recorded(tmp_path):
    app = create_app(DemoProvider(delay=0.002), store=MemoryStore(), api_keys=API_KEY)

    def one(n: int) -> tuple[int, bytes]:
        body = {"model": "demo", "input": f"client number {n} speaking", "stream": True}
        with httpx.Client(timeout=30) as client:
            return n, client.post(base + "/responses", json=body, headers=AUTH).content

    with live_server(app) as up, proxy(up, tmp_path) as (base, recorder):
        with ThreadPoolExecutor(50) as pool:
            results = list(pool.map(one, range(50)))
        found = records(recorder, 50)
    ids = set()
    for n, body in results:
        assert StreamChecker().check_sse(body) == [], n
        texts = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: {")]
        done = [e["text"] for e in texts if e["type"] == "response.output_text.done"]
        assert done == [f"You said: client number {n} speaking"]
        ids.add(texts[0]["response"]["id"])
    assert len(found) == 50
    assert {r["response_id"] for r in found} == ids
    assert all(r["transport"] == "sse" and not r["violations"] and not r["diagnoses"] for r in found)


def test_a_client_disconnect_cancels_the_upstream_request(tmp_path):
    provider = EndlessProvider()
    app = create_app(provider, store=MemoryStore(), api_keys=API_KEY)
    with live_server(app) as up, proxy(up, tmp_path) as (base, recorder):
        with httpx.Client(timeout=10) as client:
            body = {"model": "demo", "input": "go on forever", "stream": True}
            with client.stream("POST", base + "/responses", json=body, headers=AUTH) as response:
                next(response.iter_raw())
        assert provider.closed.wait(5), "the upstream kept generating after the client left"
        (record,) = records(recorder, 1)
    assert [d["kind"] for d in record["diagnoses"]] == ["client-disconnect"]


def _failing_upstream(status: int = 503, delay: float = 0.0):
    async def endpoint(request):
        await asyncio.sleep(delay)
        return httpx_response(status)

    def httpx_response(code):
        from starlette.responses import PlainTextResponse

        return PlainTextResponse("upstream trouble: internal detail", status_code=code)

    return Starlette(routes=[Route("/v1/responses", endpoint, methods=["POST"])])


@pytest.mark.parametrize(
    ("setup", "status", "code", "kind"),
    [
        ("5xx", 502, "upstream_error", "upstream-error"),
        pytest.param("slow", 504, "upstream_timeout", "upstream-timeout", marks=pytest.mark.slow),  # waits 2 s
        ("down", 502, "upstream_unreachable", "upstream-unreachable"),
    ],
)
def test_upstream_failures_get_the_spec_error_object(tmp_path, setup, status, code, kind):
    app = _failing_upstream(delay=2 if setup == "slow" else 0)  # far past the timeout; the server's exit waits for it
    with live_server(app) as up:
        pass_upstream = up
        if setup != "down":
            with proxy(up, tmp_path, upstream_timeout=0.3) as (base, recorder):
                response = httpx.post(base + "/responses", json={"model": "m", "input": "x"}, timeout=10)
                (record,) = records(recorder)
    if setup == "down":  # the server above has stopped: nothing listens there now
        with proxy(pass_upstream, tmp_path, upstream_timeout=2) as (base, recorder):
            response = httpx.post(base + "/responses", json={"model": "m", "input": "x"}, timeout=10)
            (record,) = records(recorder)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code and error["type"] == "server_error"
    assert "internal detail" not in response.text
    assert [d["kind"] for d in record["diagnoses"]] == [kind]
    assert record["status"] == status


def test_enforce_refuses_a_request_that_breaks_the_schema(demo_upstream, tmp_path):
    bad = {"model": "demo", "input": "hi", "temperature": "hot"}
    with proxy(demo_upstream, tmp_path) as (base, recorder):
        passed = httpx.post(base + "/responses", json=bad, headers=AUTH)  # reported, still forwarded
        (record,) = records(recorder)
    assert passed.status_code == 400 and record["upstream_status"] == 400
    assert "temperature" in record["request_problems"][0]
    with proxy(demo_upstream, tmp_path, enforce=True) as (base, recorder):
        refused = httpx.post(base + "/responses", json=bad, headers=AUTH)
        (record,) = records(recorder)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_value"
    assert record["upstream_status"] is None  # never sent upstream


# -- records --------------------------------------------------------------------------------------

SECRET_KEY = "sk-live-0123456789abcdefSECRET"
PROMPT = "my confidential prompt about project nightingale"


@pytest.mark.parametrize("bodies", [False, True], ids=["summaries", "with-bodies"])
def test_records_hold_no_key_and_no_prompt(tmp_path, bodies):
    app = create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys=SECRET_KEY)
    auth = {"Authorization": f"Bearer {SECRET_KEY}"}
    body = {
        "model": "demo",
        "input": PROMPT,
        "metadata": {"api_key": SECRET_KEY, "note": f"token {SECRET_KEY}"},
    }
    with live_server(app) as up, proxy(up, tmp_path, bodies=bodies) as (base, recorder):
        for stream in (False, True):
            assert httpx.post(base + "/responses", json={**body, "stream": stream}, headers=auth).status_code == 200
        with connect(base.replace("http", "ws") + "/responses", additional_headers=auth) as ws:
            ws.send(json.dumps({"type": "response.create", **body}))
            while json.loads(ws.recv(timeout=5))["type"] != "response.completed":
                pass
        found = records(recorder, 3)
    text = recorder.path.read_text()
    assert len(found) == 3
    assert SECRET_KEY not in text
    assert "Bearer" not in text
    if bodies:
        assert PROMPT in text  # asked for, and still without the key
        assert found[0]["request_body"]["metadata"]["api_key"] == "[redacted]"
    else:
        assert PROMPT not in text and "nightingale" not in text
        assert all("request_body" not in r for r in found)


# -- the command, end to end ----------------------------------------------------------------------


@pytest.mark.process
def test_the_openai_client_works_through_orspec_proxy_in_front_of_orspec_serve(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    from openai import OpenAI

    from ..server_helpers import free_port, start, stop

    serve_port, proxy_port = free_port(), free_port()
    env = {**os.environ, "ORSPEC_API_KEY": API_KEY}
    serve = start(
        [sys.executable, "-m", "orspec", "serve", "--port", str(serve_port), "--store", "memory:", "--delay", "0"],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    command = [sys.executable, "-m", "orspec", "proxy", "--upstream", f"http://127.0.0.1:{serve_port}/v1"]
    command += ["--port", str(proxy_port), "--record", str(tmp_path / "rec")]
    proxied = start(command, env=env, stdout=subprocess.PIPE, text=True)
    try:
        _wait_for_port(serve_port)
        _wait_for_port(proxy_port)
        client = OpenAI(base_url=f"http://127.0.0.1:{proxy_port}/v1", api_key=API_KEY, max_retries=0)
        answer = client.responses.create(model="demo", input="hello through the proxy")
        assert answer.output_text == "You said: hello through the proxy"
        with client.responses.stream(model="demo", input="and streamed") as stream:
            final = stream.get_final_response()
        assert final.output_text == "You said: and streamed"
    finally:
        proxied.send_signal(signal.SIGINT)
        try:
            _, err = proxied.communicate(timeout=cpu_time.scaled(20))
        finally:
            stop(proxied)
            stop(serve, grace=20)
    assert proxied.returncode == 0, err
    lines = [line for line in err.splitlines() if " POST /v1/responses " in line]
    assert len(lines) == 2 and all(line.endswith(" ok") for line in lines), err
    assert "orspec proxy summary:" in err and re.search(r"exchanges +2\n", err), err
    (path,) = (tmp_path / "rec").glob("*.jsonl")
    found = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["transport"] for r in found] == ["json", "sse"]


def _wait_for_port(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


@pytest.mark.process
def test_bad_proxy_arguments_get_a_clear_error():
    from ..conftest import run_orspec

    result = run_orspec("proxy", "--upstream", "ftp://example")
    assert result.returncode == 2
    assert "--upstream must be an http:// or https:// URL" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_orspec("proxy", "--upstream", "http://127.0.0.1:9", "--tool-timeout", "0")
    assert result.returncode == 2 and "--tool-timeout must be more than 0" in result.stderr


def test_the_upstream_gets_the_clients_headers_and_no_others(tmp_path):
    """No `User-Agent` or `Accept-Encoding` of the proxy's own, no cookies kept from an earlier answer."""
    from starlette.responses import JSONResponse

    async def echo(request):
        response = JSONResponse({"headers": [[k.decode(), v.decode()] for k, v in request.headers.raw]})
        response.set_cookie("session", "for-the-first-client-only")
        return response

    upstream = Starlette(routes=[Route("/v1/other", echo, methods=["POST", "GET"])])
    sent = [
        ("x-custom", "1"),
        ("user-agent", "my-client/1.0"),
        ("connection", "keep-alive, x-hop"),
        ("x-hop", "drop me"),
    ]
    with live_server(upstream) as up, proxy(up, tmp_path) as (base, _):
        seen = []
        for _ in range(2):
            request = httpx.Request("POST", base + "/other", headers=sent, content=b"{}")
            with httpx.Client() as client:
                seen.append(client.send(request).json()["headers"])
    for headers in seen:
        names = [name for name, _ in headers]
        assert ["x-custom", "1"] in headers and ["user-agent", "my-client/1.0"] in headers
        assert "accept-encoding" not in names and "cookie" not in names
        assert "connection" not in names and "x-hop" not in names  # hop-by-hop, and named by Connection
        assert names.count("host") == 1 and names.count("user-agent") == 1


def test_an_upstream_dying_mid_message_still_ends_with_whole_closing_events(tmp_path):
    frames = _frames(_simple_stream()[:4], done=False)
    half = frames[-1][: len(frames[-1]) // 2]

    async def script():
        for frame in frames[:-1]:
            yield frame
        yield half
        raise RuntimeError("the upstream process died mid-message")

    with live_server(scripted_upstream(script)) as up, proxy(up, tmp_path) as (base, recorder):
        body = _stream_through(base)
        (record,) = records(recorder)
    assert body.startswith(b"".join(frames[:-1]) + half)
    tail = body[len(b"".join(frames[:-1]) + half) :]
    messages = [line for line in tail.decode().split("\n\n") if line.strip()]
    assert [json.loads(m.split("data: ", 1)[1])["type"] for m in messages[:-1]] == ["error", "response.failed"]
    assert messages[-1] == "data: [DONE]"
    assert [d["kind"] for d in record["diagnoses"]] == ["upstream-died"]
    assert record["violations"] == []  # the half message is the cut's doing, not the stream's


@pytest.mark.slow
def test_a_stalled_websocket_turn_is_ended_with_closing_events(tmp_path):
    from starlette.routing import WebSocketRoute

    first = _simple_stream()[:2]

    async def endpoint(websocket):
        await websocket.accept()
        await websocket.receive_text()
        for event in first:
            await websocket.send_text(json.dumps(event))
        await websocket.receive()  # silent until the proxy gives up on it and leaves

    upstream = Starlette(routes=[WebSocketRoute("/v1/responses", endpoint)])
    with live_server(upstream) as up, proxy(up, tmp_path, stall_timeout=0.4) as (base, recorder):
        with connect(base.replace("http", "ws") + "/responses") as ws:
            ws.send(json.dumps({"type": "response.create", "model": "m", "input": "x"}))
            got = []
            with pytest.raises(ConnectionClosed):  # the proxy closes the connection after the closing events
                while True:
                    got.append(json.loads(ws.recv(timeout=5)))
        (record,) = records(recorder)
    assert [e["type"] for e in got] == ["response.created", "response.in_progress", "error", "response.failed"]
    assert [d["kind"] for d in record["diagnoses"]] == ["stream-stall"]
    assert record["transport"] == "websocket"
