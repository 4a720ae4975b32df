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
from openresponses_runtime.server.store import context

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


@pytest.fixture
def pg_schema(pg_url):
    """A URL whose tables live in a fresh schema of their own, dropped afterwards."""
    import uuid

    import psycopg

    schema = f"orspec_layout_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{pg_url}?options=-csearch_path%3D{schema}", schema
    finally:
        with psycopg.connect(pg_url, autocommit=True) as db:
            db.execute(f"DROP SCHEMA {schema} CASCADE")


def test_a_database_of_the_layout_before_is_moved_once_item_for_item(pg_schema):
    """Whole records in `data` (and no owner column, as before tenants): the first store to open moves
    each record's items beside it, byte for byte, and keeps only the response in `data`."""
    import psycopg

    url, schema = pg_schema
    sealed = '{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"c2VhbGVk+/=="}'
    first = (
        '{"previous_response_id":null,"input":[{"role":"user","content":"héllo"}],'
        f'"output":[{sealed},{{"type":"message","role":"assistant","content":[]}}],"owner":"owner-a",'
        '"response":{"id":"resp_old_1","created_at":1,"output":[]}}'
    )
    second = (
        '{"previous_response_id":"resp_old_1","input":[{"role":"user","content":"again"}],"output":[],'
        '"owner":"owner-a","response":{"id":"resp_old_2","created_at":2}}'
    )
    nobody = '{"previous_response_id":null,"input":[],"output":[],"response":{"id":"resp_old_3"}}'
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("CREATE TABLE orspec_responses (id TEXT PRIMARY KEY, previous_response_id TEXT, data TEXT NOT NULL)")
        for response_id, previous, data in (
            ("resp_old_1", None, first),
            ("resp_old_2", "resp_old_1", second),
            ("resp_old_3", None, nobody),
        ):
            db.execute("INSERT INTO orspec_responses VALUES (%s, %s, %s)", (response_id, previous, data))

    store = PostgresStore(url)
    PostgresStore(url)  # a second opening finds the layout moved and leaves it

    async def main():
        return (
            await store.get("resp_old_1"),
            await store.get_owned("resp_old_2", "owner-a"),
            await store.get_owned("resp_old_2", "owner-b"),
            await store.get_owned("resp_old_3", "owner-a"),
            await context(store, "resp_old_2", owner="owner-a"),
        )

    one, two, others, nobodys, items = asyncio.run(main())
    assert one.input == [{"role": "user", "content": "héllo"}] and one.output[0]["encrypted_content"] == "c2VhbGVk+/=="
    assert one.response == {"id": "resp_old_1", "created_at": 1, "output": []} and one.owner == "owner-a"
    assert two.previous_response_id == "resp_old_1" and two.input == [{"role": "user", "content": "again"}]
    assert others is None and nobodys is None
    assert [item.get("content") for item in items] == ["héllo", None, [], "again"]
    with psycopg.connect(url, autocommit=True) as db:
        stored = dict(db.execute("SELECT id, data FROM orspec_responses"))
        kept = db.execute(
            "SELECT i.item FROM orspec_responses r JOIN orspec_response_items i ON (i.thread, i.depth) = (r.thread, r.depth)"
            " WHERE r.id = 'resp_old_1' ORDER BY i.position"
        ).fetchall()
        assert stored["resp_old_1"] == '{"id":"resp_old_1","created_at":1,"output":[]}'  # the response, only
        assert kept[1] == (sealed,)  # the sealed item as it was stored, and nowhere else
        assert not any("encrypted_content" in data for data in stored.values())
        # A server of the layout before, still running, cannot save a record the store would misread.
        with pytest.raises(psycopg.errors.NotNullViolation):
            db.execute(
                "INSERT INTO orspec_responses (id, previous_response_id, owner, data) VALUES ('r', NULL, 'o', '{}')"
            )


def test_a_chain_is_read_from_its_items_in_one_query(pg_schema):
    """Continuing turn 30 runs one statement whatever the chain's length, and never reads a response;
    a turn deleted or made by another tenant stops the chain where it is."""
    url, _ = pg_schema
    store = PostgresStore(url)
    ids = [f"resp_turn_{n}" for n in range(30)]
    statements = []
    execute = store._execute

    async def counted(sql, params):
        statements.append(sql)
        return await execute(sql, params)

    async def main():
        for n, response_id in enumerate(ids):
            previous = ids[n - 1] if n else None
            record = StoredResponse(
                response_id, previous, [{"role": "user", "content": f"q{n}"}], [{"type": "message", "n": n}],
                {"id": response_id, "big": "x" * 1000}, owner="owner-a",
            )  # fmt: skip
            await store.put(record)
        store._execute = counted
        found = await context(store, ids[-1], owner="owner-a")
        store._execute = execute
        await store.delete(ids[10])
        after_delete = await store.conversation(ids[-1], "owner-a")
        foreign = await store.conversation(ids[-1], "owner-b")
        return found, after_delete, foreign

    found, after_delete, foreign = asyncio.run(main())
    assert len(statements) == 1 and "data" not in statements[0]
    assert [item.get("content", item.get("n")) for item in found[:4]] == ["q0", 0, "q1", 1] and len(found) == 60
    assert (after_delete.turns, after_delete.missing, len(after_delete.items)) == (19, ids[10], 38)
    assert (foreign.turns, foreign.missing, foreign.items) == (0, ids[-1], [])


def test_answers_to_the_same_turn_each_continue_their_own_history(pg_schema):
    """Eight answers to one turn saved at once, then each continued: each history is its own, whichever
    answer took the turn's thread and whichever were saved again in threads of their own."""
    url, _ = pg_schema
    store = PostgresStore(url)

    def turn(response_id, previous, text):
        return StoredResponse(response_id, previous, [{"content": text}], [{"answer": text}], {"id": response_id})

    async def main():
        await store.open()
        await store.put(turn("resp_root", None, "root"))
        await store.put(turn("resp_head", "resp_root", "head"))
        answers = [turn(f"resp_answer_{n}", "resp_head", f"answer {n}") for n in range(8)]
        await asyncio.gather(*(store.put(answer) for answer in answers))
        await asyncio.gather(*(store.put(turn(f"resp_next_{n}", f"resp_answer_{n}", f"next {n}")) for n in range(8)))
        await store.put(turn("resp_root", None, "root"))  # saved again: its place and its chains stay
        found = [await context(store, f"resp_next_{n}") for n in range(8)]
        await store.aclose()
        return found

    for n, items in enumerate(asyncio.run(main())):
        texts = [item.get("content") or item.get("answer") for item in items]
        assert texts == ["root", "root", "head", "head", f"answer {n}", f"answer {n}", f"next {n}", f"next {n}"]
