"""The published document, `generated/openapi.json`: the bundled spec in the form downstream tools read.

It differs from the spec as written in one way. A `text/event-stream` response whose schema is the
union of event payloads (upstream's convention, which orspec's own readers keep using) is published
the way OpenAPI 3.2 describes server-sent events, and the way schemathesis reads them in 3.1 too:
the schema is one SSE message. A message is either an event, `{event, data}` whose `data` is JSON
(`contentMediaType`) matching the event union, published as the component `StreamingEvent`, or
the last message, whose `data` is the literal `[DONE]`.
"""

from __future__ import annotations

import copy
from typing import Any

from jsonpointer import escape

EVENT_UNION = "StreamingEvent"
SSE = "text/event-stream"


def published(document: dict[str, Any]) -> dict[str, Any]:
    """A copy of the bundled `document` with its event streams framed as SSE messages."""
    doc = copy.deepcopy(document)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for item in (doc.get("paths") or {}).values():
        for op in item.values() if isinstance(item, dict) else ():
            for response in (op.get("responses") or {}).values() if isinstance(op, dict) else ():
                media = ((response or {}).get("content") or {}).get(SSE) if isinstance(response, dict) else None
                union = media.get("schema") if isinstance(media, dict) else None
                if isinstance(union, dict) and ("oneOf" in union or "anyOf" in union):
                    media["schema"] = _framed(_name(union, schemas))
    return doc


def _name(union: dict, schemas: dict) -> str:
    """The component name the event union is published under (the first free `StreamingEvent…`)."""
    name, n = EVENT_UNION, 1
    while name in schemas and schemas[name] != union:
        n += 1
        name = f"{EVENT_UNION}{n}"
    schemas.setdefault(name, {"description": "Any event of a streamed response, told apart by `type`.", **union})
    return name


def _framed(name: str) -> dict:
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
                        "contentSchema": {"$ref": f"#/components/schemas/{escape(name)}"},
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
