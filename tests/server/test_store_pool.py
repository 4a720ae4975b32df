"""The response stores under load: a chain loads in one query whatever its length, PostgreSQL
serves through a bounded pool whose waits and statements are timed, and a server in front of a
frozen or busy PostgreSQL answers 503 in time rather than hanging or failing with a 500.

The PostgreSQL tests use `ORSPEC_TEST_POSTGRES` (skipping, saying why, without one), and the
frozen server a throwaway cluster of the test's own, as `test_server_faults` does.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time

import httpx
import pytest
from openresponses_runtime.server import PostgresStore, SQLiteStore, StoredResponse, open_store
from openresponses_runtime.server.errors import NotFound, StoreUnavailable
from openresponses_runtime.server.store import context

from .. import cpu_time
from ..server_helpers import API_KEY, free_port, metrics_text, observed, served_process
from .test_server_faults import HEADERS, assert_unavailable, cluster  # noqa: F401 - a fixture
from .test_server_postgres import pg_url  # noqa: F401 - a fixture


def turns(prefix: str, count: int) -> list[StoredResponse]:
    """A chain of `count` turns, each with one input and one output item naming it."""
    return [
        StoredResponse(
            f"{prefix}_{n}", f"{prefix}_{n - 1}" if n else None, [{"in": n}], [{"out": n}], {"id": f"{prefix}_{n}"}
        )
        for n in range(count)
    ]


class CountingSQLiteStore(SQLiteStore):
    """Counts the statements that read the table."""

    reads = 0

    def _connect(self) -> sqlite3.Connection:
        db = super()._connect()
        db.set_trace_callback(self._trace)
        return db

    def _trace(self, statement: str) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH")):
            type(self).reads += 1


async def one_get_forbidden(*_: object) -> None:
    raise AssertionError("the chain was walked one get a turn")


@pytest.mark.slow
def test_sqlite_chain_of_100_turns_is_one_query(tmp_path):
    store = CountingSQLiteStore(tmp_path / "chain.sqlite3")
    for record in turns("resp_chain", 100):
        asyncio.run(store.put(record))
    store.get = one_get_forbidden
    CountingSQLiteStore.reads = 0
    items = asyncio.run(context(store, "resp_chain_99"))
    assert CountingSQLiteStore.reads == 1
    assert items == [item for n in range(100) for item in ({"in": n}, {"out": n})]


def test_a_chain_with_a_turn_missing_names_it(tmp_path):
    store = SQLiteStore(tmp_path / "gap.sqlite3")
    for record in turns("resp_gap", 5):
        if record.id != "resp_gap_2":
            asyncio.run(store.put(record))
    with pytest.raises(NotFound) as missing:
        asyncio.run(context(store, "resp_gap_4"))
    assert missing.value.code == "previous_response_not_found"
    assert missing.value.message == (
        "Previous response with id 'resp_gap_2' not found (it comes before 'resp_gap_4' in the conversation)."
    )
    with pytest.raises(NotFound, match="'resp_gap_9' not found[.]$"):
        asyncio.run(context(store, "resp_gap_9"))


def test_open_store_passes_the_timeout_and_pool_size(tmp_path, pg_url):  # noqa: F811 - the fixture
    assert open_store(tmp_path / "t.sqlite3", timeout=0.25).busy_timeout == 0.25
    store = open_store(pg_url, timeout=2, pool_size=3)
    assert (store.pool_size, store.pool_timeout, store.statement_timeout) == (3, 2, 2)


def test_postgres_chain_is_one_query_and_the_pool_stays_bounded(pg_url):  # noqa: F811 - the fixture
    store = PostgresStore(pg_url, pool_size=2)
    records = turns(f"resp_pgchain_{time.time_ns()}", 100)

    async def main():
        await store.open()  # as the server's lifespan does
        for record in records:
            await store.put(record)
        store.get = one_get_forbidden
        chains = await asyncio.gather(*(context(store, records[-1].id) for _ in range(40)))
        stats = store._pools[asyncio.get_running_loop()].get_stats()
        gauges = store.pool_stats()  # what /metrics shows
        await store.aclose()
        return chains, stats, gauges, store._pools

    chains, stats, gauges, left = asyncio.run(main())
    assert gauges["waiting"] == 0 and 1 <= gauges["idle"] + gauges["busy"] <= 2
    assert all(chain == [item for r in records for item in (*r.input, *r.output)] for chain in chains)
    assert stats["pool_max"] == 2 and stats["connections_num"] <= 2  # 40 readers, never more than 2 connections
    assert left == {}  # closed with its loop's server


def test_postgres_store_without_an_open_pool_leaves_nothing_in_the_loop(pg_url):  # noqa: F811 - the fixture
    # A script's asyncio.run(store.get(...)): a connection for the call, no pool task left to cancel.
    store = PostgresStore(pg_url)
    record = StoredResponse(f"resp_pgplain_{time.time_ns()}", None, [], [], {"id": 1})

    async def main():
        await store.put(record)
        found = await store.get(record.id)
        return found, {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}

    for _ in range(3):  # loop after loop, as tests and scripts do
        found, others = asyncio.run(main())
        assert found is not None and found.response == {"id": 1}
        assert others == set() and store._pools == {}


def test_postgres_busy_pool_and_slow_statement_are_unavailable_in_time(pg_url):  # noqa: F811 - the fixture
    import psycopg

    store = PostgresStore(pg_url, pool_size=1, pool_timeout=0.5, statement_timeout=1)
    record = StoredResponse(f"resp_pglock_{time.time_ns()}", None, [], [], {"id": 1})

    async def main():
        await store.open()
        await store.get("resp_warm_up")  # the pool's one connection is open
        started = time.monotonic()
        saving = asyncio.ensure_future(store.put(record))  # holds the only connection, waiting on the lock
        await asyncio.sleep(0.1)
        with pytest.raises(StoreUnavailable):  # no connection free within pool_timeout
            await store.get(record.id)
        waited = time.monotonic() - started
        with pytest.raises(StoreUnavailable):  # PostgreSQL ends the statement at statement_timeout
            await saving
        await store.aclose()
        return waited, time.monotonic() - started

    with psycopg.connect(pg_url) as locker:  # a transaction that keeps writers out meanwhile
        locker.execute("LOCK TABLE orspec_responses IN SHARE MODE")
        waited, ended = asyncio.run(main())
    slack = 1 / cpu_time.share()
    assert 0.5 <= waited < 1.0 * slack
    assert 1.0 <= ended < 2.5 * slack


def frozen(cluster_folder) -> list[int]:
    """The pids of the cluster's postmaster and of every backend it started."""
    postmaster = int((cluster_folder / "data" / "postmaster.pid").read_text().split()[0])
    children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(postmaster)], capture_output=True, text=True)
    return [postmaster, *map(int, children.stdout.split())]


@pytest.mark.process
@pytest.mark.slow
def test_frozen_postgres_answers_503_within_the_store_timeout(cluster):  # noqa: F811 - the fixture
    port = free_port()
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY, "--delay", "0"]
    command += ["--store", cluster.url, "--store-timeout", "1"]
    with served_process(command, port=port) as base:
        kept = httpx.post(base + "/responses", json={"input": "hello"}, headers=HEADERS, timeout=10)
        assert kept.status_code == 200, kept.text
        pids = frozen(cluster.folder)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            for body in ({"input": "hi", "previous_response_id": kept.json()["id"]}, {"input": "new"}):
                started = time.monotonic()
                answer = httpx.post(base + "/responses", json=body, headers=HEADERS, timeout=10)
                took = time.monotonic() - started
                assert took < cpu_time.scaled(3.5)  # the pool wait and the statement, and slack
                assert_unavailable(answer)
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)


@pytest.mark.process
@pytest.mark.slow
def test_500_concurrent_chain_continuations_on_postgres_get_no_500(pg_url):  # noqa: F811 - the fixture
    port = free_port()
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY, "--delay", "0"]
    command += ["--store", pg_url, "--max-pending", "0"]  # the pool is under test here, not the cap on creates

    async def continue_all(base: str, previous: list[str]) -> list[int]:
        limits = httpx.Limits(max_connections=500)
        async with httpx.AsyncClient(base_url=base, headers=HEADERS, timeout=60, limits=limits) as client:
            answers = await asyncio.gather(
                *(client.post("/responses", json={"input": "more", "previous_response_id": p}) for p in previous)
            )
        return [answer.status_code for answer in answers]

    with served_process(command, port=port) as base:
        previous = []
        for n in range(10):  # ten chains of three turns, each continued fifty times at once
            last = None
            for _ in range(3):
                body = {"input": f"chain {n}", **({"previous_response_id": last} if last else {})}
                last = httpx.post(base + "/responses", json=body, headers=HEADERS, timeout=10).json()["id"]
            previous += [last] * 50
        statuses = asyncio.run(continue_all(base, previous))
    assert statuses.count(200) == 500, sorted(set(statuses))


def test_a_stored_lone_surrogate_reads_back(tmp_path):
    # json writes it as an escape, which orjson, the faster reader, refuses: the store reads it anyway.
    store = SQLiteStore(tmp_path / "surrogate.sqlite3")
    asyncio.run(store.put(StoredResponse("resp_odd", None, [{"text": "a\ud800b"}], [], {"id": "resp_odd"})))
    assert asyncio.run(store.get("resp_odd")).input == [{"text": "a\ud800b"}]


def test_a_served_postgres_store_opens_its_pool_and_shows_it_in_the_metrics(pg_url):  # noqa: F811 - the fixture
    pytest.importorskip("prometheus_client", reason="the runtime's observability extra is not installed")
    from openresponses_runtime.server import create_app

    from ..server_helpers import RecordingProvider, live_server

    store = PostgresStore(pg_url, pool_size=3)
    app = create_app(RecordingProvider(), store=store, api_keys=API_KEY, observability=observed())
    with live_server(app, lifespan="on") as base:  # the lifespan opens the pool, as under orspec serve
        assert httpx.post(base + "/responses", json={"input": "hi"}, headers=HEADERS, timeout=30).status_code == 200
        metrics = metrics_text(base.removesuffix("/v1"))
        gauges = {
            line.split('"')[1]: float(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines()
            if line.startswith("openresponses_store_pool_connections{")
        }
        assert set(gauges) == {"idle", "busy", "waiting"} and 1 <= gauges["idle"] + gauges["busy"] <= 3
        assert len(store._pools) == 1
    assert store._pools == {}  # closed as the server stopped
