"""The cap on streams generated at once: `create_app(max_streams=...)`, `--max-streams`.

A stream is a response the provider generates while nobody waits for one JSON answer: a
`stream: true` request, a WebSocket turn, or a background run (`background: true`, streamed or
not, for as long as it runs). Each takes a slot before the provider is called and gives it back
when it ends, however it ends (finished, failed, the client gone, the server stopping); one
beyond the cap is refused before it begins, with 503 `too_many_streams` and `Retry-After`.

Each tenant (an API key, see `auth`) may hold at most `per_tenant` of the slots (by default the
whole cap with one key, half of it with more), so that one key cannot take every slot; beyond it,
503 `too_many_streams` too, saying it is the key's share.

Non-streamed requests are counted apart (`Pending`, `create_app(max_pending=...)`, default 64):
each holds its whole response in memory until it is answered, so beyond the cap a create is
answered 503 `server_busy` with `Retry-After` before the provider is called. Each tenant may hold
at most `max_pending_per_tenant` of those places (by default all with one key, half with more),
and a create whose client goes away gives its place back at once: the server stops making a
response nobody will read (`app`), rather than holding the place until the provider is done. Clients following a
background run's events (`GET /responses/{id}?stream=true`) are not counted: the run holds the slot.

The default, 100 per process, is what one process (one core) holds with room to spare: measured
with 100 concurrent demo streams, a streamed event costs the server about 65 µs of CPU, so 100
streams of a model sending 50 deltas a second take a third of a core, and a gateway, which also
reads its upstream's stream, about twice that. `None` (`--max-streams 0`) sets no cap, for a
server behind a proxy or gateway that caps streams itself.
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import ServerBusy, TooManyStreams

__all__ = ["DEFAULT_MAX_PENDING", "DEFAULT_MAX_STREAMS", "Pending", "Streams"]

DEFAULT_MAX_STREAMS = 100
DEFAULT_MAX_PENDING = 64  # non-streamed creates at once, each a whole response held until it is sent


class _Places:
    """Places taken at once, and the cap on them (`limit`; `None` or 0: no cap), and on each tenant's
    (`per_tenant`; `None` or 0: none but the whole cap); `refusal` is the error beyond either."""

    options: tuple[str, str]  # the two caps' option names, for a bad value's message
    refusal: type[TooManyStreams] | type[ServerBusy]

    def __init__(self, limit: int | None, per_tenant: int | None = None):
        for name, value in zip(self.options, (limit, per_tenant), strict=True):
            if value is not None and value < 0:
                raise ValueError(f"{name} must be 0 (no cap) or more, not {value}")
        self.limit = limit or None
        self.per_tenant = per_tenant or None
        self.active = 0
        self.by_tenant: dict[str, int] = {}

    def take(self, tenant: str | None = None) -> Callable[[], None]:
        """A place for `tenant` (an owner tag), or `refusal` when all are taken, or the tenant's share;
        call what it returns when done (more than once does no harm)."""
        if self.limit is not None and self.active >= self.limit:
            raise self.refusal(self.limit)
        if tenant is not None and self.per_tenant is not None and self.by_tenant.get(tenant, 0) >= self.per_tenant:
            raise self.refusal(self.per_tenant, per_tenant=True)
        self.active += 1
        if tenant is not None:
            self.by_tenant[tenant] = self.by_tenant.get(tenant, 0) + 1
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self.active -= 1
                if tenant is not None:
                    left = self.by_tenant[tenant] - 1
                    if left:
                        self.by_tenant[tenant] = left
                    else:
                        del self.by_tenant[tenant]

        return release


class Streams(_Places):
    """The streams under way: a slot each, taken before the provider is called."""

    options = ("max_streams", "max_streams_per_tenant")
    refusal = TooManyStreams

    def __init__(self, limit: int | None = DEFAULT_MAX_STREAMS, per_tenant: int | None = None):
        super().__init__(limit, per_tenant)


class Pending(_Places):
    """Non-streamed creates being answered, so that one key's creates cannot keep every other key's out."""

    options = ("max_pending", "max_pending_per_tenant")
    refusal = ServerBusy

    def __init__(self, limit: int | None = DEFAULT_MAX_PENDING, per_tenant: int | None = None):
        super().__init__(limit, per_tenant)
