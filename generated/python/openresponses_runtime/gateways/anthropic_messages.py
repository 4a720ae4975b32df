"""A gateway from Open Responses to Anthropic's Messages API (`/v1/messages`).

Each turn becomes one streamed `POST {base_url}/v1/messages` with `x-api-key` and
`anthropic-version`. Requests translate so:

| Open Responses | Anthropic Messages |
|---|---|
| `instructions`, system and developer messages | `system` text blocks, in order |
| user messages (text, images by URL or data URL) | `user` text and `image` blocks (`url` or `base64` source) |
| assistant messages, function calls, reasoning of one turn | one `assistant` message: `text`, `tool_use` (`input` parsed from `arguments`), `thinking` / `redacted_thinking` blocks |
| `function_call_output` | a `tool_result` block (`tool_use_id` = `call_id`) in a `user` message |
| a reasoning item this gateway made | its `thinking` block with the `signature`, or its `redacted_thinking` `data`, byte for byte |
| a reasoning item of anyone else (no signature) | left out: Anthropic takes no unsigned thinking; named `item:reasoning` in `OpenResponses-Ignored` when it held text |
| `anthropic:content_block` items | the block they keep, sent back in place |
| `anthropic:citations` items | left out: the cited text goes back as text |
| function tools under `tool_choice` | `tools` (`parameters` as `input_schema`), `tool_choice` `auto`, `any` (`required`), `tool` (one function), `none` |
| `anthropic:server_tool` tools | their `definition`, as is (e.g. `web_search_20250305`) |
| `parallel_tool_calls: false` | `tool_choice.disable_parallel_tool_use` |
| `max_output_tokens` | `max_tokens` (required upstream: `DEFAULT_MAX_TOKENS`, 4096, when the request sets none; with thinking, 4096 plus the effort's budget) |
| `reasoning.effort`, `reasoning.summary` | `thinking`, and `output_config.effort` for adaptive models: see below |
| `temperature`, `top_p` | the same, when the request sets them (with thinking on: only what Anthropic takes with it, see below) |
| `input_file` content, images by `file_id` | refused: 400 |

`reasoning` turns thinking on. How depends on the model (`thinking_kind`): Claude 3.7 Sonnet and
the Claude 4 models up to 4.5 (Sonnet 4, 4.5, Opus 4, 4.1, 4.5, Haiku 4.5) take a token budget
(`{"type": "enabled", "budget_tokens": N}`); Opus and Sonnet 4.6 and every later model take
`{"type": "adaptive"}` with `output_config.effort`; older Claude 3 models do not think. By effort
(`DEFAULT_THINKING_BUDGETS`, `DEFAULT_THINKING_LEVELS`; a deployment overrides rows with the
provider's `thinking_budgets` and `thinking_levels`, or `orspec serve --thinking-budget low=2048`
and `--thinking-level xhigh=high`):

| `reasoning.effort` | budget models: `budget_tokens` | adaptive models: `output_config.effort` |
|---|---|---|
| absent (no `reasoning`) | thinking off: nothing sent | thinking off: nothing sent |
| `none` | thinking off: nothing sent (Anthropic's default) | thinking off: nothing sent |
| `low` | 1024 (Anthropic's least) | `low` |
| `medium` | 4096 | `medium` |
| `high` | 16384 | not sent: `high` is Anthropic's default |
| `xhigh` | 24576 | `max` |
| absent, with a `summary` | 4096 (as `medium`) | not sent: the model's default |

- The budget must stay below `max_tokens`: when the request sets no `max_output_tokens`, `max_tokens`
  is the provider's `max_tokens` (4096) plus the budget (adaptive models: plus the budget of the same
  effort), room for the answer after the thinking; when it sets one, that stays the limit (it counts
  thinking tokens, as Open Responses' does) and the budget is cut to one token below it. A limit of
  1024 or less leaves no room for a budget: thinking stays off.
- `reasoning.summary` (any value) sends `display: "summarized"` in `thinking`: summarized thinking
  comes back as reasoning text (Claude 4 models summarize their thinking; Opus 4.7 and later omit
  it unless asked). Without a summary, the model's default display applies.
- Anthropic refuses some settings with thinking on; the gateway leaves them out and names them in
  the `OpenResponses-Ignored` header: `temperature` other than 1, `top_p` below 0.95, and `reasoning`
  itself with a forced tool (`tool_choice` `required`, or one function), on a model that does not
  think, or under a limit too small for a budget.

`stop_sequences`, prompt-caching hints and Anthropic's other own fields have no Open Responses
counterpart: a project sets them with `extra_body` (which replaces a field the gateway made, such as
`thinking`) or `messages_request`.

The stream translates back, block by block: `text` as text; `thinking` as reasoning streamed as it
arrives, its signature kept in the reasoning item's `encrypted_content`; `redacted_thinking` as a
reasoning item with no text, its `data` kept the same way; `tool_use` as a function call whose
arguments stream from `input_json_delta` (`{}` when none came); any other block (server tool use
and results, compaction) as an `anthropic:content_block` item holding the block as it arrived;
citations on a text block as an `anthropic:citations` item after it. Usage: `input_tokens` is
Anthropic's plus its cache read and cache creation tokens, `cached_tokens` the cache read ones,
`reasoning_tokens` `output_tokens_details.thinking_tokens`. Stop reasons:

| `stop_reason` | response |
|---|---|
| `end_turn`, `stop_sequence`, `tool_use`, `pause_turn`, anything else | `completed` |
| `max_tokens`, `model_context_window_exceeded` | `incomplete`, reason `max_output_tokens` |
| `refusal` | `incomplete`, reason `content_filter` |
| none: an `error` event came, or the stream ended | `failed` (`error` event, then `response.failed`) |

The client's stream begins as soon as the upstream answers with an event stream. Upstream failures
before that map as `gateways.base` maps them for every gateway (400, 413 and 422 are
`upstream_invalid_request` (400), 401/403 `upstream_unauthorized` (500), 429 stays 429 and 503
stays 503, both with `Retry-After` passed on; others are 502), and Anthropic's own 529
(`overloaded_error`) becomes 503 `upstream_overloaded` with `Retry-After` too. A 200 with a whole JSON message (a proxy that does not stream) is translated the
same way; a 200 with anything else is a 502. An event or block of a type this gateway does not know
is skipped and counted in the log.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

from ..server import (
    ArgumentsDelta,
    FunctionCallEnd,
    FunctionCallStart,
    Incomplete,
    InvalidRequest,
    ModelError,
    ProviderRequest,
    ReasoningDelta,
    ReasoningEnd,
    Step,
    TextDelta,
    UsageReport,
    VendorItem,
)
from .base import (
    ErrorRule,
    GatewayProvider,
    PlainShape,
    PlainText,
    UpstreamResponse,
    content_text,
    data_url,
    effort_table,
    expand_compactions,
    ignore,
    json_events,
    reasoning_asked,
    replayable,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_THINKING_BUDGETS",
    "DEFAULT_THINKING_LEVELS",
    "AnthropicMessagesProvider",
    "events_of_message",
    "message_events",
    "steps_from_events",
    "thinking_kind",
    "to_anthropic_messages",
    "to_messages_request",
]

log = logging.getLogger("openresponses_runtime.gateways")

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 4096  # Anthropic requires max_tokens; this fits every current model's output limit
ANTHROPIC_VERSION = "2023-06-01"
# What `count_tokens` takes of a Messages body: what the model reads, not how it generates.
_COUNTED = frozenset({"model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers"})
_INCOMPLETE = {
    "max_tokens": "max_output_tokens",
    "model_context_window_exceeded": "max_output_tokens",
    "refusal": "content_filter",
}
_BLOCK_ITEM = "anthropic:content_block"
_CITATIONS_ITEM = "anthropic:citations"
_SERVER_TOOL = "anthropic:server_tool"

# reasoning.effort -> thinking, by the module docstring's table
DEFAULT_THINKING_BUDGETS = {"low": 1024, "medium": 4096, "high": 16384, "xhigh": 24576}
DEFAULT_THINKING_LEVELS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "max"}
MIN_THINKING_BUDGET = 1024  # Anthropic's least budget_tokens
_DEFAULT_LEVEL = "high"  # Anthropic's effort when none is sent
_UNSET_EFFORT = "medium"  # what a summary without an effort thinks with on a budget model
# A Claude model's version: first in the old names (claude-3-7-sonnet), after the family since Claude 4
# (claude-sonnet-4-5-20250929; a one-digit minor, not a date's first digit)
_CLAUDE = re.compile(r"claude-(?:(\d+)(?:-(\d))?-[a-z]|[a-z]+-(\d+)(?:[-.](\d)(?!\d))?)")


# -- requests --------------------------------------------------------------------------------


def _image(part: dict[str, Any]) -> dict[str, Any]:
    url = part.get("image_url")
    if not url:
        raise InvalidRequest(
            "The Anthropic gateway takes images by image_url (a URL or a data URL), not by file_id.",
            param="input",
        )
    if url.startswith("data:"):
        media_type, data = data_url(url)
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _user_blocks(content: Any) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    blocks: list[dict[str, Any]] = []
    for part in content or ():
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text"):
            blocks.append({"type": "text", "text": part.get("text", "")})
        elif kind == "input_image":
            blocks.append(_image(part))
        else:
            raise InvalidRequest(
                f"The Anthropic gateway cannot send {kind!r} content upstream: send text and images only.",
                param="input",
            )
    return blocks


def _kept(item: dict[str, Any]) -> dict[str, Any] | None:
    """The Anthropic block this gateway kept in a reasoning item's `encrypted_content`, if it is one of ours."""
    try:
        kept = json.loads(item.get("encrypted_content") or "")
    except ValueError:
        return None
    block = kept.get("anthropic") if isinstance(kept, dict) else None
    return block if isinstance(block, dict) else None


def _thinking(item: dict[str, Any]) -> dict[str, Any] | None:
    """A reasoning item as the `thinking` or `redacted_thinking` block it came from; None when unsigned."""
    kept = _kept(item)
    if kept is None:
        return None
    if kept.get("type") == "redacted_thinking":
        return {"type": "redacted_thinking", "data": kept.get("data", "")}
    text = "".join(p.get("text", "") for p in item.get("content") or () if p.get("type") == "reasoning_text")
    return {"type": "thinking", "thinking": text, "signature": kept.get("signature", "")}


def _unsigned(item: dict[str, Any]) -> bool:
    """A reasoning item with text but no block of ours: another model's, which Anthropic does not take."""
    return item.get("type") == "reasoning" and _kept(item) is None and bool(item.get("content") or item.get("summary"))


def _tool_use(item: dict[str, Any]) -> dict[str, Any]:
    try:
        arguments = json.loads(item.get("arguments") or "{}")
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        raise InvalidRequest(
            f"Function call {item.get('call_id')!r} has arguments that are not a JSON object; Anthropic "
            "takes tool input as an object.",
            param="input",
        )
    return {"type": "tool_use", "id": item.get("call_id"), "name": item.get("name"), "input": arguments}


def _tool_result(item: dict[str, Any]) -> dict[str, Any]:
    output = item.get("output")
    content = output if isinstance(output, str) else _user_blocks(output)
    return {"type": "tool_result", "tool_use_id": item.get("call_id"), "content": content}


def to_anthropic_messages(
    items: list[dict[str, Any]], instructions: str | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The Open Responses context as Anthropic's `system` blocks and `messages`.

    Consecutive items of one role join one message: a turn's reasoning, text and calls make one
    assistant message; the outputs of parallel calls, one user message of `tool_result` blocks."""
    system = [{"type": "text", "text": instructions}] if instructions else []
    messages: list[dict[str, Any]] = []

    def add(role: str, content: str | list[dict[str, Any]]) -> None:
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if messages and messages[-1]["role"] == role:
            last = messages[-1]
            if isinstance(last["content"], str):
                last["content"] = [{"type": "text", "text": last["content"]}]
            last["content"] += blocks
        else:
            messages.append({"role": role, "content": content})

    for item in expand_compactions(items):
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role in ("system", "developer"):
                system.append({"type": "text", "text": content_text(item.get("content"))})
            elif role == "assistant":
                text = content_text(item.get("content"))
                if text:  # Anthropic refuses empty text blocks
                    add("assistant", [{"type": "text", "text": text}])
            else:
                add("user", _user_blocks(item.get("content")))
        elif kind == "function_call":
            add("assistant", [_tool_use(item)])
        elif kind == "function_call_output":
            add("user", [_tool_result(item)])
        elif kind == "reasoning":
            block = _thinking(item)
            if block is not None:
                add("assistant", [block])
        elif kind == _BLOCK_ITEM:
            add("assistant", [dict(item.get("block") or {})])
        elif kind == _CITATIONS_ITEM:
            continue  # the text they cite goes back as text
        else:
            raise InvalidRequest(
                f"The Anthropic gateway cannot send a {kind!r} item upstream; leave it out of the input.",
                param="input",
            )
    return system, messages


def to_messages_request(
    request: ProviderRequest,
    model: str,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    budgets: Mapping[str, int] = DEFAULT_THINKING_BUDGETS,
    levels: Mapping[str, str] = DEFAULT_THINKING_LEVELS,
) -> dict[str, Any]:
    """The streamed Messages request for one turn; `budgets` and `levels` turn `reasoning` into
    thinking (the module docstring's table). What Anthropic would refuse is left out and named in
    `request.ignored`."""
    system, messages = to_anthropic_messages(request.input, request.instructions)
    if any(_unsigned(item) for item in expand_compactions(request.input)):
        ignore(request, "reasoning", kind="item")  # reasoning text Anthropic cannot take back: said so
    limit = request.max_output_tokens
    payload: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_tokens": limit if limit is not None else max_tokens,
        "stream": True,
    }
    if system:
        payload["system"] = system
    functions = request.function_tools
    if request.tool_choice != "none":
        functions = {name: tool for name, tool in functions.items() if name in request.allowed_tools}
    tools = [
        {
            "name": tool["name"],
            **({"description": tool["description"]} if tool.get("description") is not None else {}),
            "input_schema": tool.get("parameters") or {"type": "object", "properties": {}},
        }
        for tool in functions.values()
    ]
    tools += [dict(tool.get("definition") or {}) for tool in request.tools if tool.get("type") == _SERVER_TOOL]
    if tools:
        payload["tools"] = tools
    if functions:
        if request.tool_choice == "none":
            choice: dict[str, Any] = {"type": "none"}
        elif request.tool_choice == "required" and len(functions) == 1:
            choice = {"type": "tool", "name": next(iter(functions))}
        else:
            choice = {"type": "any" if request.tool_choice == "required" else "auto"}
        if getattr(request.body, "parallel_tool_calls", None) is False and choice["type"] != "none":
            choice["disable_parallel_tool_use"] = True
        payload["tool_choice"] = choice
    thinking = _thinking_fields(request, model, budgets, levels, max_tokens, payload.get("tool_choice"))
    payload.update(thinking)
    for field in ("temperature", "top_p"):
        value = getattr(request.body, field, None)
        if value is None:
            continue
        if thinking and (value < 0.95 if field == "top_p" else value != 1):  # what Anthropic takes with thinking
            ignore(request, field)
        else:
            payload[field] = value
    return payload


def thinking_kind(model: str) -> str | None:
    """How `model` thinks: `"budget"` (`thinking.budget_tokens`), `"adaptive"` (`thinking.type`
    `adaptive` and `output_config.effort`), or None (it does not). A name that is not Claude's
    (a proxy's own) is taken for a current model: adaptive."""
    match = _CLAUDE.search(model.lower())
    if match is None:
        return "adaptive"
    old_major, old_minor, major, minor = match.groups()
    version = (int(old_major or major), int(old_minor or minor or 0))
    if version < (3, 7):
        return None
    return "budget" if version < (4, 6) else "adaptive"


def _thinking_fields(
    request: ProviderRequest,
    model: str,
    budgets: Mapping[str, int],
    levels: Mapping[str, str],
    max_tokens: int,
    tool_choice: dict[str, Any] | None,
) -> dict[str, Any]:
    """The request's fields that `reasoning` sets (`thinking`, `output_config`, `max_tokens`), by the
    module docstring's table; none when thinking stays off."""
    effort, summary = reasoning_asked(request)
    if effort == "none" or (effort is None and summary is None):
        return {}
    kind = thinking_kind(model)
    if kind is None or effort not in (None, *budgets) or (tool_choice or {}).get("type") in ("any", "tool"):
        ignore(request, "reasoning")  # a model that does not think, or a forced tool: Anthropic refuses thinking
        return {}
    budget = budgets[effort or _UNSET_EFFORT]
    limit = request.max_output_tokens
    fields: dict[str, Any] = {"max_tokens": limit if limit is not None else max_tokens + budget}
    if kind == "adaptive":
        thinking: dict[str, Any] = {"type": "adaptive"}
        level = levels[effort] if effort else _DEFAULT_LEVEL
        if level != _DEFAULT_LEVEL:
            fields["output_config"] = {"effort": level}
    else:
        budget = min(budget, fields["max_tokens"] - 1)
        if budget < MIN_THINKING_BUDGET:
            ignore(request, "reasoning")  # no room for the least budget under the request's limit
            return {}
        thinking = {"type": "enabled", "budget_tokens": budget}
    if summary is not None:
        thinking["display"] = "summarized"
    return {**fields, "thinking": thinking}


# -- answers ---------------------------------------------------------------------------------


def _error_message(body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or json.dumps(error))
    return json.dumps(body)


def _plain_text(event: dict[str, Any]) -> str | None:
    """The text of a `text_delta` event and nothing more, else None."""
    delta = event.get("delta")
    if event.get("type") != "content_block_delta" or len(event) != 3 or "index" not in event:
        return None
    if type(delta) is not dict or len(delta) != 2 or delta.get("type") != "text_delta":
        return None
    text = delta.get("text")
    return text if type(text) is str else None


_PLAIN = PlainShape(b'"text"', _plain_text)


def message_events(reply: UpstreamResponse) -> AsyncIterator[dict[str, Any] | PlainText]:
    """The JSON events of a Messages SSE stream, to the end of the body, runs of text deltas as
    `PlainText` (`steps_from_events` passes over `ping` and notices a message that never stopped)."""
    return json_events(reply, _PLAIN)


def events_of_message(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A whole (non-streamed) message as the events that would have streamed it."""
    usage = message.get("usage") or {}
    yield {"type": "message_start", "message": {**message, "content": [], "stop_reason": None, "usage": usage}}
    deltas = {"text": ("text", "text_delta"), "thinking": ("thinking", "thinking_delta")}
    for index, block in enumerate(message.get("content") or ()):
        kind = block.get("type")
        if kind in deltas:
            field, delta = deltas[kind]
            start = {key: value for key, value in block.items() if key not in ("signature", "citations")}
            yield {"type": "content_block_start", "index": index, "content_block": {**start, field: ""}}
            yield {"type": "content_block_delta", "index": index, "delta": {"type": delta, field: block[field]}}
            for citation in block.get("citations") or ():
                yield {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "citations_delta", "citation": citation},
                }
            if block.get("signature"):
                yield {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": block["signature"]},
                }
        elif kind == "tool_use":
            partial = json.dumps(block.get("input") or {})
            yield {"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}}
            yield {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": partial},
            }
        else:
            yield {"type": "content_block_start", "index": index, "content_block": block}
        yield {"type": "content_block_stop", "index": index}
    stop = {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")}
    yield {"type": "message_delta", "delta": stop, "usage": usage}
    yield {"type": "message_stop"}


def _usage(usage: dict[str, Any]) -> UsageReport:
    read = usage.get("cache_read_input_tokens") or 0
    created = usage.get("cache_creation_input_tokens") or 0
    thinking = (usage.get("output_tokens_details") or {}).get("thinking_tokens") or 0
    return UsageReport(
        (usage.get("input_tokens") or 0) + read + created,
        usage.get("output_tokens") or 0,
        reasoning_tokens=thinking,
        cached_tokens=read,
    )


async def steps_from_events(events: AsyncIterator[dict[str, Any] | PlainText]) -> AsyncIterator[Step]:
    """Messages stream events as steps, one content block at a time.

    `message_start` carries the input usage, `message_delta` the stop reason and the output usage
    (cumulative: its fields replace those before). A block's kind decides its steps (see the module
    docstring); the message ends at `message_stop`, and a stream that ends before it, or an `error`
    event, fails the response."""
    usage: dict[str, Any] = {}
    stop: str | None = None
    stopped = False
    block: dict[str, Any] | None = None  # the open block, as far as it has arrived
    pieces: list[str] = []  # its streamed text, thinking, signature or input JSON
    skipped = 0

    def end_block() -> list[Step]:
        nonlocal block
        if block is None:
            return []
        kind, done = block.get("type"), block
        block = None
        if kind == "text":
            if not done.get("citations"):
                return []
            return [VendorItem({"type": _CITATIONS_ITEM, "citations": done["citations"]})]
        if kind == "thinking":
            kept = {"type": "thinking", "signature": done.get("signature", "")}
            return [ReasoningEnd(json.dumps({"anthropic": kept}))]
        if kind == "redacted_thinking":
            kept = {"type": "redacted_thinking", "data": done.get("data", "")}
            return [ReasoningEnd(json.dumps({"anthropic": kept}))]
        if kind == "tool_use":
            arguments = "".join(pieces)
            steps: list[Step] = [] if arguments else [ArgumentsDelta(json.dumps(done.get("input") or {}))]
            if arguments:
                try:
                    json.loads(arguments)
                except ValueError:  # delivered as the model sent them: the client decides what to do
                    log.warning(
                        "tool call %s (%s): the upstream's input is not valid JSON", done.get("id"), done.get("name")
                    )
            return [*steps, FunctionCallEnd()]
        if kind == "server_tool_use" and pieces:
            try:
                done = {**done, "input": json.loads("".join(pieces))}
            except ValueError:
                log.warning("server tool use %s: the upstream's input is not valid JSON", done.get("id"))
        if kind == "compaction" and pieces:
            done = {**done, "content": "".join(pieces)}
        return [VendorItem({"type": _BLOCK_ITEM, "block": done})]

    events, again = replayable(events)
    async for event in events:
        if type(event) is PlainText:  # a run of text deltas (see `_plain_text`)
            if block is None:  # out of place: read each whole
                again.extend(event.events())
                continue
            for text in event[0]:
                if text:
                    yield TextDelta(text)
            continue
        kind = event.get("type")
        if kind == "content_block_delta" and block is not None:  # first: nearly every event is one
            delta = event.get("delta") or {}
            which = delta.get("type")
            if which == "text_delta":
                if delta.get("text"):
                    yield TextDelta(delta["text"])
            elif which == "thinking_delta":
                if delta.get("thinking"):
                    yield ReasoningDelta(delta["thinking"])
            elif which == "signature_delta":
                block["signature"] = block.get("signature", "") + (delta.get("signature") or "")
            elif which == "input_json_delta":
                piece = delta.get("partial_json") or ""
                pieces.append(piece)
                if piece and block.get("type") == "tool_use":
                    yield ArgumentsDelta(piece)
            elif which == "citations_delta":
                block.setdefault("citations", []).append(delta.get("citation"))
            elif which == "compaction_delta":
                pieces.append(delta.get("content") or "")
            else:
                skipped += 1
        elif kind == "message_start":
            usage.update((event.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            for step in end_block():
                yield step
            block, pieces = dict(event.get("content_block") or {}), []
            if block.get("type") == "tool_use":
                yield FunctionCallStart(str(block.get("name") or ""), call_id=block.get("id"))
            elif block.get("type") == "text" and block.get("text"):
                yield TextDelta(block["text"])
            elif block.get("type") == "thinking" and block.get("thinking"):
                yield ReasoningDelta(block["thinking"])
        elif kind == "content_block_stop":
            for step in end_block():
                yield step
        elif kind == "message_delta":
            stop = (event.get("delta") or {}).get("stop_reason") or stop
            usage.update(event.get("usage") or {})
        elif kind == "message_stop":
            stopped = True
            break
        elif kind == "error":
            for step in end_block():
                yield step
            overloaded = (event.get("error") or {}).get("type") == "overloaded_error"
            raise ModelError(
                f"The upstream failed mid-stream: {_error_message(event)}",
                code="upstream_overloaded" if overloaded else None,
                status=502,
            )
        elif kind != "ping":  # a keep-alive
            skipped += 1
    if skipped:
        log.warning("skipped %d upstream events of a type this gateway does not know", skipped)
    for step in end_block():
        yield step
    if usage:
        yield _usage(usage)
    if not stopped:
        raise ModelError(
            "The upstream's stream ended before message_stop: the answer may be cut short.",
            code="upstream_stream_incomplete",
            status=502,
        )
    if stop in _INCOMPLETE:
        yield Incomplete(_INCOMPLETE[stop])


# -- the provider ----------------------------------------------------------------------------


class AnthropicMessagesProvider(GatewayProvider):
    """Open Responses in front of Anthropic's Messages API.

    Configuration: `base_url`, `api_key` and `model`, defaulting to `$ANTHROPIC_BASE_URL` (else
    https://api.anthropic.com), `$ANTHROPIC_API_KEY` and `$ANTHROPIC_MODEL` (which, when set,
    replaces the model a request names); `models`: upstream names for the models requests name
    (the rest pass through); `max_tokens`: what to ask for when a request sets no
    `max_output_tokens`; `anthropic_version`; `extra_body`: fields sent with every request (such
    as `thinking` or `stop_sequences`); `server_tools`: the Anthropic server tool types (a definition's
    `type`, such as `web_search_20250305`) clients may turn on with an `anthropic:server_tool` tool, which
    runs on the operator's key and bill; none by default, and any other is refused (400, `param` tools[i]);
    `thinking_budgets` and `thinking_levels`: rows over `DEFAULT_THINKING_BUDGETS` (effort ->
    `budget_tokens`, at least 1024) and `DEFAULT_THINKING_LEVELS` (effort -> `output_config.effort`),
    which turn `reasoning` into thinking (the module docstring's table; a bad row is a `ValueError`).
    Subclass and override `messages_request` to change any mapping.
    """

    # Anthropic's own "overloaded": a standard 503 that clients know to retry
    error_rules = {529: ErrorRule(ModelError, "upstream_overloaded", "The upstream is overloaded", 503, retry=True)}

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        models: Mapping[str, str] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        anthropic_version: str = ANTHROPIC_VERSION,
        extra_body: dict[str, Any] | None = None,
        timeout: float = 600.0,
        ca_file: str | None = None,
        server_tools: Iterable[str] = (),
        thinking_budgets: Mapping[str, int] | None = None,
        thinking_levels: Mapping[str, str] | None = None,
    ):
        api_key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY", "")
        if not api_key:
            raise ValueError("set ANTHROPIC_API_KEY (or pass api_key=): the key the gateway sends upstream")
        super().__init__(
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL,
            api_key=api_key,
            model=model or os.environ.get("ANTHROPIC_MODEL"),
            models=models,
            extra_body=extra_body,
            timeout=timeout,
            ca_file=ca_file,
        )
        self.max_tokens = max_tokens
        self.anthropic_version = anthropic_version
        self.server_tools = frozenset(server_tools)
        self.thinking_budgets = effort_table(
            DEFAULT_THINKING_BUDGETS,
            thinking_budgets,
            name="thinking budget",
            valid=lambda value: type(value) is int and value >= MIN_THINKING_BUDGET,
            expected=f"a whole number of tokens, at least {MIN_THINKING_BUDGET}",
        )
        self.thinking_levels = effort_table(
            DEFAULT_THINKING_LEVELS,
            thinking_levels,
            name="thinking level",
            valid=lambda value: isinstance(value, str) and bool(value),
            expected="an effort level Anthropic takes, such as low, medium, high or max",
        )

    def messages_request(self, request: ProviderRequest) -> dict[str, Any]:
        """The body sent upstream for one turn; override to change a mapping."""
        self.check_server_tools(request)
        model = self.upstream_model(request.model)
        body = to_messages_request(request, model, self.max_tokens, self.thinking_budgets, self.thinking_levels)
        return {**body, **self.extra_body}

    def check_server_tools(self, request: ProviderRequest) -> None:
        """Refuse a server tool the operator has not allowed: it would run on the operator's key."""
        for index, tool in enumerate(request.tools):
            if tool.get("type") != _SERVER_TOOL:
                continue
            kind = (tool.get("definition") or {}).get("type") if isinstance(tool.get("definition"), dict) else None
            if kind not in self.server_tools:
                allowed = ", ".join(sorted(self.server_tools)) or "none"
                raise InvalidRequest(
                    f"This server does not turn on Anthropic's server tool {kind!r} (allowed: {allowed}).",
                    param=f"tools[{index}]",
                    code="tool_not_allowed",
                )

    def upstream_request(self, request: ProviderRequest) -> dict[str, Any]:
        return self.messages_request(request)

    def endpoint(self, request: ProviderRequest, body: dict[str, Any]) -> str:
        return f"{self.base_url}/v1/messages"

    def upstream_headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key, "anthropic-version": self.anthropic_version}

    def count_request(self, request: ProviderRequest) -> tuple[str, dict[str, Any]]:
        """`count_tokens`, with the turn's body less what only generation takes (`max_tokens`, `stream`, sampling)."""
        body = self.messages_request(request)
        return f"{self.base_url}/v1/messages/count_tokens", {k: v for k, v in body.items() if k in _COUNTED}

    def tokens_counted(self, answer: dict[str, Any]) -> Any:
        return answer.get("input_tokens")

    def stream_events(self, reply: UpstreamResponse) -> AsyncIterator[dict[str, Any]]:
        return message_events(reply)

    def steps(self, request: ProviderRequest, events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[Step]:
        return steps_from_events(events)

    def whole_answer(self, kind: str, body: bytes) -> Iterable[dict[str, Any]]:
        """A proxy that does not stream: the whole message as the events that would have streamed it."""
        return events_of_message(_whole_message(kind, body))

    def error_message(self, body: Any) -> str:
        return _error_message(body)


def _whole_message(kind: str, body: bytes) -> dict[str, Any]:
    """A 200 that is not an event stream: a whole JSON message, or a 502."""
    try:
        message = json.loads(body) if kind == "application/json" else None
    except ValueError:
        message = None
    if isinstance(message, dict) and message.get("type") == "message":
        return message
    if isinstance(message, dict) and message.get("type") == "error":
        raise ModelError(f"The upstream failed: {_error_message(message)}", status=502)
    raise ModelError(
        f"The upstream answered 200 with {kind or 'no content type'}, not an event stream: "
        f"{body.decode(errors='replace')[:100]!r}",
        code="upstream_bad_response",
        status=502,
    )
