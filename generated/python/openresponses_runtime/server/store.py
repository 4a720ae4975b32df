"""Where responses live between turns, so `previous_response_id` can continue them.

A store keeps, per response, its own new input items, its output items, the id it continued
from and the final response object. `context()` walks the chain back to rebuild
`previous.input + previous.output` for the next turn.

- `MemoryStore`: a dict; for tests and single-process demos.
- `SQLiteStore(path)`: a real file that survives restarts; one connection per call, WAL mode and
  a write lock, so concurrent requests are safe.
- `PostgresStore(url)`: with `psycopg` installed; chosen by `open_store("postgresql://...")`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .emitter import dumps
from .errors import NotFound

__all__ = [
    "MemoryStore",
    "PostgresStore",
    "ResponseStore",
    "SQLiteStore",
    "StoredResponse",
    "context",
    "open_store",
]

DEFAULT_SQLITE_PATH = "orspec-responses.sqlite3"
MAX_CHAIN = 10_000


@dataclass
class StoredResponse:
    """One finished turn: its new input, its output and the response object.

    `response_json`, when given, is `response` already encoded (the body a non-streamed
    response was sent with): `to_json` takes it as is rather than encoding the response again.
    """

    id: str
    previous_response_id: str | None
    input: list[dict[str, Any]]
    output: list[dict[str, Any]]
    response: dict[str, Any]
    response_json: bytes | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> str:
        record = {"previous_response_id": self.previous_response_id, "input": self.input, "output": self.output}
        if self.response_json is None:
            return dumps({**record, "response": self.response}).decode()  # orjson when installed: every response
        return (dumps(record)[:-1] + b',"response":' + self.response_json + b"}").decode()

    @classmethod
    def from_json(cls, response_id: str, text: str) -> StoredResponse:
        data = json.loads(text)
        return cls(response_id, data["previous_response_id"], data["input"], data["output"], data["response"])


class ResponseStore(Protocol):
    async def get(self, response_id: str) -> StoredResponse | None: ...

    async def put(self, record: StoredResponse) -> None: ...

    async def delete(self, response_id: str) -> bool:
        """Forget the response and its input items; False if it was not stored."""
        ...


async def context(store: ResponseStore, response_id: str, *, param: str = "previous_response_id") -> list[dict]:
    """`input + output` of every turn from the start of the chain up to `response_id`, in order."""
    turns: list[StoredResponse] = []
    current: str | None = response_id
    while current is not None:
        record = await store.get(current)
        if record is None:
            where = "" if current == response_id else f" (it comes before '{response_id}' in the conversation)"
            raise NotFound(
                f"Previous response with id '{current}' not found{where}.",
                code="previous_response_not_found",
                param=param,
            )
        turns.append(record)
        if len(turns) > MAX_CHAIN:
            raise NotFound(f"The chain of responses before '{response_id}' is too long.", param=param)
        current = record.previous_response_id
    items: list[dict] = []
    for record in reversed(turns):
        items.extend(record.input)
        items.extend(record.output)
    return items


class MemoryStore:
    """Responses in a dict, for tests and demos."""

    def __init__(self) -> None:
        self._records: dict[str, str] = {}

    async def get(self, response_id: str) -> StoredResponse | None:
        text = self._records.get(response_id)
        return None if text is None else StoredResponse.from_json(response_id, text)

    async def put(self, record: StoredResponse) -> None:
        self._records[record.id] = record.to_json()  # a copy, so callers cannot change what is stored

    async def delete(self, response_id: str) -> bool:
        return self._records.pop(response_id, None) is not None

    def __len__(self) -> int:
        return len(self._records)


class SQLiteStore:
    """Responses in a SQLite file: survives restarts, safe under concurrent requests."""

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_SQLITE_PATH):
        self.path = Path(path)
        if self.path.parent != Path():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                " id TEXT PRIMARY KEY, previous_response_id TEXT, data TEXT NOT NULL)"
            )
        db.close()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA busy_timeout=30000")
        return db

    def _get(self, response_id: str) -> StoredResponse | None:
        db = self._connect()
        try:
            row = db.execute("SELECT data FROM responses WHERE id = ?", (response_id,)).fetchone()
        finally:
            db.close()
        return None if row is None else StoredResponse.from_json(response_id, row[0])

    def _put(self, record: StoredResponse) -> None:
        data = record.to_json()
        with self._lock:
            db = self._connect()
            try:
                db.execute(
                    "INSERT OR REPLACE INTO responses (id, previous_response_id, data) VALUES (?, ?, ?)",
                    (record.id, record.previous_response_id, data),
                )
            finally:
                db.close()

    def _delete(self, response_id: str) -> bool:
        with self._lock:
            db = self._connect()
            try:
                return db.execute("DELETE FROM responses WHERE id = ?", (response_id,)).rowcount > 0
            finally:
                db.close()

    async def get(self, response_id: str) -> StoredResponse | None:
        return await asyncio.to_thread(self._get, response_id)

    async def delete(self, response_id: str) -> bool:
        return await asyncio.to_thread(self._delete, response_id)

    async def put(self, record: StoredResponse) -> None:
        await asyncio.to_thread(self._put, record)


class PostgresStore:
    """Responses in PostgreSQL (needs `psycopg`); one connection per call."""

    def __init__(self, url: str):
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise RuntimeError("PostgresStore needs the `psycopg` package (pip install 'psycopg[binary]')") from exc
        self._psycopg = psycopg
        self.url = url
        # Servers starting together (workers, replicas) race on CREATE TABLE IF NOT EXISTS, which
        # PostgreSQL does not make atomic: a lock held to the end of the transaction orders them.
        with psycopg.connect(url) as db:  # one transaction, committed when the block ends
            db.execute("SELECT pg_advisory_xact_lock(hashtext('orspec_responses'))")
            db.execute(
                "CREATE TABLE IF NOT EXISTS orspec_responses ("
                " id TEXT PRIMARY KEY, previous_response_id TEXT, data TEXT NOT NULL)"
            )

    async def get(self, response_id: str) -> StoredResponse | None:
        async with await self._psycopg.AsyncConnection.connect(self.url, autocommit=True) as db:
            cur = await db.execute("SELECT data FROM orspec_responses WHERE id = %s", (response_id,))
            row = await cur.fetchone()
        return None if row is None else StoredResponse.from_json(response_id, row[0])

    async def put(self, record: StoredResponse) -> None:
        async with await self._psycopg.AsyncConnection.connect(self.url, autocommit=True) as db:
            await db.execute(
                "INSERT INTO orspec_responses (id, previous_response_id, data) VALUES (%s, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data",
                (record.id, record.previous_response_id, record.to_json()),
            )

    async def delete(self, response_id: str) -> bool:
        async with await self._psycopg.AsyncConnection.connect(self.url, autocommit=True) as db:
            cur = await db.execute("DELETE FROM orspec_responses WHERE id = %s", (response_id,))
            return cur.rowcount > 0


def open_store(url: str | os.PathLike[str] | None = None) -> ResponseStore:
    """A store from a URL: `memory:`, `postgresql://...`, `sqlite:///path` or a plain file path.

    With no URL: `$ORSPEC_STORE`, else a SQLite file `orspec-responses.sqlite3` in the working directory.
    """
    if url is None:
        url = os.environ.get("ORSPEC_STORE") or DEFAULT_SQLITE_PATH
    text = os.fspath(url)
    if text in ("memory", "memory:", ":memory:"):
        return MemoryStore()
    if text.startswith(("postgresql://", "postgres://")):
        return PostgresStore(text)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    return SQLiteStore(text)
