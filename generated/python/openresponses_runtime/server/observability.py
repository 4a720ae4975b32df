"""What an operator watches: metrics, health, readiness, request ids, access logs and traces.

`create_app(provider, observability=True)` (or an `Observability(...)` with its settings) wraps
the app in an `Observer`, which needs the `observability` extra
(`pip install 'openresponses-runtime[observability]'`: prometheus-client, opentelemetry-api).
It is off by default, so a library user gets no routes or headers it did not ask for;
`orspec serve` and scaffolded providers turn it on whenever the extra is installed.
The extra's modules are imported only by `Observer`, so the server runs without them.

Served beside the spec's operations, without the API key:

| route | answers |
|---|---|
| `GET /healthz` | 200 `{"status": "ok"}` while the process serves |
| `GET /readyz` | 200 `{"status": "ready"}` when the store answers a read within `readiness_timeout`, else 503 with the spec's error object (`store_unavailable`) and `Retry-After` |
| `GET /metrics` | with `Authorization: Bearer <metrics_key>`: the Prometheus text format (below); another token: 401; no `metrics_key` set: 404 |

`/metrics` has a key of its own (`Observability(metrics_key=...)`, `orspec serve --metrics-key`), never
a client's: it names every tenant and counts its requests, which no tenant may read of another. Without
that key it is not served at all.

Every HTTP request gets an id: its `X-Request-Id` header if it has a usable one (at most 128 of
`A-Za-z0-9._:-`, other characters dropped), else a new one; the response echoes it in `X-Request-Id`.
Each request is then one record of the `openresponses_runtime.server.access` logger at INFO with
its id, operation, status, error code, time to first byte, duration, response id, model and
tokens; never the prompt, the output or a key. `configure_logging("json")` writes every record of
the runtime as one JSON object a line.

A WebSocket turn (a `response.create` message) is observed as such a request is, operation
`createResponse`: a new id, one access record (with `"transport": "websocket"`), a count, the
durations and a span; its status is the error envelope's when the turn is refused, else 200,
and its time to first byte is that of its first event.

Metrics (`openresponses_` prefix): `requests_total{operation,status,code}`,
`request_duration_seconds{operation}` and `time_to_first_byte_seconds{operation}` (histograms),
`active_streams`, `active_connections{kind="http"|"websocket"}` (requests and WebSockets being
served), `tokens_total{type="input"|"output"}` (from each response's usage),
`store_operation_seconds{operation}` and `store_errors_total{operation,kind="unavailable"|"error"}`
(`operation`: `get`, `chain` (the read of a `previous_response_id` chain), `put`, `delete`),
and `store_pool_connections{state}` for a store whose `pool_stats()` returns counts by state (a
connection pool's idle and busy connections, waiting requests).

Traces (opentelemetry-api): one server span per request, named `chat {model}` for
`createResponse` (else the operation id), with the GenAI semantic-convention attributes
`gen_ai.operation.name`, `gen_ai.request.model`, `gen_ai.response.model`, `gen_ai.response.id`,
`gen_ai.usage.input_tokens` and `gen_ai.usage.output_tokens`, and a child span for the provider and
for each store operation. Spans go to the tracer provider given, else to the global one as it is
when the app is made (with none set then, no span is made, at no cost); when none is set and the standard `OTEL_TRACES_EXPORTER` or `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` variables
are, and opentelemetry-sdk is installed, one is made from them (resource from `OTEL_SERVICE_NAME`
and `OTEL_RESOURCE_ATTRIBUTES`, exporters by name, e.g. `otlp` or `console`).
"""

from __future__ import annotations

import asyncio
import hmac
import importlib.util
import json
import logging
import os
import re
import threading
import time
from bisect import bisect_left
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .auth import bearer, current_tenant
from .errors import NotFound, OpenResponsesError, StoreUnavailable, Unauthorized
from .ids import new_id
from .routes import ROUTES
from .store import ResponseStore
from .wire import dumps

__all__ = [
    "JSONFormatter",
    "Observability",
    "Observer",
    "configure_logging",
    "installed",
    "note_response",
    "observe_turn",
]

EXTRA = "pip install 'openresponses-runtime[observability]'"
LOGGER = "openresponses_runtime.server.access"
REQUEST_ID_HEADER = "X-Request-Id"
_REQUEST_ID_MAX = 128
_NOT_IN_REQUEST_ID = re.compile(r"[^A-Za-z0-9._:-]")
_ERROR_BODY_MAX = 64 * 1024  # an error body longer than this is no error object of ours: its code is not read

access_log = logging.getLogger(LOGGER)
log = logging.getLogger("openresponses_runtime.server")


def installed() -> bool:
    """Whether the `observability` extra is installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("prometheus_client", "opentelemetry.trace"))


@dataclass
class Observability:
    """The settings of `create_app(observability=...)`.

    `readiness_timeout`: seconds the store has to answer `/readyz`. `tracer_provider`: where spans
    go (default: the global one, see the module's doc)."""

    readiness_timeout: float = 2.0
    tracer_provider: Any = None
    metrics_key: str | None = None  # the bearer token `/metrics` asks for; None: `/metrics` is not served


# -- the request being served ---------------------------------------------------------------------


@dataclass(slots=True)
class _Request:
    """What the access record, the metrics and the span say of one request."""

    id: str
    operation: str
    started: float
    transport: str = "http"
    status: int = 0
    code: str = ""
    stream: bool = False
    first_byte: float | None = None
    model: str | None = None
    response_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    error_body: list[bytes] | None = None
    span: Any = None
    tenant: str = ""  # the caller's tenant name (`auth.Tenant.name`), never its key; "" before its key is accepted


_current: ContextVar[_Request | None] = ContextVar("openresponses_request", default=None)
_socket_observer: ContextVar[Observer | None] = ContextVar("openresponses_socket_observer", default=None)


def note_response(response: dict[str, Any]) -> None:
    """Tell the request being observed (if any) the response it made: its id, model, usage and
    error. The server calls it once per response; it costs nothing when nobody observes."""
    request = _current.get()
    if request is None:
        return
    request.response_id = response.get("id")
    request.model = response.get("model")
    usage = response.get("usage")
    if isinstance(usage, dict):
        request.input_tokens = usage.get("input_tokens")
        request.output_tokens = usage.get("output_tokens")
    error = response.get("error")
    if isinstance(error, dict) and error.get("code"):  # a stream that began well and ended failed
        request.code = str(error["code"])


async def observe_turn(scope: Scope, turn: Awaitable[None]) -> None:
    """Serve one WebSocket turn, observed as an HTTP request is when the connection is observed;
    as it is otherwise, at no cost."""
    observer = _socket_observer.get()
    if observer is None:
        await turn
    else:
        operation = _WEBSOCKET_OPERATIONS.get(scope["path"], "other")
        request = _Request(_new_request_id(), operation, time.perf_counter(), transport="websocket")
        await observer.served(scope, request, turn)


def _request_id(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"x-request-id":
            given = _NOT_IN_REQUEST_ID.sub("", value.decode("latin-1"))[:_REQUEST_ID_MAX]
            if given:
                return given
            break
    return _new_request_id()


def _new_request_id() -> str:
    return new_id("req")  # random, as every id the server makes, without a system call each


# Each path and method of the spec's operations, for the `operation` label (a bounded set).
_EXACT = {(op.method, op.path): op.operation_id for op in ROUTES if "{" not in op.path}
_TEMPLATED = [(op.method, compile_path(op.path)[0], op.operation_id) for op in ROUTES if "{" in op.path]
_WEBSOCKET_OPERATIONS = {op.path: op.operation_id for op in ROUTES if op.websocket}  # a turn is one of these


def _operation(method: str, path: str) -> str:
    found = _EXACT.get((method, path))
    if found is not None:
        return found
    return next((name for m, regex, name in _TEMPLATED if m == method and regex.match(path)), "other")


# -- logs --------------------------------------------------------------------------------------------


class _AccessRecord(logging.LogRecord):
    """One request's access record, made without `LogRecord`'s search for the calling frame and its
    process and thread names: a record per request is the one log that must cost next to nothing."""

    # What every access record says alike, in its `__dict__` where `%(name)s` formats look.
    constant: dict[str, Any] = {
        "name": LOGGER,
        "levelno": logging.INFO,
        "levelname": "INFO",
        "msg": "%s %s %d%s in %.1f ms",
        "pathname": __file__,
        "filename": "observability.py",
        "module": "observability",
        "lineno": 0,
        "funcName": "finish",
        "exc_info": None,
        "exc_text": None,
        "stack_info": None,
        "threadName": None,
        "processName": None,
        "taskName": None,
        "process": os.getpid(),  # a number `%(process)d` can take; set again in a forked child
    }

    def __init__(self, request: _Request, duration: float, fields: dict[str, Any]):
        self.__dict__.update(self.constant)
        code = f" {request.code}" if request.code else ""
        self.args = (request.id, request.operation, request.status, code, duration * 1000)
        self.fields = fields
        self.created = time.time()
        self.msecs = (self.created - int(self.created)) * 1000
        self.relativeCreated = (self.created - logging._startTime) * 1000
        self.thread = threading.get_ident()


def _forked() -> None:
    _AccessRecord.constant["process"] = os.getpid()


os.register_at_fork(after_in_child=_forked)


class JSONFormatter(logging.Formatter):
    """A record as one JSON object: time, level, logger, message, the record's `fields`, any traceback."""

    _second = (-1, "")  # the last second formatted, and its text: most records share theirs with the one before

    def format(self, record: logging.LogRecord) -> str:
        second = int(record.created)
        if second != self._second[0]:
            self._second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        entry = {
            "time": f"{self._second[1]}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **getattr(record, "fields", {}),
        }
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        return dumps(entry).decode()


class TurnBatchedHandler(logging.StreamHandler):
    """A `StreamHandler` that writes the lines of one event-loop turn in one write.

    A busy server ends many requests in a turn, and a write per access line would cost each one
    a system call. A record from outside a running loop (another thread, or no loop) is written
    at once, after the lines pending before it, so the order holds; `flush` writes what is pending."""

    def __init__(self, stream: Any = None):
        super().__init__(stream)
        self._pending: list[str] = []
        self._scheduled_on: asyncio.AbstractEventLoop | None = None  # the loop that will write them

    def emit(self, record: logging.LogRecord) -> None:  # called with the handler's lock held
        try:
            self._pending.append(self.format(record) + self.terminator)
        except Exception:
            self.handleError(record)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or loop.is_closed():
            self._write()
        elif self._scheduled_on is None:
            self._scheduled_on = loop
            loop.call_soon(self.flush)
        elif self._scheduled_on is not loop:  # pending on another loop's turn, which may never come
            self._scheduled_on = None
            self._write()

    def _write(self) -> None:
        self._pending, lines = [], self._pending
        if not lines:
            return
        try:
            self.stream.write("".join(lines))
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: the lines are lost, the server goes on
            pass

    def flush(self) -> None:
        with self.lock:
            self._scheduled_on = None
            self._write()


def configure_logging(log_format: str = "text", *, debug: bool = False, stream: Any = None) -> None:
    """Where the runtime's records go (`orspec serve --log-format`, and scaffolded providers).

    `json`: every record, from INFO (DEBUG with `debug`), one JSON object a line on `stream`
    (stderr), the access records included. `text`: warnings and errors as Python logs them by
    default; with `debug`, every record from DEBUG as `LEVEL logger: message`. No access records.
    Records made on an event loop are written at the end of its turn (`TurnBatchedHandler`)."""
    if log_format not in ("text", "json"):
        raise ValueError(f"unknown log format {log_format!r}: use text or json")
    runtime = logging.getLogger("openresponses_runtime")
    if log_format == "text" and not debug:
        return
    handler = TurnBatchedHandler(stream)
    if log_format == "json":
        handler.setFormatter(JSONFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    runtime.setLevel(logging.DEBUG if debug else logging.INFO)
    runtime.addHandler(handler)
    if log_format == "text":
        access_log.setLevel(logging.WARNING)  # `text` keeps its lines to what went wrong


# -- the observer ------------------------------------------------------------------------------------

_PROBE_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]


class Observer:
    """The app's observability: an ASGI wrapper around the app, and the store and provider it watches."""

    def __init__(self, settings: Observability, store: ResponseStore, provider: Any):
        try:
            import prometheus_client  # noqa: F401
            from opentelemetry import trace  # noqa: F401
        except ImportError:
            raise ImportError(f"observability needs the observability extra: {EXTRA}") from None
        self.settings = settings
        self.metrics = _Metrics(store)
        self.tracer = _tracer(settings.tracer_provider)  # None: nobody collects spans, none are made
        self.raw_store = store
        self.store = _ObservedStore(store, self)
        self.provider = provider if self.tracer is None else _TracedProvider(provider, self.tracer)

    async def __call__(self, scope: Scope, receive: Receive, send: Send, app: ASGIApp) -> None:
        kind = scope["type"]
        if kind == "http" and scope["path"] in _PROBES and scope["method"] in ("GET", "HEAD"):
            await _PROBES[scope["path"]](self, scope, send)
            return
        if kind == "websocket":
            active = self.metrics.active
            active["websocket"] += 1
            token = _socket_observer.set(self)  # its turns are observed (`observe_turn`)
            try:
                await app(scope, receive, self.watched_socket(send))
            finally:
                _socket_observer.reset(token)
                active["websocket"] -= 1
            return
        if kind != "http":
            await app(scope, receive, send)
            return
        await self.observe(scope, receive, send, app)

    async def observe(self, scope: Scope, receive: Receive, send: Send, app: ASGIApp) -> None:
        request = _Request(_request_id(scope), _operation(scope["method"], scope["path"]), time.perf_counter())
        echoed = (b"x-request-id", request.id.encode())
        active = self.metrics.active

        async def observed_send(message: Message) -> None:
            if request.first_byte is None:  # until the first body bytes: the head, or those bytes
                if message["type"] == "http.response.start":
                    request.status = status = message["status"]
                    headers = [*message.get("headers", ()), echoed]
                    if status >= 400:
                        request.error_body = []
                    elif _is_event_stream(headers):
                        request.stream = True
                        active["streams"] += 1
                    message = {**message, "headers": headers}
                elif message["type"] == "http.response.body":
                    request.first_byte = time.perf_counter()
            error_body = request.error_body
            if error_body is not None and message["type"] == "http.response.body" and len(error_body) < 64:
                error_body.append(message.get("body", b""))
            await send(message)

        active["http"] += 1
        try:
            await self.served(scope, request, app(scope, receive, observed_send))
        finally:
            active["http"] -= 1

    def watched_socket(self, send: Send) -> Send:
        """A WebSocket's `send`, telling the turn being observed of its first message: the error
        envelope of a refused turn (its status and code), or the first event of its stream."""
        metrics = self.metrics

        async def watched_send(message: Message) -> None:
            request = _current.get()
            if request is not None and request.first_byte is None and message["type"] == "websocket.send":
                request.first_byte = time.perf_counter()
                text = message.get("text") or message.get("bytes") or ""
                envelope = _envelope_status(text)
                if envelope is None:
                    request.status, request.stream = 200, True
                    metrics.active["streams"] += 1
                else:
                    request.status, request.code = envelope
            await send(message)

        return watched_send

    async def served(self, scope: Scope, request: _Request, serving: Awaitable[None]) -> None:
        """Await `serving` (a request's answer, or a WebSocket turn) as `request`: in its span, then
        counted, timed and logged."""
        token = _current.set(request)
        try:
            if self.tracer is None:
                await serving
            else:
                from opentelemetry import trace

                attributes = _span_start(scope, request)
                request.span = self.tracer.start_span(
                    request.operation, kind=trace.SpanKind.SERVER, attributes=attributes
                )
                with trace.use_span(request.span, end_on_exit=False):
                    await serving
        except BaseException:
            if request.status == 0:
                request.status = 500
            raise
        finally:
            _current.reset(token)
            if request.stream:
                self.metrics.active["streams"] -= 1
            self.finish(request)

    def finish(self, request: _Request) -> None:
        ended = time.perf_counter()
        tenant = current_tenant()
        if tenant is not None:
            request.tenant = tenant.name
        if request.status == 0:  # the client left before any answer
            request.status = 499
        if request.error_body is not None and not request.code:
            request.code = _error_code(b"".join(request.error_body))
        duration = ended - request.started
        ttfb = (request.first_byte or ended) - request.started
        self.metrics.request(request, duration, ttfb)
        if request.span is not None:
            _end_span(request)
        if access_log.isEnabledFor(logging.INFO):
            fields = {
                "request_id": request.id,
                "tenant": request.tenant or None,
                "operation": request.operation,
                "transport": request.transport,
                "status": request.status,
                "code": request.code or None,
                "stream": request.stream,
                "ttfb_ms": round(ttfb * 1000, 3),
                "duration_ms": round(duration * 1000, 3),
                "response_id": request.response_id,
                "model": request.model,
                "input_tokens": request.input_tokens,
                "output_tokens": request.output_tokens,
            }
            access_log.handle(_AccessRecord(request, duration, fields))

    async def ready(self) -> OpenResponsesError | None:
        """Why the server is not ready (its store does not answer in time), or None."""
        timeout = self.settings.readiness_timeout
        try:
            with anyio.fail_after(timeout):
                await self.raw_store.get("resp_readiness_probe")
        except TimeoutError:
            return StoreUnavailable(f"The response store did not answer within {timeout:g} s; retry shortly.")
        except OpenResponsesError as exc:
            return exc
        except Exception as exc:  # a store bug is as unready as an outage, and says which
            return StoreUnavailable(f"The response store failed: {type(exc).__name__}.")
        return None


def _is_event_stream(headers: list[tuple[bytes, bytes]]) -> bool:
    # A loop, not `any` over a generator: the head of every response observed comes here.
    for name, value in headers:  # noqa: SIM110
        if name == b"content-type" and value.startswith(b"text/event-stream"):
            return True
    return False


def _envelope_status(text: str | bytes) -> tuple[int, str] | None:
    """The status and code of a WebSocket error envelope (`{"type": "error", "status": ...}`), or
    None for any other message (the first event of a stream). Read once per turn."""
    try:
        message = json.loads(text)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("type") != "error" or not isinstance(message.get("status"), int):
        return None
    error = message.get("error") if isinstance(message.get("error"), dict) else {}
    return message["status"], str(error.get("code") or error.get("type") or "")


def _error_code(body: bytes) -> str:
    if len(body) > _ERROR_BODY_MAX:
        return ""
    try:
        error = json.loads(body).get("error")
        return str(error.get("code") or error.get("type") or "")
    except (ValueError, AttributeError):
        return ""


async def _answer(send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    encoded = json.dumps(body).encode()
    raw = [*_PROBE_HEADERS, (b"content-length", str(len(encoded)).encode())]
    raw += [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": encoded})


async def _healthz(observer: Observer, scope: Scope, send: Send) -> None:
    await _answer(send, 200, {"status": "ok"})


async def _readyz(observer: Observer, scope: Scope, send: Send) -> None:
    problem = await observer.ready()
    if problem is None:
        await _answer(send, 200, {"status": "ready"})
    else:
        await _answer(send, 503, problem.body(), dict(problem.headers))


async def _metrics(observer: Observer, scope: Scope, send: Send) -> None:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    key = observer.settings.metrics_key
    if not key:
        error: OpenResponsesError = NotFound(
            "No such route: GET /metrics (it is served with a metrics key of its own: orspec serve"
            " --metrics-key, or Observability(metrics_key=...))",
            code="route_not_found",
        )
        await _answer(send, error.status, error.body())
        return
    token = next((bearer(value) for name, value in scope["headers"] if name == b"authorization"), None)
    if token is None or not hmac.compare_digest(token, key.encode()):
        error = Unauthorized("/metrics takes the metrics key: send `Authorization: Bearer <metrics key>`.")
        await _answer(send, error.status, error.body(), {"WWW-Authenticate": "Bearer"})
        return

    body = generate_latest(observer.metrics.registry)
    headers = [(b"content-type", CONTENT_TYPE_LATEST.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


_PROBES: dict[str, Callable[[Observer, Scope, Send], Awaitable[None]]] = {
    "/healthz": _healthz,
    "/readyz": _readyz,
    "/metrics": _metrics,
}


# -- metrics -----------------------------------------------------------------------------------------


class _Histogram:
    """One histogram's counts, in plain numbers: observed on the event loop, read at each scrape."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(_BUCKETS) + 1)  # the last: above every bound
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(_BUCKETS, value)] += 1  # the first bound `value` is at or below
        self.total += value

    def buckets(self) -> list[tuple[str, float]]:
        """Cumulative counts by upper bound, as the exposition format writes them."""
        rows, seen = [], 0
        for bound, count in zip((*_BUCKETS, float("inf")), self.counts, strict=True):
            seen += count
            rows.append(("+Inf" if bound == float("inf") else repr(bound), seen))
        return rows


_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)  # prometheus_client's


class _Metrics:
    """The app's Prometheus metrics, in a registry of its own (two apps in one process keep theirs apart).

    What every request updates is counted in plain numbers (a dict entry, a list slot), which a
    collector turns into metric families at each scrape: a request pays additions, not a lock and a
    label lookup for each of its counters and histograms."""

    def __init__(self, store: ResponseStore):
        from prometheus_client import CollectorRegistry, Counter, Gauge

        self.registry = registry = CollectorRegistry()
        self.requests: dict[tuple[str, int, str], int] = {}  # (operation, status, code)
        self.tenant_requests: dict[tuple[str, int, str], int] = {}  # (operation, status, tenant)
        self.durations: dict[str, _Histogram] = {}
        self.ttfbs: dict[str, _Histogram] = {}
        self.tokens = {"input": 0, "output": 0}
        self.store_timers = {op: _Histogram() for op in ("get", "chain", "put", "delete")}
        registry.register(_Counted(self))
        # What is being served, counted in plain ints the gauges read at each scrape.
        self.active = active = {"streams": 0, "http": 0, "websocket": 0}
        streams = Gauge("openresponses_active_streams", "Event streams being sent.", registry=registry)
        streams.set_function(lambda: active["streams"])
        connections = Gauge(
            "openresponses_active_connections", "Requests and WebSockets being served.", ["kind"], registry=registry
        )
        for kind in ("http", "websocket"):
            connections.labels(kind).set_function(lambda kind=kind: active[kind])
        self.store_errors = Counter(
            "openresponses_store_errors",
            "Response store operations that failed: unavailable (an outage) or error (a bug).",
            ["operation", "kind"],
            registry=registry,
        )
        registry.register(_PoolCollector(store.pool_stats))

    def request(self, request: _Request, duration: float, ttfb: float) -> None:
        operation = request.operation
        key = (operation, request.status, request.code)
        requests = self.requests
        requests[key] = requests.get(key, 0) + 1
        if request.tenant:
            key = (operation, request.status, request.tenant)
            tenants = self.tenant_requests
            tenants[key] = tenants.get(key, 0) + 1
        timer = self.durations.get(operation)
        if timer is None:
            timer = self.durations[operation] = _Histogram()
            self.ttfbs[operation] = _Histogram()
        timer.observe(duration)
        self.ttfbs[operation].observe(ttfb)
        if request.input_tokens:
            self.tokens["input"] += request.input_tokens
        if request.output_tokens:
            self.tokens["output"] += request.output_tokens


class _Counted:
    """The metrics `_Metrics` counts in plain numbers, as metric families at each scrape."""

    def __init__(self, metrics: _Metrics):
        self.metrics = metrics

    def collect(self) -> Any:
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

        m = self.metrics
        requests = CounterMetricFamily(
            "openresponses_requests",
            "Requests by operation, HTTP status and error code.",
            labels=["operation", "status", "code"],
        )
        for (operation, status, code), count in list(m.requests.items()):
            requests.add_metric([operation, str(status), code], count)
        yield requests
        # By tenant apart: its names are the configured keys' (a bounded set), never a key.
        tenants = CounterMetricFamily(
            "openresponses_tenant_requests",
            "Requests by tenant, operation and HTTP status.",
            labels=["tenant", "operation", "status"],
        )
        for (operation, status, tenant), count in list(m.tenant_requests.items()):
            tenants.add_metric([tenant, operation, str(status)], count)
        yield tenants
        for name, text, timers, label in (
            ("openresponses_request_duration_seconds", "Time to the last byte.", m.durations, "operation"),
            ("openresponses_time_to_first_byte_seconds", "Time to the first body byte.", m.ttfbs, "operation"),
            ("openresponses_store_operation_seconds", "Response store operations.", m.store_timers, "operation"),
        ):
            family = HistogramMetricFamily(name, text, labels=[label])
            for value, timer in list(timers.items()):
                family.add_metric([value], timer.buckets(), timer.total)
            yield family
        tokens = CounterMetricFamily(
            "openresponses_tokens", "Tokens in and out, from each response's usage.", labels=["type"]
        )
        for kind, count in m.tokens.items():
            tokens.add_metric([kind], count)
        yield tokens


class _PoolCollector:
    """`openresponses_store_pool_connections{state}` read from the store's `pool_stats()` at each scrape."""

    def __init__(self, pool_stats: Callable[[], dict[str, int]]):
        self.pool_stats = pool_stats

    def collect(self) -> Any:
        from prometheus_client.core import GaugeMetricFamily

        family = GaugeMetricFamily(
            "openresponses_store_pool_connections", "The store's connection pool, by state.", labels=["state"]
        )
        stats = self.pool_stats()
        if not stats:  # a store without a pool
            return
        for state, count in sorted(stats.items()):
            family.add_metric([state], count)
        yield family


# -- the store and the provider, watched -------------------------------------------------------------


class _ObservedStore(ResponseStore):
    """The app's store with each operation timed, its failures counted, and a span each."""

    def __init__(self, store: ResponseStore, observer: Observer):
        self._store = store
        self._observer = observer

    @property
    def wrapped(self) -> Any:
        """The store watched, for what must know its kind (the background runs share its database)."""
        return self._store

    async def _timed(self, operation: str, call: Callable[[Any], Awaitable[Any]], argument: Any) -> Any:
        metrics = self._observer.metrics
        tracer = self._observer.tracer
        span = (
            None
            if tracer is None
            else tracer.start_span(f"store {operation}", attributes={"db.operation.name": operation})
        )
        started = time.perf_counter()
        try:
            return await call(argument)
        except Exception as exc:
            kind = "unavailable" if isinstance(exc, StoreUnavailable) else "error"
            metrics.store_errors.labels(operation, kind).inc()
            if span is not None:
                span.set_attribute("error.type", kind)
            raise
        finally:
            metrics.store_timers[operation].observe(time.perf_counter() - started)
            if span is not None:
                span.end()

    # Each returns `_timed`'s coroutine, which calls the store's own: one coroutine made, not two.
    def get(self, response_id: str) -> Awaitable[Any]:
        return self._timed("get", self._store.get, response_id)

    def get_owned(self, response_id: str, owner: str | None) -> Awaitable[Any]:
        return self._timed("get", lambda response_id: self._store.get_owned(response_id, owner), response_id)

    def put(self, record: Any) -> Awaitable[Any]:
        return self._timed("put", self._store.put, record)

    def delete(self, response_id: str) -> Awaitable[Any]:
        return self._timed("delete", self._store.delete, response_id)

    def chain(self, response_id: str) -> Awaitable[Any]:
        return self._timed("chain", self._store.chain, response_id)

    def conversation(self, response_id: str, owner: str | None = None) -> Awaitable[Any]:
        return self._timed("chain", lambda response_id: self._store.conversation(response_id, owner), response_id)

    def open(self) -> Awaitable[None]:
        return self._store.open()

    def aclose(self) -> Awaitable[None]:
        return self._store.aclose()

    def pool_stats(self) -> dict[str, int]:
        return self._store.pool_stats()


class _TracedProvider:
    """The app's provider, each response it makes in a client span of its own."""

    def __init__(self, provider: Any, tracer: Any):
        self._provider = provider
        self._tracer = tracer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    async def respond(self, request: Any) -> AsyncIterator[Any]:
        from opentelemetry import trace

        span = self._tracer.start_span(
            f"provider {request.model}",
            kind=trace.SpanKind.CLIENT,
            attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": request.model},
        )
        try:
            async for step in self._provider.respond(request):
                yield step
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            raise
        finally:
            span.end()


# -- traces ------------------------------------------------------------------------------------------


def _span_start(scope: Scope, request: _Request) -> dict[str, Any]:
    attributes = {
        "url.path": scope["path"],
        "openresponses.operation": request.operation,
        "openresponses.request_id": request.id,
    }
    if scope["type"] == "http":
        attributes["http.request.method"] = scope["method"]
    else:
        attributes["network.protocol.name"] = "websocket"
    if request.operation == "createResponse":
        attributes["gen_ai.operation.name"] = "chat"
    return attributes


def _end_span(request: _Request) -> None:
    span = request.span
    if not span.is_recording():
        return
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("http.response.status_code", request.status)
    if request.tenant:
        span.set_attribute("openresponses.tenant", request.tenant)
    if request.model is not None:
        if request.operation == "createResponse":
            span.update_name(f"chat {request.model}")
        span.set_attribute("gen_ai.request.model", request.model)
        span.set_attribute("gen_ai.response.model", request.model)
    if request.response_id is not None:
        span.set_attribute("gen_ai.response.id", request.response_id)
    if request.input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", request.input_tokens)
    if request.output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", request.output_tokens)
    if request.code:
        span.set_attribute("error.type", request.code)
        if request.status >= 500 or request.status < 400:  # a server fault, or a stream that ended failed
            span.set_status(Status(StatusCode.ERROR, request.code))
    span.end()


_SDK_CONFIGURED = False


def _tracer(provider: Any) -> Any:
    """The tracer of `provider`, else of the global provider; None when no provider collects spans
    when the app is made (the API's default): then no span is made, at no cost."""
    from opentelemetry import trace

    if provider is None:
        _configure_sdk_from_env()
        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return None
    return provider.get_tracer("openresponses_runtime.server")


def _configure_sdk_from_env() -> None:
    """A global tracer provider from the standard `OTEL_*` variables, when they ask for one, none
    is set yet, and opentelemetry-sdk is installed (once per process)."""
    global _SDK_CONFIGURED
    from opentelemetry import trace

    names = os.environ.get("OTEL_TRACES_EXPORTER", "").strip()
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if _SDK_CONFIGURED or names == "none" or not (names or endpoint):
        return
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return  # someone (opentelemetry-instrument, the application) set one already
    _SDK_CONFIGURED = True
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning("OTEL_* asks for traces but opentelemetry-sdk is not installed: pip install opentelemetry-sdk")
        return
    from importlib.metadata import entry_points

    provider = TracerProvider(resource=Resource.create())
    for name in (names or "otlp").split(","):
        found = list(entry_points(group="opentelemetry_traces_exporter", name=name.strip()))
        if not found:
            log.warning("no trace exporter named %r is installed (OTEL_TRACES_EXPORTER); its spans are dropped", name)
            continue
        provider.add_span_processor(BatchSpanProcessor(found[0].load()()))
    trace.set_tracer_provider(provider)
