"""The server under store faults: a store that cannot save ends a begun stream the spec's way
(`error`, `response.failed`, `[DONE]`); one that cannot serve before that is a 503 with
`Retry-After`; and each failure is one log line, never a traceback or the prompt.

The faults are real: SQLite refusing to grow its file (`SQLITE_FULL`, as on a full disk), a file
that is not a database, a write lock held by another connection, a PostgreSQL cluster of the
test's own stopped under `orspec serve`, a provider whose upstream times out.
"""

from __future__ import annotations

import asyncio
import glob
import json
import logging
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from openresponses_runtime.server import DemoProvider, MemoryStore, MessageStart, SQLiteStore, TextDelta, create_app
from openresponses_runtime.server import store as store_module
from openresponses_runtime.streaming import StreamChecker
from websockets.sync.client import connect

from .. import cpu_time
from ..server_helpers import API_KEY, free_port, live_server, served_process, ws_turn

PROMPT = "my secret prompt, never logged"
HEADERS = {"Authorization": f"Bearer {API_KEY}"}


class FullDiskStore(SQLiteStore):
    """A SQLite store whose file may not grow: SQLite answers every new row with SQLITE_FULL."""

    def _connect(self) -> sqlite3.Connection:
        db = super()._connect()
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count={pages}")
        return db


def full_disk_store(path) -> FullDiskStore:
    SQLiteStore(path)  # the table, while the file may still grow
    store = FullDiskStore(path)
    db = store._connect()
    try:
        for n in range(10_000):  # fill the last page, so that no response fits
            db.execute("INSERT INTO responses VALUES (?, NULL, ?)", (f"filler_{n}", "x" * 64))
    except sqlite3.OperationalError as exc:
        assert exc.sqlite_errorcode == sqlite3.SQLITE_FULL
    else:
        raise AssertionError("the capped file never filled")
    finally:
        db.close()
    return store


def stored_ids(path) -> set[str]:
    db = sqlite3.connect(path)
    try:
        return {row[0] for row in db.execute("SELECT id FROM responses WHERE id NOT LIKE 'filler_%'")}
    finally:
        db.close()


def post(base: str, body: dict) -> httpx.Response:
    return httpx.post(base + "/responses", json=body, headers=HEADERS, timeout=30)


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "5"
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) == {"type", "code", "param", "message"}
    assert (error["type"], error["code"], error["param"]) == ("server_error", "store_unavailable", None)
    assert "retry" in error["message"]


def failed_stream(text: str) -> dict:
    """The `response.failed` of an SSE capture that must pass the checker and end in `[DONE]`."""
    checker = StreamChecker()
    assert checker.check_sse(text) == [], checker.violations
    assert checker.terminal == "response.failed" and checker.counts["error"] == 1
    assert text.endswith("data: [DONE]\n\n")
    blocks = [block for block in text.split("\n\n") if block]
    error = json.loads(blocks[-3].split("data: ", 1)[1])
    assert error["type"] == "error"
    assert error["error"]["code"] == "store_unavailable"
    assert error["error"]["headers"] == {"Retry-After": "5"}
    failed = json.loads(blocks[-2].split("data: ", 1)[1])["response"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "store_unavailable"
    return failed


def store_log(caplog) -> list[logging.LogRecord]:
    """The server's own records; none may carry a traceback or the prompt, and uvicorn saw no error."""
    mine = [r for r in caplog.records if r.name.startswith("openresponses_runtime")]
    for record in mine:
        assert record.exc_info is None, record.getMessage()
        assert "\n" not in record.getMessage()
        assert PROMPT not in record.getMessage()
    assert not [r for r in caplog.records if r.name.startswith("uvicorn") and r.levelno >= logging.ERROR]
    return mine


def test_disk_full_mid_stream_ends_every_stream_failed(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    path = tmp_path / "full.sqlite3"
    app = create_app(DemoProvider(delay=0), store=full_disk_store(path), api_keys=API_KEY, debug=True)

    async def stream(http: httpx.AsyncClient, base: str, n: int) -> str:
        body = {"input": f"{PROMPT} {n}", "stream": True}
        if n == 5:  # cut short by max_output_tokens: it would have ended incomplete, and fails all the same
            body.update(input=f"{PROMPT} {'word ' * 40}", max_output_tokens=16)
        response = await http.post(base + "/responses", json=body, headers=HEADERS)
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        return response.text

    async def streams(base: str) -> list[str]:
        async with httpx.AsyncClient(timeout=30) as http:
            return await asyncio.gather(*(stream(http, base, n) for n in range(6)))

    with live_server(app) as base:
        ids = []
        for n, text in enumerate(asyncio.run(streams(base))):
            failed = failed_stream(text)
            text_sent = failed["output"][0]["content"][0]["text"]
            if n < 5:
                assert text_sent == f"You said: {PROMPT} {n}"  # what the client had
            else:
                assert failed["output"][0]["status"] == "in_progress" and text_sent.endswith("word ")
            ids.append(failed["id"])
        assert_unavailable(post(base, {"input": PROMPT}))
        assert app.state.openresponses.active == 0
    assert stored_ids(path) == set()
    lines = [r for r in store_log(caplog) if r.levelno >= logging.WARNING]
    assert len(lines) == 7 and all(r.levelno == logging.ERROR for r in lines)
    assert all("response store unavailable while saving resp_" in r.getMessage() for r in lines)
    assert {id for id in ids if any(id in r.getMessage() for r in lines)} == set(ids)


def test_disk_full_over_websocket_fails_the_turn_and_keeps_nothing(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    path = tmp_path / "full.sqlite3"
    app = create_app(DemoProvider(delay=0), store=full_disk_store(path), api_keys=API_KEY, debug=True)
    with live_server(app) as base:
        url = base.replace("http://", "ws://") + "/responses"
        with connect(url, additional_headers=HEADERS, open_timeout=10) as ws:
            events = ws_turn(ws, input=PROMPT)
            checker = StreamChecker()
            for event in events:
                checker.feed_event(event, event["type"])
            checker.feed(None, "[DONE]")  # WebSocket mode has no marker; the checker wants one
            assert checker.finish() == [] and checker.terminal == "response.failed"
            assert events[-2]["type"] == "error" and events[-2]["error"]["code"] == "store_unavailable"
            failed_id = events[-1]["response"]["id"]
            # the connection kept nothing to continue from either
            (error,) = ws_turn(ws, input="again", previous_response_id=failed_id)
            assert error["status"] == 404 and error["error"]["code"] == "previous_response_not_found"
            # a turn that stores nothing still works on the same connection
            assert ws_turn(ws, input="unstored", store=False)[-1]["type"] == "response.completed"
    assert stored_ids(path) == set()
    assert len([r for r in store_log(caplog) if r.levelno >= logging.ERROR]) == 1


def test_unreadable_store_before_the_stream_is_503(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    path = tmp_path / "responses.sqlite3"
    app = create_app(DemoProvider(delay=0), store=SQLiteStore(path), api_keys=API_KEY, debug=True)
    with live_server(app) as base:
        first = post(base, {"input": PROMPT}).json()
        for suffix in ("-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        path.write_bytes(b"this is no longer a database " * 200)  # SQLITE_NOTADB from here on
        after = {"input": PROMPT, "previous_response_id": first["id"]}
        assert_unavailable(post(base, after))
        streamed = post(base, {**after, "stream": True})  # refused before any event: a plain 503
        assert_unavailable(streamed)
        compact = httpx.post(base + "/responses/compact", json={**after, "model": "demo"}, headers=HEADERS, timeout=30)
        assert_unavailable(compact)
        url = base.replace("http://", "ws://") + "/responses"
        with connect(url, additional_headers=HEADERS, open_timeout=10) as ws:
            (envelope,) = ws_turn(ws, **after)
            assert envelope["status"] == 503 and envelope["error"]["code"] == "store_unavailable"
            assert envelope["error"]["headers"] == {"Retry-After": "5"}
    lines = [r for r in store_log(caplog) if r.levelno >= logging.WARNING]
    assert [r.getMessage().split(":", 1)[0] for r in lines] == [
        f"response store unavailable while reading {first['id']}"
    ] * 4


def test_locked_sqlite_waits_briefly_then_503(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    path = tmp_path / "locked.sqlite3"
    app = create_app(DemoProvider(delay=0), store=SQLiteStore(path, busy_timeout=0.3), api_keys=API_KEY)
    holder = sqlite3.connect(path, isolation_level=None)
    with live_server(app) as base:
        holder.execute("BEGIN IMMEDIATE")  # another process's write transaction, held
        try:

            async def three() -> list[httpx.Response]:
                async with httpx.AsyncClient(timeout=30) as http:
                    body = {"input": PROMPT}
                    return await asyncio.gather(
                        *(http.post(base + "/responses", json=body, headers=HEADERS) for _ in range(3))
                    )

            started = time.monotonic()
            for response in asyncio.run(three()):
                assert_unavailable(response)
            took = time.monotonic() - started
            assert 0.3 <= took < cpu_time.scaled(3)  # waited for the lock, then gave up
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert post(base, {"input": "free again"}).status_code == 200
    assert len([r for r in store_log(caplog) if r.levelno >= logging.ERROR]) == 3


def test_store_bug_is_a_500_with_its_traceback(tmp_path, caplog):
    # A missing table is no outage (SQLITE_ERROR): retrying cannot help, so no 503 and no Retry-After.
    path = tmp_path / "responses.sqlite3"
    app = create_app(DemoProvider(delay=0), store=SQLiteStore(path), api_keys=API_KEY, debug=True)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE responses")
    with live_server(app) as base:
        response = post(base, {"input": "x"})
        assert response.status_code == 500 and "retry-after" not in response.headers
        assert response.json()["error"]["code"] == "server_error"
        failed = post(base, {"input": "x", "stream": True}).text
        checker = StreamChecker()
        assert checker.check_sse(failed) == [] and checker.terminal == "response.failed"
    bugs = [r for r in caplog.records if r.name.startswith("openresponses_runtime") and r.exc_info]
    assert len(bugs) == 2 and all(r.exc_info[1].sqlite_errorcode == sqlite3.SQLITE_ERROR for r in bugs)


def test_traceback_only_at_debug_and_once_a_minute(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(store_module, "_last_traceback", -store_module._TRACEBACK_EVERY)
    store = full_disk_store(tmp_path / "full.sqlite3")
    app = create_app(DemoProvider(delay=0), store=store, api_keys=API_KEY)
    with live_server(app) as base:
        caplog.set_level(logging.INFO)
        assert_unavailable(post(base, {"input": PROMPT}))
        caplog.set_level(logging.DEBUG, logger="openresponses_runtime")
        for _ in range(3):
            assert_unavailable(post(base, {"input": PROMPT}))
    mine = [r for r in caplog.records if r.name.startswith("openresponses_runtime")]
    assert len([r for r in mine if r.levelno == logging.ERROR and r.exc_info is None]) == 4
    (traceback,) = [r for r in mine if r.exc_info]
    assert traceback.levelno == logging.DEBUG
    assert traceback.exc_info[1].sqlite_errorcode == sqlite3.SQLITE_FULL


# -- a real PostgreSQL, stopped and started again ------------------------------------------------


class Cluster:
    """A throwaway PostgreSQL cluster of this test's own on loopback (stopping the shared one would
    pull it from under other tests); run as `postgres` when the tests run as root, as in `.ci/run`."""

    def __init__(self, folder: Path, port: int):
        initdb = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not initdb:
            pytest.skip("PostgreSQL's initdb is not installed (.ci/run installs Debian's postgresql)")
        pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'psycopg[binary]')")
        self.bin = Path(initdb[-1]).parent
        self.folder = folder
        self.port = port
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        self._run("initdb", "-N", "-A", "trust", "-U", "postgres", "-D", folder / "data")

    def _run(self, tool: str, *args, check: bool = True) -> None:
        command = [str(self.bin / tool), *map(str, args)]
        if os.geteuid() == 0:
            command = ["su", "postgres", "-s", "/bin/sh", "-c", shlex.join(command)]
        subprocess.run(command, check=check, capture_output=True, timeout=60)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", self.folder / "data", "-o", options, "-l", self.folder / "log", "-w", "start")

    def stop(self, *, check: bool = True) -> None:
        self._run("pg_ctl", "-D", self.folder / "data", "-m", "fast", "-w", "stop", check=check)


@pytest.fixture
def cluster():
    folder = Path(tempfile.mkdtemp(prefix="orspec-faults-pg."))
    folder.chmod(0o777)  # the `postgres` user writes here
    cluster = None
    try:
        cluster = Cluster(folder, free_port())
        cluster.start()
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop(check=False)  # already stopped when the test failed halfway
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.process
@pytest.mark.slow
def test_stopped_postgres_is_503_or_a_failed_stream_and_one_log_line_each(cluster, tmp_path):
    import psycopg

    port = free_port()
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY]
    command += ["--store", cluster.url, "--delay", "0.05"]  # a word every 50 ms: streams long enough to outlive it
    log_path = tmp_path / "server.log"
    in_flight = threading.Barrier(9)

    def stream_across_the_stop(n: int) -> str:
        body = {"input": f"{PROMPT} {n} {'word ' * 40}", "stream": True}
        with httpx.stream("POST", base + "/responses", json=body, headers=HEADERS, timeout=30) as response:
            lines = response.iter_lines()
            head = [next(lines)]  # `response.created` is here: the stream has begun
            in_flight.wait(10)
            return "\n".join(head + list(lines)) + "\n"

    with log_path.open("wb") as log, served_process(command, port=port, stderr=log) as base:
        kept = post(base, {"input": PROMPT})
        assert kept.status_code == 200, kept.text
        with ThreadPoolExecutor(8) as pool:
            streams = [pool.submit(stream_across_the_stop, n) for n in range(8)]
            in_flight.wait(10)
            cluster.stop()  # PostgreSQL goes away with 8 streams under way
            cut = [failed_stream(stream.result()) for stream in streams]
        after = {"input": PROMPT, "previous_response_id": kept.json()["id"]}
        assert_unavailable(post(base, after))  # reading the previous response
        assert_unavailable(post(base, {**after, "stream": True}))  # ...before the stream begins
        assert_unavailable(post(base, {"input": PROMPT}))  # saving it
        failed = failed_stream(post(base, {"input": PROMPT, "stream": True}).text)  # saving, the stream begun
        with connect(base.replace("http://", "ws://") + "/responses", additional_headers=HEADERS) as ws:
            events = ws_turn(ws, input=PROMPT)
            assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
            assert events[-2]["error"]["code"] == "store_unavailable"
            (envelope,) = ws_turn(ws, **after)
            assert envelope["status"] == 503 and envelope["error"]["code"] == "store_unavailable"
        cluster.start()
        again = post(base, after)  # back without a restart of the server
        assert again.status_code == 200 and again.json()["previous_response_id"] == after["previous_response_id"]
    with psycopg.connect(cluster.url) as db:
        stored = {row[0] for row in db.execute("SELECT id FROM orspec_responses")}
    assert stored == {kept.json()["id"], again.json()["id"]}
    assert failed["id"] not in stored and events[-1]["response"]["id"] not in stored
    assert not stored & {response["id"] for response in cut}
    text = log_path.read_text()
    assert PROMPT not in text and "Traceback" not in text and "Exception in ASGI" not in text
    lines = [line for line in text.splitlines() if "response store unavailable" in line]
    assert len(lines) == 6 + 8, text


# -- orspec serve --------------------------------------------------------------------------------


@pytest.mark.process
@pytest.mark.slow
def test_serve_without_its_store_says_so_in_one_line(tmp_path):
    # A store that cannot be opened at start is a configuration mistake (exit 2), not an outage to wait out.
    (tmp_path / "not.sqlite3").write_bytes(b"this is no database " * 200)
    command = [sys.executable, "-m", "orspec", "serve", "--api-key", API_KEY, "--store", "not.sqlite3"]
    done = subprocess.run(
        [*command, "--port", str(free_port())], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    (said,) = done.stderr.splitlines()  # one line, no traceback
    assert said.startswith("orspec: cannot open the response store not.sqlite3 (")
    assert said.endswith("or pass another with --store")


@pytest.mark.process
@pytest.mark.slow
def test_serve_debug_logs_one_traceback_for_many_store_failures(tmp_path):
    path = tmp_path / "responses.sqlite3"
    port = free_port()
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY, "--debug"]
    command += ["--store", str(path), "--delay", "0"]
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log, served_process(command, port=port, stderr=log) as base:
        first = post(base, {"input": PROMPT}).json()
        for suffix in ("-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        path.write_bytes(b"this is no longer a database " * 200)
        for _ in range(3):
            assert_unavailable(post(base, {"input": PROMPT, "previous_response_id": first["id"]}))
    text = log_path.read_text()
    assert text.count("ERROR openresponses_runtime.server.store: response store unavailable while reading") == 3
    assert text.count("Traceback (most recent call last)") == 1 and PROMPT not in text


# -- the provider --------------------------------------------------------------------------------


class TimesOut:
    """An upstream that stops answering (its own deadline passes): at once, or after some text."""

    async def respond(self, request):
        if request.instructions != "at once":
            yield MessageStart()
            yield TextDelta("so far ")
        async with asyncio.timeout(0.05):
            await asyncio.sleep(10)
        yield TextDelta("never")


def test_provider_timing_out_is_provider_timeout_before_and_during_a_stream_in_one_log_line(caplog):
    caplog.set_level(logging.INFO)
    app = create_app(TimesOut(), store=MemoryStore(), api_keys=API_KEY, debug=True)
    with live_server(app) as base:
        text = post(base, {"input": PROMPT, "stream": True}).text
        before = post(base, {"input": PROMPT, "stream": True, "instructions": "at once"})
    assert before.status_code == 500 and before.json()["error"]["code"] == "provider_timeout"
    checker = StreamChecker()
    assert checker.check_sse(text) == [] and checker.terminal == "response.failed" and text.endswith("[DONE]\n\n")
    failed = json.loads(text.split("\n\n")[-3].split("data: ", 1)[1])["response"]
    assert failed["error"]["code"] == "provider_timeout"
    assert failed["output"][0]["content"][0]["text"] == "so far "
    assert [r.getMessage() for r in store_log(caplog) if r.levelno >= logging.ERROR] == ["provider timed out"] * 2


def test_a_client_gone_mid_body_is_one_quiet_line_not_an_error_with_a_traceback(caplog):
    import logging
    import socket

    app = create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys=API_KEY)
    with caplog.at_level(logging.DEBUG, "openresponses_runtime"), live_server(app) as base:
        port = int(base.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(
                f"POST /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {API_KEY}\r\n"
                'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"input": '.encode()
            )
            time.sleep(0.2)
        deadline = time.monotonic() + cpu_time.scaled(5)
        while "went away" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
    ours = [record for record in caplog.records if record.name.startswith("openresponses_runtime")]
    assert [record.levelname for record in ours] == ["INFO"], caplog.text
    assert ours[0].exc_info is None and "Traceback" not in caplog.text
