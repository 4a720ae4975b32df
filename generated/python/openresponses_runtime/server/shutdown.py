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

_running: set[anyio.CancelScope] = set()
_ended = False
_asyncio_scope: type[anyio.CancelScope] | None = None  # anyio's scope class on asyncio, once known


def _new_scope() -> anyio.CancelScope:
    """`anyio.CancelScope()`. On asyncio, its class is taken once: `anyio.CancelScope()` asks which
    async library runs on every call, which cost about as much as entering and leaving the scope."""
    global _asyncio_scope
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # another async library (trio): anyio picks its scope
        return anyio.CancelScope()
    if _asyncio_scope is None:
        _asyncio_scope = type(anyio.CancelScope())
    return _asyncio_scope()


class ending:
    """A scope `end_responses()` cancels; check its `cancelled_caught` after the block.

    A class rather than a generator-based context manager: every response enters one, and this
    costs it half as much."""

    __slots__ = ("scope",)

    def __enter__(self) -> anyio.CancelScope:
        self.scope = scope = _new_scope()
        if _ended:  # a response that begins after the deadline ends at once
            scope.cancel()
        _running.add(scope)
        try:
            return scope.__enter__()
        except BaseException:
            _running.discard(scope)
            raise

    def __exit__(self, *exc_info: object) -> bool:
        _running.discard(self.scope)
        return self.scope.__exit__(*exc_info)


def end_responses() -> None:
    """Cancels every response under way, and each begun from now on; call it on the event loop."""
    global _ended
    _ended = True
    for scope in list(_running):
        scope.cancel()
