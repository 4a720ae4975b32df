"""WebSocket mode on `/v1/responses`: turns started by `response.create` messages.

- Authentication is the same bearer token, sent on the upgrade request; a bad or missing one is
  refused with the HTTP 401 error object before the connection opens.
- Each client message is a `response.create` (a create-response body plus `type`, without
  `stream`, `stream_options` or `background`). The server answers with the same events it
  would stream over SSE, one per message, and nothing like `[DONE]`.
- As real clients speak it (Codex), unless the server is strict: `stream: true`, which says what
  WebSocket mode does anyway, is accepted and ignored; `generate: false` is OpenAI's warm-up: the
  request is validated and stored like any turn, so its id can be the next turn's
  `previous_response_id`, but the model is not run: the turn is `response.created`,
  `response.in_progress` and `response.completed` with an empty `output`.
- What the server ignored in a turn (see `acceptance`) is listed in the turn's first event, under
  `openresponses:ignored`, a vendor-prefixed field clients skip.
- A message that cannot be handled gets a `WebSocketErrorEvent`: `{"type": "error", "status":
  <HTTP status>, "error": {type, code, message, param}}` (plus `headers`, such as `Retry-After`
  when the store is unavailable); the connection stays open.
- Turns run one after another. `previous_response_id` may name any response this connection has
  produced, including `store: false` ones, which live only in a connection-local cache, and
  otherwise any stored response of the same API key. An unknown one, or another key's, gives
  `previous_response_not_found` (404). The cache keeps the newest 32 `store: false` responses and
  at most 16 MiB of them (`create_app(websocket_cache_turns=..., websocket_cache_bytes=...)`);
  one forgotten is unknown.
- A turn that continues from a response and then fails evicts that response from the
  connection-local cache, so a stale context is never continued twice.
- A connection lasts at most `max_connection_seconds` (the spec's 60 minutes).
- A turn that generates is a stream under the server's cap (`streams`): beyond it, the turn gets
  the 503 `too_many_streams` envelope (with `Retry-After`) before the provider is called, and the
  connection stays open for the next.
- With observability on, each turn is observed as an HTTP request is: an access record, a count
  and a span of its own (`observability.observe_turn`).
"""

from __future__ import annotations

import json
import logging
import time
from contextvars import ContextVar
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from .acceptance import WEBSOCKET_FIELD
from .asgi import error_response
from .auth import Keys, Tenant, bearer
from .bodies import parse_body
from .emitter import Emitter, ToolPolicy
from .errors import InvalidRequest, OpenResponsesError
from .observability import observe_turn
from .store import ResponseStore, StoredResponse
from .streams import Streams
from .turns import Turns
from .wire import dumps

__all__ = ["transport_fields", "websocket_endpoint"]


DEFAULT_CACHE_TURNS = 32  # `store: false` turns a connection keeps to continue from
DEFAULT_CACHE_BYTES = 16 * 1024 * 1024  # and the most JSON they may hold together


class _ConnectionStore(ResponseStore):
    """The connection's own `store: false` responses first, then the server's store.

    Only what continuation needs is kept here: responses the server's store does not keep
    (`store: false`), the newest `max_turns` of them and at most `max_bytes` of JSON together, the
    oldest forgotten first (continuing from one gives `previous_response_not_found`)."""

    def __init__(
        self, shared: ResponseStore, max_turns: int = DEFAULT_CACHE_TURNS, max_bytes: int = DEFAULT_CACHE_BYTES
    ):
        self.local: dict[str, str] = {}  # id -> the record as JSON, oldest first
        self.size = 0
        self.shared = shared
        self.max_turns, self.max_bytes = max_turns, max_bytes

    async def get(self, response_id: str) -> StoredResponse | None:
        text = self.local.get(response_id)
        if text is not None:
            return StoredResponse.from_json(response_id, text)
        return await self.shared.get(response_id)

    async def put(self, record: StoredResponse) -> None:
        # The shared store first: when it fails, the turn fails, and this connection must not
        # keep the response to continue from either.
        if record.response.get("store") is not False:
            await self.shared.put(record)
            return
        await self.evict(record.id)
        text = record.to_json()
        self.local[record.id] = text
        self.size += len(text)
        while self.local and (len(self.local) > self.max_turns or self.size > self.max_bytes):
            await self.evict(next(iter(self.local)))

    async def delete(self, response_id: str) -> bool:
        return (self.local.pop(response_id, None) is not None) | await self.shared.delete(response_id)

    async def evict(self, response_id: str) -> None:
        """Forget a response on this connection only (the server's store keeps it)."""
        text = self.local.pop(response_id, None)
        if text is not None:
            self.size -= len(text)


# uvicorn's websockets-sansio protocol (its default) logs "ASGI callable returned without completing
# handshake" after every denial response, although the refusal was sent (Kludex/uvicorn#3138). A
# refused connection is deliberate, so that one record is dropped, for connections refused here only.
_REFUSED: ContextVar[bool] = ContextVar("openresponses_websocket_refused", default=False)


class _RefusalLogFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (_REFUSED.get() and record.getMessage().startswith("ASGI callable returned without completing"))


_REFUSAL_FILTER = _RefusalLogFilter()


def _envelope(error: OpenResponsesError) -> str:
    return dumps({"type": "error", "status": error.status, "error": error.payload(headers=True)}).decode()


def _peek_type(raw: bytes) -> Any:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth: `parse_body` says so
        return None
    return data.get("type") if isinstance(data, dict) else None


def transport_fields(raw: bytes) -> tuple[bytes, bool]:
    """`raw` without the fields real clients add to WebSocket turns, and whether to generate.

    `stream: true` is what WebSocket mode does anyway; `generate` (default true) is OpenAI's
    warm-up switch. Anything else, `stream: false` included, is left for validation to judge."""
    if b'"stream"' not in raw and b'"generate"' not in raw:
        return raw, True  # most turns
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return raw, True  # not JSON, or too deep: `parse_body` says so
    if not isinstance(data, dict):
        return raw, True
    generate = data.pop("generate", True)
    if not isinstance(generate, bool):
        raise InvalidRequest(
            f"Invalid value for 'generate': {generate!r} is not a boolean.", code="invalid_value", param="generate"
        )
    if data.get("stream") is True:
        del data["stream"]
    return json.dumps(data).encode(), generate  # ASCII escapes keep what `parse_body` must refuse


async def _no_steps() -> Any:
    """A provider's steps for a turn that generates nothing."""
    return
    yield


def websocket_endpoint(
    turns: Turns,
    keys: Keys,
    streams: Streams,
    model: type,
    max_connection_seconds: float = 3600,
    cache_turns: int = DEFAULT_CACHE_TURNS,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
):
    """The WebSocket handler: connections `keys` accepts, each message a turn (`turns`) validated
    with `model`, generating under the server's stream cap (`streams`); each connection keeps at
    most `cache_turns` of its `store: false` responses, and `cache_bytes` of them."""
    logging.getLogger("uvicorn.error").addFilter(_REFUSAL_FILTER)  # a no-op when already added

    async def endpoint(websocket: WebSocket) -> None:
        try:
            tenant = keys.authorize(bearer(websocket.headers.get("authorization")))
        except OpenResponsesError as exc:
            _REFUSED.set(True)  # uvicorn logs in this same task, after the endpoint returns
            await websocket.send_denial_response(error_response(exc))
            return
        await websocket.accept()
        store = _ConnectionStore(turns.store, cache_turns, cache_bytes)
        deadline = time.monotonic() + max_connection_seconds
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                if time.monotonic() > deadline:
                    await websocket.close(code=1000, reason="connection time limit reached")
                    return
                raw = message.get("text")
                if raw is None:
                    raw = message.get("bytes") or b""
                raw = raw.encode() if isinstance(raw, str) else raw
                await observe_turn(websocket.scope, _turn(websocket, raw, store, tenant))
        except WebSocketDisconnect:
            return

    async def _turn(websocket: WebSocket, raw: bytes, store: _ConnectionStore, tenant: Tenant) -> None:
        previous = None
        release = None  # the turn's stream slot, once it has one
        try:
            try:
                kind = _peek_type(raw)
                if kind is not None and kind != "response.create":
                    raise InvalidRequest(
                        f"Unknown client message type {kind!r}; send `response.create`.",
                        code="unknown_message_type",
                        param="type",
                    )
                generate = True
                if not turns.acceptance.strict:
                    raw, generate = transport_fields(raw)
                data, body = parse_body(raw, model, turns.bounds)
                previous = data.get("previous_response_id")
                response, request, own_input, policy = await turns.prepare(data, body, store)
                if generate:
                    release = streams.take(tenant.owner)  # beyond the cap: the 503 envelope, before the provider runs
                    steps, first = await turns.first_step(request)
                else:  # a warm-up: no model runs, so no call can meet `tool_choice: required`
                    steps, first, policy = _no_steps(), None, ToolPolicy(policy.allowed, required=False)
            except OpenResponsesError as exc:
                if previous and exc.status != 404:
                    await store.evict(previous)
                await websocket.send_text(_envelope(exc))
                return
            emitter = Emitter(response, policy, check=turns.debug, seal=turns.seal(data))
            report = {WEBSOCKET_FIELD: list(request.ignored)} if request.ignored else None

            async def deliver(batch: list[dict[str, Any]]) -> None:
                nonlocal report
                for event in batch:
                    if report is not None:  # the turn's first event says what was ignored
                        event, report = {**event, **report}, None
                    await websocket.send_text(dumps(event).decode())

            await turns.run(emitter, steps, first, own_input, deliver, store)
            if turns.debug:
                emitter.verify()
            if emitter.error is not None and previous:
                await store.evict(previous)
        finally:
            if release is not None:
                release()

    return endpoint
