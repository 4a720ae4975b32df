"""The port `orspec serve` and `orspec proxy` listen on, taken before either says it serves
(and the one `orspec docs serve` hands to mkdocs, tried first).

The socket is bound here and handed to uvicorn, so a port that cannot be had (in use, out of
range, needing privileges, on a host that is not this machine) is one usage error naming the flag
to change, and never uvicorn's own log line after a "serving on" that was not true.
"""

from __future__ import annotations

import errno
import socket

from .usage import UsageError

_REASONS = {
    errno.EADDRINUSE: "port {port} on {host} is in use; pick another with {port_flag}",
    errno.EACCES: "port {port} on {host} needs privileges; pick one above 1023 with {port_flag}",
    errno.EADDRNOTAVAIL: "cannot listen on {host}: not an address of this machine; pass one with {host_flag}, e.g. 127.0.0.1",
}


def listen(host: str, port: int, flags: tuple[str, str] = ("--host", "--port")) -> socket.socket:
    """A socket bound to (`host`, `port`) and listening; port 0 takes any free port.

    `flags` name the options that set the host and the port, for the message when neither can be had.
    """
    host_flag, port_flag = flags
    if not 0 <= port <= 65535:
        raise UsageError(f"{port_flag} {port} is not a port number; pick one from 1 to 65535")
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY on the connections a socket accepts only when its
    # `proto` says TCP, and without it Nagle's algorithm holds each response's second write for the
    # client's delayed ACK (about 40 ms on every response).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a restart need not wait out TIME_WAIT
    try:
        sock.bind((host, port))
        sock.listen(2048)  # uvicorn's backlog; connections wait from here until the server accepts them
    except OSError as exc:
        sock.close()
        raise UsageError(_why(exc, host, port, host_flag, port_flag)) from None
    return sock


def _why(exc: OSError, host: str, port: int, host_flag: str, port_flag: str) -> str:
    if isinstance(exc, socket.gaierror):  # the host name did not resolve
        return f"cannot listen on {host}: no such host; pass an address with {host_flag}, e.g. 127.0.0.1"
    template = _REASONS.get(
        exc.errno, "cannot listen on {host} port {port}: {reason}; pick another {host_flag} or {port_flag}"
    )
    return template.format(host=host, port=port, reason=exc.strerror, host_flag=host_flag, port_flag=port_flag)
