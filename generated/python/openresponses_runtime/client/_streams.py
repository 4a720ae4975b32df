"""Typed event streams: what `responses.create(stream=True)` returns.

An `EventStream` is a context manager and an iterator of typed events (each the model of its
event type, a `GenericEvent` for a type this runtime does not know). Every event also feeds a
`ResponseAccumulator`, so `final_response()` can rebuild the response; with `check=True` a
`StreamChecker` sees each event as it arrives and the first broken rule raises `StreamViolation`.
An event that breaks the spec's schema comes as it was sent (its model built as far as its fields
allow) and is reported in `issues`, or with `validate="strict"` raises (see `_validation`).

A stream that has begun is never sent again: a foreground stream whose connection breaks raises
`APIConnectionError`. A background response keeps its events on the server, so a stream given a
`reconnect` (`background=True` streams, `retrieve(..., stream=True)`) resumes instead: it asks for
the events after the last `sequence_number` it read and goes on, the consumer seeing each event
once. A reconnection that brings no new event counts against `retries`, with backoff between them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx
from pydantic import ValidationError

from .. import bindings
from ..events import EVENT_TYPES, TERMINAL_EVENT_TYPES, GenericEvent, SSEDecoder, SSEMessage, parse_event
from ..streaming import ResponseAccumulator, StreamChecker
from ._config import Config, retry_delay
from ._errors import APIConnectionError, APITimeoutError, OpenResponsesError, StreamViolation
from ._validation import InvalidData, SchemaIssue, Validation, lenient, schema_issues

__all__ = ["AsyncEventStream", "EventStream", "StreamReader"]

Reconnect = Callable[["StreamReader"], httpx.Response]  # the answer with the events after the reader's last one
AsyncReconnect = Callable[["StreamReader"], Awaitable[httpx.Response]]

_TEXT_DELTA = "response.output_text.delta"


class StreamReader:
    """The per-event work both stream kinds share: type, check and accumulate one SSE message."""

    __slots__ = (
        "checker",
        "accumulator",
        "validation",
        "terminal",
        "done",
        "response_id",
        "last_sequence",
        "_seen",
    )

    def __init__(self, *, check: bool = False, validation: Validation | None = None):
        self.checker = StreamChecker() if check else None
        self.accumulator = ResponseAccumulator()
        self.validation = validation or Validation()
        self.terminal: str | None = None
        self.done = False  # whether `data: [DONE]` came
        self.response_id: str | None = None  # where a resumed stream comes from
        self.last_sequence: int | None = None
        self._seen = 0  # violations already raised

    @property
    def issues(self) -> list[InvalidData]:
        """The events (and the built response) that broke the schema so far."""
        return self.validation.reports

    def read(self, message: SSEMessage) -> Any:
        """The typed event in `message`, or None for `[DONE]` and empty messages."""
        checker = self.checker
        raw = None
        if checker is not None:
            event = checker.feed(message.event, message.data)
            if len(checker.violations) > self._seen:
                self._raise_new()
        elif message.data == "[DONE]" or not message.data:
            event = None
        else:
            try:
                event = parse_event(message.data)
            except ValidationError as exc:
                raw, event = self._invalid(message.data, exc)
        if message.data == "[DONE]":
            self.done = True
        if event is None:
            return None
        self.accumulator.feed(event if raw is None else raw)
        self.last_sequence = getattr(event, "sequence_number", self.last_sequence)
        response = getattr(event, "response", None)
        response_id = response.get("id") if isinstance(response, dict) else getattr(response, "id", None)
        if isinstance(response_id, str):
            self.response_id = response_id
        if event.type in TERMINAL_EVENT_TYPES:
            self.terminal = event.type
        return event

    def _invalid(self, data: str, exc: ValidationError) -> tuple[Any, Any]:
        """An event that breaks its schema: reported (or raised); the raw event and its leniently built model."""
        try:
            raw = json.loads(data)
        except ValueError as error:
            self.validation.invalid(data, (SchemaIssue("", f"not JSON: {error}"),), subject="an event", cause=error)
            return None, None
        kind = raw.get("type") if isinstance(raw, dict) else None
        if not isinstance(kind, str):
            self.validation.invalid(raw, schema_issues(exc), subject="an event without a type", cause=exc)
            return None, None
        sequence = raw.get("sequence_number")
        self.validation.invalid(
            raw,
            schema_issues(exc, tag=kind),
            event_type=kind,
            sequence_number=sequence if isinstance(sequence, int) else None,
            cause=exc,
        )
        known = EVENT_TYPES.get(kind)
        return raw, lenient(known.model if known else GenericEvent, raw)

    def end(self, *, expect_done: bool = True) -> None:
        """The stream is over: report what never came."""
        if self.checker is not None:
            if not expect_done:
                self.checker.done = True  # WebSocket turns have no `[DONE]` to wait for
            self.checker.finish()
            if len(self.checker.violations) > self._seen:
                self._raise_new()
        if self.terminal is None:
            raise APIConnectionError("the stream ended before a terminal event (response.completed, ...)")

    def final_response(self) -> bindings.ResponseObject:
        built = self.accumulator.as_dict()
        return self.validation.check(bindings.ResponseObject, built, "the response the stream built")

    def _raise_new(self) -> None:
        violation = self.checker.violations[self._seen]
        self._seen = len(self.checker.violations)
        raise StreamViolation(violation)


class EventStream:
    """The typed events of one streamed response (blocking)."""

    def __init__(
        self,
        response: httpx.Response,
        *,
        check: bool = False,
        reconnect: Reconnect | None = None,
        retries: int = 0,
        config: Config | None = None,
    ):
        self.http_response = response
        validation = config.validation(response.status_code, response.headers) if config else None
        self.reader = StreamReader(check=check, validation=validation)
        self._reconnect = reconnect
        self._retries = retries
        self._events = self._iterate()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Any]:
        return self._events

    def __next__(self) -> Any:
        return next(self._events)

    @property
    def issues(self) -> list[InvalidData]:
        """The events (and the built response) that broke the schema so far."""
        return self.reader.issues

    @property
    def request_id(self) -> str | None:
        """The id the server gave the request (`x-request-id`), when it sent one."""
        return self.reader.validation.request_id

    def close(self) -> None:
        self.http_response.close()

    def _iterate(self) -> Iterator[Any]:
        reader, fruitless = self.reader, 0
        try:
            while True:
                before = reader.last_sequence
                try:
                    yield from self._connection_events()
                    if reader.terminal is not None or self._reconnect is None:
                        reader.end()
                        return
                    broken, cause = _ended_early(), None
                except httpx.TransportError as exc:
                    broken, cause = _broken(exc), exc
                if self._reconnect is not None and reader.terminal is not None:
                    return  # every event came; only `[DONE]` was lost, and nothing follows a terminal event
                fruitless = 0 if reader.last_sequence != before else fruitless + 1
                if self._reconnect is None or reader.last_sequence is None or fruitless > self._retries:
                    raise broken from cause
                time.sleep(retry_delay(fruitless, None) or 0)
                self.http_response.close()
                self.http_response = self._reconnect(reader)
        finally:
            self.close()

    def _connection_events(self) -> Iterator[Any]:
        """The events of the current connection, up to `[DONE]` or its end."""
        reader, decoder = self.reader, SSEDecoder()
        for chunk in self.http_response.iter_bytes():
            for message in decoder.feed(chunk):
                event = reader.read(message)
                if event is not None:
                    yield event
                elif reader.done:
                    return
        yield from _last_events(reader, decoder, resumable=self._reconnect is not None)

    def text_deltas(self) -> Iterator[str]:
        """The text of the output as it arrives, delta by delta."""
        for event in self:
            if event.type == _TEXT_DELTA:
                yield event.delta

    def final_response(self) -> bindings.ResponseObject:
        """Read the rest of the stream; the response it built."""
        for _ in self:
            pass
        return self.reader.final_response()


class AsyncEventStream:
    """The typed events of one streamed response (async)."""

    def __init__(
        self,
        response: httpx.Response,
        *,
        check: bool = False,
        reconnect: AsyncReconnect | None = None,
        retries: int = 0,
        config: Config | None = None,
    ):
        self.http_response = response
        validation = config.validation(response.status_code, response.headers) if config else None
        self.reader = StreamReader(check=check, validation=validation)
        self._reconnect = reconnect
        self._retries = retries
        self._events = self._iterate()

    async def __aenter__(self) -> AsyncEventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._events

    async def __anext__(self) -> Any:
        return await self._events.__anext__()

    @property
    def issues(self) -> list[InvalidData]:
        """The events (and the built response) that broke the schema so far."""
        return self.reader.issues

    @property
    def request_id(self) -> str | None:
        """The id the server gave the request (`x-request-id`), when it sent one."""
        return self.reader.validation.request_id

    async def close(self) -> None:
        await self.http_response.aclose()

    async def _iterate(self) -> AsyncIterator[Any]:
        reader, fruitless = self.reader, 0
        try:
            while True:
                before = reader.last_sequence
                try:
                    async for event in self._connection_events():
                        yield event
                    if reader.terminal is not None or self._reconnect is None:
                        reader.end()
                        return
                    broken, cause = _ended_early(), None
                except httpx.TransportError as exc:
                    broken, cause = _broken(exc), exc
                if self._reconnect is not None and reader.terminal is not None:
                    return  # every event came; only `[DONE]` was lost, and nothing follows a terminal event
                fruitless = 0 if reader.last_sequence != before else fruitless + 1
                if self._reconnect is None or reader.last_sequence is None or fruitless > self._retries:
                    raise broken from cause
                await asyncio.sleep(retry_delay(fruitless, None) or 0)
                await self.http_response.aclose()
                self.http_response = await self._reconnect(reader)
        finally:
            await self.close()

    async def _connection_events(self) -> AsyncIterator[Any]:
        """The events of the current connection, up to `[DONE]` or its end."""
        reader, decoder = self.reader, SSEDecoder()
        async for chunk in self.http_response.aiter_bytes():
            for message in decoder.feed(chunk):
                event = reader.read(message)
                if event is not None:
                    yield event
                elif reader.done:
                    return
        for event in _last_events(reader, decoder, resumable=self._reconnect is not None):
            yield event

    async def text_deltas(self) -> AsyncIterator[str]:
        """The text of the output as it arrives, delta by delta."""
        async for event in self:
            if event.type == _TEXT_DELTA:
                yield event.delta

    async def final_response(self) -> bindings.ResponseObject:
        """Read the rest of the stream; the response it built."""
        async for _ in self:
            pass
        return self.reader.final_response()


def _last_events(reader: StreamReader, decoder: SSEDecoder, *, resumable: bool) -> Iterator[Any]:
    """The events of a frame left open when the connection ended. A resumable stream that ended before its
    terminal event drops it instead: it may be cut short, and the resumed stream sends it whole."""
    if resumable and reader.terminal is None:
        return
    for message in decoder.close():
        event = reader.read(message)
        if event is not None:
            yield event


def _broken(exc: httpx.TransportError) -> OpenResponsesError:
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"the stream stalled: {exc}")
    return APIConnectionError(f"the connection broke mid-stream: {exc}")


def _ended_early() -> APIConnectionError:
    return APIConnectionError("the stream ended before a terminal event (response.completed, ...)")
