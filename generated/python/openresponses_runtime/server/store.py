"""Where responses live between turns, so `previous_response_id` can continue them.

A store keeps, per response, its own new input items, its output items, the id it continued
from and the final response object. `context()` walks the chain back to rebuild
`previous.input + previous.output` for the next turn.

- `MemoryStore`: a dict; for tests and single-process demos.
- `SQLiteStore(path)`: a real file that survives restarts; WAL mode, connections kept open
  between calls and a write lock, so concurrent requests are safe; `sync` says what a commit
  survives (the server crashing, by default; a power cut with `sync="full"`).
- `PostgresStore(url)`: with `psycopg` and `psycopg_pool` installed; chosen by
  `open_store("postgresql://...")`. A bounded pool of connections (`pool_size`, default 10 per
  process), each with a connect and a statement timeout; a request that waits longer than
  `pool_timeout` for a connection gets a 503 rather than the server's `too many clients`.

A store may also load a whole chain at once (`chain(response_id)`, one query whatever the
chain's length), and what continuing it needs (`conversation(response_id, owner)`: its items, by
default from `chain`); `context()` uses them when the store has them, and walks `get` otherwise.
PostgreSQL keeps each response's items apart from the response and reads a conversation's items alone.

A store that cannot be opened (no server at the URL, a path that cannot be written) raises
`StoreError`, a `ValueError` whose message is one line naming the store, never its password: a
configuration problem. A store that cannot serve right now (the database unreachable, its disk full, its file locked
longer than `busy_timeout`) raises `StoreUnavailable`, which the server answers with a 503 and
`Retry-After`, or mid-stream with `error` and `response.failed`. Each store says which of its
errors mean that; anything else (a bug) propagates as it is.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import re
import shutil
import sqlite3
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .bounds import Bounds
from .errors import NotFound, StoreUnavailable
from .wire import dumps, loads

__all__ = [
    "Conversation",
    "MemoryStore",
    "PostgresStore",
    "ResponseStore",
    "SQLiteStore",
    "StoreError",
    "StoredResponse",
    "complete",
    "context",
    "open_store",
    "sqlite_unavailable",
    "unavailable_on",
    "walk",
]

DEFAULT_SQLITE_PATH = "orspec-responses.sqlite3"
MAX_CHAIN = 10_000
# A password in a store URL: `scheme://user:PASSWORD@host` or `?password=PASSWORD`.
_PASSWORD = re.compile(r"(?<=://)[^/@:]*:([^/@]+)@|[?&]password=([^&#]+)")


class StoreError(ValueError):
    """The store cannot be opened: a configuration problem, said in one line with what to check."""

    def __init__(self, where: str, reason: object, check: str):
        secrets = [s for m in _PASSWORD.finditer(where) for s in m.groups() if s]
        said = " ".join(str(reason).split())  # drivers' messages span lines
        for secret in secrets:
            where, said = where.replace(secret, "***"), said.replace(secret, "***")
        super().__init__(f"cannot open the response store {where} ({said}); {check}")


DEFAULT_BUSY_TIMEOUT = 5.0  # seconds a locked SQLite file is waited for before the store is unavailable

log = logging.getLogger("openresponses_runtime.server.store")
_TRACEBACK_EVERY = 60.0  # seconds: a store that is down fails every request, one traceback a minute is plenty
_last_traceback = -_TRACEBACK_EVERY


@contextmanager
def unavailable_on(doing: str, is_unavailable: Callable[[Exception], bool]) -> Iterator[None]:
    """Turns the errors `is_unavailable` picks into `StoreUnavailable`, logged as one line; with
    the logger at DEBUG, a traceback too, at most one a minute. `doing` names the work, never its data."""
    global _last_traceback
    try:
        yield
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        reason = " ".join(str(exc).split())[:300]  # drivers write several lines: the log gets one
        log.error("response store unavailable while %s: %s: %s", doing, type(exc).__name__, reason)
        now = time.monotonic()
        if log.isEnabledFor(logging.DEBUG) and now - _last_traceback >= _TRACEBACK_EVERY:
            _last_traceback = now
            log.debug("response store failure, traceback", exc_info=exc)
        raise StoreUnavailable() from exc


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
    owner: str | None = None  # the tenant that made it (`auth.Tenant.owner`); None: stored before tenants
    size: int = field(default=0, compare=False)  # the length of the JSON it was read from (0: not read)

    def to_json(self) -> str:
        return self.encode().decode()

    def encode(self) -> bytes | bytearray:
        """`to_json` as UTF-8 bytes. With `response_json`, built in place, one part at a time: a
        response can be as large as a request body, and each part is, once, beside the whole."""
        if self.response_json is None:
            record = {"previous_response_id": self.previous_response_id, "input": self.input, "output": self.output}
            if self.owner is not None:
                record["owner"] = self.owner
            return dumps({**record, "response": self.response})  # orjson when installed: every response
        built = bytearray(b'{"previous_response_id":')
        built += dumps(self.previous_response_id)
        built += b',"input":'
        built += dumps(self.input)
        built += b',"output":'
        built += dumps(self.output)
        if self.owner is not None:
            built += b',"owner":'
            built += dumps(self.owner)
        built += b',"response":'
        built += self.response_json
        built += b"}"
        return built

    @classmethod
    def from_json(cls, response_id: str, text: str) -> StoredResponse:
        data = loads(text)
        return cls(
            response_id,
            data["previous_response_id"],
            data["input"],
            data["output"],
            data["response"],
            owner=data.get("owner"),
            size=len(text),
        )

    def owned_by(self, owner: str | None) -> bool:
        """Whether `owner` made it. A response stored before tenants (no owner) belongs to no one:
        nobody can say which key made it (see the security guide)."""
        return self.owner is not None and owner is not None and hmac.compare_digest(self.owner, owner)


class ResponseStore(Protocol):
    """What the server asks of a store. `get`, `put` and `delete` are the store's own; the rest
    have defaults that a store inherits by subclassing `ResponseStore` (the built-in stores do),
    and `complete` gives a store that lacks them (one written before they were asked)."""

    async def get(self, response_id: str) -> StoredResponse | None: ...

    async def put(self, record: StoredResponse) -> None: ...

    async def delete(self, response_id: str) -> bool:
        """Forget the response and its input items; False if it was not stored."""
        ...

    async def get_owned(self, response_id: str, owner: str | None) -> StoredResponse | None:
        """The response if `owner` made it, else None, the same whether it is missing or another's.
        By default a `get`; the built-in stores answer another tenant's from its owner alone, without
        reading or parsing the response (a large one would take longer to say no)."""
        return _owned(await self.get(response_id), owner)

    async def chain(self, response_id: str) -> list[StoredResponse]:
        """The chain from `response_id` back to its first turn, newest first, stopping at the first
        turn missing and after `MAX_CHAIN + 1` turns. By default one `get` a turn; a database
        store reads it in one query."""
        return await walk(self, response_id)

    async def conversation(self, response_id: str, owner: str | None = None) -> Conversation:
        """What continuing `response_id` needs of its chain (see `Conversation`): with `owner`, only the
        turns that tenant made count, from the newest back. By default read from `chain`; PostgreSQL
        reads only the items, in one query."""
        turns = await self.chain(response_id)
        if owner is not None:
            for index, record in enumerate(turns):
                if not record.owned_by(owner):
                    turns = turns[:index]
                    break
        items: list[dict] = []
        for record in reversed(turns):
            items.extend(record.input)
            items.extend(record.output)
        missing = turns[-1].previous_response_id if turns else response_id
        return Conversation(items, len(turns), missing, sum(record.size for record in turns))

    async def open(self) -> None:
        """Open what the store keeps open (a connection pool); the server calls it as it starts."""

    async def aclose(self) -> None:
        """Close what `open` opened; the server calls it as it stops."""

    def pool_stats(self) -> dict[str, int]:
        """Connections of the store's pool by state (`idle`, `busy`, `waiting`); empty without a pool."""
        return {}


@dataclass
class Conversation:
    """The chain up to a response as its next turn reads it."""

    items: list[dict[str, Any]]  # input + output of every turn that counts, oldest first
    turns: int  # how many turns count (past `MAX_CHAIN`, the chain is refused as too long)
    missing: str | None  # the id the chain stops short at (a turn missing, or not the owner's); None: complete
    size: int  # the stored JSON those turns were read from, which `max_context_bytes` bounds


def _owned(record: StoredResponse | None, owner: str | None) -> StoredResponse | None:
    """`record` if `owner` made it by its own word too (a row edited to have no owner is no one's)."""
    return record if record is not None and record.owned_by(owner) else None


def complete(store: Any) -> ResponseStore:
    """`store` as a whole `ResponseStore`: as it is when it has every method, else with the defaults
    of those it lacks (a store of only `get`, `put` and `delete` still serves)."""
    if all(callable(getattr(store, name, None)) for name in _ASKED):
        return store
    return _Completed(store)


_ASKED = ("get", "get_owned", "put", "delete", "chain", "conversation", "open", "aclose", "pool_stats")


class _Completed(ResponseStore):
    """A store with the protocol's defaults for the methods it does not have."""

    def __init__(self, store: Any):
        self.store = store
        for name in _ASKED:
            method = getattr(store, name, None)
            if callable(method):
                setattr(self, name, method)

    async def get(self, response_id: str) -> StoredResponse | None:  # replaced by the store's own in __init__
        raise NotImplementedError(f"{type(self.store).__name__} has no get")

    async def put(self, record: StoredResponse) -> None:
        raise NotImplementedError(f"{type(self.store).__name__} has no put")

    async def delete(self, response_id: str) -> bool:
        raise NotImplementedError(f"{type(self.store).__name__} has no delete")


async def context(
    store: ResponseStore,
    response_id: str,
    *,
    param: str = "previous_response_id",
    owner: str | None = None,
    max_bytes: int | None = None,
) -> list[dict]:
    """`input + output` of every turn from the start of the chain up to `response_id`, in order.

    With `owner` (the server always gives its caller's), only turns that tenant made count: another
    tenant's turn is missing, as if it had never been stored. Without, every turn counts (a script's
    own reading of its store). `max_bytes`: the most stored JSON the chain may hold; beyond, the
    400 `context_too_large` (`param`)."""
    found = await store.conversation(response_id, owner)
    if found.turns > MAX_CHAIN:
        raise NotFound(f"The chain of responses before '{response_id}' is too long.", param=param)
    missing = found.missing
    if missing is not None:  # the chain stops short of its first turn
        where = "" if missing == response_id else f" (it comes before '{response_id}' in the conversation)"
        raise NotFound(
            f"Previous response with id '{missing}' not found{where}.", code="previous_response_not_found", param=param
        )
    if max_bytes is not None:
        Bounds(max_context_bytes=max_bytes).check_context(found.size, response_id, param)
    return found.items


async def walk(store: ResponseStore, response_id: str) -> list[StoredResponse]:
    """The chain from `response_id` back, one `get` a turn, up to the first turn missing."""
    turns: list[StoredResponse] = []
    current: str | None = response_id
    while current is not None and len(turns) <= MAX_CHAIN:
        record = await store.get(current)
        if record is None:
            break
        turns.append(record)
        current = record.previous_response_id
    return turns


# The chain from one response back to its first, newest first, in one query (SQLite and PostgreSQL
# alike); `depth` bounds a cycle no honest client can make, and a chain longer than MAX_CHAIN.
_CHAIN_SQL = (
    "WITH RECURSIVE chain(id, previous_response_id, data, depth) AS ("
    " SELECT id, previous_response_id, data, 0 FROM {table} WHERE id = {mark}"
    " UNION ALL SELECT r.id, r.previous_response_id, r.data, chain.depth + 1"
    " FROM {table} r JOIN chain ON r.id = chain.previous_response_id WHERE chain.depth <= {limit})"
    " SELECT id, data FROM chain ORDER BY depth"
)


def _created_at(text: str) -> float:
    created = loads(text)["response"].get("created_at")
    return created if isinstance(created, int | float) else float("inf")  # no date: never expired


def _turns(rows: list[tuple[str, str]]) -> list[StoredResponse]:
    return [StoredResponse.from_json(response_id, data) for response_id, data in rows]


class MemoryStore(ResponseStore):
    """Responses in a dict, for tests and demos."""

    def __init__(self) -> None:
        self._records: dict[str, bytes | bytearray] = {}
        self._owners: dict[str, str] = {}

    async def get(self, response_id: str) -> StoredResponse | None:
        text = self._records.get(response_id)
        return None if text is None else StoredResponse.from_json(response_id, text)

    async def get_owned(self, response_id: str, owner: str | None) -> StoredResponse | None:
        made_by = self._owners.get(response_id)
        if made_by is None or owner is None or not hmac.compare_digest(made_by, owner):
            return None
        return _owned(await self.get(response_id), owner)

    async def put(self, record: StoredResponse) -> None:
        self._records[record.id] = record.encode()  # a copy, so callers cannot change what is stored
        if record.owner is not None:
            self._owners[record.id] = record.owner

    async def delete(self, response_id: str) -> bool:
        self._owners.pop(response_id, None)
        return self._records.pop(response_id, None) is not None

    async def expire(self, before: float) -> int:
        """Forget the responses created before `before` (a Unix time); how many."""
        old = [key for key, text in list(self._records.items()) if _created_at(text) < before]
        for key in old:
            self._records.pop(key, None)
            self._owners.pop(key, None)
        return len(old)

    def __len__(self) -> int:
        return len(self._records)


# SQLite's primary result codes for a file that cannot serve right now: busy or locked, out of
# memory or disk, read-only, unreadable, gone, damaged. SQLITE_ERROR and the like are bugs.
_SQLITE_UNAVAILABLE = frozenset(
    (
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_NOMEM,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PROTOCOL,
        sqlite3.SQLITE_NOTADB,
    )
)


def sqlite_unavailable(exc: Exception) -> bool:
    if isinstance(exc, TimeoutError):  # the write lock below, held past the busy timeout
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.Error) and code is not None and (code & 0xFF) in _SQLITE_UNAVAILABLE


def _breaks_connections(exc: BaseException) -> bool:
    """Whether `exc` leaves a SQLite connection in doubt (a full disk, an I/O error, a file gone bad):
    every kept connection is then opened again, where a busy or locked file only waits its turn."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        isinstance(exc, sqlite3.Error)
        and code is not None
        and (code & 0xFF) in _SQLITE_UNAVAILABLE
        and (code & 0xFF) not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    )


SQLITE_SYNC = ("normal", "full")  # `PRAGMA synchronous` in WAL mode: see SQLiteStore
# Bytes of WAL past which a write starts a checkpoint (and SQLite's journal_size_limit, what the WAL
# is cut back to as it starts over): kept connections never close, and the last to close was what
# checkpointed it before. Each checkpoint syncs the disk twice (milliseconds each) and holds writes
# while it copies what was written as it ran: a larger WAL spreads that over more responses. On a disk
# with less room, a quarter of its free bytes (but not under the floor): the WAL must not fill it.
_WAL_LIMIT = 8 * 1024 * 1024
_WAL_FLOOR = 256 * 1024


_NO_CKPT_ON_CLOSE = 1006  # SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE


def _no_checkpoint_on_close(db: sqlite3.Connection) -> bool:
    """Tell SQLite not to checkpoint `db`'s WAL into the database as it closes; whether it could be told.
    Python 3.12 has `Connection.setconfig`; on CPython 3.11 `sqlite3_db_config` is called through
    ctypes with the connection's handle, the first field after the object's header."""
    setconfig = getattr(db, "setconfig", None)
    if setconfig is not None:
        setconfig(_NO_CKPT_ON_CLOSE, True)
        return True
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11) or sys.platform == "darwin":
        return False  # darwin: variadic arguments on arm64 do not travel as ctypes passes them
    try:
        import _sqlite3
        import ctypes

        config = ctypes.CDLL(_sqlite3.__file__).sqlite3_db_config
    except (ImportError, OSError, AttributeError):  # SQLite linked in without its symbols
        return False
    config.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    config.restype = ctypes.c_int
    handle = ctypes.c_void_p.from_address(id(db) + object.__basicsize__).value
    return config(handle, _NO_CKPT_ON_CLOSE, 1, None) == sqlite3.SQLITE_OK


# One row a response. Its owner (the tenant that made it: the `owner` its JSON says) is a column SQLite
# fills as the row is written, stored ahead of the response: another tenant's read is refused on the
# row's first bytes, the response never read. One table with one index, so a batched save writes
# about 1.3 pages of WAL a response (with a table of owners beside it, 2.3).
_RESPONSES_TABLE = (
    "CREATE TABLE {name} (id TEXT PRIMARY KEY, previous_response_id TEXT,"
    " owner TEXT AS (CASE WHEN json_valid(data) THEN json_extract(data, '$.owner') END) STORED,"
    " data TEXT NOT NULL)"
)
_GENERATED_COLUMNS = (3, 31, 0)  # the first SQLite with them


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA table_xinfo({table})")]  # xinfo: generated columns too


def _responses_table(db: sqlite3.Connection, where: str) -> None:
    """The responses' table as this version keeps it. A file of an earlier version (owners in a table
    of their own, or only in each response's JSON, which the owners' table was filled from) is moved
    over once, in one transaction: servers starting together wait for it, and find it done."""
    if "owner" in _columns(db, "responses"):
        return
    if sqlite3.sqlite_version_info < _GENERATED_COLUMNS:
        raise StoreError(
            where,
            f"SQLite {sqlite3.sqlite_version} has no generated columns",
            "use a Python whose sqlite3 module has SQLite 3.31 or later",
        )
    db.execute("BEGIN IMMEDIATE")
    try:
        columns = _columns(db, "responses")
        if not columns:
            db.execute(_RESPONSES_TABLE.format(name="responses"))
        elif "owner" not in columns:
            db.execute(_RESPONSES_TABLE.format(name="responses_moved"))
            db.execute(
                "INSERT INTO responses_moved (id, previous_response_id, data)"
                " SELECT id, previous_response_id, data FROM responses"
            )
            db.execute("DROP TABLE responses")
            db.execute("DROP TABLE IF EXISTS response_owners")
            db.execute("ALTER TABLE responses_moved RENAME TO responses")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


class SQLiteStore(ResponseStore):
    """Responses in a SQLite file: survives restarts, safe under concurrent requests and processes.

    The file is in WAL mode, its connections kept open between calls (a pool of this process's
    threads, one call a connection at a time).
    - `sync="normal"` (the default, SQLite's advice for WAL): a commit is written to the WAL before
      the call returns, not synced to the disk. A response survives the server crashing or being
      killed; a power cut or an OS crash may lose the last ones written (until a checkpoint syncs them).
    - `sync="full"`: every commit is synced to the disk before the call returns: a response
      survives a power cut too, for a disk sync per response.

    `busy_timeout`: seconds a call waits for a file locked by someone else before the store
    is unavailable (a 503), rather than hanging the request.

    After a full disk or an I/O error every kept connection is closed, and the next call opens
    new ones (a connection that met such an error can fail for good); the first write that then
    succeeds checkpoints the WAL back to nothing. A file replaced under the server (another file,
    or its WAL gone) is met the same way: its connections are not used again."""

    def __init__(
        self,
        path: str | os.PathLike[str] = DEFAULT_SQLITE_PATH,
        *,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        sync: str = "normal",
    ):
        if sync not in SQLITE_SYNC:
            raise ValueError(f"sync must be one of {', '.join(SQLITE_SYNC)}, not {sync!r}")
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self.sync = sync
        self._wal = Path(f"{self.path}-wal")
        self._lock = threading.Lock()  # writers, in turn
        self._pool_lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []  # for calls in threads, which wait for a locked file
        self._quick: list[sqlite3.Connection] = []  # for calls on the event loop, which do not
        self._generation = 0  # connections of an older generation are closed as they come back
        self._files: tuple[int, int, int | None] | None = None  # what this generation's connections opened
        self._replaced: set[int] = set()  # generations whose file was replaced under them
        self._parked: list[sqlite3.Connection] = []  # their connections, when they cannot be closed safely
        self._checkpoint_due = False
        self._checkpointing: asyncio.Future[None] | None = None
        self._batch: list[tuple[StoredResponse, asyncio.Future[None]]] = []  # puts the writer has yet to write
        self._writer: asyncio.Future[None] | None = None
        self._wal_limit = _WAL_LIMIT  # bytes of WAL past which a checkpoint starts: see _limit_for_room
        self._wal_written = 0  # the WAL's size after the writer's last batch: read once a batch, not once a save
        try:
            if self.path.parent != Path():
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._wal_limit = self._limit_for_room()
            db = self._connect()
            try:
                db.execute("PRAGMA journal_mode=WAL")
                _responses_table(db, os.fspath(path))
            finally:
                db.close()
        except (OSError, sqlite3.Error) as exc:
            reason = f"{exc.filename}: {exc.strerror}" if isinstance(exc, OSError) and exc.strerror else exc
            raise StoreError(
                os.fspath(path), reason, "check that it names a SQLite file in a folder you may write"
            ) from None

    def _connect(self) -> sqlite3.Connection:
        """A new connection to the file, set up as every call expects."""
        db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False)
        try:
            db.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
            db.execute(f"PRAGMA synchronous={self.sync.upper()}")
            db.execute(f"PRAGMA journal_size_limit={_WAL_LIMIT}")
            db.execute("PRAGMA wal_autocheckpoint=0")  # the store checkpoints in a thread, never on the event loop
        except BaseException:
            db.close()
            raise
        return db

    def _opened_files(self) -> tuple[int, int, int | None] | None:
        """The database file and its WAL as they are now (device, inode, WAL inode); None when gone."""
        try:
            main = os.stat(self.path)
        except OSError:
            return None
        try:
            wal: int | None = os.stat(self._wal).st_ino
        except OSError:
            wal = None
        return (main.st_dev, main.st_ino, wal)

    @contextmanager
    def connection(self, *, wait: bool = True) -> Iterator[sqlite3.Connection]:
        """A kept connection of this process, for one call at a time, in autocommit. With `wait=False`,
        one that does not wait for a file locked by another process: `_Busy` instead, at once."""
        files = self._opened_files()
        with self._pool_lock:
            if self._files is not None and files != self._files:  # replaced under us, or its WAL deleted
                self._retire(replaced=True)
            generation = self._generation
            idle = self._idle if wait else self._quick
            db = idle.pop() if idle else None
        if db is None:
            db = self._connect()
            if not wait:
                db.execute("PRAGMA busy_timeout=0")
        try:
            yield db
        except BaseException as exc:
            if db.in_transaction:
                with suppress(sqlite3.Error):  # a connection that cannot roll back is in doubt: closed below
                    db.execute("ROLLBACK")
            if _breaks_connections(exc):
                with self._pool_lock:
                    if generation == self._generation:
                        self._retire()
                        self._checkpoint_due = True
                self._close(db, generation)
                raise
            self._give(db, generation, wait)
            if not wait and getattr(exc, "sqlite_errorcode", 0) & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise _Busy() from exc
            raise
        self._give(db, generation, wait)

    def _give(self, db: sqlite3.Connection, generation: int, wait: bool) -> None:
        with self._pool_lock:
            if generation == self._generation and not db.in_transaction:
                if self._files is None:
                    self._files = self._opened_files()
                (self._idle if wait else self._quick).append(db)
                return
        self._close(db, generation)

    def _retire(self, *, replaced: bool = False) -> None:
        """Close the idle connections, and those in use as they come back (the pool's lock held)."""
        idle, self._idle, self._quick = self._idle + self._quick, [], []
        if replaced:
            self._replaced.add(self._generation)
        self._generation += 1
        self._files = None
        for db in idle:
            self._close(db, self._generation - 1)

    def _close(self, db: sqlite3.Connection, generation: int) -> None:
        """Close a connection. One to a file replaced since must not copy its WAL into the new file,
        as the last connection to close does; where SQLite cannot be told so, it stays open, unused."""
        if generation in self._replaced and not _no_checkpoint_on_close(db):
            self._parked.append(db)
            return
        db.close()

    async def aclose(self) -> None:
        """Close the kept connections (the server does as it stops); the last to close checkpoints the WAL."""
        checkpointing, self._checkpointing = self._checkpointing, None
        if checkpointing is not None and checkpointing.get_loop() is asyncio.get_running_loop():
            await asyncio.wait([checkpointing])
        with self._pool_lock:
            self._retire()

    async def _call(self, work: Callable[..., Any], *args: Any, syncs: bool = False) -> Any:
        """`work(*args)` on a kept connection. On the event loop when it cannot wait (no disk sync per
        commit: `syncs` and `sync="full"`; the file not locked by another process, nor by a thread's
        write): that costs less than handing it to a thread. Else in a thread, which may wait."""
        if not (syncs and self.sync == "full"):
            try:
                return work(*args, wait=False)
            except _Busy:
                pass
        return await asyncio.to_thread(work, *args)

    def _get(self, response_id: str, *, wait: bool = True) -> StoredResponse | None:
        with self.connection(wait=wait) as db:
            row = db.execute("SELECT data FROM responses WHERE id = ?", (response_id,)).fetchone()
        return None if row is None else StoredResponse.from_json(response_id, row[0])

    def _get_owned(self, response_id: str, owner: str, *, wait: bool = True) -> StoredResponse | None:
        # The owner is read before the response, from the row's first bytes: another tenant's is not read.
        with self.connection(wait=wait) as db:
            row = db.execute("SELECT data FROM responses WHERE id = ? AND owner = ?", (response_id, owner)).fetchone()
        return _owned(StoredResponse.from_json(response_id, row[0]) if row else None, owner)

    def _chain(self, response_id: str, *, wait: bool = True) -> list[StoredResponse]:
        sql = _CHAIN_SQL.format(table="responses", mark="?", limit=MAX_CHAIN)
        with self.connection(wait=wait) as db:
            rows = db.execute(sql, (response_id,)).fetchall()
        return _turns(rows)

    @contextmanager
    def _writing(self, *, wait: bool = True) -> Iterator[sqlite3.Connection]:
        """A connection to write on, in one transaction, in this process's turn. Writers queue here rather
        than on SQLite's lock; behind a locked file, not forever (without `wait`, not at all: `_Busy`)."""
        if not self._lock.acquire(timeout=self.busy_timeout if wait else 0):
            if not wait:
                raise _Busy()
            raise TimeoutError(f"no write turn within the busy timeout ({self.busy_timeout:g} s)")
        try:
            with self.connection(wait=wait) as db:
                db.execute("BEGIN IMMEDIATE")
                yield db
                db.execute("COMMIT")
        finally:
            self._lock.release()

    def _wal_size(self) -> int:
        try:
            return os.stat(self._wal).st_size
        except OSError:
            return 0

    async def _checkpoint_when_due(self, size: int | None = None) -> None:
        """Checkpoint the WAL in a thread (it syncs the disk) once it has grown past `_wal_limit` (see
        `_checkpoint`). Past four times that (another process's writes kept it from starting over), or
        after a disk error, writes wait for one that cuts it to nothing. `size`: the WAL's, when just read."""
        if size is None:
            size = self._wal_size()
        if not (self._checkpoint_due or size > self._wal_limit):
            return
        over = size > 4 * self._wal_limit
        if self._checkpointing is None or self._checkpointing.done():
            thorough = over or self._checkpoint_due
            self._checkpointing = asyncio.ensure_future(asyncio.to_thread(self._checkpoint, thorough))
        if over:
            await asyncio.shield(self._checkpointing)

    def _checkpoint(self, thorough: bool) -> None:
        """Copy the WAL into the database file so that it starts over. Most of it is copied while writes
        go on (a PASSIVE checkpoint, disk syncs included: the long part); then what was written
        meanwhile, with this process's writes held, so that the next write starts the WAL over (RESTART:
        writes that never pause never let a PASSIVE one finish). `thorough` (past four times the limit,
        or after a disk error): all of it with writes held, the WAL cut to nothing (TRUNCATE)."""
        if not thorough:
            with suppress(_Busy, sqlite3.Error), self.connection(wait=False) as db:  # a later write tries again
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        if not self._lock.acquire(timeout=self.busy_timeout):  # no write of this process meanwhile
            return
        try:
            with self.connection(wait=False) as db:  # readers in the WAL now: a later write tries again
                busy, _, _ = db.execute(f"PRAGMA wal_checkpoint({'TRUNCATE' if thorough else 'RESTART'})").fetchone()
            if thorough:
                self._checkpoint_due = bool(busy)
        except (_Busy, sqlite3.Error):
            pass  # a later write tries again
        finally:
            self._lock.release()
        self._wal_limit = self._limit_for_room()

    def _limit_for_room(self) -> int:
        """`_WAL_LIMIT`, or a quarter of the room on the file's disk (the WAL's own bytes counted in) when
        that is less, down to `_WAL_FLOOR`."""
        try:
            room = shutil.disk_usage(self.path.parent).free + self._wal_size()
        except OSError:
            return _WAL_LIMIT
        return max(_WAL_FLOOR, min(_WAL_LIMIT, room // 4))

    def _put(self, records: list[StoredResponse], *, wait: bool = True) -> None:
        rows = [(record.id, record.previous_response_id, record.to_json()) for record in records]
        with self._writing(wait=wait) as db:  # the owner: SQLite reads it from the JSON
            db.executemany("INSERT OR REPLACE INTO responses (id, previous_response_id, data) VALUES (?, ?, ?)", rows)

    def _batched(self, record: StoredResponse) -> asyncio.Future[None]:
        """`record`, saved by the store's writer with the others asked for meanwhile, in one transaction
        (a commit costs more than a row): the future is its answer."""
        saved = asyncio.get_running_loop().create_future()
        self._batch.append((record, saved))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._write_batches())
        return saved

    async def _write_batches(self) -> None:
        """Write what `_batched` gathered until nothing waits, here on the event loop: with no disk
        sync per commit a batch costs less than a thread's round trip (on a busy machine a thread
        woken for each batch held the loop back about 2 ms a batch). A file locked by another process,
        or by a checkpoint cutting the WAL, is waited for in a thread while the next batch gathers."""
        while self._batch:
            batch, self._batch = self._batch, []
            records = [record for record, _ in batch]
            try:
                try:
                    self._put(records, wait=False)
                except _Busy:
                    await asyncio.to_thread(self._put, records)
            except Exception as exc:
                _settle(batch, exc)
            else:
                _settle(batch, None)
            self._wal_written = self._wal_size()

    def _delete(self, response_id: str, *, wait: bool = True) -> bool:
        with self._writing(wait=wait) as db:
            return db.execute("DELETE FROM responses WHERE id = ?", (response_id,)).rowcount > 0

    def _expire(self, before: float) -> int:
        with self._writing() as db:
            sql = "DELETE FROM responses WHERE json_extract(data, '$.response.created_at') < ?"
            return db.execute(sql, (before,)).rowcount

    async def expire(self, before: float) -> int:
        """Forget the responses created before `before` (a Unix time), in one statement; how many."""
        with unavailable_on("expiring old responses", sqlite_unavailable):
            return await asyncio.to_thread(self._expire, before)

    async def get(self, response_id: str) -> StoredResponse | None:
        with unavailable_on(f"reading {response_id}", sqlite_unavailable):
            return await self._call(self._get, response_id)

    async def get_owned(self, response_id: str, owner: str | None) -> StoredResponse | None:
        """The response if `owner` made it, else None: another tenant's is answered from its owner alone."""
        if owner is None:
            return None
        with unavailable_on(f"reading {response_id}", sqlite_unavailable):
            return await self._call(self._get_owned, response_id, owner)

    async def chain(self, response_id: str) -> list[StoredResponse]:
        """The chain from `response_id` back to its first turn (or the first one missing), in one query."""
        with unavailable_on(f"reading {response_id}", sqlite_unavailable):
            return await self._call(self._chain, response_id)

    async def delete(self, response_id: str) -> bool:
        deleted = await self._call(self._delete, response_id, syncs=True)
        await self._checkpoint_when_due()
        return deleted

    async def put(self, record: StoredResponse) -> None:
        with unavailable_on(f"saving {record.id}", sqlite_unavailable):
            if self.sync == "full":  # a disk sync per commit: in a thread
                await asyncio.to_thread(self._put, [record])
                await self._checkpoint_when_due()
            else:
                await self._batched(record)
                await self._checkpoint_when_due(self._wal_written)


def _settle(batch: list[tuple[StoredResponse, asyncio.Future[None]]], error: BaseException | None) -> None:
    for _, saved in batch:
        if saved.done():  # its request was cancelled meanwhile
            continue
        if error is None:
            saved.set_result(None)
        else:
            saved.set_exception(error)


class _Busy(Exception):
    """A call that may not wait found the file locked: it is made again in a thread, which waits."""


DEFAULT_POOL_SIZE = 10  # connections per process: keep size x processes under the server's max_connections
DEFAULT_POOL_TIMEOUT = 5.0  # seconds a request waits for a free connection before the store is unavailable
DEFAULT_CONNECT_TIMEOUT = 5.0  # seconds to open a connection
DEFAULT_STATEMENT_TIMEOUT = 5.0  # seconds one statement may run, enforced by PostgreSQL and here alike


# Who made each response, beside it: another tenant's read is answered without reading the response.
# A table from before it gets the column filled from the responses' own `owner`, once.
_PG_OWNER_COLUMN = """DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                 AND table_name = 'orspec_responses' AND column_name = 'owner') THEN
    ALTER TABLE orspec_responses ADD COLUMN owner TEXT;
    UPDATE orspec_responses SET owner = data::jsonb ->> 'owner' WHERE data::jsonb ? 'owner';
  END IF;
END $$"""

# Each response's input and output items, one row each in order (its `inputs` input items first),
# with its owner, apart from the response object: continuing a chain reads items, never responses.
#
# A chain is laid out in threads so that it is read in ranges, not a turn at a time. A response has a
# place, (`thread`, `depth`): its depth in its chain, and the thread of the response it continues when
# it is the first to continue it; otherwise (the first turn, or a second answer to the same turn) a
# thread of its own, named by its own id. A chain is then a few ranges of threads (one per fork),
# each read in one index range; its items are keyed by the place of their response.
_PG_ITEMS_TABLE = (
    "CREATE TABLE IF NOT EXISTS orspec_response_items ("
    " thread TEXT NOT NULL, depth INTEGER NOT NULL, position INTEGER NOT NULL, owner TEXT, item TEXT NOT NULL,"
    " PRIMARY KEY (thread, depth, position))"
)

# A table from before holds each whole record in `data`: once, in the transaction that creates the
# tables, each response gets its place (a thread of its own, at its depth), its items move to the
# items table, `data` keeps only the response, and `inputs` says where the input items end. NOT NULL:
# a server of the layout before, still running, fails to save rather than save a record misread.
# `json`, not `jsonb`: each item keeps its text byte for byte.
_PG_ITEMS_APART = f"""DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                 AND table_name = 'orspec_responses' AND column_name = 'inputs') THEN
    ALTER TABLE orspec_responses ADD COLUMN inputs INTEGER, ADD COLUMN thread TEXT, ADD COLUMN depth INTEGER;
    WITH RECURSIVE placed(id, depth) AS (
      SELECT r.id, 0 FROM orspec_responses r WHERE r.previous_response_id IS NULL
        OR NOT EXISTS (SELECT 1 FROM orspec_responses p WHERE p.id = r.previous_response_id)
      UNION ALL SELECT r.id, placed.depth + 1 FROM orspec_responses r JOIN placed ON r.previous_response_id = placed.id
      WHERE placed.depth <= {MAX_CHAIN})
    UPDATE orspec_responses r SET thread = r.id, depth = placed.depth FROM placed WHERE placed.id = r.id;
    UPDATE orspec_responses SET thread = id, depth = 0 WHERE thread IS NULL;  -- a cycle, or past MAX_CHAIN
    INSERT INTO orspec_response_items (thread, depth, position, owner, item)
      SELECT r.thread, r.depth, e.n - 1, r.owner, e.item::text
      FROM orspec_responses r, json_array_elements(r.data::json -> 'input') WITH ORDINALITY AS e(item, n)
      UNION ALL
      SELECT r.thread, r.depth, json_array_length(r.data::json -> 'input') + e.n - 1, r.owner, e.item::text
      FROM orspec_responses r, json_array_elements(r.data::json -> 'output') WITH ORDINALITY AS e(item, n);
    UPDATE orspec_responses SET inputs = json_array_length(data::json -> 'input'), data = (data::json -> 'response')::text;
    ALTER TABLE orspec_responses ALTER COLUMN inputs SET NOT NULL, ALTER COLUMN thread SET NOT NULL,
      ALTER COLUMN depth SET NOT NULL;
    CREATE UNIQUE INDEX orspec_responses_place ON orspec_responses (thread, depth);
  END IF;
END $$"""

# A response's items as one text, their JSON joined by commas ('' for none).
_PG_ITEMS_OF = (
    "coalesce((SELECT string_agg(i.item, ',' ORDER BY i.position) FROM orspec_response_items i"
    " WHERE i.thread = {row}.thread AND i.depth = {row}.depth), '')"
)
_PG_GET = (
    "SELECT r.previous_response_id, r.owner, r.inputs, r.data, "
    + _PG_ITEMS_OF.format(row="r")
    + " FROM orspec_responses r WHERE r.id = %s"
)
# The chain from one response back, newest first, a turn at a time (for `chain`, which returns
# whole records); `depth` bounds a cycle no honest client can make, and a chain past MAX_CHAIN.
_PG_CHAIN = (
    "WITH RECURSIVE chain(id, previous_response_id, owner, inputs, data, thread, depth, n) AS ("
    " SELECT id, previous_response_id, owner, inputs, data, thread, depth, 0 FROM orspec_responses WHERE id = %s"
    " UNION ALL SELECT r.id, r.previous_response_id, r.owner, r.inputs, r.data, r.thread, r.depth, chain.n + 1"
    f" FROM orspec_responses r JOIN chain ON r.id = chain.previous_response_id WHERE chain.n <= {MAX_CHAIN})"
    " SELECT c.id, c.previous_response_id, c.owner, c.inputs, c.data, "
    + _PG_ITEMS_OF.format(row="c")
    + " FROM chain c ORDER BY c.n"
)
# What continuing a response needs, in one statement: its chain's ranges of threads (`parts`: from
# the response's own back, each to the turn the next continues), the turns in them that count (made
# by `owner`, when one is given), how far back they are linked turn to turn (`start`: the oldest turn
# that counts; a turn missing or another tenant's stops the chain there), and their items, oldest
# first, as one text. The responses themselves are never read.
_PG_MINE = "(%(owner)s::text IS NULL OR {row}.owner = %(owner)s)"
_PG_CONVERSATION = (
    "WITH RECURSIVE parts(thread, upto) AS ("
    " SELECT thread, depth FROM orspec_responses r WHERE id = %(id)s AND " + _PG_MINE.format(row="r") + ""
    " UNION ALL SELECT before.thread, before.depth FROM parts"
    " JOIN orspec_responses first ON first.id = parts.thread"
    " JOIN orspec_responses before ON before.id = first.previous_response_id WHERE before.depth < parts.upto),"
    " turns AS (SELECT r.depth, r.previous_response_id, lead(r.id) OVER (ORDER BY r.depth DESC) AS linked"
    " FROM parts JOIN orspec_responses r ON r.thread = parts.thread AND r.depth <= parts.upto"
    " WHERE " + _PG_MINE.format(row="r") + "),"
    " start AS (SELECT coalesce(max(depth) FILTER (WHERE previous_response_id IS DISTINCT FROM linked), min(depth))"
    " AS depth FROM turns)"
    " SELECT (SELECT count(*) FROM turns, start WHERE turns.depth >= start.depth),"
    " (SELECT turns.previous_response_id FROM turns, start WHERE turns.depth = start.depth),"
    " coalesce((SELECT string_agg(i.item, ',' ORDER BY i.depth, i.position) FROM parts"
    " JOIN orspec_response_items i ON i.thread = parts.thread AND i.depth <= parts.upto, start"
    " WHERE i.depth >= start.depth AND " + _PG_MINE.format(row="i") + "), '')"
)
# A response saved in one statement (autocommit: whole or not at all), at its place, its items
# beside it. Saved again (a background response ending), it keeps its place, and its items are
# replaced, those past the new count dropped. Two answers to the same turn saved at once may both
# take its thread's next place: the one that loses is saved again, in a thread of its own.
_PG_PUT = (
    "WITH previous AS (SELECT thread, depth FROM orspec_responses WHERE id = %(previous)s),"
    " saved_before AS (SELECT thread, depth FROM orspec_responses WHERE id = %(id)s),"
    " place AS (SELECT coalesce((SELECT thread FROM saved_before), (SELECT p.thread FROM previous p WHERE NOT EXISTS"
    " (SELECT 1 FROM orspec_responses x WHERE x.thread = p.thread AND x.depth = p.depth + 1)), %(id)s) AS thread,"
    " coalesce((SELECT depth FROM saved_before), (SELECT depth + 1 FROM previous), 0) AS depth),"
    " saved AS (INSERT INTO orspec_responses (id, previous_response_id, owner, inputs, data, thread, depth)"
    " SELECT %(id)s, %(previous)s, %(owner)s, %(inputs)s, %(data)s, thread, depth FROM place"
    " ON CONFLICT (id) DO UPDATE SET previous_response_id = EXCLUDED.previous_response_id, owner = EXCLUDED.owner,"
    " inputs = EXCLUDED.inputs, data = EXCLUDED.data),"
    " dropped AS (DELETE FROM orspec_response_items i USING place"
    " WHERE i.thread = place.thread AND i.depth = place.depth AND i.position >= %(count)s)"
    " INSERT INTO orspec_response_items (thread, depth, position, owner, item)"
    " SELECT place.thread, place.depth, e.n - 1, %(owner)s, e.item::text"
    " FROM place, json_array_elements(%(items)s::json) WITH ORDINALITY AS e(item, n)"
    " ON CONFLICT (thread, depth, position) DO UPDATE SET owner = EXCLUDED.owner, item = EXCLUDED.item"
)
# Forgetting responses forgets their items, in the same statement; how many responses went.
_PG_FORGET = (
    "WITH gone AS (DELETE FROM orspec_responses WHERE {which} RETURNING thread, depth),"
    " items AS (DELETE FROM orspec_response_items i USING gone WHERE i.thread = gone.thread AND i.depth = gone.depth)"
    " SELECT count(*) FROM gone"
)


def _pg_record(response_id: str, previous: str | None, owner: str | None, inputs: int, data: str, items: str):
    """A stored response from its row and its items (their JSON joined by commas)."""
    listed = loads(f"[{items}]")
    size = len(items) + len(data)
    return StoredResponse(response_id, previous, listed[:inputs], listed[inputs:], loads(data), owner=owner, size=size)


class PostgresStore(ResponseStore):
    """Responses in PostgreSQL (needs `psycopg` and `psycopg_pool`), over a bounded pool of connections.

    `pool_size` connections at most per process; a call that finds none free within
    `pool_timeout` seconds, or whose connection or statement outlasts its timeout (a frozen
    server never says so itself), makes the store unavailable: a 503, never a hang."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        pool_timeout: float = DEFAULT_POOL_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT,
    ):
        try:
            import psycopg
            import psycopg_pool
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise RuntimeError(
                "PostgresStore needs the `psycopg` and `psycopg_pool` packages"
                " (pip install 'openresponses-runtime[postgres]')"
            ) from exc
        self._psycopg, self._psycopg_pool = psycopg, psycopg_pool
        self.url = url
        self.pool_size, self.pool_timeout = pool_size, pool_timeout
        self.statement_timeout = statement_timeout
        # The URL's own `options` (a search_path, say) are kept: keyword arguments replace them.
        options = psycopg.conninfo.conninfo_to_dict(url).get("options") or ""
        self._connection = {
            "autocommit": True,
            "connect_timeout": max(1, round(connect_timeout)),  # libpq counts whole seconds
            "options": f"{options} -c statement_timeout={int(statement_timeout * 1000)}".strip(),
        }
        self._pools: dict[asyncio.AbstractEventLoop, Any] = {}  # a pool serves the event loop it was opened in
        self._abandoned: set[asyncio.Task] = set()  # statements past their deadline, being cancelled
        try:
            self.create_tables(
                "orspec_responses",
                "CREATE TABLE IF NOT EXISTS orspec_responses ("
                " id TEXT PRIMARY KEY, previous_response_id TEXT, data TEXT NOT NULL)",
                _PG_OWNER_COLUMN,
                _PG_ITEMS_TABLE,
                _PG_ITEMS_APART,
            )
        except psycopg.Error as exc:
            check = (
                "check that PostgreSQL runs there and that the URL's host, port, database, user and password are right"
            )
            raise StoreError(url, exc, check) from None

    def create_tables(self, lock: str, *statements: str) -> None:
        """Runs `statements` (each a CREATE TABLE IF NOT EXISTS) in one transaction, on a connection
        of its own with the store's connect and statement timeouts.

        Servers starting together (workers, replicas) race on CREATE TABLE IF NOT EXISTS, which
        PostgreSQL does not make atomic: an advisory lock named `lock`, held to the end of the
        transaction (the block), orders them."""
        with self._psycopg.connect(self.url, **{**self._connection, "autocommit": False}) as db:
            db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (lock,))
            for statement in statements:
                db.execute(statement)

    def _unavailable(self, exc: Exception) -> bool:
        # Connection lost or refused, server shutting down, disk full, lock or statement timeouts:
        # psycopg files them all under OperationalError (SQLSTATE classes 08, 53, 55P03, 57, 58);
        # the pool's PoolTimeout (no free connection in time) is one too. TimeoutError: our own deadline.
        return isinstance(exc, self._psycopg.OperationalError | TimeoutError)

    async def open(self) -> None:
        """Opens this event loop's pool; the server does as it starts, and `aclose()` as it stops.

        Until then, each call has a connection of its own, with the same timeouts: a script's
        `asyncio.run(store.get(...))` leaves no pool behind in a loop that is gone."""
        loop = asyncio.get_running_loop()
        if loop in self._pools:
            return
        for other in [other for other in self._pools if other.is_closed()]:
            del self._pools[other]
        pool = self._psycopg_pool.AsyncConnectionPool(
            self.url,
            min_size=1,
            max_size=self.pool_size,
            timeout=self.pool_timeout,
            # Retries of a lost server back off, but never past this: a restart is noticed in seconds.
            reconnect_timeout=self.pool_timeout,
            kwargs=self._connection,
            # A connection the server dropped (a restart) is replaced before use, not failed on.
            check=self._psycopg_pool.AsyncConnectionPool.check_connection,
            open=False,
            name="orspec-responses",
        )
        self._pools[loop] = pool
        await pool.open(wait=False)  # a store down at start is a 503 per request, not a server that will not start

    async def aclose(self) -> None:
        """Closes the connections of the pool this event loop uses (the server's, when it stops)."""
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.close(timeout=self.pool_timeout)

    def pool_stats(self) -> dict[str, int]:
        """Connections of the pools open in this process, by state (`idle`, `busy`), and requests waiting."""
        stats = {"idle": 0, "busy": 0, "waiting": 0}
        for pool in list(self._pools.values()):
            counts = pool.get_stats()
            size, idle = counts.get("pool_size", 0), counts.get("pool_available", 0)
            stats["idle"] += idle
            stats["busy"] += size - idle
            stats["waiting"] += counts.get("requests_waiting", 0)
        return stats

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        """A connection in autocommit: the loop's pooled one once `open()`, else one for this call."""
        pool = self._pools.get(asyncio.get_running_loop())
        if pool is not None:
            async with pool.connection() as db:
                yield db
        else:
            async with await self._psycopg.AsyncConnection.connect(self.url, **self._connection) as db:
                yield db

    async def run(self, work: Callable[[Any], Awaitable[Any]]) -> Any:
        """`work(connection)`, answered within the store's deadline whatever PostgreSQL does."""

        async def on_a_connection() -> Any:
            async with self.connection() as db:
                return await work(db)

        # PostgreSQL ends a slow statement itself, and the pool a long wait; a server that is
        # frozen or cut off answers neither the statement nor the pool's check of a connection.
        # Then the request is answered now, and the statement is left to psycopg to cancel in the
        # background (seconds), its connection counted against the pool until then.
        task = asyncio.ensure_future(on_a_connection())
        try:
            return await asyncio.wait_for(asyncio.shield(task), self.pool_timeout + self.statement_timeout)
        except TimeoutError:
            self._abandoned.add(task)
            task.add_done_callback(self._forget)
            task.cancel()
            raise

    async def _execute(self, sql: str, params: tuple[Any, ...]) -> Any:
        """Runs one statement; its rows, or the cursor when it returns none."""

        async def statement(db: Any) -> Any:
            cur = await db.execute(sql, params)
            return await cur.fetchall() if cur.description else cur

        return await self.run(statement)

    def _forget(self, task: asyncio.Task) -> None:
        self._abandoned.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: the request that ran it has had its answer

    async def get(self, response_id: str) -> StoredResponse | None:
        with unavailable_on(f"reading {response_id}", self._unavailable):
            rows = await self._execute(_PG_GET, (response_id,))
        return _pg_record(response_id, *rows[0]) if rows else None

    async def chain(self, response_id: str) -> list[StoredResponse]:
        """The chain from `response_id` back to its first turn (or the first one missing), in one query."""
        with unavailable_on(f"reading {response_id}", self._unavailable):
            rows = await self._execute(_PG_CHAIN, (response_id,))
        return [_pg_record(*row) for row in rows]

    async def conversation(self, response_id: str, owner: str | None = None) -> Conversation:
        """The items of the chain up to `response_id`, in one query and one parse, the responses unread."""
        with unavailable_on(f"reading {response_id}", self._unavailable):
            rows = await self._execute(_PG_CONVERSATION, {"id": response_id, "owner": owner})
        turns, missing, items = rows[0]
        return Conversation(loads(f"[{items}]"), turns, missing if turns else response_id, len(items))

    async def get_owned(self, response_id: str, owner: str | None) -> StoredResponse | None:
        """The response if `owner` made it, else None: another tenant's row is passed over on its owner
        column, its response never read from the table's storage."""
        if owner is None:
            return None
        with unavailable_on(f"reading {response_id}", self._unavailable):
            rows = await self._execute(_PG_GET + " AND r.owner = %s", (response_id, owner))
        return _owned(_pg_record(response_id, *rows[0]) if rows else None, owner)

    async def put(self, record: StoredResponse) -> None:
        items = [*record.input, *record.output]
        data = record.response_json if record.response_json is not None else dumps(record.response)
        values = {
            "id": record.id,
            "previous": record.previous_response_id,
            "owner": record.owner,
            "inputs": len(record.input),
            "data": data.decode(),
            "count": len(items),
            "items": dumps(items).decode(),
        }
        with unavailable_on(f"saving {record.id}", self._unavailable):
            try:
                await self._execute(_PG_PUT, values)
            except self._psycopg.errors.UniqueViolation:  # another answer to the same turn took the place
                await self._execute(_PG_PUT, values)

    async def delete(self, response_id: str) -> bool:
        rows = await self._execute(_PG_FORGET.format(which="id = %s"), (response_id,))
        return rows[0][0] > 0

    async def expire(self, before: float) -> int:
        """Forget the responses created before `before` (a Unix time) and their items, in one statement; how many."""
        which = "(data::jsonb ->> 'created_at')::float8 < %s"
        with unavailable_on("expiring old responses", self._unavailable):
            rows = await self._execute(_PG_FORGET.format(which=which), (before,))
        return rows[0][0]


def open_store(
    url: str | os.PathLike[str] | None = None,
    *,
    timeout: float | None = None,
    pool_size: int | None = None,
    sync: str | None = None,
) -> ResponseStore:
    """A store from a URL: `memory:`, `postgresql://...`, `sqlite:///path` or a plain file path.

    With no URL: `$ORSPEC_STORE`, else a SQLite file `orspec-responses.sqlite3` in the working directory.
    `timeout`: seconds before a store that does not answer is unavailable (SQLite's busy timeout;
    PostgreSQL's connect, statement and pool-wait timeouts), 5 by default. `pool_size`: PostgreSQL
    connections per process, 10 by default. `sync`: a SQLite file's `normal` (default) or `full`
    (see `SQLiteStore`); PostgreSQL syncs as its server's `synchronous_commit` says.
    """
    if url is None:
        url = os.environ.get("ORSPEC_STORE") or DEFAULT_SQLITE_PATH
    text = os.fspath(url)
    if text in ("memory", "memory:", ":memory:"):
        return MemoryStore()
    if text.startswith(("postgresql://", "postgres://")):
        options: dict[str, Any] = {} if pool_size is None else {"pool_size": pool_size}
        if timeout is not None:
            options.update(pool_timeout=timeout, connect_timeout=timeout, statement_timeout=timeout)
        return PostgresStore(text, **options)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    options = {} if timeout is None else {"busy_timeout": timeout}
    return SQLiteStore(text, **options, sync=sync or "normal")
