"""The published document, `generated/openapi.json`: the bundled spec in the form downstream tools read.

It differs from the spec as written in one way. A `text/event-stream` response whose schema is the
union of event payloads (upstream's convention, which orspec's own readers keep using) is published
the way OpenAPI 3.2 describes server-sent events, and the way schemathesis reads them in 3.1 too:
the schema is one SSE message. A message is either an event, `{event, data}` whose `data` is JSON
(`contentMediaType`) matching the event union, or
the last message, whose `data` is the literal `[DONE]`. The union itself stays inline there
(`event_union` finds it), so the published components are exactly the spec's.
"""

from __future__ import annotations

import copy
from typing import Any

SSE = "text/event-stream"


def published(document: dict[str, Any]) -> dict[str, Any]:
    """A copy of the bundled `document` with its event streams framed as SSE messages."""
    doc = copy.deepcopy(document)
    for item in (doc.get("paths") or {}).values():
        for op in item.values() if isinstance(item, dict) else ():
            for response in (op.get("responses") or {}).values() if isinstance(op, dict) else ():
                media = ((response or {}).get("content") or {}).get(SSE) if isinstance(response, dict) else None
                union = media.get("schema") if isinstance(media, dict) else None
                if isinstance(union, dict) and ("oneOf" in union or "anyOf" in union) and not _framed_already(union):
                    media["schema"] = framed(union)
    return doc


def event_union(media_schema: dict[str, Any]) -> dict[str, Any]:
    """The union of event payloads inside a published `text/event-stream` schema."""
    return media_schema["oneOf"][0]["properties"]["data"]["contentSchema"]


def _framed_already(schema: dict) -> bool:
    members = schema.get("oneOf")
    return isinstance(members, list) and bool(members) and "contentSchema" in str(members[0])


def framed(union: dict[str, Any]) -> dict[str, Any]:
    return {
        "description": (
            "One server-sent event. Each event is an `event:` line naming the event's `type` and a `data:` "
            "line holding the event as JSON; the stream ends with `data: [DONE]`, which carries no event."
        ),
        "oneOf": [
            {
                "type": "object",
                "required": ["event", "data"],
                "properties": {
                    "event": {"type": "string", "description": "The `type` of the event in `data`."},
                    "data": {
                        "type": "string",
                        "description": "The event, as JSON.",
                        "contentMediaType": "application/json",
                        "contentSchema": union,
                    },
                },
            },
            {
                "type": "object",
                "required": ["data"],
                "properties": {"data": {"const": "[DONE]", "description": "The end of the stream."}},
            },
        ],
    }
