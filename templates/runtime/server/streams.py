"""The cap on streams generated at once: `create_app(max_streams=...)`, `--max-streams`.

A stream is a response the provider generates while nobody waits for one JSON answer: a
`stream: true` request, a WebSocket turn, or a background run (`background: true`, streamed or
not, for as long as it runs). Each takes a slot before the provider is called and gives it back
when it ends, however it ends (finished, failed, the client gone, the server stopping); one
beyond the cap is refused before it begins, with 503 `too_many_streams` and `Retry-After`.

Non-streamed requests are not counted: each holds its connection until it is answered, and
connections are capped already (`--max-connections`). Nor are clients following a background
run's events (`GET /responses/{id}?stream=true`): the run they follow holds the slot.

The default, 100 per process, is what one process (one core) holds with room to spare: measured
with 100 concurrent demo streams, a streamed event costs the server about 65 µs of CPU, so 100
streams of a model sending 50 deltas a second take a third of a core, and a gateway, which also
reads its upstream's stream, about twice that. `None` (`--max-streams 0`) sets no cap, for a
server behind a proxy or gateway that caps streams itself.
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import TooManyStreams

__all__ = ["DEFAULT_MAX_STREAMS", "Streams"]

DEFAULT_MAX_STREAMS = 100


class Streams:
    """The streams under way, and the cap on them (`limit`; `None` or 0: no cap)."""

    def __init__(self, limit: int | None = DEFAULT_MAX_STREAMS):
        if limit is not None and limit < 0:
            raise ValueError(f"max_streams must be 0 (no cap) or more, not {limit}")
        self.limit = limit or None
        self.active = 0

    def take(self) -> Callable[[], None]:
        """A slot for one stream, or `TooManyStreams` when all are taken; call what it returns when
        the stream ends (more than once does no harm: each exit path may)."""
        if self.limit is not None and self.active >= self.limit:
            raise TooManyStreams(self.limit)
        self.active += 1
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self.active -= 1

        return release
