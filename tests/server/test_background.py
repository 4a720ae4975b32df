"""Background mode: poll, cancel, streams that resume, and runs whose process died.

Against `orspec serve` processes on a SQLite file, and on PostgreSQL at `ORSPEC_TEST_POSTGRES`
(skipped, saying why, when nothing answers there), driven by the official `openai` SDK and by
raw HTTP where the bytes matter. Leases are short here (`ORSPEC_LEASE_SECONDS`), so that the
kill -9 test waits a second or two, not thirty.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import sys
import time
from contextlib import contextmanager

import httpx
import openai
import pytest
from openresponses_runtime.server import MemoryStore, create_app

from .. import cpu_time
from ..server_helpers import API_KEY, EndlessProvider, free_port, live_server, start, stop, wait_answering
from .test_lifecycle import _postgres_url

HEADERS = {"Authorization": f"Bearer {API_KEY}"}
LEASE = 3.0  # renewed every 0.25 s: a loaded machine does not lapse a live run
LONG = " ".join(f"word{i}" for i in range(240))  # the demo echoes it: about 250 text deltas
TERMINAL = {"completed", "incomplete", "failed", "cancelled"}


@contextmanager
def serving(store: str, *, delay: float = 0.002, lease: float = LEASE):
    """`orspec serve` on `store`, yielding its process and base URL; killed (not waited on) at the end."""
    port = free_port()
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY, "--store", store]
    env = {"ORSPEC_LEASE_SECONDS": str(lease)}
    proc = start([*command, "--delay", str(delay)], env=env)
    base = f"http://127.0.0.1:{port}/v1"
    wait_answering(proc, base)
    try:
        yield proc, base
    finally:
        stop(proc, signal_number=signal.SIGKILL)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "postgres":
        return _postgres_url()
    return str(tmp_path / "responses.sqlite3")


def _poll(sdk: openai.OpenAI, response_id: str, seconds: float = 30) -> tuple[list[str], object]:
    """The statuses seen while polling until the response ends."""
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        response = sdk.responses.retrieve(response_id)
        seen.append(response.status)
        if response.status in TERMINAL:
            return seen, response
        time.sleep(0.05)
    raise AssertionError(f"{response_id} still {seen[-1]} after {seconds} s")


def _frames(data: bytes) -> list[bytes]:
    """The complete SSE frames of `data`, each with its blank line."""
    return [frame + b"\n\n" for frame in data.split(b"\n\n")[:-1]]


def _event(frame: bytes) -> dict:
    return json.loads(next(line for line in frame.split(b"\n") if line.startswith(b"data: "))[6:])


def _sequence(frame: bytes) -> int:
    return _event(frame)["sequence_number"]


def _response_id(stream: bytes) -> str:
    """The response id a stream's first event (`response.created`) gives."""
    return _event(_frames(stream)[0])["response"]["id"]


def _stream(base: str, path: str, body: dict | None = None, *, cut: int | None = None) -> bytes:
    """A stream's bytes, all of them or only the first `cut` (the connection is then dropped)."""
    request = ("POST", base + path) if body is not None else ("GET", base + path)
    read = b""
    with httpx.stream(*request, json=body, headers=HEADERS, timeout=30) as answer:
        assert answer.status_code == 200, answer.read()
        for chunk in answer.iter_raw():
            read += chunk
            if cut is not None and len(read) >= cut:
                return read[:cut]
    return read


@pytest.mark.process
def test_background_answers_at_once_then_polls_to_completed(tmp_path):
    with serving(str(tmp_path / "r.sqlite3"), delay=0.01) as (_, base):
        sdk = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0)
        started = time.monotonic()
        created = sdk.responses.create(model="demo", input=LONG, background=True)
        took = time.monotonic() - started
        assert took < cpu_time.scaled(2)  # the run takes 240 × 10 ms; the answer does not wait for it
        assert created.status in ("queued", "in_progress") and created.background is True
        seen, done = _poll(sdk, created.id)
        assert "in_progress" in seen and done.status == "completed"
        assert done.output_text == "You said: " + LONG
        with pytest.raises(openai.BadRequestError) as info:
            sdk.responses.cancel(created.id)
        assert info.value.body["code"] == "response_not_cancellable"
        assert "already ended (completed)" in info.value.body["message"]


@pytest.mark.process
def test_cancel_stops_a_background_response(store):
    with serving(store, delay=0.05) as (_, base):
        sdk = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0)
        created = sdk.responses.create(model="demo", input=LONG, background=True)
        time.sleep(0.3)
        assert sdk.responses.retrieve(created.id).status == "in_progress"
        cancelled = sdk.responses.cancel(created.id)
        assert cancelled.status == "cancelled"
        assert 0 < len(cancelled.output_text) < len("You said: " + LONG)  # stopped part way
        time.sleep(0.3)  # nothing runs on to overwrite it
        assert sdk.responses.retrieve(created.id).status == "cancelled"
        with pytest.raises(openai.BadRequestError) as info:
            sdk.responses.cancel(created.id)
        assert info.value.body["param"] == "response_id"


@pytest.mark.process
def test_async_sdk_creates_polls_and_cancels(tmp_path):
    import asyncio

    async def main(base):
        async with openai.AsyncOpenAI(base_url=base, api_key=API_KEY, max_retries=0) as sdk:
            created = await sdk.responses.create(model="demo", input=LONG, background=True)
            cancelled = await sdk.responses.cancel(created.id)
            return created.status, cancelled.status, (await sdk.responses.retrieve(created.id)).status

    with serving(str(tmp_path / "r.sqlite3"), delay=0.05) as (_, base):
        assert asyncio.run(main(base)) == ("in_progress", "cancelled", "cancelled")


def test_cancel_closes_the_providers_generator():
    provider = EndlessProvider()
    with live_server(create_app(provider, store=MemoryStore(), api_keys=API_KEY)) as base:
        created = httpx.post(base + "/responses", json={"input": "go", "background": True}, headers=HEADERS).json()
        assert provider.started.wait(5) and not provider.closed.is_set()
        cancelled = httpx.post(base + f"/responses/{created['id']}/cancel", headers=HEADERS, timeout=10)
        assert cancelled.json()["status"] == "cancelled"
        assert provider.closed.wait(5) and provider.running == 0


def test_background_needs_the_response_stored():
    with live_server(create_app(EndlessProvider(), store=MemoryStore(), api_keys=API_KEY)) as base:
        answer = httpx.post(
            base + "/responses", json={"input": "go", "background": True, "store": False}, headers=HEADERS
        )
    assert answer.status_code == 400
    assert (answer.json()["error"]["code"], answer.json()["error"]["param"]) == ("invalid_value", "store")


@pytest.mark.process
def test_a_resumed_stream_equals_the_uninterrupted_one(store):
    """Cut 20 background streams at seeded random points; each resumed one, joined with what was read, is the
    whole stream byte for byte. Half resume on a second instance on the same store, while the run goes on."""
    body = {"model": "demo", "input": LONG, "background": True, "stream": True}
    rng = random.Random(24)
    with serving(store) as (_, base), serving(store) as (_, other):
        whole = _stream(base, "/responses", body)
        response_id = _response_id(whole)
        assert whole == _stream(base, f"/responses/{response_id}?stream=true")  # what was sent is what was kept
        assert whole.endswith(b"data: [DONE]\n\n") and b"response.completed" in whole
        for trial in range(20):
            cut = _stream(base, "/responses", body, cut=rng.randrange(200, len(whole) - 200))
            kept = b"".join(_frames(cut))
            last = _sequence(_frames(kept)[-1])
            response_id = _response_id(kept)
            resumer = other if trial % 2 else base
            resumed = _stream(resumer, f"/responses/{response_id}?stream=true&starting_after={last}")
            replay = _stream(base, f"/responses/{response_id}?stream=true")
            assert kept + resumed == replay, f"trial {trial}: cut after event {last}"
            assert _sequence(_frames(resumed)[0]) == last + 1 and b"response.completed" in resumed


@pytest.mark.process
def test_the_sdk_resumes_after_a_restart(tmp_path):
    store = str(tmp_path / "r.sqlite3")
    body = {"model": "demo", "input": LONG, "background": True, "stream": True}
    with serving(store) as (_, base):
        cut = _frames(_stream(base, "/responses", body, cut=3000))
        response_id = _response_id(cut[0])
        sdk = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0)
        _poll(sdk, response_id)
        before = _stream(base, f"/responses/{response_id}?stream=true")
    with serving(store) as (_, base):  # a new process on the same file
        last = _sequence(cut[-1])
        assert b"".join(cut) + _stream(base, f"/responses/{response_id}?stream=true&starting_after={last}") == before
        sdk = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0)
        events = list(sdk.responses.retrieve(response_id, stream=True, starting_after=last))
        assert [e.sequence_number for e in events] == list(range(last + 1, last + 1 + len(events)))
        assert events[-1].type == "response.completed"
        assert events[-1].response.output_text == "You said: " + LONG
        end = events[-1].sequence_number
        for bad in (end + 1, 10**6):
            answer = httpx.get(base + f"/responses/{response_id}?stream=true&starting_after={bad}", headers=HEADERS)
            assert answer.status_code == 400 and answer.json()["error"]["param"] == "starting_after"
            assert f"has events 0 to {end}" in answer.json()["error"]["message"]


@pytest.mark.process
def test_a_background_response_without_stream_cannot_be_resumed(tmp_path):
    with serving(str(tmp_path / "r.sqlite3")) as (_, base):
        created = httpx.post(base + "/responses", json={"input": "hi", "background": True}, headers=HEADERS).json()
        answer = httpx.get(base + f"/responses/{created['id']}?stream=true", headers=HEADERS)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "response_not_resumable"


@pytest.mark.process
def test_cancel_from_another_instance_reaches_the_run(store):
    with serving(store, delay=0.05) as (_, base), serving(store) as (_, other):
        created = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0).responses.create(
            model="demo", input=LONG, background=True
        )
        sdk = openai.OpenAI(base_url=other, api_key=API_KEY, max_retries=0)
        time.sleep(0.3)
        started = time.monotonic()
        cancelled = sdk.responses.cancel(created.id)
        took = time.monotonic() - started
        print(f"cancel across instances took {took * 1000:.0f} ms")
        assert cancelled.status == "cancelled"
        assert took < cpu_time.scaled(2.0)  # the owner reads cancels every 0.25 s
        time.sleep(0.3)
        assert openai.OpenAI(base_url=base, api_key=API_KEY).responses.retrieve(created.id).status == "cancelled"


def _kept_events(store: str, response_id: str) -> int:
    """How many events of the response the store keeps, read from its tables."""
    if store.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store) as db:
            return db.execute("SELECT COUNT(*) FROM orspec_run_frames WHERE id = %s", (response_id,)).fetchone()[0]
    return sqlite3.connect(store).execute("SELECT COUNT(*) FROM run_frames WHERE id = ?", (response_id,)).fetchone()[0]


@pytest.mark.process
def test_delete_removes_the_kept_events(store):
    body = {"model": "demo", "input": "keep these", "background": True, "stream": True}
    with serving(store) as (_, base):
        response_id = _response_id(_stream(base, "/responses", body))
        assert _kept_events(store, response_id) > 5
        assert httpx.delete(base + f"/responses/{response_id}", headers=HEADERS).status_code == 200
        assert _kept_events(store, response_id) == 0
        answer = httpx.get(base + f"/responses/{response_id}?stream=true", headers=HEADERS)
        assert answer.status_code == 404


@pytest.mark.process
def test_runs_of_a_killed_process_fail_once_their_lease_lapses(store):
    """kill -9 with 10 background responses running: after the lease, none is left in_progress."""
    with serving(store, delay=0.05) as (proc, base):
        sdk = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0)
        finished = sdk.responses.create(model="demo", input="done before", background=True)
        _, finished = _poll(sdk, finished.id)
        ids = [sdk.responses.create(model="demo", input=LONG, background=True).id for _ in range(5)]
        streamed = {"model": "demo", "input": LONG, "background": True, "stream": True}
        ids += [_response_id(_stream(base, "/responses", streamed, cut=3000)) for _ in range(5)]  # and left
        time.sleep(0.5)
        assert {sdk.responses.retrieve(i).status for i in ids} == {"in_progress"}
        proc.kill()  # SIGKILL: no chance to clean up
        proc.wait(10)
    time.sleep(LEASE + 0.5)
    with serving(store) as (_, base):
        sdk = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0)
        after = [sdk.responses.retrieve(i) for i in ids]
        assert {r.status for r in after} == {"failed"}
        assert {r.error.code for r in after} == {"background_run_lost"}
        assert sdk.responses.retrieve(finished.id).model_dump() == finished.model_dump()
        streamed = _frames(_stream(base, f"/responses/{ids[-1]}?stream=true"))
        assert b"response.failed" in streamed[-2] and streamed[-1] == b"data: [DONE]\n\n"


@pytest.mark.process
def test_a_lapsed_run_is_failed_when_another_instance_starts(tmp_path):
    store = str(tmp_path / "r.sqlite3")
    with serving(store, delay=0.05) as (proc, base):
        sdk = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0)
        response_id = sdk.responses.create(model="demo", input=LONG, background=True).id
        time.sleep(0.2)
        proc.kill()
        proc.wait(10)
    time.sleep(LEASE + 0.5)
    with serving(store):  # nothing asked of it: starting is enough
        row = sqlite3.connect(store).execute("SELECT data FROM responses WHERE id = ?", (response_id,)).fetchone()
        assert json.loads(row[0])["response"]["status"] == "failed"


@pytest.mark.process
def test_a_server_that_shuts_down_fails_its_runs_at_once(tmp_path):
    store = str(tmp_path / "r.sqlite3")
    with serving(store, delay=0.05, lease=600) as (proc, base):  # a lease that would outlast the test
        response_id = httpx.post(base + "/responses", json={"input": LONG, "background": True}, headers=HEADERS).json()[
            "id"
        ]
        time.sleep(0.3)
        proc.terminate()  # SIGTERM: uvicorn shuts down, and its runs with it
        proc.wait(10)
    row = sqlite3.connect(store).execute("SELECT data FROM responses WHERE id = ?", (response_id,)).fetchone()
    response = json.loads(row[0])["response"]
    assert (response["status"], response["error"]["code"]) == ("failed", "background_run_lost")
    assert response["output"][0]["content"][0]["text"].startswith("You said: word0 ")  # what it had made is kept


def test_a_streamed_run_writes_its_events_in_batches():
    from openresponses_runtime.server import DemoProvider
    from openresponses_runtime.server.background import FLUSH_SECONDS

    app = create_app(DemoProvider(delay=0.002), store=MemoryStore(), api_keys=API_KEY)
    runs = app.state.openresponses.background.runs
    writes = []
    append = runs.append

    async def counted(response_id, first, frames):
        writes.append((first, len(frames)))
        await append(response_id, first, frames)

    runs.append = counted
    with live_server(app) as base:
        started = time.monotonic()
        whole = _stream(base, "/responses", {"input": LONG, "background": True, "stream": True})
        took = time.monotonic() - started
    events = len(_frames(whole)) - 1  # not `[DONE]`
    assert sum(n for _, n in writes) == events > 240
    assert [first for first, _ in writes] == [sum(n for _, n in writes[:i]) for i in range(len(writes))]
    # At most one write a flush interval (plus the first and the last), however slow a loaded machine
    # makes the run; and the writes are batches: one frame a write would mean no batching at all.
    assert len(writes) <= took / FLUSH_SECONDS + 2
    assert max(n for _, n in writes) > 1 and len(writes) < events


@pytest.mark.process
def test_deleting_a_running_response_stops_it_for_good(store):
    with serving(store, delay=0.05) as (_, base), serving(store) as (_, other):
        sdk = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0)
        here = sdk.responses.create(model="demo", input=LONG, background=True)
        there = sdk.responses.create(model="demo", input=LONG, background=True, stream=True)
        there_id = next(iter(there)).response.id
        there.close()
        time.sleep(0.3)
        assert httpx.delete(base + f"/responses/{here.id}", headers=HEADERS).status_code == 200
        assert (
            httpx.delete(other + f"/responses/{there_id}", headers=HEADERS).status_code == 200
        )  # its owner's next renewal stops it
        time.sleep(1.0)  # nothing runs on to store it again
        for response_id in (here.id, there_id):
            assert httpx.get(base + f"/responses/{response_id}", headers=HEADERS).status_code == 404
            assert _kept_events(store, response_id) == 0


def test_a_late_renewal_does_not_fail_a_run_of_the_same_process(monkeypatch):
    monkeypatch.setenv("ORSPEC_LEASE_SECONDS", "0.001")  # lapsed between any two renewals
    provider = EndlessProvider()
    with live_server(create_app(provider, store=MemoryStore(), api_keys=API_KEY)) as base:
        created = httpx.post(base + "/responses", json={"input": "go", "background": True}, headers=HEADERS).json()
        assert provider.started.wait(5)
        time.sleep(0.1)
        assert httpx.get(base + f"/responses/{created['id']}", headers=HEADERS).json()["status"] == "in_progress"
        cancelled = httpx.post(base + f"/responses/{created['id']}/cancel", headers=HEADERS, timeout=10)
        assert cancelled.json()["status"] == "cancelled"


def test_a_run_another_instance_failed_stops_and_keeps_that_end():
    import asyncio

    provider = EndlessProvider()
    app = create_app(provider, store=MemoryStore(), api_keys=API_KEY)
    with live_server(app) as base:
        created = httpx.post(base + "/responses", json={"input": "go", "background": True}, headers=HEADERS).json()
        assert provider.started.wait(5)
        asyncio.run(
            app.state.openresponses.background.fail_lapsed(created["id"])
        )  # as an instance that found it lapsed does
        assert provider.closed.wait(5)  # at its next renewal the owner learns it, and stops
        time.sleep(0.3)
        failed = httpx.get(base + f"/responses/{created['id']}", headers=HEADERS).json()
        assert (failed["status"], failed["error"]["code"]) == ("failed", "background_run_lost")


def test_a_cancel_that_arrives_as_the_run_settles_is_refused_and_the_run_still_settles():
    # The response has completed and its run is writing its end to the ledger when the cancel comes:
    # too late to cancel, so a 400 that says how it ended, and the run's end is not cut short.
    import asyncio
    import threading

    from openresponses_runtime.server.steps import MessageStart, TextDelta

    class Quick:
        async def respond(self, request):
            yield MessageStart()
            yield TextDelta("done")

    app = create_app(Quick(), store=MemoryStore(), api_keys=API_KEY)
    server = app.state.openresponses.background
    settling, ended = threading.Event(), threading.Event()
    end = server.runs.end

    async def slow_end(response_id):
        settling.set()
        await asyncio.sleep(0.5)  # the cancel arrives meanwhile
        await end(response_id)
        ended.set()

    server.runs.end = slow_end
    with live_server(app) as base:
        sdk = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0)
        created = sdk.responses.create(model="demo", input="hi", background=True)
        assert settling.wait(10)
        with pytest.raises(openai.BadRequestError) as info:
            sdk.responses.cancel(created.id)
        assert info.value.body["code"] == "response_not_cancellable"
        assert "already ended (completed)" in info.value.body["message"]
        assert ended.wait(10)
        assert sdk.responses.retrieve(created.id).status == "completed"
        assert server.live == {}
