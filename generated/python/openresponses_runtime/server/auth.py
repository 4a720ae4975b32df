"""Who may call the server: the bearer tokens it accepts, compared in constant time, and the
tenant each belongs to.

There is no open mode: a server is made with at least one key. Each key is a tenant: what it
makes (stored responses, background runs, sealed reasoning) carries the tenant's `owner`, a keyed
hash of the key (HMAC-SHA256 under the tenant secret, `$ORSPEC_TENANT_SECRET`), never the key
itself, and no other key reaches it. A tenant has a `name` for logs, metrics and spans: the one the
keys file gives it (`TENANT KEY` lines), else `tenant-N`, N its place among the keys: nothing
derived from the key, so that a name shown (in `/metrics`, a log) confirms no guess of a key.

A keys file (`read_keys_file`) is UTF-8, one entry a line: `KEY`, or `TENANT KEY` separated by
spaces or tabs; blank lines, and lines whose first character other than a space is `#`, are
skipped. Every other line that could be read two ways is an error naming its line, never its key:
a `#` after the start of a line (a comment there would change the key silently), any other
whitespace or control character (a no-break space would split a key in two), more than two words,
a tenant named twice, a key given twice, a tenant name other than letters, digits, `.`, `_` and
`-`, or one of the form `tenant-N` (the unnamed keys' names). Keys are any other characters, UTF-8 included: a client sends them as UTF-8 bytes in its
`Authorization` header, which is compared byte for byte.

`Keys.authorize` returns the caller's `Tenant` and makes it the request's `current_tenant()` (a
context variable: a request's task, and the background task it starts, see their own).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
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


def bearer(authorization: str | bytes | None) -> bytes | None:
    """The token of an `Authorization: Bearer <token>` header value, as the bytes the client sent: a
    `str` is the value as ASGI servers and Starlette decode headers (Latin-1), so its Latin-1 bytes
    are those bytes, and a UTF-8 key matches them byte for byte."""
    if authorization is None:
        return None
    if isinstance(authorization, str):
        try:
            authorization = authorization.encode("latin-1")
        except UnicodeEncodeError:  # not as read from a header: a caller's own text
            authorization = authorization.encode()
    scheme, _, token = authorization.partition(b" ")
    token = token.strip(b" \t")
    return token if scheme.lower() == b"bearer" and token else None


def owner_of(key: str, secret: bytes = DEFAULT_SECRET) -> str:
    """The owner tag of `key`: HMAC-SHA256 under `secret`, hex; the key cannot be read back from it."""
    return hmac.new(secret, b"openresponses owner\x00" + key.encode(), hashlib.sha256).hexdigest()


def read_keys_file(path: str | os.PathLike[str]) -> list[tuple[str | None, str]]:
    """The keys of a keys file (the format is the module's doc): `(tenant name or None, key)` pairs.

    `ValueError` naming the line (never its key) for any line that could be read two ways."""
    keys: list[tuple[str | None, str]] = []
    names: dict[str, int] = {}
    seen: dict[str, int] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path}, line {number}"
        text = line.strip(" \t")
        if not text or text.startswith("#"):
            continue
        odd = next((c for c in text if c not in " \t" and (c.isspace() or not c.isprintable())), None)
        if odd is not None:
            raise ValueError(
                f"{where}: a U+{ord(odd):04X} character; separate TENANT and KEY with plain spaces or tabs,"
                " and write keys without whitespace or control characters"
            )
        if "#" in text:
            raise ValueError(f"{where}: a # after the start of a line; comments take a line of their own")
        words = text.split()
        if len(words) > 2:
            raise ValueError(f"{where}: write `KEY` or `TENANT KEY`, not {len(words)} words")
        name, key = (None, words[0]) if len(words) == 1 else (words[0], words[1])
        if name is not None:
            if not _NAME.fullmatch(name):
                raise ValueError(f"{where}: a tenant name is letters, digits, `.`, `_` and `-` (at most 64)")
            if _UNNAMED.fullmatch(name):
                raise ValueError(f"{where}: `tenant-N` names are the unnamed keys'; choose another name")
            if name in names:
                raise ValueError(f"{where}: tenant {name!r} is named twice (line {names[name]}); one key a tenant")
            names[name] = number
        if key in seen:
            raise ValueError(f"{where}: this key is given on line {seen[key]} too; one tenant a key")
        seen[key] = number
        keys.append((name, key))
    return keys


_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
_UNNAMED = re.compile(r"tenant-[0-9]+")


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
                if key.encode() in tenants:
                    raise ValueError("an API key is given twice (one tenant a key)")
                tenants[key.encode()] = Tenant(name or f"tenant-{len(tenants) + 1}", owner_of(key, self.secret))
        if not tenants:
            raise ValueError(
                "create_app needs at least one API key (api_keys=... or $ORSPEC_API_KEY); it never runs open"
            )
        named = [tenant.name for tenant in tenants.values()]
        if len(set(named)) < len(named):
            raise ValueError("two API keys have the same tenant name; name each tenant once")
        self.keys = frozenset(key.decode() for key in tenants)
        self._tenants = tuple(tenants.items())

    @property
    def tenants(self) -> list[Tenant]:
        return [tenant for _, tenant in self._tenants]

    def authorize(self, token: str | bytes | None) -> Tenant:
        """The caller's tenant, made the request's `current_tenant()`; `Unauthorized` for any other token
        (`bytes`: as sent, compared as they are; `str`: its UTF-8)."""
        if token is None:
            raise Unauthorized("Missing bearer token: send `Authorization: Bearer <key>`.", code="missing_api_key")
        given = token.encode() if isinstance(token, str) else token
        found = None
        for key, tenant in self._tenants:  # every key compared, so the time says nothing of which matched
            if hmac.compare_digest(given, key):
                found = tenant
        if found is None:
            raise Unauthorized("Incorrect API key provided.")
        _TENANT.set(found)
        return found

    def authorize_scope(self, scope: Scope) -> Tenant:
        """`authorize` the token of the request's first `Authorization` header, its bytes as sent (a UTF-8
        key matches the UTF-8 bytes a client sends; reading them as Latin-1, as Starlette does, would not)."""
        for name, value in scope["headers"]:
            if name == b"authorization":
                return self.authorize(bearer(value))
        return self.authorize(None)
