"""JSON pointers into plain data, answering MISSING instead of raising for paths that do not exist."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonpointer import EndOfList, JsonPointer, JsonPointerException, escape

MISSING: Any = object()


def resolve_pointer(doc: Any, pointer: str) -> Any:
    """The value at `pointer` in `doc`, or MISSING (also for malformed pointers)."""
    try:
        found = JsonPointer(pointer).resolve(doc, MISSING)
    except (JsonPointerException, TypeError):
        return MISSING
    return MISSING if isinstance(found, EndOfList) else found


def walk(node: Any, pointer: str = "") -> Iterator[tuple[str, Any]]:
    """Every (pointer, value) in a JSON document, depth first, parents before children."""
    stack = [(pointer, node)]
    while stack:
        at, value = stack.pop()
        yield at, value
        if isinstance(value, dict):
            stack.extend((f"{at}/{escape(k)}", v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{at}/{i}", v) for i, v in reversed(list(enumerate(value))))
