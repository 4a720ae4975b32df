"""Who may call the server: the bearer tokens it accepts, compared in constant time, and the
tenant each belongs to.

There is no open mode: a server is made with at least one key. Each key is a tenant: what it
makes (stored responses, background runs, sealed reasoning) carries the tenant's `owner`, a keyed
hash of the key (HMAC-SHA256 under the tenant secret, `$ORSPEC_TENANT_SECRET`), never the key
itself, and no other key reaches it. A tenant has a `name` for logs, metrics and spans: the one the keys file gives it
(`TENANT KEY` lines), else `key-` and the first 8 hex digits of its owner, never the key.

`Keys.authorize` returns the caller's `Tenant` and makes it the request's `current_tenant()` (a
context variable: a request's task, and the background task it starts, see their own).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from starlette.types import Scope

from .errors import Unauthorized

__all__ = ["Keys", "Tenant", "bearer", "current_tenant", "owner_of", "read_keys_file"]

SECRET_ENV = "ORSPEC_TENANT_SECRET"
# The secret owners are hashed under when none is set: they stay the same across restarts and
# instances, but anyone who has the database and guesses a key could confirm the guess.
DEFAULT_SECRET = b"openresponses tenant"
_TENANT: ContextVar[Tenant | None] = ContextVar("openresponses_tenant", default=None)


@dataclass(frozen=True)
class Tenant:
    """One key's tenant: `name` for logs and metrics, `owner` the keyed hash its records carry."""

    name: str
    owner: str


def current_tenant() -> Tenant | None:
    """The tenant of the request being served (None outside one)."""
    return _TENANT.get()


def bearer(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header value."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def owner_of(key: str, secret: bytes = DEFAULT_SECRET) -> str:
    """The owner tag of `key`: HMAC-SHA256 under `secret`, hex; the key cannot be read back from it."""
    return hmac.new(secret, b"openresponses owner\x00" + key.encode(), hashlib.sha256).hexdigest()


def read_keys_file(path: str | os.PathLike[str]) -> list[tuple[str | None, str]]:
    """The keys of a keys file: one a line, `KEY` or `TENANT KEY`; blank lines and `#` comments skipped.

    `ValueError`, naming the line (never its key), for a line of more than two words, or a tenant named twice."""
    keys: list[tuple[str | None, str]] = []
    names: set[str] = set()
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) > 2:
            raise ValueError(f"{path}, line {number}: write `KEY` or `TENANT KEY`, not {len(words)} words")
        name, key = (None, words[0]) if len(words) == 1 else (words[0], words[1])
        if name is not None:
            if name in names:
                raise ValueError(f"{path}, line {number}: tenant {name!r} is named twice; one key a tenant")
            names.add(name)
        keys.append((name, key))
    return keys


class Keys:
    """The API keys a server accepts; `authorize` raises `Unauthorized` for any other token."""

    def __init__(
        self,
        api_keys: Iterable[str | tuple[str | None, str]] | str | None = None,
        *,
        secret: str | bytes | None = None,
    ):
        """`api_keys`: the tokens accepted (default `$ORSPEC_API_KEY`), each a key or a `(tenant, key)`
        pair; `ValueError` without any. `secret`: what owners are hashed under (default `$ORSPEC_TENANT_SECRET`,
        else `DEFAULT_SECRET`); the same on every instance of a store, and kept: another secret
        makes other owners, and the responses stored under the former ones reach no key."""
        if api_keys is None:
            api_keys = os.environ.get("ORSPEC_API_KEY")
        given = [api_keys] if isinstance(api_keys, str) else list(api_keys or ())
        pairs = [(None, entry) if isinstance(entry, str) else tuple(entry) for entry in given]
        secret = secret or os.environ.get(SECRET_ENV)
        self.secret = DEFAULT_SECRET if not secret else secret.encode() if isinstance(secret, str) else bytes(secret)
        tenants: dict[bytes, Tenant] = {}
        for name, key in pairs:
            if key:
                owner = owner_of(key, self.secret)
                tenants[key.encode()] = Tenant(name or f"key-{owner[:8]}", owner)
        if not tenants:
            raise ValueError(
                "create_app needs at least one API key (api_keys=... or $ORSPEC_API_KEY); it never runs open"
            )
        self.keys = frozenset(key.decode() for key in tenants)
        self._tenants = tuple(tenants.items())

    @property
    def tenants(self) -> list[Tenant]:
        return [tenant for _, tenant in self._tenants]

    def authorize(self, token: str | None) -> Tenant:
        """The caller's tenant, made the request's `current_tenant()`; `Unauthorized` for any other token."""
        if token is None:
            raise Unauthorized("Missing bearer token: send `Authorization: Bearer <key>`.", code="missing_api_key")
        given = token.encode()
        found = None
        for key, tenant in self._tenants:  # every key compared, so the time says nothing of which matched
            if hmac.compare_digest(given, key):
                found = tenant
        if found is None:
            raise Unauthorized("Incorrect API key provided.")
        _TENANT.set(found)
        return found

    def authorize_scope(self, scope: Scope) -> Tenant:
        """`authorize` the token of the request's first `Authorization` header (as Starlette reads it)."""
        for name, value in scope["headers"]:
            if name == b"authorization":
                return self.authorize(bearer(value.decode("latin-1")))
        return self.authorize(None)
