"""JSON pointers into plain data, answering MISSING instead of raising for paths that do not exist."""

from __future__ import annotations

from typing import Any

from jsonpointer import EndOfList, JsonPointer, JsonPointerException

MISSING: Any = object()


def resolve_pointer(doc: Any, pointer: str) -> Any:
    """The value at `pointer` in `doc`, or MISSING (also for malformed pointers)."""
    try:
        found = JsonPointer(pointer).resolve(doc, MISSING)
    except (JsonPointerException, TypeError):
        return MISSING
    return MISSING if isinstance(found, EndOfList) else found
