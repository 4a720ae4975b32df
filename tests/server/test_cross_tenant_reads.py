"""Another tenant's response is refused from its owner alone: neither read nor parsed, so a 404
for another tenant's large response takes as long as one for an id that never existed.

On every store (memory, a SQLite file, PostgreSQL at `ORSPEC_TEST_POSTGRES`, skipped saying why
when nothing answers there), then timed through a served app on a SQLite file.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from openresponses_runtime.server import DemoProvider, MemoryStore, SQLiteStore, StoredResponse, create_app
from openresponses_runtime.server import store as store_module
from openresponses_runtime.server.store import PostgresStore

from ..server_helpers import live_server
from .test_lifecycle import _postgres_url

KEY_A, KEY_B = "sk-tenant-a-0123456789", "sk-tenant-b-9876543210"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "memory":
        return MemoryStore()
    if request.param == "sqlite":
        return SQLiteStore(tmp_path / "owners.sqlite3")
    return PostgresStore(_postgres_url())


def test_another_tenants_response_is_neither_read_nor_parsed(store, monkeypatch):
    response_id = f"resp_owned_{time.time_ns()}"
    record = StoredResponse(response_id, None, [{"in": 1}], [{"out": 1}], {"id": response_id}, owner="owner-a")
    parsed = []
    from_json, from_row = StoredResponse.from_json.__func__, store_module._pg_record

    def counted(cls, *args):
        parsed.append(args[0])
        return from_json(cls, *args)

    def counted_row(response_id, *row):  # PostgreSQL's: the response and its items, read from their tables
        parsed.append(response_id)
        return from_row(response_id, *row)

    async def main() -> tuple:
        await store.put(record)
        monkeypatch.setattr(StoredResponse, "from_json", classmethod(counted))
        monkeypatch.setattr(store_module, "_pg_record", counted_row)
        found = (
            await store.get_owned(response_id, "owner-b"),
            await store.get_owned(response_id, None),
            await store.get_owned("resp_never_stored", "owner-a"),
        )
        assert parsed == []  # another's, nobody's, missing: refused without parsing a response
        mine = await store.get_owned(response_id, "owner-a")
        await store.delete(response_id)
        return found, mine

    found, mine = asyncio.run(main())
    assert found == (None, None, None)
    assert mine.output == [{"out": 1}] and parsed == [response_id]


def test_sqlite_finds_the_owner_before_the_response(tmp_path):
    """The row is found by its id's index, and its owner comes before the response in it: a large
    response's own pages (past the row's first) are not read to refuse another tenant."""
    store = SQLiteStore(tmp_path / "plan.sqlite3")
    sql = "EXPLAIN QUERY PLAN SELECT data FROM responses WHERE id = ? AND owner = ?"
    with store.connection() as db:
        plan = [row[-1] for row in db.execute(sql, ("resp_x", "owner"))]
        columns = [row[1] for row in db.execute("PRAGMA table_xinfo(responses)")]
    assert len(plan) == 1 and plan[0].startswith("SEARCH responses USING INDEX sqlite_autoindex_responses_1")
    assert columns.index("owner") < columns.index("data")
    asyncio.run(store.aclose())


def test_files_from_before_the_owners_table_get_it_filled(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:  # the table as it was, with a response of a tenant and one from before tenants
        db.execute("CREATE TABLE responses (id TEXT PRIMARY KEY, previous_response_id TEXT, data TEXT NOT NULL)")
        for response_id, owner in (("resp_a", "owner-a"), ("resp_old", None)):
            record = StoredResponse(response_id, None, [], [], {"id": response_id}, owner=owner)
            db.execute("INSERT INTO responses VALUES (?, NULL, ?)", (response_id, record.to_json()))
    store = SQLiteStore(path)
    assert asyncio.run(store.get_owned("resp_a", "owner-a")).id == "resp_a"
    assert asyncio.run(store.get_owned("resp_a", "owner-b")) is None
    assert asyncio.run(store.get_owned("resp_old", "owner-a")) is None
    asyncio.run(store.aclose())


def test_files_with_the_owners_table_are_moved_to_one_table(tmp_path):
    """A file of the version that kept owners in a table of their own: moved over once, every
    response and its owner kept, the owners' table gone; a second start finds it done."""
    import sqlite3

    path = tmp_path / "v1.sqlite3"
    with sqlite3.connect(path) as db:  # the two tables as they were
        db.execute("CREATE TABLE responses (id TEXT PRIMARY KEY, previous_response_id TEXT, data TEXT NOT NULL)")
        db.execute("CREATE TABLE response_owners (id TEXT PRIMARY KEY, owner TEXT NOT NULL) WITHOUT ROWID")
        rows = (
            ("resp_a", None, "owner-a", True),
            ("resp_b", "resp_a", "owner-a", False),
            ("resp_old", None, None, False),
        )
        for response_id, previous, owner, in_owners_table in rows:
            record = StoredResponse(response_id, previous, [{"in": response_id}], [], {"id": response_id}, owner=owner)
            db.execute("INSERT INTO responses VALUES (?, ?, ?)", (response_id, previous, record.to_json()))
            if in_owners_table:
                db.execute("INSERT INTO response_owners VALUES (?, ?)", (response_id, owner))
    for _ in range(2):
        store = SQLiteStore(path)
        assert asyncio.run(store.get_owned("resp_b", "owner-a")).previous_response_id == "resp_a"
        assert asyncio.run(store.get_owned("resp_a", "owner-b")) is None
        assert asyncio.run(store.get_owned("resp_old", "owner-a")) is None
        assert [turn.id for turn in asyncio.run(store.chain("resp_b"))] == ["resp_b", "resp_a"]
        asyncio.run(store.aclose())
    with sqlite3.connect(path) as db:
        tables = sorted(name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        owners = dict(db.execute("SELECT id, owner FROM responses"))
    assert tables == ["responses"]
    assert owners == {"resp_a": "owner-a", "resp_b": "owner-a", "resp_old": None}


@pytest.mark.slow
def test_a_404_for_another_tenants_large_response_takes_as_long_as_for_a_missing_one(tmp_path):
    store = SQLiteStore(tmp_path / "large.sqlite3")
    app = create_app(DemoProvider(delay=0), store=store, api_keys=[("alpha", KEY_A), ("beta", KEY_B)])
    words = "word " * 400_000  # 2 MB of input, echoed: a record of about 6 MB
    with live_server(app, lifespan="on") as base, httpx.Client(timeout=60) as http:
        made = http.post(base + "/responses", json={"input": words}, headers={"Authorization": f"Bearer {KEY_A}"})
        assert made.status_code == 200, made.text[:300]
        response_id = made.json()["id"]

        def timed(key: str, path_id: str, status: int) -> float:
            started = time.perf_counter()
            answer = http.get(f"{base}/responses/{path_id}", headers={"Authorization": f"Bearer {key}"})
            took = time.perf_counter() - started
            assert answer.status_code == status
            return took

        missing, foreign, own = [], [], []
        for _ in range(9):  # interleaved: the machine's load falls on all three alike
            missing.append(timed(KEY_B, "resp_0000000000000000000000000000000000000000", 404))
            foreign.append(timed(KEY_B, response_id, 404))
            own.append(timed(KEY_A, response_id, 200))
    # The best of each: what the work costs, without the waits other jobs on the machine add.
    missing_ms, foreign_ms, own_ms = (min(times) * 1000 for times in (missing, foreign, own))
    said = f"best of 9: missing {missing_ms:.2f} ms, another tenant's {foreign_ms:.2f} ms, the owner's {own_ms:.2f} ms"
    assert own_ms > 3 * missing_ms, said  # the response is large enough to tell reading it from not
    assert foreign_ms < 1.5 * missing_ms + 1, said


def test_the_store_module_keeps_the_default_for_stores_of_ones_own():
    """A store of one's own with only get, put and delete answers with the protocol's default."""

    class Minimal:
        def __init__(self):
            self.inner = MemoryStore()

        async def get(self, response_id):
            return await self.inner.get(response_id)

        async def put(self, record):
            await self.inner.put(record)

        async def delete(self, response_id):
            return await self.inner.delete(response_id)

    store = store_module.complete(Minimal())
    record = StoredResponse("resp_m", None, [], [], {"id": "resp_m"}, owner="owner-a")
    asyncio.run(store.put(record))
    assert asyncio.run(store.get_owned("resp_m", "owner-a")).id == "resp_m"
    assert asyncio.run(store.get_owned("resp_m", "owner-b")) is None


def test_a_sqlite_without_generated_columns_is_refused_clearly_and_the_file_left_as_it_was(tmp_path, monkeypatch):
    import sqlite3

    path = tmp_path / "v1.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE responses (id TEXT PRIMARY KEY, previous_response_id TEXT, data TEXT NOT NULL)")
    monkeypatch.setattr(store_module, "_GENERATED_COLUMNS", (99, 0, 0))
    with pytest.raises(store_module.StoreError, match=r"has no generated columns\); use a Python whose sqlite3"):
        SQLiteStore(path)
    with sqlite3.connect(path) as db:
        assert [row[1] for row in db.execute("PRAGMA table_xinfo(responses)")] == ["id", "previous_response_id", "data"]
