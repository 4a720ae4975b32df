"""WebSocket mode: one connection to `/responses`, turns one after another.

Each turn sends a `response.create` message (the create keywords) and reads the events the server
answers with, up to the turn's terminal event; an error message (`{"type": "error", "status": ...}`)
raises the typed error its status calls for, and the connection stays usable.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import ExitStack
from typing import Any

from .. import bindings
from ..events import SSEMessage
from ._config import Config, encode_body
from ._create import CREATE_PARAMS
from ._errors import APIConnectionError, APITimeoutError, status_error
from ._streams import StreamReader

__all__ = ["AsyncResponsesSession", "ResponsesSession"]


def turn_message(params: Mapping[str, Any]) -> bytes:
    """A `response.create` message from `create` keywords (Python names)."""
    unknown = sorted(set(params) - set(CREATE_PARAMS))
    if unknown:
        raise TypeError(f"unknown keyword(s) for a response: {', '.join(unknown)}")
    body = {CREATE_PARAMS[k]: v for k, v in params.items() if v is not None}
    return encode_body({"type": "response.create", **body})


def _read(reader: StreamReader, raw: str | bytes) -> Any:
    """One server message as its typed event; an error message raises."""
    if '"error"' in (raw if isinstance(raw, str) else raw.decode("utf-8", "replace")):
        try:
            message = json.loads(raw)
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("type") == "error" and isinstance(message.get("status"), int):
            raise status_error(message["status"], message)
    return reader.read(SSEMessage(None, raw if isinstance(raw, str) else raw.decode()))


class ResponsesSession:
    """A blocking WebSocket session; `create` for a whole turn, `stream` for its events."""

    def __init__(self, connection: Any, config: Config, *, check: bool, timeout: float, closing: ExitStack):
        self._ws = connection
        self._config = config
        self._closing = closing
        self._check = check
        self._timeout = timeout

    @classmethod
    def open(cls, config: Config, *, check: bool = False, timeout: float | None = None) -> ResponsesSession:
        from websockets.exceptions import InvalidStatus, WebSocketException
        from websockets.sync.client import connect

        timeout = config.timeout if timeout is None else timeout
        headers = {"Authorization": config.headers["Authorization"]}
        # The connection is entered as a context manager and left on close: websockets 17 deprecates any
        # other use (warning at every send), and its `legacy=True` opt-out does not exist before 17.1.
        session = ExitStack()
        try:
            connection = session.enter_context(
                connect(config.websocket_url("/responses"), additional_headers=headers, open_timeout=timeout)
            )
        except InvalidStatus as exc:
            raise status_error(exc.response.status_code, exc.response.body or b"", exc.response.headers) from exc
        except (OSError, WebSocketException) as exc:
            raise APIConnectionError(f"could not open the WebSocket: {exc}") from exc
        return cls(connection, config, check=check, timeout=timeout, closing=session)

    def __enter__(self) -> ResponsesSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closing.close()

    def stream(self, **params: Any) -> Iterator[Any]:
        """Start a turn; its typed events, up to the terminal one."""
        from websockets.exceptions import ConnectionClosed

        reader = StreamReader(check=self._check, validation=self._config.validation())
        self._ws.send(turn_message(params).decode())
        while reader.terminal is None:
            try:
                raw = self._ws.recv(timeout=self._timeout)
            except TimeoutError:
                raise APITimeoutError(f"no event within {self._timeout:g}s") from None
            except ConnectionClosed as exc:
                raise APIConnectionError(f"the WebSocket closed mid-turn: {exc}") from exc
            event = _read(reader, raw)
            if event is not None:
                yield event
        reader.end(expect_done=False)
        self._last = reader

    def create(self, **params: Any) -> bindings.ResponseObject:
        """One turn (the same keywords as `responses.create`); the response it ends with."""
        for _ in self.stream(**params):
            pass
        return self._last.final_response()


class AsyncResponsesSession:
    """An async WebSocket session: `async with client.responses.connect() as session`."""

    def __init__(self, config: Config, *, check: bool = False, timeout: float | None = None):
        self._config = config
        self._check = check
        self._timeout = config.timeout if timeout is None else timeout
        self._ws: Any = None

    async def __aenter__(self) -> AsyncResponsesSession:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus, WebSocketException

        headers = {"Authorization": self._config.headers["Authorization"]}
        try:
            self._ws = await connect(
                self._config.websocket_url("/responses"), additional_headers=headers, open_timeout=self._timeout
            )
        except InvalidStatus as exc:
            raise status_error(exc.response.status_code, exc.response.body or b"", exc.response.headers) from exc
        except (OSError, WebSocketException) as exc:
            raise APIConnectionError(f"could not open the WebSocket: {exc}") from exc
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()

    async def stream(self, **params: Any) -> AsyncIterator[Any]:
        """Start a turn; its typed events, up to the terminal one."""
        import asyncio

        from websockets.exceptions import ConnectionClosed

        reader = StreamReader(check=self._check, validation=self._config.validation())
        await self._ws.send(turn_message(params).decode())
        while reader.terminal is None:
            try:
                raw = await asyncio.wait_for(self._ws.recv(), self._timeout)
            except TimeoutError:
                raise APITimeoutError(f"no event within {self._timeout:g}s") from None
            except ConnectionClosed as exc:
                raise APIConnectionError(f"the WebSocket closed mid-turn: {exc}") from exc
            event = _read(reader, raw)
            if event is not None:
                yield event
        reader.end(expect_done=False)
        self._last = reader

    async def create(self, **params: Any) -> bindings.ResponseObject:
        """One turn (the same keywords as `responses.create`); the response it ends with."""
        async for _ in self.stream(**params):
            pass
        return self._last.final_response()
