"""WebSocket mode through the proxy: one upstream connection per client connection, relayed both ways.

Messages pass unchanged (text stays text, bytes stay bytes). Each `response.create` the client
sends starts a turn, recorded as one exchange; the upstream's messages until the turn's terminal
event (or its WebSocket `error` message) are checked by a `StreamObserver`. The handshake is
forwarded too: when the upstream refuses it (a 401, say), the client gets the same refusal.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any, Protocol

import anyio
from openresponses_runtime.server.acceptance import Acceptance
from openresponses_runtime.server.errors import OpenResponsesError, ServerError
from openresponses_runtime.server.routes import ROUTES
from openresponses_runtime.server.wire import dumps
from starlette.responses import Response
from starlette.websockets import WebSocket, WebSocketDisconnect
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from .config import ProxyConfig
from .headers import WEBSOCKET_HANDSHAKE, credentials, drop_hop_by_hop
from .observer import StreamObserver, check_request
from .recorder import Exchange, Recorder


class Relaying(Protocol):
    """What a relay asks of the proxy (`ProxyApp`): its settings, the checks it makes, where it
    records, and the upstream URL of a path."""

    config: ProxyConfig
    acceptance: Acceptance
    recorder: Recorder

    def upstream_url(self, path: str, query: bytes, *, websocket: bool = False) -> str: ...


__all__ = ["relay"]

_WEBSOCKET_OPERATIONS = {op.path: op for op in ROUTES if op.websocket and op.websocket_model is not None}
_NOT_TO_UPSTREAM = WEBSOCKET_HANDSHAKE | {b"host", b"content-length", b"user-agent", b"origin"}


class _Turn:
    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self.observer = StreamObserver(exchange, websocket=True)


async def relay(app: Relaying, scope: dict, receive: Any, send: Any) -> None:
    websocket = WebSocket(scope, receive, send)
    headers = list(scope["headers"])
    secrets = credentials(headers)
    operation = _WEBSOCKET_OPERATIONS.get(scope["path"])
    forwarded = [
        (name.decode("latin-1"), value.decode("latin-1")) for name, value in drop_hop_by_hop(headers, _NOT_TO_UPSTREAM)
    ]
    user_agent = next((v.decode("latin-1") for n, v in headers if n.lower() == b"user-agent"), None)
    origin = next((v.decode("latin-1") for n, v in headers if n.lower() == b"origin"), None)
    url = app.upstream_url(scope["path"], scope.get("query_string", b""), websocket=True)
    handshake = Exchange("GET", scope["path"], transport="websocket")
    try:
        with anyio.fail_after(app.config.upstream_timeout):
            upstream = await connect(
                url,
                additional_headers=forwarded,
                user_agent_header=user_agent,
                origin=origin,
                subprotocols=list(scope.get("subprotocols") or ()) or None,
                compression=None,
                proxy=None,
                max_size=None,
                open_timeout=None,
            )
    except InvalidStatus as exc:  # the upstream refused the handshake: refuse the client the same way
        answer = exc.response
        handshake.status = handshake.upstream_status = answer.status_code
        kept = [
            (k, v)
            for k, v in answer.headers.raw_items()
            if k.lower() not in ("connection", "upgrade", "content-length")
        ]
        await websocket.send_denial_response(
            Response(bytes(answer.body or b""), status_code=answer.status_code, headers=dict(kept))
        )
        _finish(app, handshake, secrets)
        return
    except TimeoutError:
        handshake.diagnose("upstream-timeout", f"no handshake within {app.config.upstream_timeout:g} s")
        await _deny(
            websocket,
            handshake,
            ServerError("The upstream server did not answer in time.", code="upstream_timeout", status=504),
        )
        _finish(app, handshake, secrets)
        return
    except (OSError, InvalidHandshake) as exc:
        handshake.diagnose("upstream-unreachable", f"{type(exc).__name__}: {exc}")
        await _deny(
            websocket,
            handshake,
            ServerError("The upstream server could not be reached.", code="upstream_unreachable", status=502),
        )
        _finish(app, handshake, secrets)
        return
    await websocket.accept(subprotocol=upstream.subprotocol)
    turns: list[_Turn] = []  # turns started and not yet ended, oldest first

    def end_turn(turn: _Turn, *, early: bool = False, refused: bool = False) -> None:
        if not refused:  # a refused turn streamed nothing to check
            turn.observer.finish(ended_early=early)
        _finish(app, turn.exchange, secrets)
        turns.remove(turn)

    async def client_to_upstream() -> None:
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                text, data = message.get("text"), message.get("bytes")
                raw = text.encode() if text is not None else (data or b"")
                exchange = Exchange("WS", scope["path"], transport="websocket")
                if operation is not None and len(raw) > app.config.max_checked_request:
                    exchange.diagnose(
                        "request-not-checked",
                        f"the turn is larger than {app.config.max_checked_request:,} bytes (--max-checked-request):"
                        " forwarded unchecked",
                    )
                elif operation is not None:
                    check = exchange.check(
                        check_request(raw, operation.websocket_model, app.acceptance, websocket=True)
                    )
                    if app.recorder.bodies:
                        exchange.request_body = check.data
                    if check.refusal is not None and app.config.enforce:
                        exchange.status = check.refusal.status
                        await websocket.send_text(_envelope(check.refusal))
                        _finish(app, exchange, secrets)
                        continue
                turns.append(_Turn(exchange))
                await upstream.send(text if text is not None else raw)
        except ConnectionClosed:  # the upstream went away; upstream_to_client reports it
            pass
        finally:
            for turn in list(turns):
                turn.exchange.diagnose("client-disconnect", "the client closed the connection mid-turn")
                end_turn(turn, early=True)
            group.cancel_scope.cancel()

    async def upstream_to_client() -> None:
        try:
            async for message in upstream:
                if isinstance(message, str):
                    await websocket.send_text(message)
                else:
                    await websocket.send_bytes(message)
                if not turns:
                    continue
                turn = turns[0]
                turn.exchange.first_byte()
                turn.exchange.bytes += len(message)
                turn.observer.last_event_at = time.monotonic()
                if not turn.observer.checker.events and _is_refusal(message, turn):
                    end_turn(turn, refused=True)
                    continue
                turn.observer.feed(None, message)
                if turn.observer.terminal is not None:
                    turn.exchange.status = turn.exchange.status or 200
                    end_turn(turn)
        except ConnectionClosed:
            pass
        except (WebSocketDisconnect, OSError, RuntimeError):  # the client went away mid-send
            for turn in list(turns):
                turn.exchange.diagnose("client-disconnect", "the client closed the connection mid-turn")
                end_turn(turn, early=True)
        for turn in list(turns):
            turn.exchange.diagnose("upstream-died", "the upstream closed the WebSocket mid-turn")
            end_turn(turn, early=True)
            await _close_quietly(websocket, 1011, "upstream closed mid-turn")
        group.cancel_scope.cancel()

    async def watchdog() -> None:
        while True:
            await anyio.sleep(min(app.config.stall_timeout, app.config.tool_timeout) / 4)
            for turn in list(turns):
                deadline, kind, message = turn.observer.next_deadline(app.config.stall_timeout, app.config.tool_timeout)
                if time.monotonic() >= deadline:
                    turn.exchange.diagnose(kind, message)
                    code = kind.replace("-", "_")
                    for event in turn.observer.closing_events(code, f"The proxy ended the turn: {message}."):
                        await websocket.send_text(dumps(event).decode())
                    end_turn(turn, early=True)
                    await upstream.close(1011, "turn stalled")
                    await _close_quietly(websocket, 1011, "upstream stalled")
                    group.cancel_scope.cancel()
                    return

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(client_to_upstream)
            group.start_soon(upstream_to_client)
            group.start_soon(watchdog)
    except WebSocketDisconnect:
        pass
    finally:
        await upstream.close()


def _is_refusal(message: str | bytes, turn: _Turn) -> bool:
    """A WebSocket `error` message (with its HTTP `status`) before any event: the turn was refused."""
    try:
        data = json.loads(message)
    except (ValueError, UnicodeDecodeError):
        return False
    if isinstance(data, dict) and data.get("type") == "error" and isinstance(data.get("status"), int):
        turn.exchange.status = data["status"]
        return True
    return False


def _envelope(error: OpenResponsesError) -> str:
    return dumps({"type": "error", "status": error.status, "error": error.payload()}).decode()


async def _deny(websocket: WebSocket, exchange: Exchange, error: OpenResponsesError) -> None:
    exchange.status = error.status
    await websocket.send_denial_response(
        Response(dumps(error.body()), status_code=error.status, media_type="application/json")
    )


async def _close_quietly(websocket: WebSocket, code: int, reason: str) -> None:
    with contextlib.suppress(RuntimeError, OSError):
        await websocket.close(code, reason)


def _finish(app: Relaying, exchange: Exchange, secrets: tuple[str, ...]) -> None:
    exchange.end()
    app.recorder.record(exchange, secrets)
