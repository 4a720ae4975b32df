"""`create_app`: a Starlette app serving the spec's operations for one provider.

Every route comes from the generated `routes.ROUTES`. `HANDLERS` names the operations the runtime
serves itself, by method and path template (the build binds them so, whatever their
`operationId`); the handlers of `create`, `compact` and the input-token count are here, those of a
stored response are `lifecycle`'s. Every other operation of the spec is a stub (see `stubs`): it
answers 501 `not_implemented` until the provider defines the method the route names. The rest lives
in rooms of its own: `bodies` reads a request, `resource` makes its response skeleton, `turns`
drives the provider to the end of the response, `background` runs responses in tasks of the
server's own, `asgi` answers, `websocket` serves turns over a WebSocket.
Every failure, including ones the framework detects (unknown route, wrong method), is answered
with the spec's error object and a fitting status:

| problem | status | `error.type` / `code` |
|---|---|---|
| body is not valid JSON, or not an object | 400 | `invalid_request` / `invalid_json` |
| (also `NaN`/`Infinity`, a number beyond double range, a lone `\\ud800` surrogate, nesting too deep) | 400 | `invalid_request` / `invalid_json` |
| body fails the request schema (strictly: no `"yes"` for a boolean, no `false` for a number) | 400 | `invalid_request` / `invalid_value` (+ `param`, e.g. `input[0].content`) |
| `tool_choice: "required"` but `tools` has no function to call | 400 | `invalid_request` / `invalid_value` (`param` `tool_choice`) |
| input the server does not honour: unknown item or content types, a `function_call_output` without its call (see `acceptance`) | 400 | `invalid_request` / `unsupported_item_type`, `unsupported_content_type`, `function_call_not_found` |
| with `strict=True` only: a parameter or a tool type the spec does not define (by default they are ignored and named in the `OpenResponses-Ignored` header; see `acceptance`) | 400 | `invalid_request` / `unknown_parameter`, `unsupported_tool_type` (`param` `tools[0].type`) |
| an explicit `null` where the spec does not allow one (the models take it; see `nulls`) | 400 | `invalid_request` / `invalid_value` (+ `param`) |
| `Content-Type` is not `application/json` | 415 | `invalid_request` / `unsupported_media_type` |
| body larger than `max_body_bytes` | 413 | `invalid_request` / `request_too_large` |
| missing or wrong bearer token | 401 | `invalid_request` / `invalid_api_key` |
| unknown `previous_response_id` | 404 | `not_found` / `previous_response_not_found` |
| a reasoning item's `encrypted_content` changed, or sealed with another key (see `sealing`) | 400 | `invalid_request` / `invalid_encrypted_content` (`param` `input[3].encrypted_content`) |
| unknown route / wrong method | 404 / 405 | `not_found` / `invalid_request` |
| provider raises `TooManyRequests` | 429 | `too_many_requests` |
| provider times out (`TimeoutError`) | 500 | `server_error` / `provider_timeout` |
| the response store cannot serve (unreachable, disk full, locked: `StoreUnavailable`) | 503 + `Retry-After` | `server_error` / `store_unavailable` |
| the server's shutdown deadline passed before the response finished (see `shutdown`) | 503 + `Retry-After` | `server_error` / `server_shutting_down` |
| a stream (or a background run) beyond `max_streams` under way, or beyond the key's share (`max_streams_per_tenant`), refused before it begins (see `streams`) | 503 + `Retry-After` | `server_error` / `too_many_streams` |
| a non-streamed create beyond `max_pending` being answered (see `streams`) | 503 + `Retry-After` | `server_error` / `server_busy` (`param` `stream`) |
| more input items, or tools, than `bounds` allow; a `previous_response_id` whose conversation is larger than they allow (see `bounds`) | 400 | `invalid_request` / `too_many_items` (`input`), `too_many_tools` (`tools`), `context_too_large` (`previous_response_id`) |
| another API key's response, by any operation | 404 | as for an id never stored (see `auth`) |
| `tool_choice` broken by the model | 500 | `model_error` / `tool_choice_violation` |
| an operation the runtime leaves to the provider (a stub, see `stubs`), or the input-token count, when the provider does not implement it | 501 | `server_error` / `not_implemented` |
| anything else | 500 | `server_error` |

Upstream also lists `application/x-www-form-urlencoded` for the request body, but its prose says
clients MUST send JSON, and a nested body has no faithful form encoding; this spec drops it, and
such requests get 415.

Once a stream has begun, any failure (of the provider, with an exception of any class; of the
store saving the response; of the server itself) ends it with an `error` event, `response.failed`
and `[DONE]`; only the client leaving and the process stopping end it otherwise. The response is saved before
`response.completed` is sent, so a client is never told of a completed response the store lacks.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import parse_qs

from pydantic import BaseModel, RootModel
from starlette.applications import Starlette
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from .acceptance import Accept, Acceptance
from .asgi import (
    EXCEPTION_HANDLERS,
    EventStream,
    JSONAnswer,
    JSONResponse,
    OperationApp,
    SpecApp,
    error_response,
    ignored_header,
    nothing,
)
from .auth import Keys, bearer, current_tenant
from .background import BackgroundRuns
from .bodies import DEFAULT_MAX_BODY_BYTES, check_content_type, json_path, parse_body, read_body, request_headers
from .bounds import Bounds
from .compaction import default_compaction
from .emitter import Emitter, unserved
from .errors import NotImplementedOperation
from .ids import new_id
from .lifecycle import Lifecycle
from .observability import Observability, Observer
from .resource import input_items, response_skeleton
from .routes import ROUTES, Operation
from .sealing import Sealer, seal_compaction, unseal_compaction, unseal_reasoning
from .steps import Provider
from .store import ResponseStore, complete, open_store
from .streams import DEFAULT_MAX_PENDING, DEFAULT_MAX_STREAMS, Pending, Streams
from .turns import Turns
from .websocket import DEFAULT_CACHE_BYTES, DEFAULT_CACHE_TURNS, websocket_endpoint
from .wire import DONE_FRAME

T = TypeVar("T")


class ClientGone(Exception):
    """The client disconnected before its answer was ready."""


async def unless_gone(receive: Receive, work: Awaitable[T]) -> T:
    """`work`'s result, or `ClientGone` when the client disconnects first: `work` is then cancelled, so
    that a response nobody will read stops holding its place (and its provider) at once.

    `work` runs in the request's own task. A watcher of the client starts only once `work` waits
    (the event loop turns only then): a response made without waiting, as from a local model and
    an in-memory store, costs no task and no loop turn; one that waits is watched from its first wait."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    gone = False
    watcher: asyncio.Task[None] | None = None

    async def watch() -> None:
        nonlocal gone
        while (await receive())["type"] != "http.disconnect":  # the body was read already: nothing else comes
            pass
        gone = True
        task.cancel()

    def start_watching() -> None:
        nonlocal watcher
        watcher = loop.create_task(watch())

    waiting = loop.call_soon(start_watching)
    try:
        result = await work
    except asyncio.CancelledError:
        if gone and task.uncancel() == 0:  # cancelled by the watcher alone
            raise ClientGone() from None
        raise
    finally:
        waiting.cancel()
        if watcher is not None:
            watcher.cancel()
    if gone:  # the work finished all the same (it held on through its cancellation): nobody reads it
        task.uncancel()
        raise ClientGone()
    return result


# `json_path`, `parse_body` and `input_items` stay importable from here, where they were.
__all__ = ["create_app", "error_response", "input_items", "json_path", "parse_body", "response_skeleton"]

#: The operations the runtime serves itself, by method and path template under the servers' base
#: path, and the handler of each (read by the build, which binds them whatever their `operationId`).
HANDLERS = {
    ("POST", "/responses"): "create_response",
    ("POST", "/responses/compact"): "compact_response",
    ("POST", "/responses/input_tokens"): "count_input_tokens",
    ("GET", "/responses/{response_id}"): "get_response",
    ("DELETE", "/responses/{response_id}"): "delete_response",
    ("POST", "/responses/{response_id}/cancel"): "cancel_response",
    ("GET", "/responses/{response_id}/input_items"): "list_input_items",
}


class _Server:
    """The spec's operations for one provider: `create` and `compact` here, a stored response's
    in `lifecycle`. Each part holds what it needs: `keys` who may call, `turns` the provider and
    the store, `background` the runs in tasks of the server's own, `streams` the cap on streams."""

    def __init__(
        self,
        keys: Keys,
        turns: Turns,
        streams: Streams,
        max_body_bytes: int,
        pending: Pending,
        retention: float | None = None,
    ):
        self.keys = keys
        self.turns = turns
        self.streams = streams
        self.pending = pending
        self.max_body_bytes = max_body_bytes
        self.background = BackgroundRuns(turns, streams, retention)
        self.lifecycle = Lifecycle(keys, self.background)

    @property
    def store(self) -> ResponseStore:
        return self.turns.store

    @property
    def active(self) -> int:
        """Streams under way right now (streamed requests, WebSocket turns, background runs)."""
        return self.streams.active

    def handlers(self) -> dict[str, Callable[..., Awaitable[ASGIApp]]]:
        """Each of `HANDLERS`' handlers by name."""
        lifecycle = self.lifecycle
        return {
            "create_response": self.create_response,
            "compact_response": self.compact_response,
            "count_input_tokens": self.count_input_tokens,
            "get_response": lifecycle.get_response,
            "delete_response": lifecycle.delete_response,
            "cancel_response": lifecycle.cancel_response,
            "list_input_items": lifecycle.list_input_items,
        }

    def authorize(self, scope: Scope) -> None:
        """The request's key checked: its tenant, from here on (`auth.current_tenant`)."""
        self.keys.authorize(bearer(request_headers(scope)[0]))

    async def read(self, scope: Scope, receive: Receive, model: type) -> tuple[dict[str, Any], Any]:
        """The request's body as JSON and as `model`, once its key, media type and size pass."""
        authorization, content_type, length = request_headers(scope)
        self.keys.authorize(bearer(authorization))  # the request's tenant, from here on (`auth.current_tenant`)
        check_content_type(content_type)
        raw = await read_body(receive, length, self.max_body_bytes)
        return parse_body(raw, model, self.turns.bounds)

    async def create_response(self, scope: Scope, receive: Receive, model: type) -> ASGIApp:
        turns = self.turns
        data, body = await self.read(scope, receive, model)
        response, provider_request, own_input, policy = await self.turns.prepare(data, body)
        if data.get("background"):  # run by a task of the server's own (see `background`)
            headers = ignored_header(provider_request.ignored)
            return await self.background.start_background(
                data, response, provider_request, own_input, policy, turns.seal(data), headers
            )
        stream = bool(data.get("stream"))
        emitter = Emitter(response, policy, check=turns.debug, events=stream, frames=stream, seal=turns.seal(data))
        # The header is read after the provider's first step: a gateway names there what its upstream
        # would refuse and it left out (`gateways.base.ignore`).
        if stream:
            release = self.streams.take(_owner())  # beyond the cap: a 503 now, before the provider is called
            try:
                steps, first = await turns.first_step(provider_request)
            except BaseException:
                release()
                raise
            headers = ignored_header(provider_request.ignored)
            return EventStream(lambda send: self.sse(send, emitter, steps, first, own_input), headers, release)
        release = self.pending.take(_owner())  # beyond the cap or the key's share: a 503 now, before the provider
        try:
            encoded = await unless_gone(receive, self.answer(provider_request, emitter, own_input))
        except ClientGone:
            return nothing
        finally:
            release()  # at once when the client went away: its response was stopped, not finished
        if self.turns.debug:
            emitter.verify()
        if emitter.error is not None:
            return error_response(emitter.error)
        return JSONAnswer(encoded, ignored_header(provider_request.ignored))

    async def answer(self, request: Any, emitter: Emitter, own_input: list[dict]) -> bytes | None:
        """A non-streamed response, made whole."""
        steps, first = await self.turns.first_step(request)
        return await self.turns.run(emitter, steps, first, own_input)

    async def sse(
        self, send: Send, emitter: Emitter, steps: AsyncIterator[Any], first: Any, own_input: list[dict]
    ) -> None:
        """The response's events as SSE frames, each provider step's sent as soon as it is made."""

        def deliver(frames: list[bytes]) -> Awaitable[None]:  # the send itself is awaited: no coroutine between
            return send({"type": "http.response.body", "body": b"".join(frames), "more_body": True})

        await self.turns.run(emitter, steps, first, own_input, deliver)
        await send({"type": "http.response.body", "body": DONE_FRAME, "more_body": True})
        if self.turns.debug:
            emitter.verify()

    async def compact_response(self, scope: Scope, receive: Receive, model: type) -> ASGIApp:
        turns = self.turns
        data, body = await self.read(scope, receive, model)
        # Compaction keeps what it is given, so it refuses what it cannot read too.
        admitted = turns.acceptance.admit(data, body)
        data = admitted.data
        turns.bounds.check_request(data)
        owner = _owner()
        history = await turns.history(data.get("previous_response_id"), owner)
        own = unseal_reasoning(turns.sealer, input_items(data.get("input")), tenant=owner)
        history = unseal_compaction(
            turns.sealer, unseal_reasoning(turns.sealer, history, None, tenant=owner), None, tenant=owner
        )
        items = history + unseal_compaction(turns.sealer, own, tenant=owner)
        model = data.get("model") or turns.default_model
        compact = getattr(turns.provider, "compact", None)
        if compact is not None:
            output = await compact(items, model=model, instructions=data.get("instructions"))
        else:
            output = default_compaction(items)
        output = seal_compaction(turns.sealer, output, tenant=owner)  # for this key only, whoever made it
        return JSONResponse(
            {
                "id": new_id("cmp"),
                "object": "response.compaction",
                "output": output,
                "created_at": int(time.time()),
                "usage": {
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "total_tokens": 0,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            },
            headers=dict(ignored_header(admitted.ignored)),
        )

    async def count_input_tokens(self, scope: Scope, receive: Receive, model: type) -> ASGIApp:
        """The tokens the request's input would take, counted by the provider's `count_input_tokens`
        (the context a create with this body would give the model: earlier turns, then this input)."""
        data, body = await self.read(scope, receive, model)
        count = getattr(self.turns.provider, "count_input_tokens", None)
        if count is None:
            raise NotImplementedOperation(
                "This server's model cannot count input tokens.", operation="count_input_tokens"
            )
        _, request, _, _ = await self.turns.prepare(data, body)
        tokens = await count(request)
        return JSONResponse(
            {"object": "response.input_tokens", "input_tokens": int(tokens)},
            headers=dict(ignored_header(request.ignored)),
        )

    def stub(self, op: Operation) -> Callable[..., Awaitable[ASGIApp]]:
        """The handler of an operation the runtime leaves to the provider: the provider's method
        `op.implement`, called with the body, path and query parameters; 501 while it has none."""
        provider = self.turns.provider

        async def serve(scope: Scope, receive: Receive, model: type | None = None) -> ASGIApp:
            implement = getattr(provider, op.implement or "", None)
            if not op.body or implement is None:
                self.authorize(scope)
            if implement is None:
                raise NotImplementedOperation(
                    f"{op.method} {op.path} ({op.operation_id}) is not implemented by this server.",
                    operation=op.implement,
                )
            arguments: dict[str, Any] = {}
            if op.body:
                data, body = await self.read(scope, receive, model or _AnyObject)
                arguments["body"] = data if model is None else body
            arguments |= {name: scope["path_params"][key] for key, name in op.path_params}
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            arguments |= {name: query[key][-1] for key, name in op.query_params if key in query}
            answer = await implement(**arguments)
            if isinstance(answer, BaseModel):
                answer = answer.model_dump(mode="json", by_alias=True, exclude_unset=True)
            return JSONResponse(answer, status_code=op.status)

        return serve


class _AnyObject(RootModel[dict[str, Any]]):
    """A stub's body where the spec names no model: any JSON object."""


def _owner() -> str | None:
    tenant = current_tenant()
    return None if tenant is None else tenant.owner


def create_app(
    provider: Provider,
    *,
    store: ResponseStore | str | None = None,
    api_keys: Iterable[str | tuple[str | None, str]] | str | None = None,
    debug: bool = False,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    default_model: str = "default",
    max_connection_seconds: float = 3600,
    accept: Accept | None = None,
    strict: bool = False,
    reasoning_key: str | bytes | None = None,
    observability: Observability | bool = False,
    max_streams: int | None = DEFAULT_MAX_STREAMS,
    tenant_secret: str | bytes | None = None,
    max_streams_per_tenant: int | None = None,
    max_pending: int | None = DEFAULT_MAX_PENDING,
    max_pending_per_tenant: int | None = None,
    bounds: Bounds | None = None,
    websocket_cache_turns: int = DEFAULT_CACHE_TURNS,
    websocket_cache_bytes: int = DEFAULT_CACHE_BYTES,
    retention: float | None = None,
) -> Starlette:
    """A Starlette app serving the spec's operations with `provider` behind them.

    `store`: a `ResponseStore`, or a URL for `open_store` (default `$ORSPEC_STORE`, else a SQLite
    file in the working directory). `api_keys`: the bearer tokens accepted (default
    `$ORSPEC_API_KEY`), each a key or a `(tenant name, key)` pair (`auth.read_keys_file` reads them
    from a file); there is no open mode, so without any key this raises `ValueError`. Each key is a
    tenant: what it stores, runs and seals no other key reaches (see `auth`); `tenant_secret`
    (default `$ORSPEC_TENANT_SECRET`, else a fixed one) is what their owner tags are hashed under.
    `debug`: run the stream checker on every response the server emits and fail loudly.
    `max_connection_seconds`: how long a WebSocket connection may last (the spec's 60 minutes).
    `accept`: the input item types, content types and parameters the provider honours beyond the
    spec (see `acceptance`). Other unknown parameters and tool types are ignored and reported in
    the `OpenResponses-Ignored` header; `strict`: refuse them with a 400 instead. Unknown input
    item and content types are refused either way. `reasoning_key`: the key that seals reasoning
    items for clients that carry them (`include: ["reasoning.encrypted_content"]`), default
    `$ORSPEC_REASONING_KEY`, else a random key for this process (see `sealing`).
    `observability`: `True` or an `Observability` with its settings serves `/metrics`, `/healthz`
    and `/readyz`, gives each request an id, an access log record and a trace span (the
    `observability` extra; see `observability`). `max_streams`: streams generated at once (streamed
    requests, WebSocket turns, background runs); one more is refused with a 503 before it begins
    (`None` or 0: no cap; see `streams`). `max_streams_per_tenant`: the most of them one API key
    may hold (default: all with one key, half with more); `max_pending`: non-streamed creates at
    once (default 64), one more answered 503 `server_busy`; `max_pending_per_tenant`: the most of
    them one API key may hold (default: all with one key, half with more). `bounds`: what one request may ask
    (input items, tools, the context a `previous_response_id` loads; see `bounds`).
    `websocket_cache_turns`, `websocket_cache_bytes`: the `store: false` responses a WebSocket
    connection keeps to continue from (default the newest 32, at most 16 MiB; see `websocket`).
    `retention`: seconds stored responses and background runs' frames are kept (default: for ever),
    swept in a task of the server's own (see `background`).
    """
    if gaps := unserved():  # a package built from a spec without what a response needs
        raise ValueError(f"this package cannot serve responses: {'; '.join(gaps)}")
    keys = Keys(api_keys, secret=tenant_secret)
    if store is None or isinstance(store, str | os.PathLike):
        store = open_store(store)
    store = complete(store)
    observer = None
    if observability:
        settings = observability if isinstance(observability, Observability) else Observability()
        observer = Observer(settings, store, provider)
        store, provider = observer.store, observer.provider
    if max_streams_per_tenant is None and max_streams and len(keys.tenants) > 1:
        max_streams_per_tenant = -(-max_streams // 2)  # one key cannot take every slot
    streams = Streams(max_streams, max_streams_per_tenant)
    if max_pending_per_tenant is None and max_pending and len(keys.tenants) > 1:
        max_pending_per_tenant = -(-max_pending // 2)  # one key's creates cannot keep the others out
    pending = Pending(max_pending, max_pending_per_tenant)
    turns = Turns(
        provider,
        store,
        acceptance=Acceptance(accept, strict=strict),
        sealer=Sealer(reasoning_key),
        default_model=default_model,
        debug=debug,
        bounds=bounds,
    )
    server = _Server(keys, turns, streams, max_body_bytes, pending, retention)
    handlers = server.handlers()
    routes: list[Any] = []
    operations: dict[tuple[str, str], OperationApp] = {}
    for op in ROUTES:
        handler = server.stub(op) if op.handler is None else handlers[op.handler]
        operation = OperationApp(handler, op.request_model)
        if "{" not in op.path:  # the fast path matches paths as they are; a template is the router's to fill
            operations[op.method, op.path] = operation
        routes.append(Route(op.path, operation, methods=[op.method], name=op.operation_id))
        if op.websocket and op.websocket_model is not None:
            endpoint = websocket_endpoint(
                turns,
                keys,
                streams,
                op.websocket_model,
                max_connection_seconds,
                websocket_cache_turns,
                websocket_cache_bytes,
            )
            routes.append(WebSocketRoute(op.path, endpoint, name=f"{op.operation_id}_websocket"))
    app = SpecApp(
        operations, routes=routes, exception_handlers=dict(EXCEPTION_HANDLERS), lifespan=server.background.lifespan
    )
    app.observer = observer
    app.state.openresponses = server
    return app
