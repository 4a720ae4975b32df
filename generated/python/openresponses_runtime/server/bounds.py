"""Bounds on what one request may ask of the server, each an option of `create_app` with a
documented default; a request beyond one is refused with the spec's error object and its `param`.

| bound | default | refused with |
|---|---|---|
| `max_input_items`: items in a request's own `input` | 10,000 | 400 `too_many_items` / `input` |
| `max_tools`: tools offered in one request | 512 | 400 `too_many_tools` / `tools` |
| `max_context_bytes`: the stored conversation a `previous_response_id` loads, as stored JSON | 16 MiB | 400 `context_too_large` / `previous_response_id` |

Why these: a 5.8 MB body of 170,000 tiny items took a server from 59 to 351 MB (each item is a
dict, then a model, then an event), so items are counted, not only bytes, and as the body is
decoded (`bodies`): an item past the bound is read and dropped. 10,000 is more than any
conversation a model's context holds. 512 tools is four times the most a major API documents.
A chain of long turns loads its whole context for a 100-byte request: 16 MiB of stored JSON is
beyond any model's context window, and bounds what one small request can make the server hold.
`None` lifts a bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import InvalidRequest

__all__ = ["Bounds"]

DEFAULT_MAX_INPUT_ITEMS = 10_000
DEFAULT_MAX_TOOLS = 512
DEFAULT_MAX_CONTEXT_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Bounds:
    """What one request may ask (see the module); `None` lifts a bound."""

    max_input_items: int | None = DEFAULT_MAX_INPUT_ITEMS
    max_tools: int | None = DEFAULT_MAX_TOOLS
    max_context_bytes: int | None = DEFAULT_MAX_CONTEXT_BYTES

    @property
    def counted(self) -> dict[str, int]:
        """The request's bounded arrays, each with its bound: `bodies` counts them as it decodes a
        body, so that an array past its bound never becomes that many Python objects."""
        limits = {"input": self.max_input_items, "tools": self.max_tools}
        return {key: limit for key, limit in limits.items() if limit is not None}

    def check_request(self, data: dict[str, Any]) -> None:
        """Refuse a request with more input items or tools than allowed."""
        given, tools = data.get("input"), data.get("tools")
        self.check_counts(len(given) if isinstance(given, list) else 1, len(tools) if isinstance(tools, list) else 0)

    def check_counts(self, items: int, tools: int) -> None:
        """Refuse `items` input items or `tools` tools when they are more than allowed."""
        if self.max_input_items is not None and items > self.max_input_items:
            raise InvalidRequest(
                f"The request has {items} input items; this server takes at most {self.max_input_items} a request. "
                "Continue a stored conversation with `previous_response_id`, or compact it.",
                code="too_many_items",
                param="input",
            )
        if self.max_tools is not None and tools > self.max_tools:
            raise InvalidRequest(
                f"The request offers {tools} tools; this server takes at most {self.max_tools} a request.",
                code="too_many_tools",
                param="tools",
            )

    def check_context(self, size: int, response_id: str, param: str = "previous_response_id") -> None:
        """Refuse a stored conversation of `size` bytes that is more than allowed."""
        if self.max_context_bytes is not None and size > self.max_context_bytes:
            raise InvalidRequest(
                f"The conversation up to '{response_id}' holds {size} bytes; this server loads at most "
                f"{self.max_context_bytes} for one request. Compact it (`/responses/compact`) and continue from that.",
                code="context_too_large",
                param=param,
            )
