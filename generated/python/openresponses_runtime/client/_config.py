"""What sync and async clients share: configuration, request bodies, and the retry policy."""

from __future__ import annotations

import email.utils
import enum
import json
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ._errors import ConfigurationError, request_id_of
from ._validation import InvalidData, Validation, checked_mode

BASE_URL_ENV = "OPENRESPONSES_BASE_URL"
API_KEY_ENV = "OPENRESPONSES_API_KEY"
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
_INITIAL_DELAY = 0.5
_MAX_DELAY = 8.0
_MAX_RETRY_AFTER = 60.0  # a longer `Retry-After` than this is not waited out; the error is raised


@dataclass(frozen=True)
class Config:
    """A client's settings: where to send requests, with which key, how long to wait and how often to retry."""

    base_url: str
    api_key: str
    timeout: float
    max_retries: int
    headers: Mapping[str, str]
    validate: str = "report"  # what an answer or event that breaks the schema does (see `_validation`)
    on_invalid: Callable[[InvalidData], Any] | None = None

    @classmethod
    def resolve(
        cls,
        base_url: str | None,
        api_key: str | None,
        timeout: float | None,
        max_retries: int | None,
        headers: Mapping[str, str] | None,
        *,
        validate: str = "report",
        on_invalid: Callable[[InvalidData], Any] | None = None,
    ) -> Config:
        """Arguments first, then `$OPENRESPONSES_BASE_URL` and `$OPENRESPONSES_API_KEY`; a missing one is an error now."""
        base_url = base_url or os.environ.get(BASE_URL_ENV)
        api_key = api_key or os.environ.get(API_KEY_ENV)
        if not base_url:
            raise ConfigurationError(
                f"no base URL: pass base_url= (the root /responses hangs off, e.g. http://127.0.0.1:8000/v1) "
                f"or set ${BASE_URL_ENV}"
            )
        if not api_key:
            raise ConfigurationError(f"no API key: pass api_key= or set ${API_KEY_ENV}")
        if max_retries is not None and max_retries < 0:
            raise ConfigurationError("max_retries must be 0 or more")
        return cls(
            base_url=base_url.rstrip("/"),
            api_key=api_key,
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
            max_retries=DEFAULT_MAX_RETRIES if max_retries is None else max_retries,
            headers={
                "Authorization": f"Bearer {api_key}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **(headers or {}),
            },
            validate=checked_mode(validate),
            on_invalid=on_invalid,
        )

    def validation(self, status_code: int | None = None, headers: Any = None) -> Validation:
        """The checks of one answer, from the client's settings."""
        return Validation(self.validate, self.on_invalid, status_code=status_code, request_id=request_id_of(headers))

    def websocket_url(self, path: str) -> str:
        return self.base_url.replace("https://", "wss://", 1).replace("http://", "ws://", 1) + path


def encode_body(body: Mapping[str, Any]) -> bytes:
    """The request body as JSON; models are written by their JSON names, leaving out what was never set."""
    return json.dumps(jsonable(body), ensure_ascii=False, separators=(",", ":")).encode()


def jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value


def retry_delay(attempt: int, headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait before retry number `attempt + 1`, or None if the server asked for too long a wait.

    The server's `Retry-After` (seconds or an HTTP date) or `retry-after-ms` wins; otherwise
    exponential backoff with jitter, so many clients retrying do not arrive together.
    """
    asked = _retry_after(headers) if headers else None
    if asked is not None:
        return asked if asked <= _MAX_RETRY_AFTER else None
    delay = min(_INITIAL_DELAY * 2**attempt, _MAX_DELAY)
    return delay * (1 - 0.25 * random.random())


def _retry_after(headers: Mapping[str, str]) -> float | None:
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    when = email.utils.parsedate_tz(value)
    if when is None:
        return None
    return max(email.utils.mktime_tz(when) - time.time(), 0.0)
