"""What every gateway needs of its upstream: the HTTP client it talks to it with (one per gateway and
event loop, kept), and the JSON objects of the event stream it answers with."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any

import httpx

from ..events import SSEDecoder
from ..server.wire import loads

__all__ = ["UpstreamClient", "aiter_of", "finish_reading", "json_events"]

log = logging.getLogger("openresponses_runtime.gateways")

_FINISH_SECONDS = 1.0  # what an upstream gets to end its body after its last event


class UpstreamClient:
    """A pooled `httpx.AsyncClient`, made on first use in each event loop and kept for the next turns.

    A client per turn built a TLS context (about 50 ms of CPU) and a new connection every time: more
    than all the translation of a 2,000-event stream. An httpx client belongs to the loop it was made
    in, so a new loop (a test's `asyncio.run`) gets its own."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client, self._loop = httpx.AsyncClient(timeout=self.timeout), loop
        return self._client


async def json_events(reply: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON objects of an upstream's SSE stream, up to `data: [DONE]` or the end of the body.

    A frame that is not a JSON object is skipped and logged. A connection that breaks off simply
    ends the objects: the gateway notices that the answer never finished. Each object is parsed
    when it is asked for: a whole network read's objects alive at once (hundreds) cost more in
    garbage collection than their parsing."""
    decoder = SSEDecoder()
    body = reply.aiter_bytes()
    try:
        async for data in body:
            for message in decoder.feed(data):
                if message.data == "[DONE]":
                    await finish_reading(body)
                    return
                if (event := _object(message.data)) is not None:
                    yield event
        for message in decoder.close():
            if message.data == "[DONE]":
                return
            if (event := _object(message.data)) is not None:
                yield event
    except httpx.TransportError as exc:
        log.warning("the upstream's stream broke off: %s", exc)


def _object(data: str) -> dict[str, Any] | None:
    try:
        event = loads(data)  # by orjson when installed; neither upstream API sends integers beyond 64 bits
    except ValueError:
        event = None
    if not isinstance(event, dict):
        log.warning("skipped an upstream frame that is not a JSON object: %.200s", data)
        return None
    return event


async def finish_reading(rest: AsyncIterator[Any]) -> None:
    """Read what is left of an answer after its last event, so that its connection goes back to the
    pool for the next turn: httpx closes a connection whose body was not read to its end, and a new
    one costs a TCP and TLS handshake. An upstream that keeps the body open past `_FINISH_SECONDS`
    keeps its connection closed, as before."""
    try:
        async with asyncio.timeout(_FINISH_SECONDS):
            async for _ in rest:
                pass
    except (TimeoutError, httpx.TransportError):
        pass


async def aiter_of(events: Iterable[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    """`events` as the async stream a gateway reads, for an answer that came whole."""
    for event in events:
        yield event
