"""Who may call the server: the bearer tokens it accepts, compared in constant time.

There is no open mode: a server is made with at least one key.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterable

from starlette.types import Scope

from .errors import Unauthorized

__all__ = ["Keys", "bearer"]


def bearer(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header value."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class Keys:
    """The API keys a server accepts; `authorize` raises `Unauthorized` for any other token."""

    def __init__(self, api_keys: Iterable[str] | str | None = None):
        """`api_keys`: the tokens accepted (default `$ORSPEC_API_KEY`); `ValueError` without any."""
        if api_keys is None:
            api_keys = os.environ.get("ORSPEC_API_KEY")
        keys = [api_keys] if isinstance(api_keys, str) else list(api_keys or ())
        self.keys = frozenset(key for key in keys if key)
        if not self.keys:
            raise ValueError(
                "create_app needs at least one API key (api_keys=... or $ORSPEC_API_KEY); it never runs open"
            )
        self._encoded = tuple(key.encode() for key in self.keys)

    def authorize(self, token: str | None) -> None:
        if token is None:
            raise Unauthorized("Missing bearer token: send `Authorization: Bearer <key>`.", code="missing_api_key")
        given = token.encode()
        for key in self._encoded:
            if hmac.compare_digest(given, key):
                return
        raise Unauthorized("Incorrect API key provided.")

    def authorize_scope(self, scope: Scope) -> None:
        """`authorize` the token of the request's first `Authorization` header (as Starlette reads it)."""
        for name, value in scope["headers"]:
            if name == b"authorization":
                self.authorize(bearer(value.decode("latin-1")))
                return
        self.authorize(None)
