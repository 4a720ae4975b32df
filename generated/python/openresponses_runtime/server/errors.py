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
    "OpenResponsesError",
    "ServerError",
    "TooManyRequests",
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

    def payload(self) -> dict[str, Any]:
        """The inner error object (the `error` of the body, or of an `error` event)."""
        return {"type": self.type, "code": self.code, "param": self.param, "message": self.message}

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


class ModelError(OpenResponsesError):
    """500: the model failed on an otherwise valid request (for example it broke `tool_choice`)."""

    status = 500
    type = "model_error"
    default_code = "model_error"
