"""`Client` and `AsyncClient`: the Open Responses API over httpx.

    client = Client(base_url="http://127.0.0.1:8000/v1", api_key="sk-...")
    response = client.responses.create(model="m", input="Hello")

Both retry a request that failed with 408, 409, 429, a 5xx or a connection error, with
exponential backoff and jitter, honouring `Retry-After`; never a stream that has begun, though a
background response's stream resumes after the last event it read (see `_streams`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from .. import bindings
from ._config import RETRYABLE_STATUS, Config, encode_body, retry_delay
from ._create import AsyncCreateMethod, CreateMethod
from ._errors import APIConnectionError, APITimeoutError, OpenResponsesError, status_error
from ._loop import Loop, RunResult, ToolCall
from ._operations import AsyncResponsesOperations, ResponsesOperations
from ._streams import AsyncEventStream, EventStream, StreamReader
from ._tools import Tool
from ._validation import InvalidData
from ._websocket import AsyncResponsesSession, ResponsesSession

__all__ = ["AsyncClient", "AsyncResponses", "Client", "Responses"]

ToolLike = Tool | Callable[..., Any]


def _failure(response: httpx.Response | None, exc: Exception | None) -> tuple[OpenResponsesError, bool]:
    """The error for one attempt, and whether another attempt may help."""
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"no answer in time: {exc}"), True
    if exc is not None:
        return APIConnectionError(f"could not reach the server: {type(exc).__name__}: {exc}"), True
    assert response is not None
    error = status_error(response.status_code, response.content, response.headers)
    return error, response.status_code in RETRYABLE_STATUS


def _parse(model: type, response: httpx.Response, config: Config) -> Any:
    """The answer as `model`; one that breaks the schema is reported (built leniently) or raised, as configured."""
    subject = f"the answer to {response.request.method} {response.request.url.path}"
    return config.validation(response.status_code, response.headers).check(model, response.content, subject)


def _starting_after(path: str, sequence_number: int | None) -> str:
    """`path` (with its query) asking for the events after `sequence_number`."""
    return str(httpx.URL(path).copy_set_param("starting_after", sequence_number))


def _compact_body(model: str, input: Any, previous_response_id: Any, instructions: Any, extra: Any) -> dict:
    given = {"model": model, "input": input, "previous_response_id": previous_response_id, "instructions": instructions}
    return {k: v for k, v in given.items() if v is not None} | dict(extra or {})


class Client:
    """A blocking Open Responses client.

    `base_url` is the root `/responses` hangs off (`https://host/v1`) and `api_key` the bearer
    token; either falls back to `$OPENRESPONSES_BASE_URL` / `$OPENRESPONSES_API_KEY`, and a
    missing one raises `ConfigurationError` here, before any request. `timeout` (seconds) and
    `max_retries` apply to every call unless the call says otherwise. Pass `http_client` to reuse
    an `httpx.Client` of your own (proxies, transports, limits).

    An answer or event that breaks the spec's schema is, by default (`validate="report"`), passed
    on as it came, built as far as its fields allow, and reported to `on_invalid` (and in a stream's
    `issues`); `validate="strict"` raises `APIResponseValidationError` instead.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
        validate: str = "report",
        on_invalid: Callable[[InvalidData], Any] | None = None,
    ):
        self.config = Config.resolve(
            base_url, api_key, timeout, max_retries, default_headers, validate=validate, on_invalid=on_invalid
        )
        self._http = http_client or httpx.Client()
        self._owns_http = http_client is None
        self.responses = Responses(self)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def retries(self, max_retries: int | None) -> int:
        """How many times a call may be retried: `max_retries` when given, else the client's setting."""
        return self.config.max_retries if max_retries is None else max_retries

    def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        stream: bool = False,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> httpx.Response:
        """Send one request, retrying what may be retried; a 2xx answer or a typed error."""
        config = self.config
        retries = self.retries(max_retries)
        content = None if body is None else encode_body(body)
        url = config.base_url + path
        for attempt in range(retries + 1):
            request = self._http.build_request(
                method,
                url,
                content=content,
                headers=config.headers,
                timeout=config.timeout if timeout is None else timeout,
            )
            response, exc = None, None
            try:
                response = self._http.send(request, stream=stream)
            except httpx.TransportError as caught:
                exc = caught
            if response is not None and response.status_code < 400:
                return response
            if response is not None and stream:
                response.read()
                response.close()
            error, retryable = _failure(response, exc)
            delay = retry_delay(attempt, response.headers if response else None) if retryable else None
            if delay is None or attempt == retries:
                raise error from exc
            time.sleep(delay)
        raise AssertionError("unreachable")


class Responses(CreateMethod, ResponsesOperations):
    """`client.responses`: create (typed keywords, generated from the spec), compact, connect, run, and the
    generated methods on a stored response (retrieve, delete, cancel, input_items.list) and of the
    collection (input_tokens.count)."""

    def __init__(self, client: Client):
        self._client = client

    def _call(
        self,
        method: str,
        path: str,
        model: type,
        *,
        timeout: float | None,
        max_retries: int | None,
        stream: bool = False,
        body: Mapping[str, Any] | None = None,
    ) -> Any:
        reply = self._client.request(method, path, body, stream=stream, timeout=timeout, max_retries=max_retries)
        if not stream:
            return _parse(model, reply, self._client.config)

        def resume(reader: StreamReader) -> httpx.Response:  # the same replay, from after the last event read
            again = _starting_after(path, reader.last_sequence)
            return self._client.request(method, again, stream=True, timeout=timeout, max_retries=max_retries)

        return EventStream(
            reply, config=self._client.config, reconnect=resume, retries=self._client.retries(max_retries)
        )

    def _create(
        self, body: dict[str, Any], *, stream: bool, check: bool, timeout: float | None, max_retries: int | None
    ) -> bindings.ResponseObject | EventStream:
        if stream:
            reply = self._client.request(
                "POST", "/responses", {**body, "stream": True}, stream=True, timeout=timeout, max_retries=max_retries
            )
            if body.get("background") is not True:  # the server keeps no events of a foreground response
                return EventStream(reply, config=self._client.config, check=check)

            def resume(reader: StreamReader) -> httpx.Response:  # the response's kept events after the last read
                replay = self.retrieve(
                    reader.response_id,
                    stream=True,
                    starting_after=reader.last_sequence,
                    timeout=timeout,
                    max_retries=max_retries,
                )
                return replay.http_response

            return EventStream(
                reply,
                config=self._client.config,
                check=check,
                reconnect=resume,
                retries=self._client.retries(max_retries),
            )
        reply = self._client.request("POST", "/responses", body, timeout=timeout, max_retries=max_retries)
        return _parse(bindings.ResponseObject, reply, self._client.config)

    def compact(
        self,
        *,
        model: str,
        input: str | Sequence[Any] | None = None,
        previous_response_id: str | None = None,
        instructions: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> bindings.CompactObject:
        """Shrink a conversation (`POST /responses/compact`); its `output` can start the next request's input."""
        body = _compact_body(model, input, previous_response_id, instructions, extra_body)
        reply = self._client.request("POST", "/responses/compact", body, timeout=timeout, max_retries=max_retries)
        return _parse(bindings.CompactObject, reply, self._client.config)

    def connect(self, *, check: bool = False, timeout: float | None = None) -> ResponsesSession:
        """A WebSocket session on `/responses` for turns one after another (use it as a context manager)."""
        return ResponsesSession.open(self._client.config, check=check, timeout=timeout)

    def run(
        self,
        *,
        input: str | Sequence[Any],
        tools: Sequence[ToolLike] = (),
        max_turns: int = 8,
        max_workers: int | None = None,
        **params: Any,
    ) -> RunResult:
        """The agentic loop: create, run every function the model calls, send the outputs back, repeat.

        `tools` are plain functions (sync or async; their schema comes from type hints and the
        docstring) or `Tool`s. The calls of one turn run in a thread pool (`max_workers`) and their
        outputs go back in call order. It stops at a response without calls, or after `max_turns`
        responses. `params` are more `create` keywords, sent every turn.
        """
        loop = Loop(input, tools, max_turns, params)
        while True:
            response = self.create(**loop.request())
            calls = loop.calls(response)
            if not calls:
                return loop.result
            loop.advance(response, self._run_calls(loop, calls, max_workers))

    def run_stream(
        self,
        *,
        input: str | Sequence[Any],
        tools: Sequence[ToolLike] = (),
        max_turns: int = 8,
        max_workers: int | None = None,
        **params: Any,
    ) -> RunStream:
        """The agentic loop, streaming: iterate for every turn's events, then read `.result`."""
        return RunStream(self, Loop(input, tools, max_turns, params), max_workers)

    def _run_calls(self, loop: Loop, calls: list[Any], max_workers: int | None) -> list[ToolCall]:
        def run_one(call: Any) -> ToolCall:
            tool = loop.tool(call)
            if tool is None:
                return loop.unknown(call)
            try:
                return loop.outcome(call, tool.call(call.arguments))
            except Exception as exc:  # a failing tool is reported to the model, not raised
                return loop.outcome(call, exc=exc)

        if len(calls) == 1:
            return [run_one(calls[0])]
        with ThreadPoolExecutor(max_workers=max_workers or min(len(calls), 16)) as pool:
            return list(pool.map(run_one, calls))  # `map` keeps call order


class RunStream:
    """The streaming agentic loop: iterate for every turn's events; `result` once it is over."""

    def __init__(self, responses: Responses, loop: Loop, max_workers: int | None):
        self._responses = responses
        self._loop = loop
        self._max_workers = max_workers
        self._events = self._iterate()

    def __iter__(self) -> Iterator[Any]:
        return self._events

    def __next__(self) -> Any:
        return next(self._events)

    @property
    def result(self) -> RunResult:
        """The run's result (the stream is read to its end first)."""
        for _ in self._events:
            pass
        return self._loop.result

    def _iterate(self) -> Iterator[Any]:
        loop = self._loop
        while True:
            with self._responses.create(**loop.request(), stream=True) as events:
                yield from events
                response = events.reader.final_response()
            calls = loop.calls(response)
            if not calls:
                return
            loop.advance(response, self._responses._run_calls(loop, calls, self._max_workers))


class AsyncClient:
    """The asynchronous Open Responses client; the same settings as `Client`."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        validate: str = "report",
        on_invalid: Callable[[InvalidData], Any] | None = None,
    ):
        self.config = Config.resolve(
            base_url, api_key, timeout, max_retries, default_headers, validate=validate, on_invalid=on_invalid
        )
        self._http = http_client or httpx.AsyncClient()
        self._owns_http = http_client is None
        self.responses = AsyncResponses(self)

    async def close(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def retries(self, max_retries: int | None) -> int:
        """How many times a call may be retried: `max_retries` when given, else the client's setting."""
        return self.config.max_retries if max_retries is None else max_retries

    async def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        stream: bool = False,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> httpx.Response:
        """Send one request, retrying what may be retried; a 2xx answer or a typed error."""
        config = self.config
        retries = self.retries(max_retries)
        content = None if body is None else encode_body(body)
        url = config.base_url + path
        for attempt in range(retries + 1):
            request = self._http.build_request(
                method,
                url,
                content=content,
                headers=config.headers,
                timeout=config.timeout if timeout is None else timeout,
            )
            response, exc = None, None
            try:
                response = await self._http.send(request, stream=stream)
            except httpx.TransportError as caught:
                exc = caught
            if response is not None and response.status_code < 400:
                return response
            if response is not None and stream:
                await response.aread()
                await response.aclose()
            error, retryable = _failure(response, exc)
            delay = retry_delay(attempt, response.headers if response else None) if retryable else None
            if delay is None or attempt == retries:
                raise error from exc
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")


class AsyncResponses(AsyncCreateMethod, AsyncResponsesOperations):
    """`client.responses` of the `AsyncClient`."""

    def __init__(self, client: AsyncClient):
        self._client = client

    async def _call(
        self,
        method: str,
        path: str,
        model: type,
        *,
        timeout: float | None,
        max_retries: int | None,
        stream: bool = False,
        body: Mapping[str, Any] | None = None,
    ) -> Any:
        reply = await self._client.request(method, path, body, stream=stream, timeout=timeout, max_retries=max_retries)
        if not stream:
            return _parse(model, reply, self._client.config)

        async def resume(reader: StreamReader) -> httpx.Response:  # the same replay, from after the last event read
            again = _starting_after(path, reader.last_sequence)
            return await self._client.request(method, again, stream=True, timeout=timeout, max_retries=max_retries)

        return AsyncEventStream(
            reply, config=self._client.config, reconnect=resume, retries=self._client.retries(max_retries)
        )

    async def _create(
        self, body: dict[str, Any], *, stream: bool, check: bool, timeout: float | None, max_retries: int | None
    ) -> bindings.ResponseObject | AsyncEventStream:
        if stream:
            reply = await self._client.request(
                "POST", "/responses", {**body, "stream": True}, stream=True, timeout=timeout, max_retries=max_retries
            )
            if body.get("background") is not True:  # the server keeps no events of a foreground response
                return AsyncEventStream(reply, config=self._client.config, check=check)

            async def resume(reader: StreamReader) -> httpx.Response:  # the response's kept events after the last read
                replay = await self.retrieve(
                    reader.response_id,
                    stream=True,
                    starting_after=reader.last_sequence,
                    timeout=timeout,
                    max_retries=max_retries,
                )
                return replay.http_response

            return AsyncEventStream(
                reply,
                config=self._client.config,
                check=check,
                reconnect=resume,
                retries=self._client.retries(max_retries),
            )
        reply = await self._client.request("POST", "/responses", body, timeout=timeout, max_retries=max_retries)
        return _parse(bindings.ResponseObject, reply, self._client.config)

    async def compact(
        self,
        *,
        model: str,
        input: str | Sequence[Any] | None = None,
        previous_response_id: str | None = None,
        instructions: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> bindings.CompactObject:
        """Shrink a conversation (`POST /responses/compact`); its `output` can start the next request's input."""
        body = _compact_body(model, input, previous_response_id, instructions, extra_body)
        reply = await self._client.request("POST", "/responses/compact", body, timeout=timeout, max_retries=max_retries)
        return _parse(bindings.CompactObject, reply, self._client.config)

    def connect(self, *, check: bool = False, timeout: float | None = None) -> AsyncResponsesSession:
        """A WebSocket session on `/responses` (use it as `async with`)."""
        return AsyncResponsesSession(self._client.config, check=check, timeout=timeout)

    async def run(
        self,
        *,
        input: str | Sequence[Any],
        tools: Sequence[ToolLike] = (),
        max_turns: int = 8,
        **params: Any,
    ) -> RunResult:
        """The agentic loop (see `Responses.run`); the calls of a turn run concurrently."""
        loop = Loop(input, tools, max_turns, params)
        while True:
            response = await self.create(**loop.request())
            calls = loop.calls(response)
            if not calls:
                return loop.result
            loop.advance(response, await self._run_calls(loop, calls))

    def run_stream(
        self, *, input: str | Sequence[Any], tools: Sequence[ToolLike] = (), max_turns: int = 8, **params: Any
    ) -> AsyncRunStream:
        """The agentic loop, yielding every turn's events; `await stream.result()` once it is over."""
        return AsyncRunStream(self, Loop(input, tools, max_turns, params))

    async def _run_calls(self, loop: Loop, calls: list[Any]) -> list[ToolCall]:
        async def run_one(call: Any) -> ToolCall:
            tool = loop.tool(call)
            if tool is None:
                return loop.unknown(call)
            try:
                return loop.outcome(call, await tool.acall(call.arguments))
            except Exception as exc:  # a failing tool is reported to the model, not raised
                return loop.outcome(call, exc=exc)

        return list(await asyncio.gather(*(run_one(call) for call in calls)))  # gather keeps call order


class AsyncRunStream:
    """The async streaming agentic loop: `async for` every turn's events; `await result()` at the end."""

    def __init__(self, responses: AsyncResponses, loop: Loop):
        self._responses = responses
        self._loop = loop
        self._events = self._iterate()

    def __aiter__(self):
        return self._events

    async def result(self) -> RunResult:
        async for _ in self._events:
            pass
        return self._loop.result

    async def _iterate(self):
        loop = self._loop
        while True:
            events = await self._responses.create(**loop.request(), stream=True)
            async with events:
                async for event in events:
                    yield event
                response = events.reader.final_response()
            calls = loop.calls(response)
            if not calls:
                return
            loop.advance(response, await self._responses._run_calls(loop, calls))
