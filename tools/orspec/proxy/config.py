"""How the proxy is set up: its upstream and the deadlines it watches."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ProxyConfig"]


@dataclass(frozen=True)
class ProxyConfig:
    upstream: str
    tool_timeout: float = 30.0
    stall_timeout: float = 60.0
    upstream_timeout: float = 60.0
    enforce: bool = False
