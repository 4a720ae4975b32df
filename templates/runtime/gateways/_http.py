"""The HTTP client a gateway talks to its upstream with: one per gateway and event loop, kept."""

from __future__ import annotations

import asyncio

import httpx

__all__ = ["UpstreamClient"]


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
