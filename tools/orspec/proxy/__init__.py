"""`orspec proxy`: a byte-transparent reverse proxy that checks real traffic against the spec.

- `app`: the ASGI app that forwards HTTP (JSON and SSE) and WebSocket traffic to the upstream.
- `observer`: the checks made on the side (request and response models, the stream checker,
  the stall and end-of-stream diagnoses).
- `recorder`: the record of each exchange, as a JSON line and a console line.
- `cli`: the command.
"""

from .app import ProxyApp, ProxyConfig
from .recorder import Exchange, Recorder

__all__ = ["Exchange", "ProxyApp", "ProxyConfig", "Recorder"]
