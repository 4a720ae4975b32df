"""Ending the responses under way when the server stops: `orspec serve` and scaffolded providers
call `end_responses()` once their shutdown deadline has passed (or on a second signal).

Each response the app runs, streamed or not, runs inside `ending()`; `end_responses()` cancels
them all where they wait on the provider, and the app ends each the spec's way (`error`,
`response.failed` with code `server_shutting_down`, `[DONE]`), storing it as it would any failed
response. One process, one server: the state is the process's.
"""

from __future__ import annotations

import asyncio

import anyio

__all__ = ["end_responses", "ending"]

_running: set[_TaskScope | anyio.CancelScope] = set()
_ended = False


class _TaskScope:
    """A cancel scope of the task that enters it, on asyncio: `cancel()` cancels the task, and the
    cancellation ends where the scope does (`cancelled_caught`), as `asyncio.timeout` does. It is
    cancelled from a callback of the loop, while the task waits inside it.

    anyio's scope would do, but it keeps state for every task it is entered in: each request's
    task is new, so that state was made, and dropped, once per response."""

    __slots__ = ("cancelled_caught", "requested", "task")

    def __init__(self, task: asyncio.Task[object]):
        self.task = task
        self.requested = False
        self.cancelled_caught = False

    def cancel(self) -> None:
        if not self.requested:
            self.requested = True
            self.task.cancel()

    def __enter__(self) -> _TaskScope:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> bool:
        if not self.requested:
            return False
        # The task is cancelled only while it waits inside the scope, so the cancellation has come.
        if self.task.uncancel() == 0 and kind is not None and issubclass(kind, asyncio.CancelledError):
            self.cancelled_caught = True
            return True
        return False


def _new_scope() -> _TaskScope | anyio.CancelScope:
    """A scope of the running task: the task's own on asyncio, anyio's on another async library (trio)."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None
    return anyio.CancelScope() if task is None else _TaskScope(task)


class ending:
    """A scope `end_responses()` cancels; check its `cancelled_caught` after the block.

    A class rather than a generator-based context manager: every response enters one, and this
    costs it half as much."""

    __slots__ = ("scope",)

    def __enter__(self) -> _TaskScope | anyio.CancelScope:
        if _ended:  # a response that begins after the deadline ends at its first wait: anyio's scope, cancelled
            self.scope = scope = anyio.CancelScope()
            scope.cancel()
        else:
            self.scope = scope = _new_scope()
        _running.add(scope)
        try:
            return scope.__enter__()
        except BaseException:
            _running.discard(scope)
            raise

    def __exit__(self, *exc_info: object) -> bool:
        _running.discard(self.scope)
        return bool(self.scope.__exit__(*exc_info))  # type: ignore[arg-type]


def end_responses() -> None:
    """Cancels every response under way, and each begun from now on; call it on the event loop."""
    global _ended
    _ended = True
    for scope in list(_running):
        scope.cancel()
