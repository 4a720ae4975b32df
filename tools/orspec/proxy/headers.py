"""Which of a client's headers the proxy forwards, and which of them are credentials a record
must never keep."""

from __future__ import annotations

from .recorder import secret_name

__all__ = ["HOP_BY_HOP", "WEBSOCKET_HANDSHAKE", "credentials", "drop_hop_by_hop"]

# Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection and are never forwarded; `host` and
# `content-length` are set anew for the upstream connection.
HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"proxy-connection"}
    | {b"te", b"trailer", b"trailers", b"transfer-encoding", b"upgrade"}
)
WEBSOCKET_HANDSHAKE = frozenset(
    {b"sec-websocket-key", b"sec-websocket-version", b"sec-websocket-extensions", b"sec-websocket-protocol"}
)


def drop_hop_by_hop(headers: list[tuple[bytes, bytes]], also: frozenset[bytes] = frozenset()) -> list:
    named = {
        token.strip().lower() for name, value in headers if name.lower() == b"connection" for token in value.split(b",")
    }
    skip = HOP_BY_HOP | also | named
    return [(name, value) for name, value in headers if name.lower() not in skip]


def credentials(headers: list[tuple[bytes, bytes]]) -> tuple[str, ...]:
    """The client's credentials, every header the proxy passes on that is named like one (`Authorization`,
    `x-goog-api-key`, `Cookie`...), so a record can be scrubbed of them wherever they appear."""
    found = []
    for name, value in headers:
        if name.lower() in (b"api-key", b"x-api-key") or secret_name(name.decode("latin-1")):
            text = value.decode("latin-1")
            found.append(text)
            scheme, _, token = text.partition(" ")
            if token.strip():
                found.append(token.strip())
    return tuple(found)
