"""Errors a server answers with, as the spec's error object `{"error": {type, code, param, message}}`.

Raise one of these anywhere in a handler or a provider: before a stream starts it becomes an
HTTP response with the matching status; once a stream has started it becomes an `error` event
followed by `response.failed`.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "InvalidRequest",
    "ModelError",
    "NotFound",
    "NotImplementedOperation",
    "OpenResponsesError",
    "ServerError",
    "ServerBusy",
    "ServerShuttingDown",
    "StoreUnavailable",
    "TooManyRequests",
    "TooManyStreams",
    "Unauthorized",
]


class OpenResponsesError(Exception):
    """An error with the spec's `type`, an optional `code` and `param`, and the HTTP status it maps to."""

    status: ClassVar[int] = 500
    type: ClassVar[str] = "server_error"
    default_code: ClassVar[str | None] = None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
        status: int | None = None,
    ):
        super().__init__(message)
        if status is not None:
            self.status = status
        self.message = message
        self.code = code if code is not None else self.default_code
        self.param = param
        self.headers = dict(headers or {})

    def payload(self, *, headers: bool = False) -> dict[str, Any]:
        """The inner error object (the `error` of the body, or of an `error` event); `headers`: with
        the error's headers (a retry hint) too, for a stream, where no HTTP header can carry them."""
        payload = {"type": self.type, "code": self.code, "param": self.param, "message": self.message}
        if headers and self.headers:
            payload["headers"] = dict(self.headers)
        return payload

    def body(self) -> dict[str, Any]:
        return {"error": self.payload()}


class InvalidRequest(OpenResponsesError):
    """400: the request is malformed or semantically invalid; `param` names the offending field."""

    status = 400
    type = "invalid_request"
    default_code = "invalid_request"


class Unauthorized(InvalidRequest):
    """401: no bearer token, or one the server does not accept."""

    status = 401
    default_code = "invalid_api_key"


class NotFound(OpenResponsesError):
    """404: the resource (a route, a `previous_response_id`) does not exist here."""

    status = 404
    type = "not_found"
    default_code = "not_found"


class TooManyRequests(OpenResponsesError):
    """429: the client is being rate limited; retry later."""

    status = 429
    type = "too_many_requests"
    default_code = "rate_limit_exceeded"


class ServerError(OpenResponsesError):
    """500: an internal failure not caused by the client."""

    status = 500
    type = "server_error"
    default_code = "server_error"


class NotImplementedOperation(ServerError):
    """501: the spec declares the operation, but this server does not implement it (yet): a stub
    whose provider method is missing (`operation` names it), or a count the model cannot make."""

    status = 501
    default_code = "not_implemented"

    def __init__(self, message: str, *, operation: str | None = None, **options: Any):
        super().__init__(message, **options)
        self.operation = operation


class StoreUnavailable(ServerError):
    """503: the response store cannot serve right now (unreachable, disk full, locked); the
    request was fine, and retrying after `Retry-After` seconds may succeed."""

    status = 503
    default_code = "store_unavailable"
    retry_after_seconds: ClassVar[int] = 5

    def __init__(self, message: str = "The response store is unavailable right now; retry shortly.", **options: Any):
        super().__init__(message, **options)
        self.headers.setdefault("Retry-After", str(self.retry_after_seconds))


class ServerShuttingDown(ServerError):
    """503: the server stopped before the response could finish (its shutdown deadline passed);
    another instance, or this one restarted, will answer a retry."""

    status = 503
    default_code = "server_shutting_down"

    def __init__(self, message: str = "The server is shutting down; retry the request.", **options: Any):
        super().__init__(message, **options)
        self.headers.setdefault("Retry-After", "1")


class TooManyStreams(ServerError):
    """503: the server generates as many streams at once as it is allowed (`max_streams`); this one
    was refused before it began, and retrying after `Retry-After` seconds, when some have ended, may succeed."""

    status = 503
    default_code = "too_many_streams"
    retry_after_seconds: ClassVar[int] = 2  # a stream lasts seconds: sooner would mostly meet the same cap

    def __init__(self, limit: int, *, per_tenant: bool = False, **options: Any):
        if per_tenant:  # the key's share: `param` says which part of the request took a slot
            message = f"Your API key is generating its share of {limit} streams at once; retry shortly."
            options = {"param": "stream", **options}
        else:
            message = f"The server is generating its maximum of {limit} streams at once; retry shortly."
        super().__init__(message, **options)
        self.headers.setdefault("Retry-After", str(self.retry_after_seconds))


class ServerBusy(ServerError):
    """503: the server answers as many non-streamed creates at once as it is allowed (`max_pending`);
    this one was refused before the provider was called; retrying after `Retry-After` may succeed."""

    status = 503
    default_code = "server_busy"
    retry_after_seconds: ClassVar[int] = 1

    def __init__(self, limit: int, *, per_tenant: bool = False, **options: Any):
        if per_tenant:
            message = f"Your API key has its share of {limit} requests being answered at once; retry shortly."
        else:
            message = f"The server is answering its maximum of {limit} requests at once; retry shortly."
        super().__init__(message, **{"param": "stream", **options})
        self.headers.setdefault("Retry-After", str(self.retry_after_seconds))


class ModelError(OpenResponsesError):
    """500: the model failed on an otherwise valid request (for example it broke `tool_choice`)."""

    status = 500
    type = "model_error"
    default_code = "model_error"
