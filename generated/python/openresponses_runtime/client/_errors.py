"""The client's errors: a small hierarchy built from the spec's error object.

Catch `OpenResponsesError` for everything the client raises, `APIStatusError` for any HTTP error
answer (its subclasses by status), `APIConnectionError` for a server that could not be reached or
went away mid-answer.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "APIConnectionError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "ConfigurationError",
    "ConflictError",
    "InternalServerError",
    "NotFoundError",
    "OpenResponsesError",
    "PermissionDeniedError",
    "RateLimitError",
    "StreamViolation",
    "UnprocessableEntityError",
    "request_id_of",
    "status_error",
]


class OpenResponsesError(Exception):
    """Anything the Open Responses client raises."""


class ConfigurationError(OpenResponsesError, ValueError):
    """The client cannot send a request as configured (no API key, no base URL); raised before sending."""


class APIConnectionError(OpenResponsesError):
    """The server could not be reached, or the connection broke before the answer was complete."""


class APITimeoutError(APIConnectionError):
    """The server did not answer within the timeout."""


class APIResponseValidationError(OpenResponsesError):
    """The server answered 2xx with a body, or an event, that breaks the spec's schema (raised with
    `validate="strict"`, or when the answer is not JSON at all). `issues` say where and what."""

    def __init__(
        self,
        message: str,
        *,
        body: Any = None,
        issues: tuple[Any, ...] = (),
        event_type: str | None = None,
        status_code: int | None = None,
        request_id: str | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.body = body
        self.issues = issues
        self.event_type = event_type  # None for a whole answer
        self.status_code = status_code
        self.request_id = request_id


class StreamViolation(OpenResponsesError):
    """With `check=True`, the stream broke a rule of the spec's state machines; `rule` names it."""

    def __init__(self, violation: Any):
        super().__init__(str(violation))
        self.violation = violation
        self.rule: str = violation.rule
        self.sequence_number: int | None = violation.sequence_number


class APIStatusError(OpenResponsesError):
    """The server answered with an HTTP error; the fields come from the spec's error object."""

    def __init__(self, message: str, *, status_code: int, body: Any = None, headers: Any = None):
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.body = body
        self.headers = dict(headers or {})
        self.request_id: str | None = request_id_of(headers)
        error = body.get("error") if isinstance(body, dict) else None
        error = error if isinstance(error, dict) else {}
        self.type: str | None = _str(error.get("type"))
        self.code: str | None = _str(error.get("code"))
        self.param: str | None = _str(error.get("param"))


class BadRequestError(APIStatusError):
    """400: the request is invalid; `param` names the offending field, when the server says."""


class AuthenticationError(APIStatusError):
    """401: the API key is missing or wrong."""


class PermissionDeniedError(APIStatusError):
    """403: the key may not do this."""


class NotFoundError(APIStatusError):
    """404: the response (or `previous_response_id`) does not exist."""


class ConflictError(APIStatusError):
    """409: the request conflicts with the server's state."""


class UnprocessableEntityError(APIStatusError):
    """422: the request is well formed but cannot be processed."""


class RateLimitError(APIStatusError):
    """429: too many requests; retried by the client, honouring `Retry-After`."""


class InternalServerError(APIStatusError):
    """5xx: the server failed; retried by the client."""


_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def status_error(status_code: int, content: bytes | str | Any, headers: Any = None) -> APIStatusError:
    """The typed error for an HTTP error answer; `content` is its body (bytes, text, or parsed JSON)."""
    body = content
    if isinstance(content, bytes | str):
        try:
            body = json.loads(content) if content else None
        except ValueError:
            body = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str) or not message:
        message = body if isinstance(body, str) and body else "no error message"
    text = f"HTTP {status_code}: {message}"
    if isinstance(error, dict) and isinstance(error.get("param"), str):
        text += f" (param: {error['param']})"
    cls = _BY_STATUS.get(status_code) or (InternalServerError if status_code >= 500 else APIStatusError)
    return cls(text, status_code=status_code, body=body, headers=headers)


def request_id_of(headers: Any) -> str | None:
    """The id the server gave the request (`x-request-id`), when it sent one."""
    if not headers:
        return None
    value = headers.get("x-request-id")
    if value is None and not hasattr(headers, "get_list"):  # a plain dict: header names in any case
        value = next((v for k, v in headers.items() if k.lower() == "x-request-id"), None)
    return value


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
