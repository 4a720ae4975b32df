"""Background mode: a response the server runs in a task of its own, for clients to poll, cancel and resume.

`create` with `background: true` answers at once, the response `in_progress`; the provider runs
in a task the server owns, not the request, so a client that leaves stops nothing. With
`stream: true` the create call follows the task's events as they come, and the events are kept in
the store (`runs`), a batch every `FLUSH_SECONDS`, so that
`GET /responses/{id}?stream=true&starting_after=N` replays them after N, then follows the live ones,
with the same sequence numbers and bytes, from any instance on the store.

Each task holds a lease in the store, renewed every `POLL_SECONDS`; the renewal also reads
whether another instance asked to cancel, so a cancel reaches the task within about that much.
A run whose lease lapsed (its process died) is failed, with an error, by whichever instance
touches it first (any background operation sweeps all lapsed runs once per process, too).
The lease lasts `$ORSPEC_LEASE_SECONDS` (default 30).

With `create_app(retention=seconds)` (`--retention`; off by default), stored responses older than
that are forgotten, with their runs and kept frames, by a sweep in a task of its own every quarter
of the retention (at most a minute): one statement per table, so no request waits for it.

A cancelled response ends `cancelled` and its provider's generator is closed; its stream ends
after the last event made, with `[DONE]` (the spec has no event for a cancel).

A run holds one of the server's stream slots (`streams`) from before it is saved until its task
ends, however it ends; beyond the cap the create call is refused (503 `too_many_streams`) and
nothing is stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cached_property
from typing import Any

from starlette.responses import Response
from starlette.types import ASGIApp

from .asgi import event_stream
from .auth import current_tenant
from .emitter import Emitter, ToolPolicy
from .errors import InvalidRequest, OpenResponsesError, ServerError
from .ids import new_id
from .runs import Run, runs_for
from .steps import ProviderRequest
from .store import ResponseStore, StoredResponse
from .streams import Streams
from .turns import Turns
from .wire import DONE_FRAME, dumps, sse_frame

__all__ = ["BackgroundRuns"]

log = logging.getLogger("openresponses_runtime.server.background")

FLUSH_SECONDS = 0.1  # how often a streamed run's new events are written to the store, in one batch
POLL_SECONDS = 0.25  # how often a task renews its lease and reads whether it was cancelled
FOLLOW_SECONDS = 0.05  # how often a stream of another instance's run reads the store for new events


def lease_seconds() -> float:
    return float(os.environ.get("ORSPEC_LEASE_SECONDS") or 30)


class _Live:
    """A run this process owns: its task, its frames so far, and a wake-up for those who follow them."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.done = False
        self.changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.cancelled = False  # by a client, as opposed to the server shutting down
        self.abandoned = False  # deleted, or ended by another instance: nothing more of it is kept
        self.settling = False  # the response has ended; what is left (its last frames, the ledger) must finish

    def cancel(self) -> None:
        self.cancelled = True
        self._stop()

    def abandon(self) -> None:
        self.abandoned = True
        self._stop()

    def _stop(self) -> None:
        if self.task is not None and not self.settling:  # too late: it ended as it was, and says so
            self.task.cancel()

    def add(self, frames: list[bytes]) -> None:
        self.frames.extend(frames)
        self.wake()

    def wake(self) -> None:
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()


class BackgroundRuns:
    """The server's background runs: each a task of this process that drives a turn (`turns`) under
    one of the server's stream slots (`streams`), with a lease and its events kept in the store."""

    def __init__(self, turns: Turns, streams: Streams, retention: float | None = None):
        self.retention = retention or None  # seconds stored responses and run frames are kept; None: for ever
        self.turns = turns
        self.store: ResponseStore = turns.store
        self.streams = streams
        self.instance = new_id("instance")
        self.live: dict[str, _Live] = {}
        self.swept = False  # whether this process has failed the runs whose lease lapsed

    @cached_property
    def runs(self) -> Any:
        """The ledger of runs, in the store's database; made at first use (it creates its tables)."""
        return runs_for(self.store)

    @asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """The app's lifespan: runs whose process died are failed as it starts, and its own runs as it stops
        (they cannot finish without it, and an instance that shuts down never renews their lease again).
        A store with connections to keep (PostgreSQL's pool) opens them here and closes them as it stops."""
        try:
            await self.store.open()
            await self.runs_settled()
        except Exception as exc:  # the store is down: the server starts all the same, and answers 503 until it is back
            log.error("the response store is not ready as the server starts (%s); requests get 503 until it is", exc)
        sweeper = asyncio.create_task(self._sweep()) if self.retention else None
        try:
            yield
        finally:
            if sweeper is not None:
                sweeper.cancel()
            tasks = [live.task for live in self.live.values() if live.task is not None]
            for task in tasks:
                task.cancel()  # not `live.cancel()`: no client asked, so the response ends `failed`
            if tasks:
                await asyncio.wait(tasks, timeout=10)
            await self.store.aclose()

    async def _sweep(self) -> None:
        """Forget stored responses older than `retention`, and the runs and frames of those gone, every
        quarter of it (a minute at most): in a task of its own, each sweep one statement per table,
        so requests never wait for it."""
        store = self.store
        while getattr(store, "wrapped", None) is not None:  # a store watched (observability) is still its kind
            store = store.wrapped
        expire = getattr(store, "expire", None)
        if expire is None:
            log.warning("--retention: the response store %s cannot expire responses; none is", type(store).__name__)
            return
        every = min(max(self.retention / 4, 1.0), 60.0)
        while True:
            try:
                gone = await expire(time.time() - self.retention)
                await self.runs.orphans(self._stored)
                if gone:
                    log.info("retention: %d stored responses expired", gone)
            except Exception as exc:  # the store is down: the next sweep tries again
                log.error("retention: sweeping expired responses failed: %s", exc)
            await asyncio.sleep(every)

    async def _stored(self, response_id: str) -> bool:
        return await self.store.get(response_id) is not None

    async def runs_settled(self) -> Any:
        """The ledger, once this process has failed the runs whose lease lapsed (the first call only)."""
        runs = self.runs
        if not self.swept:
            self.swept = True
            for response_id in await runs.lapsed():
                await self.fail_lapsed(response_id)
        return runs

    async def run_of(self, response_id: str) -> Run | None:
        """The response's background run, if it had one; one whose owner died is failed first."""
        runs = await self.runs_settled()
        run = await runs.get(response_id)
        if run is not None and run.lapsed and response_id not in self.live:  # a run of its own is alive, if late
            await self.fail_lapsed(response_id)
            run = await runs.get(response_id)
        return run

    async def start_background(
        self,
        data: dict[str, Any],
        response: dict[str, Any],
        request: ProviderRequest,
        own_input: list[dict],
        policy: ToolPolicy,
        seal: Any,
        headers: list[tuple[str, str]],
    ) -> ASGIApp:
        if response.get("store") is False:
            raise InvalidRequest(
                "`background: true` needs the response stored, to be polled and cancelled; drop `store: false`.",
                code="invalid_value",
                param="store",
            )
        stream = bool(data.get("stream"))
        emitter = Emitter(response, policy, check=self.turns.debug, events=stream, frames=stream, seal=seal)
        answer = dumps(response)  # as it is now: in_progress, before the task changes it
        tenant = current_tenant()
        release = self.streams.take(tenant and tenant.owner)  # beyond the cap: a 503 before anything is stored
        try:
            await self.turns.save(response, own_input)
            runs = await self.runs_settled()
            await runs.begin(response["id"], self.instance, stream, lease_seconds())
        except BaseException:
            release()
            raise
        live = self.live[response["id"]] = _Live()
        live.task = asyncio.create_task(self._drive(emitter, request, own_input, live, stream))
        live.task.add_done_callback(lambda _: release())  # a task cancelled before it began runs no `finally`
        if stream:
            return event_stream(self.follow(response["id"], -1), headers)
        return Response(answer, media_type="application/json", headers=dict(headers))

    async def _drive(
        self, emitter: Emitter, request: ProviderRequest, own_input: list[dict], live: _Live, stream: bool
    ) -> None:
        response_id = emitter.response["id"]
        runs = self.runs

        async def deliver(frames: list[bytes]) -> None:
            live.add(frames)

        ending = asyncio.Event()
        keeper = asyncio.create_task(self._keep(response_id, live, ending)) if stream else None
        watch = asyncio.create_task(self._watch(response_id, live))
        try:
            try:
                steps, first = await self.turns.first_step(request)
            except OpenResponsesError as exc:
                await deliver(emitter.start() + emitter.fail(exc))
                await self.turns.save(emitter.response, own_input)
            else:
                await self.turns.run(emitter, steps, first, own_input, deliver)
        except asyncio.CancelledError:
            if live.abandoned:
                pass
            elif not live.cancelled:  # the server shuts down: the response cannot finish
                await deliver(emitter.fail(_lost("The server running this background response shut down.")))
                await self.turns.save(emitter.response, own_input)
            elif await runs.get(response_id) is not None:  # not deleted meanwhile
                await self.turns.save({**emitter.preview(), "status": "cancelled"}, own_input)
        except Exception:
            log.exception("background response %s failed", response_id)
            await deliver(emitter.fail(ServerError("The server failed running this background response.")))
            await self.turns.save(emitter.response, own_input)
        finally:
            live.settling = True
            watch.cancel()
            kept = not live.abandoned and await runs.get(response_id) is not None  # not deleted meanwhile
            if keeper is not None and kept:
                ending.set()
                await keeper  # with the last frames written
            elif keeper is not None:
                keeper.cancel()
            if kept:
                await runs.end(response_id)
            live.done = True
            live.wake()
            self.live.pop(response_id, None)

    async def _keep(self, response_id: str, live: _Live, ending: asyncio.Event) -> None:
        """Write the run's new frames to the store every `FLUSH_SECONDS`, however many there are, and once more
        when `ending` is set. The run never waits for the store: a slow write only makes the next batch bigger."""
        saved = 0
        while True:
            ended = ending.is_set()
            if not ended:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ending.wait(), FLUSH_SECONDS)
            frames = live.frames[saved:]
            if frames:
                try:
                    await self.runs.append(response_id, saved, frames)
                    saved += len(frames)
                except Exception:  # the store is down: tried again with the next batch
                    log.exception("keeping the events of %s failed", response_id)
            if ended:
                return

    async def _watch(self, response_id: str, live: _Live) -> None:
        """Renew the run's lease; stop the task when another instance cancelled it, deleted it or ended it."""
        lease = lease_seconds()
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                cancel = await self.runs.renew(response_id, lease)
            except Exception:
                log.exception("renewing the lease of %s failed", response_id)
                continue
            if cancel is None:  # deleted, or failed by another instance that found its lease lapsed
                live.abandon()
                return
            if cancel:
                live.cancel()
                return

    async def follow(self, response_id: str, after: int) -> AsyncIterator[bytes]:
        """The run's SSE frames after sequence number `after`, as they come, then `[DONE]`."""
        live = self.live.get(response_id)
        if live is not None:  # this process runs it: its frames are at hand
            index = after + 1
            while True:
                if index < len(live.frames):
                    frames = live.frames[index:]
                    index += len(frames)
                    yield b"".join(frames)
                elif live.done:
                    break
                else:
                    await live.changed.wait()
            yield DONE_FRAME
            return
        while True:  # another instance runs it, or ran it: the store
            run = await self.run_of(response_id)
            frames = await self.runs.frames(response_id, after)
            if frames:
                after += len(frames)
                yield b"".join(frames)
            elif run is None or run.done:
                break
            else:
                await asyncio.sleep(FOLLOW_SECONDS)
        yield DONE_FRAME

    async def cancel_run(self, record: StoredResponse) -> StoredResponse:
        """Stop the response's run and wait for it to end; the response as it then is."""
        run = await self.run_of(record.id)
        if run is None:
            raise InvalidRequest(
                f"Response '{record.id}' was not created with `background: true`; it finished before its create "
                "call answered, so there is nothing to cancel.",
                code="response_not_cancellable",
                param="response_id",
            )
        if run.done:
            raise _not_running(record)
        live = self.live.get(record.id)
        if live is not None and live.task is not None:  # this process runs it: at once
            live.cancel()
            await asyncio.wait([live.task])
        else:  # another instance's: it reads the request within `POLL_SECONDS`, or its lease lapses
            await self.runs.ask_cancel(record.id)
            deadline = time.monotonic() + lease_seconds() + 5
            while time.monotonic() < deadline:
                run = await self.run_of(record.id)
                if run is None or run.done:
                    break
                await asyncio.sleep(FOLLOW_SECONDS)
        ended = await self.store.get(record.id) or record
        if ended.response.get("status") in ("completed", "incomplete", "failed"):
            raise _not_running(ended)  # it ended on its own while the cancel was on its way: not cancelled
        return ended

    async def forget_run(self, response_id: str) -> None:
        """Stop the response's run, if any, and drop its kept events (when the response is deleted)."""
        runs = await self.runs_settled()
        if await runs.get(response_id) is None:
            return
        live = self.live.get(response_id)
        if live is not None and live.task is not None:  # stopped first, so that it keeps nothing afterwards
            live.cancel()
            await asyncio.wait([live.task])
        await runs.forget(response_id)  # another instance's run stops when it next renews its lease

    async def fail_lapsed(self, response_id: str) -> None:
        """End a run whose owner stopped renewing its lease: `failed`, with an error, and its stream ended."""
        error = _lost("The server running this background response stopped before it finished.")
        record = await self.store.get(response_id)
        if record is not None:
            record.response.update(_failure(error))
            record.response_json = None
            await self.store.put(record)
            kept = await self.runs.frames(response_id, -1)
            if kept:  # a streamed run: its stream ends as a failed one does
                events = [
                    {"type": "error", "error": error.payload(headers=True)},
                    {"type": "response.failed", "response": record.response},
                ]
                frames = [sse_frame({**event, "sequence_number": len(kept) + i}) for i, event in enumerate(events)]
                await self.runs.append(response_id, len(kept), frames)
        await self.runs.end(response_id)


def _lost(message: str) -> ServerError:
    return ServerError(message, code="background_run_lost")


def _failure(error: OpenResponsesError) -> dict[str, Any]:
    return {
        "status": "failed",
        "error": {"code": error.code or error.type, "message": error.message},
        "completed_at": int(time.time()),
    }


def _not_running(record: StoredResponse) -> InvalidRequest:
    return InvalidRequest(
        f"Response '{record.id}' has already ended ({record.response.get('status')}); only a response still "
        "running can be cancelled.",
        code="response_not_cancellable",
        param="response_id",
    )
