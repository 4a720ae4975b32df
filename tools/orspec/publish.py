"""The published document, `generated/openapi.json`: the bundled spec in the form downstream tools read.

It differs from the spec as written in two ways.

- A `text/event-stream` response whose schema is the union of event payloads (upstream's
  convention, which orspec's own readers keep using) is published the way OpenAPI 3.2 describes
  server-sent events, and the way schemathesis reads them in 3.1 too: the schema is one SSE
  message. A message is either an event, `{event, data}` whose `data` is JSON (`contentMediaType`)
  matching the event union, or the last message, whose `data` is the literal `[DONE]`. The union
  itself stays inline there (`event_union` finds it).
- A request body says what a server does by default with what the spec does not define (see
  "What a server accepts" in `spec/README.md`): the body stays open to parameters it does not
  define, and its `tools` admit a tool of any other type (an inline schema titled
  `IgnoredToolParam`), both ignored and named in the `OpenResponses-Ignored` header;
  `x-openresponses-ignored` on the body says so. Every component but the bodies is the spec's.
"""

from __future__ import annotations

import copy
from typing import Any

from .schema import ref_name

SSE = "text/event-stream"
IGNORED_TOOL = "IgnoredToolParam"
# Tool types a server reads though the spec does not define them: OpenAI's `namespace` of function tools.
_READ_TOOL_TYPES = ("namespace",)
IGNORED = {
    "parameters": "A top-level parameter this document does not define is ignored, and named in the"
    " `OpenResponses-Ignored` response header as `parameter:<name>`.",
    "tools": f"A tool of a type this document does not define (`{IGNORED_TOOL}`) is ignored, and named in that"
    " header as `tool:<type>`.",
    "strict": "A server in strict mode refuses them instead: 400 `unknown_parameter` or `unsupported_tool_type`,"
    " with the `param` it refuses.",
}


def published(document: dict[str, Any]) -> dict[str, Any]:
    """A copy of the bundled `document` with its event streams framed as SSE messages, and its
    request bodies admitting what a server ignores and reports."""
    doc = copy.deepcopy(document)
    _admit_what_is_ignored(doc)
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


def _admit_what_is_ignored(doc: dict[str, Any]) -> None:
    """Mark each request body's tolerance (`x-openresponses-ignored`) and widen its `tools` items."""
    schemas = (doc.get("components") or {}).get("schemas") or {}
    for name in sorted(_request_bodies(doc)):
        body = schemas.get(name)
        if not isinstance(body, dict) or body.get("type") != "object" or "x-openresponses-ignored" in body:
            continue
        widened = False
        tools = (body.get("properties") or {}).get("tools")
        for array in [tools, *tools.get("anyOf", ()), *tools.get("oneOf", ())] if isinstance(tools, dict) else ():
            items = array.get("items") if isinstance(array, dict) else None
            union = _union(schemas, items)
            if union is None:
                continue
            known = sorted({*union["discriminator"]["mapping"], *_READ_TOOL_TYPES})
            array["items"] = {"anyOf": [items, _ignored_tool(known)]}
            widened = True
        body["x-openresponses-ignored"] = {k: v for k, v in IGNORED.items() if widened or k != "tools"}


def _request_bodies(doc: dict[str, Any]) -> set[str]:
    """The components that are the JSON bodies of the document's operations."""
    names = set()
    for item in (doc.get("paths") or {}).values():
        for op in item.values() if isinstance(item, dict) else ():
            body = op.get("requestBody") if isinstance(op, dict) else None
            media = ((body or {}).get("content") or {}).get("application/json") if isinstance(body, dict) else None
            ref = (media or {}).get("schema", {}).get("$ref", "") if isinstance(media, dict) else ""
            if name := ref_name(ref):
                names.add(name)
    return names


def _union(schemas: dict[str, Any], items: Any) -> dict[str, Any] | None:
    """The tagged union `items` refers to, if it is one (with a `type` mapping)."""
    ref = items.get("$ref", "") if isinstance(items, dict) else ""
    target = schemas.get(ref.rsplit("/", 1)[1]) if isinstance(ref, str) and ref.startswith("#/") else None
    discriminator = target.get("discriminator") if isinstance(target, dict) else None
    tagged = isinstance(discriminator, dict) and discriminator.get("propertyName") == "type"
    return target if tagged and isinstance(discriminator.get("mapping"), dict) else None


def _ignored_tool(known: list[str]) -> dict[str, Any]:
    return {
        "title": IGNORED_TOOL,  # inline, so the components stay the spec's; generators name it by its title
        "type": "object",
        "description": "A tool of a type this document does not define. A server leaves it out, offers the model the"
        " other tools, and names it in the `OpenResponses-Ignored` response header as `tool:<type>`; in strict"
        " mode it refuses the request (400 `unsupported_tool_type`).",
        "required": ["type"],
        "properties": {
            "type": {
                "type": "string",
                "description": "The tool's type: any but the types this document defines.",
                "not": {"enum": known},
            }
        },
        "x-openresponses-ignored": "tool",
    }
