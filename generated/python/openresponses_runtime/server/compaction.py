"""What `compact` returns when the provider has no compaction of its own."""

from __future__ import annotations

import base64
from typing import Any

from .ids import new_id
from .wire import dumps

__all__ = ["default_compaction"]


def default_compaction(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One opaque `compaction` item holding the conversation (base64 JSON; not encryption)."""
    blob = base64.b64encode(dumps(items)).decode()
    return [{"type": "compaction", "id": new_id("cmp"), "encrypted_content": blob}]
