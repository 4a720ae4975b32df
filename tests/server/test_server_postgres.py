"""The PostgreSQL response store, when a server is reachable.

Point `ORSPEC_TEST_POSTGRES` at a database (default `postgresql://postgres@127.0.0.1:5432/postgres`);
the tests skip, saying why, when `psycopg` is missing or nothing answers there.
"""

from __future__ import annotations

import asyncio
import os

import httpx
import pytest
from openresponses_runtime.server import PostgresStore, StoredResponse, create_app, open_store

from ..server_helpers import API_KEY, RecordingProvider, live_server

URL = os.environ.get("ORSPEC_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture(scope="module")
def pg_url():
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'psycopg[binary]')")
    try:
        psycopg.connect(URL, connect_timeout=2).close()
    except psycopg.OperationalError as exc:
        pytest.skip(f"no PostgreSQL server at {URL} (set ORSPEC_TEST_POSTGRES): {str(exc).strip()[:120]}")
    return URL


def test_open_store_selects_postgres_by_url(pg_url):
    assert isinstance(open_store(pg_url), PostgresStore)


def test_postgres_store_round_trip_and_concurrency(pg_url):
    store = PostgresStore(pg_url)

    async def main():
        records = [StoredResponse(f"resp_pgtest_{i}", None, [{"i": i}], [], {"id": i}) for i in range(20)]
        await asyncio.gather(*(store.put(r) for r in records))
        return await asyncio.gather(*(store.get(f"resp_pgtest_{i}") for i in range(20)))

    assert [r.input for r in asyncio.run(main())] == [[{"i": i}] for i in range(20)]
    assert asyncio.run(store.get("resp_pgtest_missing")) is None


def test_postgres_store_survives_restart(pg_url):
    headers = {"Authorization": f"Bearer {API_KEY}"}
    with live_server(create_app(RecordingProvider(), store=pg_url, api_keys=API_KEY)) as base:
        first = httpx.post(base + "/responses", json={"input": "in postgres"}, headers=headers).json()
    provider = RecordingProvider()
    with live_server(create_app(provider, store=pg_url, api_keys=API_KEY)) as base:
        body = {"input": "after", "previous_response_id": first["id"]}
        second = httpx.post(base + "/responses", json=body, headers=headers)
    assert second.status_code == 200, second.text
    assert [item.get("role") for item in provider.requests[0].input] == ["user", "assistant", "user"]


def test_servers_starting_together_create_the_table_once(pg_url):
    # Several workers or replicas opening the store at once, each in a fresh schema's empty database.
    import uuid
    from concurrent.futures import ThreadPoolExecutor

    import psycopg

    schema = f"orspec_race_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {schema}")
    try:
        url = f"{pg_url}?options=-csearch_path%3D{schema}"
        for _ in range(3):
            with psycopg.connect(pg_url, autocommit=True) as db:
                db.execute(f"DROP TABLE IF EXISTS {schema}.orspec_responses")
            with ThreadPoolExecutor(8) as pool:
                stores = list(pool.map(lambda _: PostgresStore(url), range(8)))
            assert len(stores) == 8
            asyncio.run(stores[0].put(StoredResponse("resp_race", None, [], [], {"id": "resp_race"})))
            assert asyncio.run(stores[-1].get("resp_race")) is not None
    finally:
        with psycopg.connect(pg_url, autocommit=True) as db:
            db.execute(f"DROP SCHEMA {schema} CASCADE")
