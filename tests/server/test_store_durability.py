"""What a response the SQLite store acknowledged survives, on each `sync` setting.

- `normal` (the default): WAL mode with `synchronous=NORMAL`. A commit is in the WAL before the
  answer leaves, so killing the server (`kill -9`) under load loses no response a client was told
  of; a power cut may lose the last ones, which this machine cannot cut.
- `full`: every commit is synced to the disk before the answer leaves (seen as a sync of the WAL
  per response, under strace); the default makes no sync per response.

And the store keeps its connections open between calls, and the WAL bounded.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from openresponses_runtime.server import SQLiteStore, StoredResponse, open_store
from openresponses_runtime.server import store as store_module
from openresponses_runtime.server.store import _WAL_LIMIT

from ..server_helpers import API_KEY, free_port, wait_answering

HEADERS = {"Authorization": f"Bearer {API_KEY}"}


class CountingStore(SQLiteStore):
    """Counts the connections it opens."""

    def __init__(self, *args, **kwargs):
        self.opened = 0
        super().__init__(*args, **kwargs)

    def _connect(self) -> sqlite3.Connection:
        self.opened += 1
        return super()._connect()


def record(n: int, size: int = 100) -> StoredResponse:
    return StoredResponse(f"resp_{n}", None, [{"n": n}], [{"text": "x" * size}], {"id": f"resp_{n}"})


@pytest.mark.parametrize(("sync", "synchronous"), [("normal", 1), ("full", 2)])
def test_sqlite_keeps_its_connections_open_in_wal_mode(tmp_path, sync, synchronous):
    store = CountingStore(tmp_path / "kept.sqlite3", sync=sync)
    assert store.opened == 1  # the file's set-up, closed

    async def calls() -> list[StoredResponse | None]:
        for n in range(50):
            await store.put(record(n))
        return list(await asyncio.gather(*(store.get(f"resp_{n}") for n in range(50))))

    assert [found.id for found in asyncio.run(calls())] == [f"resp_{n}" for n in range(50)]
    # One connection a thread at a time: a few at most however many calls (the executor's threads).
    assert 2 <= store.opened <= 1 + min(32, (os.cpu_count() or 1) + 4)
    with store.connection() as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("PRAGMA synchronous").fetchone() == (synchronous,)
    assert (tmp_path / "kept.sqlite3-wal").exists()  # kept open: not checkpointed away after each call
    asyncio.run(store.aclose())
    assert not (tmp_path / "kept.sqlite3-wal").exists()  # the last to close checkpoints it


def test_sync_is_normal_or_full(tmp_path):
    assert open_store(tmp_path / "a.sqlite3").sync == "normal"
    assert open_store(tmp_path / "b.sqlite3", sync="full").sync == "full"
    with pytest.raises(ValueError, match="sync must be one of normal, full, not 'off'"):
        SQLiteStore(tmp_path / "c.sqlite3", sync="off")


def test_the_wal_is_checkpointed_before_it_grows_without_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "_WAL_LIMIT", 1024 * 1024)  # 6 MB of responses is then six times it
    store = SQLiteStore(tmp_path / "wal.sqlite3")
    wal = tmp_path / "wal.sqlite3-wal"

    async def writes() -> int:
        largest = 0
        for n in range(1500):  # about 6 MB of responses
            await store.put(record(n, size=4000))
            largest = max(largest, wal.stat().st_size)
        return largest

    largest = asyncio.run(writes())
    # Checkpoints in a thread past the limit; past four times it, writes wait for the WAL to start over.
    assert largest <= 4 * store_module._WAL_LIMIT + 64 * 1024
    assert asyncio.run(store.get("resp_1499")).output == [{"text": "x" * 4000}]
    asyncio.run(store.aclose())


def test_on_a_disk_with_little_room_the_wal_stays_within_a_share_of_it(tmp_path, monkeypatch):
    room = 2 * 1024 * 1024  # the disk's free bytes before the WAL, as the store is told them
    wal = tmp_path / "small.sqlite3-wal"

    def disk_usage(path):
        free = max(0, room - (wal.stat().st_size if wal.exists() else 0))  # the WAL takes its bytes from the room
        return shutil._ntuple_diskusage(room, room - free, free)

    monkeypatch.setattr(store_module.shutil, "disk_usage", disk_usage)
    store = SQLiteStore(tmp_path / "small.sqlite3")

    async def writes() -> int:
        largest = 0
        for n in range(250):  # about 3 MB of WAL unchecked: under the usual limit, over the room
            await store.put(record(n, size=4000))
            largest = max(largest, wal.stat().st_size)
        return largest

    largest = asyncio.run(writes())
    assert largest <= room + 64 * 1024  # four times a quarter of the room, at the very most
    assert asyncio.run(store.get("resp_249")).output == [{"text": "x" * 4000}]
    asyncio.run(store.aclose())


def test_after_a_full_disk_the_store_writes_again_once_there_is_room(tmp_path):
    """SQLITE_FULL leaves a connection in doubt: every kept one is opened again, and the next write
    that succeeds checkpoints the WAL."""
    path = tmp_path / "room.sqlite3"
    room = {"pages": None}

    class Capped(SQLiteStore):
        def _connect(self) -> sqlite3.Connection:
            db = super()._connect()
            if room["pages"] is not None:
                db.execute(f"PRAGMA max_page_count={room['pages']}")
            return db

    store = Capped(path)

    async def main() -> None:
        await store.put(record(0))
        await store.aclose()  # the connections opened from here on find the disk full
        with sqlite3.connect(path) as db:
            room["pages"] = db.execute("PRAGMA page_count").fetchone()[0]
        full = 0
        for n in range(1, 40):
            try:
                await store.put(record(n, size=3000))
            except Exception as exc:
                assert type(exc).__name__ == "StoreUnavailable"
                assert exc.__cause__.sqlite_errorcode == sqlite3.SQLITE_FULL
                full += 1
        assert full
        room["pages"] = None  # room again: the connections opened from now on may grow the file
        for n in range(100, 110):
            await store.put(record(n, size=3000))
        assert (await store.get("resp_109")).id == "resp_109"

    asyncio.run(main())
    assert (tmp_path / "room.sqlite3-wal").stat().st_size <= _WAL_LIMIT
    asyncio.run(store.aclose())


# -- orspec serve, killed -------------------------------------------------------------------------


class Clients:
    """Threads asking for responses (JSON and streamed, new and continued) until the server dies,
    keeping the id of each response they were told completed."""

    def __init__(self, base: str, count: int = 6):
        self.base = base
        self.acknowledged: list[str] = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._client, args=(n,), daemon=True) for n in range(count)]
        for thread in self.threads:
            thread.start()

    def _client(self, client: int) -> None:
        with httpx.Client(base_url=self.base, headers=HEADERS, timeout=10) as http:
            for turn in range(100_000):
                body: dict = {"input": f"client {client} turn {turn}", "stream": turn % 2 == 1}
                with self.lock:
                    if turn % 3 == 2 and self.acknowledged:
                        body["previous_response_id"] = self.acknowledged[-1]
                try:
                    response_id = self._ask(http, body)
                except httpx.TransportError:
                    return  # the server is gone
                if response_id is not None:
                    with self.lock:
                        self.acknowledged.append(response_id)

    @staticmethod
    def _ask(http: httpx.Client, body: dict) -> str | None:
        if not body["stream"]:
            answer = http.post("/responses", json=body)
            assert answer.status_code == 200, answer.text
            return answer.json()["id"]
        with http.stream("POST", "/responses", json=body) as answer:
            assert answer.status_code == 200
            for line in answer.iter_lines():
                if line.startswith("data: {") and '"response.completed"' in line:
                    return json.loads(line[6:])["response"]["id"]  # told: it completed
        return None  # cut before its end

    def join(self) -> None:
        for thread in self.threads:
            thread.join(15)
            assert not thread.is_alive()


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_kill_9_under_load_loses_no_acknowledged_response(tmp_path, workers):
    port = free_port()
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY, "--delay", "0"]
    command += ["--workers", str(workers)]
    env = {key: value for key, value in os.environ.items() if key != "ORSPEC_STORE"}  # the default store
    with (tmp_path / "server.log").open("wb") as log:
        server = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=log, stderr=log, start_new_session=True)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        wait_answering(server, base, log=(tmp_path / "server.log").read_text)
        clients = Clients(base)
        deadline = time.monotonic() + 30
        while len(clients.acknowledged) < 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(server.pid, signal.SIGKILL)  # mid-load: the server and its workers, no shutdown at all
        server.wait(10)
        clients.join()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
    acknowledged = set(clients.acknowledged)
    assert len(acknowledged) >= 200
    path = tmp_path / "orspec-responses.sqlite3"
    db = sqlite3.connect(path)  # the first to open it after the kill recovers the WAL
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        stored = {row[0] for row in db.execute("SELECT id FROM responses")}
    finally:
        db.close()
    assert acknowledged <= stored, f"{len(acknowledged - stored)} acknowledged responses lost"


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed (apt-get install strace)")
@pytest.mark.parametrize(("sync", "per_response"), [("full", True), ("normal", False)])
def test_full_sync_syncs_the_wal_before_each_answer(tmp_path, sync, per_response):
    """`--store-sync full` syncs every commit before its answer; `normal` leaves that to checkpoints."""
    port = free_port()
    trace = tmp_path / "syncs.txt"
    command = ["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync", "-e", "signal=none", "-o", str(trace)]
    command += [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY]
    command += ["--delay", "0", "--store", str(tmp_path / "r.sqlite3"), "--store-sync", sync]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        wait_answering(server, base, seconds=60)
        with httpx.Client(base_url=base, headers=HEADERS, timeout=30) as http:
            http.post("/responses", json={"input": "warm"}).raise_for_status()
            before = Path(trace).read_text().count("sync(")
            for n in range(20):  # one at a time: each answer has come before the next is asked
                http.post("/responses", json={"input": f"turn {n}"}).raise_for_status()
            syncs = Path(trace).read_text().count("sync(") - before
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
    if per_response:
        assert syncs >= 20
    else:
        assert syncs < 5
