"""The proxy as an ASGI app: forwards every request to the upstream and observes it on the side.

HTTP: the request body is read, checked with the server's own code (`parse_body`,
`Acceptance`: tolerant, or strict with `enforce`, which then answers a refusal itself) and forwarded
(`upstream`: one pool of kept-alive connections).
A body larger than `max_checked_request` is not held: what was read is forwarded and the rest follows
as it arrives, unchecked, and the record says so (checking costs memory many times the body's size).
The answer is passed to the client chunk by chunk as it arrives, with the upstream's status and headers (hop-by-hop ones
dropped), and a copy of each chunk goes to the observer after the client has it. WebSocket: the
proxy opens its own connection to the upstream and relays messages both ways, one turn per
`response.create`.

Where the upstream fails, the client gets the spec's error object: 502 for a 5xx or an unreachable
upstream, 504 when it does not answer within `upstream_timeout`. A stream that stalls, or whose
upstream dies, is ended cleanly: an `error` event, `response.failed` (when the response is
known) and `[DONE]`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from openresponses_runtime.server.acceptance import Acceptance
from openresponses_runtime.server.errors import OpenResponsesError, ServerError
from openresponses_runtime.server.routes import ROUTES
from openresponses_runtime.server.shutdown import ending
from openresponses_runtime.server.wire import dumps, sse_frame
from openresponses_runtime.upstream import Upstream, UpstreamError, UpstreamResponse

from .config import DEFAULT_MAX_CHECKED_REQUEST, ProxyConfig
from .headers import HOP_BY_HOP, credentials, drop_hop_by_hop
from .observer import StreamObserver, check_json_response, check_request, side_decoder
from .recorder import Exchange, Recorder
from .websocket import relay

__all__ = ["DEFAULT_MAX_CHECKED_REQUEST", "ProxyApp", "ProxyConfig"]

log = logging.getLogger("orspec.proxy")

# `expect: 100-continue` is answered to the client by the proxy's own server, which has the body by then.
_NOT_TO_UPSTREAM = HOP_BY_HOP | {b"host", b"content-length", b"expect"}
_MAX_CHECKED_BODY = 32 * 1024 * 1024  # JSON answers larger than this are forwarded but not checked
_OPERATIONS = {op.path: op for op in ROUTES if op.method == "POST"}


class ProxyApp:
    """An ASGI app forwarding to `config.upstream` and recording each exchange with `recorder`."""

    def __init__(self, config: ProxyConfig, recorder: Recorder) -> None:
        self.config = config
        self.recorder = recorder
        # The server's own request checks: what a tolerant server ignores, or (`--enforce`) what a strict one refuses.
        self.acceptance = Acceptance(strict=config.enforce, quiet=True)
        parts = urlsplit(config.upstream.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"--upstream must be an http:// or https:// URL, not {config.upstream!r}")
        # With or without `/v1`: clients always call `/v1/...`, which maps onto the upstream's base path.
        self._base_path = parts.path.removesuffix("/v1")
        self._origin = (parts.scheme, parts.netloc)
        # One pool of kept-alive connections for all requests; it keeps no cookies, decompresses nothing
        # and never goes through an environment proxy.
        try:
            port = parts.port
        except ValueError:
            raise ValueError(f"--upstream {config.upstream!r} has a port that is not a number") from None
        self.pool = Upstream(
            parts.scheme,
            parts.hostname or "",
            port,
            connect_timeout=config.upstream_timeout,
            ca_file=config.upstream_ca_file,
        )

    def _target(self, path: str, query: bytes) -> str:
        """The request target on the upstream: its base path, then the client's path and query."""
        target = self._base_path + path
        return f"{target}?{query.decode('latin-1')}" if query else target

    def upstream_url(self, path: str, query: bytes, *, websocket: bool = False) -> str:
        scheme, netloc = self._origin
        if websocket:
            scheme = "wss" if scheme == "https" else "ws"
        return urlunsplit((scheme, netloc, self._base_path + path, query.decode("latin-1"), ""))

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await relay(self, scope, receive, send)
        elif scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await self.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return

    async def aclose(self) -> None:
        await self.pool.aclose()

    # -- HTTP ----------------------------------------------------------------------------------

    async def _http(self, scope: dict, receive: Any, send: Any) -> None:
        exchange = Exchange(scope["method"], scope["path"])
        headers = list(scope["headers"])
        secrets = credentials(headers)
        try:
            await self._exchange(exchange, scope, receive, send, headers)
        finally:
            exchange.end()
            # Written in the event loop's next turn, once the client's last bytes have left (the serving
            # layer sends a turn's writes as it ends): the answer never waits for its record.
            asyncio.get_running_loop().call_soon(self.recorder.record, exchange, secrets)

    async def _exchange(self, exchange: Exchange, scope: dict, receive: Any, send: Any, headers: list) -> None:
        cap = self.config.max_checked_request
        body, more = await _read_body(receive, cap)
        checked = len(body) <= cap
        if not checked:
            exchange.diagnose(
                "request-not-checked",
                f"the request body is larger than {cap:,} bytes (--max-checked-request): forwarded unchecked",
            )
        if more:  # passed on as it arrives, with the client's content-length
            body = _rest_of_body(body, receive)
        operation = _OPERATIONS.get(scope["path"]) if scope["method"] == "POST" else None
        if checked and operation is not None and operation.request_model is not None:
            check = exchange.check(check_request(body, operation.request_model, self.acceptance))
            if self.recorder.bodies:
                exchange.request_body = check.data
            if check.refusal is not None and self.config.enforce:
                await _reply(send, exchange, check.refusal)
                return
        sent_at = time.perf_counter()
        try:
            async with asyncio.timeout(self.config.upstream_timeout):
                upstream = await self.pool.request(
                    scope["method"],
                    self._target(scope["path"], scope.get("query_string", b"")),
                    _upstream_headers(headers, keep_length=more),  # what the client sent, nothing of the proxy's own
                    body,
                )
        except TimeoutError:
            exchange.diagnose("upstream-timeout", f"no answer within {self.config.upstream_timeout:g} s")
            await _reply(
                send, exchange, _gateway_error(504, "upstream_timeout", "The upstream server did not answer in time.")
            )
            return
        except UpstreamError as exc:
            exchange.diagnose("upstream-unreachable", str(exc))
            await _reply(
                send, exchange, _gateway_error(502, "upstream_unreachable", "The upstream server could not be reached.")
            )
            return
        try:
            await self._answer(exchange, scope, receive, send, upstream, sent_at)
        finally:
            upstream.close()  # a no-op after the end of the body; before it, this cancels the upstream request

    async def _answer(
        self, exchange: Exchange, scope: dict, receive: Any, send: Any, upstream: UpstreamResponse, sent_at: float
    ) -> None:
        exchange.upstream_status = status = upstream.status
        if status >= 500:
            exchange.diagnose("upstream-error", f"the upstream answered {status}")
            await _reply(
                send,
                exchange,
                _gateway_error(502, "upstream_error", f"The upstream server failed with status {status}."),
            )
            return
        media = upstream.header(b"content-type").split(";", 1)[0].strip().lower()
        checked = scope["path"] in _OPERATIONS
        observer = None
        decoder = side_decoder(upstream.header(b"content-encoding") or None) if checked else False
        if decoder is False and checked:
            exchange.response_problems.append("not checked: the body's content-encoding is unknown to the proxy")
        if media == "text/event-stream":
            exchange.transport = "sse"
            if decoder is not False:
                observer = StreamObserver(exchange)
        exchange.status = status
        await send(
            {"type": "http.response.start", "status": status, "headers": drop_hop_by_hop(list(upstream.raw_headers))}
        )
        kept: list[bytes] | None = [] if checked and observer is None and decoder is not False else None
        cut: tuple[str, str] | None = None  # (code, message) when the proxy ends the stream itself
        last_chunk_at = time.monotonic()
        stall, tool = self.config.stall_timeout, self.config.tool_timeout

        def next_deadline() -> tuple[float, str, str]:
            if observer is not None:
                return observer.next_deadline(stall, tool)
            return last_chunk_at + stall, "stream-stall", f"no data for {stall:g} s"

        # Plain asyncio, not a task group: the deadline is moved after each chunk (what it hangs on changes
        # only when data arrives), and one task waits for the client to leave.
        forwarding = asyncio.current_task()
        left = asyncio.Event()
        watcher = asyncio.create_task(_client_gone(receive, left, forwarding))
        checking = True
        # The serving layer's shutdown deadline (`--graceful-timeout`) ends a stream under way the spec's way.
        with ending() as stopping:
            try:
                async with asyncio.timeout_at(_loop_time(next_deadline()[0])) as deadline:
                    try:
                        # Each chunk is everything that has arrived: nothing waits for more data, and
                        # what came in one network read leaves in one write.
                        async for chunk in upstream.iter_any():
                            exchange.upstream_first_byte(sent_at)
                            exchange.first_byte()
                            await send({"type": "http.response.body", "body": chunk, "more_body": True})
                            exchange.bytes += len(chunk)
                            last_chunk_at = time.monotonic()
                            if checking:
                                try:  # the client has its bytes: whatever the checks meet must not reach it
                                    if decoder:
                                        chunk = decoder.decompress(chunk)
                                    if observer is not None:
                                        observer.feed_bytes(chunk)
                                    elif kept is not None:
                                        kept.append(chunk)
                                        if exchange.bytes > _MAX_CHECKED_BODY:
                                            kept = None
                                except Exception as exc:
                                    checking = False
                                    log.exception("the proxy's checks failed on %s", scope["path"])
                                    exchange.response_problems.append(f"not checked: {type(exc).__name__}: {exc}")
                            deadline.reschedule(_loop_time(next_deadline()[0]))
                    except UpstreamError as exc:
                        exchange.diagnose("upstream-died", f"the upstream connection broke mid-body: {exc}")
                        cut = (
                            "upstream_died",
                            "The upstream server closed the connection before the end of the response.",
                        )
                    except OSError:  # the client's connection is gone
                        left.set()
            except TimeoutError:
                _, kind, message = next_deadline()
                exchange.diagnose(kind, message)
                cut = (kind.replace("-", "_"), f"The proxy ended the stream: {message}.")
            except asyncio.CancelledError:
                if not left.is_set() or forwarding is None or forwarding.uncancel():
                    raise  # not the watcher's doing: the shutdown's (`ending`) or the server's own
            finally:
                watcher.cancel()
        if stopping.cancelled_caught:
            exchange.diagnose("proxy-shutdown", "the proxy stopped before the end (its --graceful-timeout passed)")
            cut = ("server_shutting_down", "The proxy is shutting down.")
        if left.is_set():
            exchange.diagnose(
                "client-disconnect", "the client disconnected before the end; the upstream request was cancelled"
            )
        ended_early = False
        if any(d.kind == "client-disconnect" for d in exchange.diagnoses):
            ended_early, cut = True, None
        elif cut is not None:
            ended_early = True
        if observer is not None and checking:
            observer.finish(ended_early=ended_early)
        if cut is not None and observer is not None and checking and not decoder:
            # Close a message the upstream left half-written, so the events below stand on their own.
            tail = b"\n\n" if observer.sse.mid_message else b""
            tail += b"".join(sse_frame(event) for event in observer.closing_events(*cut)) + b"data: [DONE]\n\n"
            await _send_quietly(send, tail, more=False)
        elif not any(d.kind == "client-disconnect" for d in exchange.diagnoses):
            await _send_quietly(send, b"", more=False)
        if kept is not None and checking and not ended_early:
            data, problems = check_json_response(scope["path"], status, b"".join(kept))
            exchange.response_problems += problems
            if isinstance(data, dict) and isinstance(data.get("id"), str) and status < 400:
                exchange.response_id = data["id"]
            if self.recorder.bodies:
                exchange.response_body = data


def _loop_time(monotonic: float) -> float:
    """A `time.monotonic()` instant on the event loop's clock (the same clock, by asyncio's default)."""
    loop = asyncio.get_running_loop()
    return loop.time() + (monotonic - time.monotonic())


async def _client_gone(receive: Any, left: asyncio.Event, forwarding: asyncio.Task | None) -> None:
    """Wait for the client to disconnect; then stop `forwarding` (the upstream request is cancelled with it)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    left.set()
    if forwarding is not None:
        forwarding.cancel()


async def _read_body(receive: Any, cap: int) -> tuple[bytes, bool]:
    """The request body, or its first part once it passes `cap` bytes; and whether more is to come."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        more = bool(message.get("more_body"))
        if not more or size > cap:
            return b"".join(chunks), more


async def _rest_of_body(head: bytes, receive: Any) -> Any:
    """`head`, then the rest of the body as it arrives: what the upstream gets of a body too large to hold."""
    yield head
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            # The client left mid-body: the upstream must not take a truncated body as whole.
            raise UpstreamError("the client disconnected before the end of the request body")
        yield message.get("body", b"")
        if not message.get("more_body"):
            return


def _upstream_headers(headers: list[tuple[bytes, bytes]], *, keep_length: bool) -> list[tuple[bytes, bytes]]:
    """What the upstream gets of the client's headers; its `content-length` too when the body streams."""
    skip = _NOT_TO_UPSTREAM - {b"content-length"} if keep_length else _NOT_TO_UPSTREAM
    return drop_hop_by_hop(headers, skip)


async def _send_quietly(send: Any, body: bytes, *, more: bool) -> None:
    with contextlib.suppress(OSError):
        await send({"type": "http.response.body", "body": body, "more_body": more})


def _gateway_error(status: int, code: str, message: str) -> OpenResponsesError:
    return ServerError(message, code=code, status=status)


async def _reply(send: Any, exchange: Exchange, error: OpenResponsesError) -> None:
    """Answer with the spec's error object (no upstream answer is passed on)."""
    body = dumps(error.body())
    exchange.status = error.status
    exchange.first_byte()
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
