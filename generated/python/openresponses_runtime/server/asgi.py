"""The server's ASGI plumbing: the spec's error object as a response, the 200 answers (one JSON
body, an event stream), each operation as an ASGI app, and the Starlette app that calls them.

Every failure is answered with the spec's error object, including the ones the framework
detects (an unknown route: 404 `route_not_found`; a wrong method: 405 `method_not_allowed`,
with an `Allow` header naming every method the spec serves on the path).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import compile_path
from starlette.types import ASGIApp, Receive, Scope, Send

from .acceptance import HEADER as IGNORED_HEADER
from .emitter import StreamViolation
from .errors import InvalidRequest, NotFound, OpenResponsesError, ServerError
from .observability import Observer
from .routes import ROUTES
from .wire import dumps

__all__ = [
    "EXCEPTION_HANDLERS",
    "EventStream",
    "JSONAnswer",
    "JSONResponse",
    "OperationApp",
    "SpecApp",
    "error_response",
    "event_stream",
    "ignored_header",
    "nothing",
]

log = logging.getLogger("openresponses_runtime.server")

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)


def error_response(error: OpenResponsesError) -> Response:
    """The spec's error object with the error's status."""
    headers = dict(error.headers)
    if error.status == 401:
        headers.setdefault("WWW-Authenticate", "Bearer")
    return JSONResponse(error.body(), status_code=error.status, headers=headers)


async def http_error(request: Request, exc: Exception) -> Response:
    """The framework's own errors (an unknown route, a wrong method) as the spec's error object."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        error: OpenResponsesError = NotFound(
            f"No such route: {request.method} {request.url.path}", code="route_not_found"
        )
    elif exc.status_code == 405:
        error = InvalidRequest(
            f"Method {request.method} is not allowed on {request.url.path}.",
            code="method_not_allowed",
            status=405,
            headers={**(exc.headers or {}), **allow(request.scope["path"])},
        )
    else:
        error = InvalidRequest(str(exc.detail), status=exc.status_code, headers=dict(exc.headers or {}))
    return error_response(error)


async def server_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error", exc_info=exc)
    return error_response(ServerError("The server had an error while processing your request."))


#: The app's answers to what escapes the routes: the framework's 404 and 405, and any bug.
EXCEPTION_HANDLERS: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
    HTTPException: http_error,
    Exception: server_error,
}


# Every method the spec serves on each path: a path with several operations has a route for each, and
# Starlette's own `Allow` would name only the first route's.
_PATH_METHODS: dict[str, list[str]] = {}
for _op in ROUTES:
    _PATH_METHODS.setdefault(_op.path, []).append(_op.method)
_ALLOWED = [(compile_path(path)[0], ", ".join(methods)) for path, methods in _PATH_METHODS.items()]


def allow(path: str) -> dict[str, str]:
    """The `Allow` header for `path`: the methods of the spec's operations on it."""
    return next(({"Allow": methods} for regex, methods in _ALLOWED if regex.match(path)), {})


class OperationApp:
    """One operation as an ASGI app: its handler's response, or the spec's error object."""

    def __init__(self, handler: Callable[..., Awaitable[ASGIApp]], model: type | None):
        self.handler = handler
        self.model = model

    async def respond(self, scope: Scope, receive: Receive) -> ASGIApp:
        try:
            if self.model is None:
                return await self.handler(scope, receive)
            return await self.handler(scope, receive, self.model)
        except OpenResponsesError as exc:
            return error_response(exc)
        except StreamViolation:
            raise
        except ClientDisconnect:  # gone mid-body: nobody to answer, and no fault of the server's
            log.info("the client went away before the end of its request's body")
            return nothing
        except Exception:
            log.exception("handler failed")
            return error_response(ServerError("The server had an error while processing your request."))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.respond(scope, receive)
        await response(scope, receive, send)


class SpecApp(Starlette):
    """Starlette, with the spec's operations called straight from `__call__`.

    The operations answer every failure themselves, so on their exact path (and with no
    middleware added, no `debug`) the router and Starlette's two middleware would only add
    work to every request and every streamed event. What escapes an operation (a
    `StreamViolation` in debug mode) is treated as Starlette's outermost middleware does: the
    app's 500 handler answers if nothing was sent yet, and the error goes on to the server.
    Anything else, WebSockets and unknown routes included, takes Starlette's own path.
    """

    def __init__(self, operations: dict[tuple[str, str], OperationApp], **options: Any):
        super().__init__(**options)
        self.operations = operations
        self.observer: Observer | None = None  # around everything the app serves, when observed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.observer is None:
            await self.dispatch(scope, receive, send)
        else:
            await self.observer(scope, receive, send, self.dispatch)

    async def dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        operation = self.operations.get((scope.get("method"), scope["path"])) if scope["type"] == "http" else None
        if (
            operation is None
            or scope.get("root_path")
            or self.user_middleware
            or self.debug
            or getattr(self, "max_body_size", None) is not None  # Starlette's own body limit is a middleware
        ):
            await super().__call__(scope, receive, send)
            return
        scope["app"] = self
        try:
            response = await operation.respond(scope, receive)
        except Exception as exc:
            handler = self.exception_handlers.get(500) or self.exception_handlers.get(Exception)
            if handler is not None:
                answer = handler(Request(scope), exc)
                await (await answer if inspect.isawaitable(answer) else answer)(scope, receive, send)
            raise
        await response(scope, receive, send)


async def nothing(scope: Scope, receive: Receive, send: Send) -> None:
    """The answer to a client that has gone: nothing to send."""


def ignored_header(ignored: tuple[str, ...]) -> list[tuple[str, str]]:
    """The `OpenResponses-Ignored` header naming what the request had ignored, if anything."""
    return [(IGNORED_HEADER, ", ".join(ignored))] if ignored else []


class JSONAnswer:
    """A 200 JSON body, sent with the headers Starlette's `Response` would send (and `extra` ones)."""

    __slots__ = ("body", "extra")

    def __init__(self, body: bytes, extra: Iterable[tuple[str, str]] = ()):
        self.body = body
        self.extra = extra

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-length", str(len(self.body)).encode()), (b"content-type", b"application/json")]
        headers += [(name.lower().encode(), value.encode()) for name, value in self.extra]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


class EventStream(StreamingResponse):
    """`text/event-stream`, its body pushed by `produce(send)` as events are made (no iterator
    between the provider and the socket); Starlette's `StreamingResponse` still watches for the
    client leaving, and stops the production when it does."""

    def __init__(
        self,
        produce: Callable[[Send], Awaitable[None]],
        extra: Iterable[tuple[str, str]] = (),
        release: Callable[[], None] = lambda: None,
    ):
        self.produce = produce
        self.release = release  # the stream's slot under the cap
        self.status_code = 200
        self.media_type = "text/event-stream"
        self.background = None
        self.init_headers({**SSE_HEADERS, **dict(extra)})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.release()  # also when the client left before `stream_response` began

    async def stream_response(self, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            await self.produce(send)
        finally:
            self.release()  # before the body ends: a client that read it all finds the slot free
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def event_stream(frames: AsyncIterator[bytes], headers: list[tuple[str, str]]) -> StreamingResponse:
    """A `text/event-stream` answer of `frames`; the client leaving stops reading them, never their source."""
    return StreamingResponse(frames, media_type="text/event-stream", headers={**SSE_HEADERS, **dict(headers)})
