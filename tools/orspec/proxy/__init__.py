"""`orspec proxy`: a byte-transparent reverse proxy that checks real traffic against the spec.

- `app`: the ASGI app that forwards HTTP (JSON and SSE) to the upstream; `websocket` relays
  WebSocket mode; `upstream` is its HTTP client to the upstream.
- `observer`: the checks made on the side (request and response models, the stream checker,
  the stall and end-of-stream diagnoses).
- `recorder`: the record of each exchange, as a JSON line and a console line.
- `cli`: the command.

The public names load on first use, so `orspec --help` does not import the runtime.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Exchange", "ProxyApp", "ProxyConfig", "Recorder"]


def __getattr__(name: str) -> Any:
    if name in ("ProxyApp", "ProxyConfig"):
        from . import app

        return getattr(app, name)
    if name in ("Exchange", "Recorder"):
        from . import recorder

        return getattr(recorder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
