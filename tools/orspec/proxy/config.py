"""How the proxy is set up: its upstream and the deadlines it watches."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_MAX_CHECKED_REQUEST", "ProxyConfig"]

# Request bodies larger than this are forwarded as they arrive, unchecked: parsing and validating a
# body holds many times its size (about 40x for many small input items: 8.4 MB took 335 MB), and real
# requests, images as data URLs included, fit under it.
DEFAULT_MAX_CHECKED_REQUEST = 8 * 1024 * 1024


@dataclass(frozen=True)
class ProxyConfig:
    upstream: str
    tool_timeout: float = 30.0
    stall_timeout: float = 60.0
    upstream_timeout: float = 60.0
    upstream_ca_file: str | None = None  # a PEM bundle an https upstream's certificate is checked against
    enforce: bool = False
    max_checked_request: int = DEFAULT_MAX_CHECKED_REQUEST  # bytes; a larger request body is forwarded unchecked
