"""The ledger of background runs, kept beside the responses in the same store.

Per background response it keeps the run (which process owns it, until when its lease holds,
whether a cancel was asked, whether it ended) and its SSE frames, numbered by sequence number,
so that any instance on the store can resume its stream, cancel it, or fail it once its owner
died. One ledger per store kind: `MemoryRuns` (one process), `SQLiteRuns` (one machine) and
`PostgresRuns` (many); `runs_for(store)` picks the one that shares the store's database.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from .store import PostgresStore, ResponseStore, SQLiteStore, sqlite_unavailable, unavailable_on

__all__ = ["Run", "runs_for"]


@dataclass(frozen=True)
class Run:
    """A background run as the ledger holds it."""

    owner: str
    stream: bool  # whether its events are kept, to be streamed again
    expires_at: float  # time.time() when the lease lapses, unless its owner renews it
    cancel: bool
    done: bool

    @property
    def lapsed(self) -> bool:
        return not self.done and self.expires_at < time.time()


class MemoryRuns:
    """Runs in dicts: for `MemoryStore` and stores of one's own, which live in one process."""

    def __init__(self) -> None:
        self._runs: dict[str, Run] = {}
        self._frames: dict[str, list[bytes]] = {}

    async def begin(self, response_id: str, owner: str, stream: bool, lease: float) -> None:
        self._runs[response_id] = Run(owner, stream, time.time() + lease, False, False)
        self._frames[response_id] = []

    async def get(self, response_id: str) -> Run | None:
        return self._runs.get(response_id)

    async def renew(self, response_id: str, lease: float) -> bool | None:
        """Extend the lease: whether a cancel was asked, or None when the run is gone or was ended by another
        instance (its lease had lapsed): nothing is left to run for."""
        run = self._runs.get(response_id)
        if run is None or run.done:
            return None
        self._runs[response_id] = Run(run.owner, run.stream, time.time() + lease, run.cancel, run.done)
        return run.cancel

    async def ask_cancel(self, response_id: str) -> None:
        run = self._runs.get(response_id)
        if run is not None:
            self._runs[response_id] = Run(run.owner, run.stream, run.expires_at, True, run.done)

    async def append(self, response_id: str, first: int, frames: list[bytes]) -> None:
        """Keep `frames`, the first of them sequence number `first`."""
        kept = self._frames.get(response_id)
        if kept is not None:  # not forgotten meanwhile
            kept[first:] = frames

    async def frames(self, response_id: str, after: int) -> list[bytes]:
        return self._frames.get(response_id, [])[after + 1 :]

    async def end(self, response_id: str) -> None:
        run = self._runs.get(response_id)
        if run is not None:
            self._runs[response_id] = Run(run.owner, run.stream, run.expires_at, run.cancel, True)

    async def lapsed(self) -> list[str]:
        return [response_id for response_id, run in self._runs.items() if run.lapsed]

    async def forget(self, response_id: str) -> None:
        self._runs.pop(response_id, None)
        self._frames.pop(response_id, None)

    async def orphans(self, exists: Any) -> None:
        """Forget the ended runs whose response is gone (`await exists(id)` is False)."""
        for response_id in [key for key, run in self._runs.items() if run.done]:
            if not await exists(response_id):
                await self.forget(response_id)


_RUNS_TABLE = (
    "CREATE TABLE IF NOT EXISTS {prefix}runs (id TEXT PRIMARY KEY, owner TEXT NOT NULL, stream BOOLEAN NOT NULL,"
    " expires_at DOUBLE PRECISION NOT NULL, cancel BOOLEAN NOT NULL DEFAULT FALSE, done BOOLEAN NOT NULL DEFAULT FALSE)"
)
_FRAMES_TABLE = (
    "CREATE TABLE IF NOT EXISTS {prefix}run_frames (id TEXT NOT NULL, seq INTEGER NOT NULL, frame {blob} NOT NULL,"
    " PRIMARY KEY (id, seq))"
)


class SQLiteRuns:
    """Runs in the SQLite file of a `SQLiteStore`, in tables of their own, over the store's kept connections."""

    def __init__(self, store: SQLiteStore):
        self._store = store
        with store.connection() as db:
            db.execute(_RUNS_TABLE.format(prefix=""))
            db.execute(_FRAMES_TABLE.format(prefix="", blob="BLOB"))

    async def _do(self, sql: str, params: tuple = (), *, many: list[tuple] | None = None) -> list[tuple]:
        def work() -> list[tuple]:
            with self._store.connection() as db:
                if many is not None:
                    db.execute("BEGIN IMMEDIATE")
                    db.executemany(sql, many)
                    db.execute("COMMIT")
                    return []
                return db.execute(sql, params).fetchall()

        with unavailable_on("keeping background runs", sqlite_unavailable):  # a 503, as the store's own calls
            return await asyncio.to_thread(work)

    async def begin(self, response_id: str, owner: str, stream: bool, lease: float) -> None:
        await self._do(
            "INSERT OR REPLACE INTO runs (id, owner, stream, expires_at) VALUES (?, ?, ?, ?)",
            (response_id, owner, stream, time.time() + lease),
        )

    async def get(self, response_id: str) -> Run | None:
        rows = await self._do("SELECT owner, stream, expires_at, cancel, done FROM runs WHERE id = ?", (response_id,))
        return Run(rows[0][0], bool(rows[0][1]), rows[0][2], bool(rows[0][3]), bool(rows[0][4])) if rows else None

    async def renew(self, response_id: str, lease: float) -> bool | None:
        rows = await self._do(
            "UPDATE runs SET expires_at = ? WHERE id = ? AND NOT done RETURNING cancel",
            (time.time() + lease, response_id),
        )
        return bool(rows[0][0]) if rows else None

    async def ask_cancel(self, response_id: str) -> None:
        await self._do("UPDATE runs SET cancel = TRUE WHERE id = ?", (response_id,))

    async def append(self, response_id: str, first: int, frames: list[bytes]) -> None:
        rows = [(response_id, first + i, frame, response_id) for i, frame in enumerate(frames)]
        await self._do(  # only while the run exists: a deleted response keeps nothing
            "INSERT OR REPLACE INTO run_frames (id, seq, frame) SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM runs WHERE id = ?)",
            many=rows,
        )

    async def frames(self, response_id: str, after: int) -> list[bytes]:
        rows = await self._do(
            "SELECT frame FROM run_frames WHERE id = ? AND seq > ? ORDER BY seq", (response_id, after)
        )
        return [bytes(row[0]) for row in rows]

    async def end(self, response_id: str) -> None:
        await self._do("UPDATE runs SET done = TRUE WHERE id = ?", (response_id,))

    async def lapsed(self) -> list[str]:
        rows = await self._do("SELECT id FROM runs WHERE NOT done AND expires_at < ?", (time.time(),))
        return [row[0] for row in rows]

    async def forget(self, response_id: str) -> None:
        await self._do("DELETE FROM runs WHERE id = ?", (response_id,))  # first: no frame is added after it
        await self._do("DELETE FROM run_frames WHERE id = ?", (response_id,))

    async def orphans(self, exists: Any) -> None:
        """Forget the ended runs whose response is gone, and their frames (two statements)."""
        await self._do("DELETE FROM runs WHERE done AND id NOT IN (SELECT id FROM responses)")
        await self._do("DELETE FROM run_frames WHERE id NOT IN (SELECT id FROM runs)")


class PostgresRuns:
    """Runs in the database of a `PostgresStore`, in tables of their own, over the store's connections."""

    def __init__(self, store: PostgresStore):
        self._store = store
        self._unavailable = store._unavailable
        store.create_tables(
            "orspec_runs", _RUNS_TABLE.format(prefix="orspec_"), _FRAMES_TABLE.format(prefix="orspec_", blob="BYTEA")
        )

    async def _do(self, sql: str, params: tuple = (), *, binary: bool = False) -> list[tuple]:
        async def work(db: Any) -> list[tuple]:
            async with db.cursor() as cur:
                await cur.execute(sql, params, binary=binary)
                return await cur.fetchall() if cur.description else []

        with unavailable_on("keeping background runs", self._unavailable):  # a 503, as the store's own calls
            return await self._store.run(work)

    async def begin(self, response_id: str, owner: str, stream: bool, lease: float) -> None:
        await self._do(
            "INSERT INTO orspec_runs (id, owner, stream, expires_at) VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
            (response_id, owner, stream, time.time() + lease),
        )

    async def get(self, response_id: str) -> Run | None:
        rows = await self._do(
            "SELECT owner, stream, expires_at, cancel, done FROM orspec_runs WHERE id = %s", (response_id,)
        )
        return Run(*rows[0]) if rows else None

    async def renew(self, response_id: str, lease: float) -> bool | None:
        rows = await self._do(
            "UPDATE orspec_runs SET expires_at = %s WHERE id = %s AND NOT done RETURNING cancel",
            (time.time() + lease, response_id),
        )
        return bool(rows[0][0]) if rows else None

    async def ask_cancel(self, response_id: str) -> None:
        await self._do("UPDATE orspec_runs SET cancel = TRUE WHERE id = %s", (response_id,))

    async def append(self, response_id: str, first: int, frames: list[bytes]) -> None:
        # One statement for the batch, whole or not at all (a row a statement costs the database a
        # plan and a lock each), its frames sent as a binary array (`%b`: as they are, not escaped
        # into text), and only while the run exists: its row is locked so that `forget` waits for it.
        await self._do(
            "INSERT INTO orspec_run_frames (id, seq, frame)"
            " SELECT %s, %s + t.n - 1, t.frame FROM unnest(%b::bytea[]) WITH ORDINALITY AS t(frame, n)"
            " WHERE EXISTS (SELECT 1 FROM orspec_runs WHERE id = %s FOR SHARE) ON CONFLICT DO NOTHING",
            (response_id, first, frames, response_id),
        )

    async def frames(self, response_id: str, after: int) -> list[bytes]:
        rows = await self._do(
            "SELECT frame FROM orspec_run_frames WHERE id = %s AND seq > %s ORDER BY seq",
            (response_id, after),
            binary=True,  # the frames as they are, not as hex text to decode
        )
        return [bytes(row[0]) for row in rows]

    async def end(self, response_id: str) -> None:
        await self._do("UPDATE orspec_runs SET done = TRUE WHERE id = %s", (response_id,))

    async def lapsed(self) -> list[str]:
        rows = await self._do("SELECT id FROM orspec_runs WHERE NOT done AND expires_at < %s", (time.time(),))
        return [row[0] for row in rows]

    async def forget(self, response_id: str) -> None:
        await self._do("DELETE FROM orspec_runs WHERE id = %s", (response_id,))  # first: no frame is added after it
        await self._do("DELETE FROM orspec_run_frames WHERE id = %s", (response_id,))

    async def orphans(self, exists: Any) -> None:
        """Forget the ended runs whose response is gone, and their frames (two statements)."""
        await self._do("DELETE FROM orspec_runs WHERE done AND id NOT IN (SELECT id FROM orspec_responses)")
        await self._do("DELETE FROM orspec_run_frames WHERE id NOT IN (SELECT id FROM orspec_runs)")


def runs_for(store: ResponseStore) -> Any:
    """The ledger that lives in `store`'s own database (one in memory for a store of another kind)."""
    while getattr(store, "wrapped", None) is not None:  # a store watched (observability) is still its kind
        store = store.wrapped
    if isinstance(store, SQLiteStore):
        return SQLiteRuns(store)
    if isinstance(store, PostgresStore):
        return PostgresRuns(store)
    return MemoryRuns()
