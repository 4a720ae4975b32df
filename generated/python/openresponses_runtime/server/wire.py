"""The bytes the server reads and writes: compact JSON (by orjson when installed) and SSE frames.

The store, background runs, observability, the gateways and the proxy encode and decode with
these, without the event emitter.
"""

from __future__ import annotations

import json
from typing import Any

try:  # orjson is optional; it only makes encoding and decoding faster
    from orjson import dumps as _orjson_dumps
    from orjson import loads as _orjson_loads
except ImportError:  # pragma: no cover
    _orjson_dumps = _orjson_loads = None

__all__ = ["DONE_FRAME", "dumps", "loads", "sse_frame"]

DONE_FRAME = b"data: [DONE]\n\n"


def dumps(value: Any) -> bytes:
    """Compact JSON on one line (JSON strings never hold a raw newline)."""
    if _orjson_dumps is not None:
        try:
            return _orjson_dumps(value)
        except TypeError:  # an integer beyond 64 bits or a lone surrogate, which orjson does not write
            pass
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")


def loads(text: str | bytes) -> Any:
    """`json.loads`, by orjson when installed (several times as fast: a long chain or an upstream's
    stream is mostly parsing). What orjson refuses and json reads (NaN, infinities, a lone
    surrogate) is read by json. orjson reads an integer beyond 64 bits as a float."""
    if _orjson_loads is not None:
        try:
            return _orjson_loads(text)
        except ValueError:
            pass
    return json.loads(text)


def sse_frame(event: dict[str, Any]) -> bytes:
    """One SSE message: `event: <type>` equal to the JSON `type`, one `data:` line, no `id:`."""
    return b"event: " + event["type"].encode() + b"\ndata: " + dumps(event) + b"\n\n"
