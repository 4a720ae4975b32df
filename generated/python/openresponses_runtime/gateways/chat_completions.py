"""A gateway from Open Responses to an OpenAI-compatible Chat Completions API (`/chat/completions`).

Each turn becomes one streamed `POST {base_url}/chat/completions`. Chat Completions has no token
count, so `POST /responses/input_tokens` answers 501 `not_implemented`. Requests translate so:

| Open Responses | Chat Completions |
|---|---|
| `instructions`, system and developer messages | `system` messages |
| user messages (text, images by URL or data URL) | `user` messages (a string, or parts with `image_url`) |
| an assistant message and the function calls after it | one `assistant` message with `content` and `tool_calls` |
| `function_call_output` | a `tool` message with its `tool_call_id` |
| a reasoning item this gateway made from `reasoning_details` | `reasoning_details` on the next assistant message |
| a reasoning item this gateway made without `reasoning_details` (from `reasoning_content`, say) | left out, as the upstream asks |
| another model's reasoning item | left out: Chat Completions takes no reasoning text back; named `item:reasoning` in `OpenResponses-Ignored` when it held text |
| function tools under `tool_choice` | `tools`, `tool_choice` (`required` with one tool: that function) |
| `max_output_tokens` | `max_tokens`, or `max_completion_tokens` for api.openai.com (`max_tokens_field`) |
| `text.format` json_schema / json_object | `response_format` |
| `reasoning.effort` | `reasoning_effort` (any value, `none` too); OpenRouter: `reasoning.effort` |
| `reasoning.summary` without an effort | nothing; OpenRouter: `reasoning.enabled: true` (reasoning at the model's default effort, returned) |
| `temperature`, `top_p`, penalties, `parallel_tool_calls` | the same, when the request sets them |

The upstream is OpenRouter when its host is `openrouter.ai` (the provider's `reasoning_field`,
`"reasoning"` or `"reasoning_effort"`, says otherwise). Chat Completions has no summary setting:
the reasoning text an upstream streams comes back as it is, whatever `reasoning.summary` says.

The stream translates back: `delta.content` as text, `delta.reasoning_content` (DeepSeek, Z.ai)
and `delta.reasoning` (Groq, OpenRouter) as reasoning streamed as it arrives, OpenRouter's signed
`reasoning_details` kept in the reasoning item's `encrypted_content` (so they go back next turn),
`tool_calls` deltas by `index` as function calls, `refusal` as a refusal, `usage` (or Groq's
`x_groq.usage`) as usage; a stream without usage leaves the response's `usage` null. Only choice 0
is read (an `n` above 1 is the upstream's doing). Stop reasons:

| `finish_reason` | response |
|---|---|
| `stop`, `tool_calls`, `function_call`, anything else | `completed` |
| `length` (even when an error chunk follows it) | `incomplete`, reason `max_output_tokens` |
| `content_filter` | `incomplete`, reason `content_filter` |
| none: an error came first, or the stream ended (an error after a finish_reason is only logged) | `failed` (`error` event, then `response.failed`) |

The client's stream begins as soon as the upstream answers with an event stream, before its first
chunk. Upstream failures before that: an HTTP error status becomes the spec's error object as
`gateways.base` maps it for every gateway (400, 413 and 422 are `upstream_invalid_request`, 401/403
`upstream_unauthorized`, 429 stays 429, 503 stays 503, others 502); a 200 with a whole
`chat.completion` is read as one chunk, and one with anything else is a 502. A chunk of a shape this gateway does not know is skipped and counted in the log.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from ..server import (
    ArgumentsDelta,
    FunctionCallEnd,
    FunctionCallStart,
    Incomplete,
    ModelError,
    ProviderRequest,
    ReasoningDelta,
    ReasoningEnd,
    Refusal,
    Step,
    TextDelta,
    UsageReport,
)
from .base import (
    GatewayProvider,
    PlainShape,
    PlainText,
    UpstreamResponse,
    expand_compactions,
    ignore,
    json_events,
    reasoning_asked,
    replayable,
)

__all__ = ["ChatCompletionsProvider", "chat_chunks", "steps_from_chunks", "to_chat_messages", "to_chat_request"]

log = logging.getLogger("openresponses_runtime.gateways")

_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


# -- requests --------------------------------------------------------------------------------


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    out = []
    for part in content or ():
        if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text", "summary_text"):
            out.append(str(part.get("text", "")))
        elif isinstance(part, dict) and part.get("type") == "refusal":
            out.append(str(part.get("refusal", "")))
    return "".join(out)


def _user_content(content: Any) -> Any:
    """User content as a chat string, or chat parts when it carries images."""
    if isinstance(content, str):
        return content
    parts = [p for p in content or () if isinstance(p, dict)]
    if not any(p.get("type") == "input_image" for p in parts):
        return _content_text(parts)
    out: list[dict[str, Any]] = []
    for part in parts:
        if part.get("type") == "input_text":
            out.append({"type": "text", "text": part.get("text", "")})
        elif part.get("type") == "input_image" and part.get("image_url"):
            image = {"url": part["image_url"]}
            if part.get("detail") in ("low", "high", "auto"):
                image["detail"] = part["detail"]
            out.append({"type": "image_url", "image_url": image})
    return out


def _reasoning_details(item: dict[str, Any]) -> list[Any] | None:
    """The upstream's `reasoning_details` this gateway kept in a reasoning item, if it is one of ours."""
    try:
        kept = json.loads(item.get("encrypted_content") or "")
    except ValueError:
        return None
    details = kept.get("reasoning_details") if isinstance(kept, dict) else None
    return details if isinstance(details, list) else None


def _dropped(item: dict[str, Any]) -> bool:
    """A reasoning item with text that is not this gateway's (ours keep their `reasoning_details`,
    none at all for an upstream that gives none): its text goes nowhere upstream."""
    return (
        item.get("type") == "reasoning"
        and _reasoning_details(item) is None
        and bool(item.get("content") or item.get("summary"))
    )


def to_chat_messages(items: list[dict[str, Any]], instructions: str | None = None) -> list[dict[str, Any]]:
    """The Open Responses context as Chat Completions messages."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if instructions else []
    details: list[Any] | None = None  # reasoning_details waiting for the assistant message they belong to
    for item in expand_compactions(items):
        kind = item.get("type", "message")
        previous = messages[-1] if messages else None
        if kind == "message":
            role = item.get("role")
            if role in ("system", "developer"):
                messages.append({"role": "system", "content": _content_text(item.get("content"))})
            elif role == "assistant":
                messages.append({"role": "assistant", "content": _content_text(item.get("content"))})
            else:
                messages.append({"role": "user", "content": _user_content(item.get("content"))})
        elif kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments") or "{}"},
            }
            if previous and previous["role"] == "assistant" and details is None:
                previous.setdefault("tool_calls", []).append(call)  # one turn: its text and its calls
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else _content_text(output)
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text})
        elif kind == "reasoning":
            details = _reasoning_details(item) or None
            continue
        else:
            continue  # item references and vendor items have no chat equivalent
        if details is not None and messages[-1]["role"] == "assistant":
            messages[-1]["reasoning_details"] = details
        details = None
    return messages


def _response_format(request: ProviderRequest) -> dict[str, Any] | None:
    text = getattr(request.body, "text", None)
    fmt = getattr(text, "format", None)
    if fmt is None:
        return None
    fmt = fmt.model_dump(mode="json", by_alias=True, exclude_none=True)
    if fmt.get("type") == "json_schema":
        schema = {key: fmt[key] for key in ("name", "description", "schema", "strict") if key in fmt}
        return {"type": "json_schema", "json_schema": schema}
    if fmt.get("type") == "json_object":
        return {"type": "json_object"}
    return None  # plain text, the upstream's default


def to_chat_request(
    request: ProviderRequest,
    model: str,
    max_tokens_field: str = "max_tokens",
    reasoning_field: str = "reasoning_effort",
) -> dict[str, Any]:
    """The streamed Chat Completions request for one turn; `reasoning_field` is where `reasoning`
    goes: `reasoning_effort` (OpenAI's), or `reasoning` (OpenRouter's object). Reasoning text that
    cannot go back is named in `request.ignored`."""
    if any(_dropped(item) for item in expand_compactions(request.input)):
        ignore(request, "reasoning", kind="item")
    payload: dict[str, Any] = {
        "model": model,
        "messages": to_chat_messages(request.input, request.instructions),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    tools = [tool for name, tool in request.function_tools.items() if name in request.allowed_tools]
    if tools:  # tool_choice none (or no tools at all): the upstream sees no tools
        payload["tools"] = [
            {
                "type": "function",
                "function": {
                    key: tool[key]
                    for key in ("name", "description", "parameters", "strict")
                    if tool.get(key) is not None
                },
            }
            for tool in tools
        ]
        if request.tool_choice == "required" and len(tools) == 1:
            payload["tool_choice"] = {"type": "function", "function": {"name": tools[0]["name"]}}
        else:
            payload["tool_choice"] = request.tool_choice
        parallel = getattr(request.body, "parallel_tool_calls", None)
        if parallel is not None:
            payload["parallel_tool_calls"] = parallel
    if request.max_output_tokens is not None:
        payload[max_tokens_field] = request.max_output_tokens
    response_format = _response_format(request)
    if response_format is not None:
        payload["response_format"] = response_format
    effort, summary = reasoning_asked(request)
    if reasoning_field == "reasoning" and (effort is not None or summary is not None):
        payload["reasoning"] = {"effort": effort} if effort is not None else {"enabled": True}
    elif effort is not None:
        payload[reasoning_field] = effort
    for field in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
        value = getattr(request.body, field, None)
        if value is not None:
            payload[field] = value
    return payload


# -- answers ---------------------------------------------------------------------------------


def _error_message(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or json.dumps(error))
    return str(error)


def chat_chunks(reply: UpstreamResponse) -> AsyncIterator[dict[str, Any] | PlainText]:
    """The JSON chunks of a Chat Completions SSE stream, up to `[DONE]` or the end of the body, plain
    text chunks as `PlainText`. An `event: error` frame comes through as the `{"error": ...}` it
    carries; `steps_from_chunks` notices an answer that never finished."""
    return json_events(reply, _PLAIN)


def _usage(chunk: dict[str, Any]) -> UsageReport | None:
    usage = chunk.get("usage")
    if not isinstance(usage, dict):
        usage = (chunk.get("x_groq") or {}).get("usage") if isinstance(chunk.get("x_groq"), dict) else None
    if not isinstance(usage, dict):
        return None
    details = usage.get("completion_tokens_details") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return UsageReport(
        usage.get("prompt_tokens") or 0,
        usage.get("completion_tokens") or 0,
        reasoning_tokens=details.get("reasoning_tokens") or 0,
        cached_tokens=cached,
    )


def _merge_details(kept: list[dict[str, Any]], pieces: Any) -> None:
    """Streamed `reasoning_details` pieces merged by `index`: texts joined, other fields' last value kept."""
    for piece in pieces if isinstance(pieces, list) else ():
        if not isinstance(piece, dict):
            continue
        index = piece.get("index", 0)
        into = next((d for d in kept if d.get("index", 0) == index), None)
        if into is None:
            kept.append(dict(piece))
            continue
        for key, value in piece.items():
            if key in ("text", "summary", "data") and isinstance(value, str):
                into[key] = (into.get(key) or "") + value
            elif value not in (None, ""):
                into[key] = value


def _delta_of(choice: Any) -> dict[str, Any] | None:
    """The delta of a choice whose shapes this gateway reads (a text as a string, calls as objects), else None."""
    if not isinstance(choice, dict):
        return None
    delta = choice.get("delta") or {}
    if not isinstance(delta, dict):
        return None
    content, refusal, calls = delta.get("content"), delta.get("refusal"), delta.get("tool_calls")
    if (content and not isinstance(content, str)) or (refusal and not isinstance(refusal, str)):
        return None
    if calls and not (
        isinstance(calls, list)
        and all(isinstance(call, dict) and isinstance(call.get("function") or {}, dict) for call in calls)
    ):
        return None
    return delta


# The keys of a delta that carries text and nothing else (or nothing at all): the common chunk,
# whose steps `steps_from_chunks` makes without the full reading below (the same steps).
_TEXT_ONLY = frozenset({"content", "role"})


def _plain_text(chunk: dict[str, Any]) -> str | None:
    """The text of a chunk that is more text and nothing else (no usage, no finish), else None."""
    choices = chunk.get("choices")
    if "x_groq" in chunk or chunk.get("usage") is not None or chunk.get("error") is not None:
        return None
    if type(choices) is not list or len(choices) != 1 or type(choices[0]) is not dict:
        return None
    choice = choices[0]
    delta = choice.get("delta")
    if type(delta) is not dict or not delta.keys() <= _TEXT_ONLY or choice.get("finish_reason"):
        return None
    content = delta.get("content")
    return content if type(content) is str and choice.get("index", 0) == 0 else None


_PLAIN = PlainShape(b'"content"', _plain_text)


async def steps_from_chunks(chunks: AsyncIterator[dict[str, Any] | PlainText]) -> AsyncIterator[Step]:
    """Chat Completions chunks (or `PlainText` ones) as steps (choice 0 only).

    Reasoning streams as it arrives and ends when anything else starts. Tool calls stream by
    `index`: the first delta of an index carries `id` and `function.name` (some upstreams split
    the name over a few deltas), the rest carry pieces of `function.arguments`. A call is opened
    once its name is complete: at its first arguments, or when something else starts. Calls
    arrive one after another; a delta for a call that was already closed is a protocol error of
    the upstream. The answer ends at a `finish_reason`; a stream that ends without one failed.
    """
    open_call: dict[str, Any] | None = None  # the call streaming now: index, id, name, arguments so far
    closed: set[int] = set()
    pending: dict[str, Any] | None = None  # a call whose name may still be arriving
    reasoning = False
    details: list[dict[str, Any]] = []
    refusal: list[str] = []
    finish: str | None = None
    usage: UsageReport | None = None
    skipped = 0

    def end_reasoning() -> list[Step]:
        nonlocal reasoning, details
        if not reasoning:
            return []
        reasoning = False
        # Kept even when there are none: the item is then known for ours, whose text no upstream takes back.
        kept = json.dumps({"reasoning_details": details})
        details = []
        return [ReasoningEnd(kept)]

    def end_call() -> list[Step]:
        nonlocal open_call
        if open_call is None:
            return []
        arguments = "".join(open_call["arguments"])
        try:
            json.loads(arguments)
        except ValueError:  # delivered as the model sent them: the client decides what to do
            log.warning(
                "tool call %s (%s): the upstream's arguments are not valid JSON", open_call["id"], open_call["name"]
            )
        closed.add(open_call["index"])
        open_call = None
        return [FunctionCallEnd()]

    def start(call: dict[str, Any]) -> list[Step]:
        nonlocal open_call
        if not call["name"]:
            raise ModelError(f"The upstream started tool call {call['index']} without a function name.")
        steps = end_call()
        open_call = call
        steps.append(FunctionCallStart(call["name"], call_id=call["id"]))
        if "".join(call["arguments"]):
            steps.append(ArgumentsDelta("".join(call["arguments"])))
        return steps

    def flush_pending() -> list[Step]:
        nonlocal pending
        steps = start(pending) if pending is not None else []
        pending = None
        return steps

    chunks, again = replayable(chunks)
    async for chunk in chunks:
        if type(chunk) is PlainText:  # a run of chunks of more text (see `_plain_text`): most of most answers
            if reasoning or pending or open_call:  # the first one ends what is open: read it whole
                again.extend(chunk.first())
                continue
            for text in chunk[0]:
                if text:
                    yield TextDelta(text)
            continue
        if "usage" in chunk or "x_groq" in chunk:
            usage = _usage(chunk) or usage
        if chunk.get("error") is not None:
            if finish is not None:  # the answer is whole: OpenRouter adds "Token limit reached" after `length`
                log.info("after finish_reason %s, the upstream sent: %s", finish, _error_message(chunk["error"]))
                break
            for step in end_reasoning():
                yield step
            raise ModelError(f"The upstream failed mid-stream: {_error_message(chunk['error'])}", status=502)
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            skipped += "usage" not in chunk and "x_groq" not in chunk  # a usage-only chunk is known
            continue
        if len(choices) == 1 and not (reasoning or pending or open_call):  # most chunks: one more piece of text
            choice = choices[0]
            delta = choice.get("delta") if type(choice) is dict else None
            if (
                type(delta) is dict
                and delta.keys() <= _TEXT_ONLY
                and type(content := delta.get("content") or "") is str
                and not choice.get("finish_reason")
                and choice.get("index", 0) == 0
            ):
                if content:
                    yield TextDelta(content)
                continue
        for choice in choices:
            delta = _delta_of(choice)
            if delta is None:
                skipped += 1
                continue
            if choice.get("index", 0) != 0:
                continue
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            if thought and isinstance(thought, str):
                reasoning = True
                yield ReasoningDelta(thought)
            if delta.get("reasoning_details"):
                _merge_details(details, delta["reasoning_details"])
            content = delta.get("content")
            if content:
                if reasoning or pending is not None or open_call is not None:  # most text follows text
                    for step in end_reasoning() + flush_pending() + end_call():
                        yield step
                yield TextDelta(content)
            if delta.get("refusal"):
                refusal.append(delta["refusal"])
            for call in delta.get("tool_calls") or ():
                for step in end_reasoning():
                    yield step
                index = call.get("index", 0)
                function = call.get("function") or {}
                arguments = function.get("arguments") or ""
                if index in closed:
                    raise ModelError(f"The upstream interleaved tool call {index} with another call.")
                if open_call is not None and index == open_call["index"]:
                    if arguments:
                        open_call["arguments"].append(arguments)
                        yield ArgumentsDelta(arguments)
                    continue
                if pending is not None and pending["index"] != index:
                    for step in flush_pending():
                        yield step
                if pending is None:
                    pending = {"index": index, "id": None, "name": "", "arguments": []}
                pending["id"] = pending["id"] or call.get("id")
                pending["name"] += function.get("name") or ""
                pending["arguments"].append(arguments)
                if arguments and pending["name"]:
                    for step in flush_pending():
                        yield step
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    if skipped:
        log.warning("skipped %d upstream chunks of a shape this gateway does not know", skipped)
    for step in end_reasoning() + flush_pending() + end_call():
        yield step
    if refusal:
        yield Refusal("".join(refusal))
    if usage is not None:
        yield usage
    if finish is None:
        raise ModelError(
            "The upstream's stream ended before a finish_reason: the answer may be cut short.",
            code="upstream_stream_incomplete",
            status=502,
        )
    if finish in _INCOMPLETE:
        yield Incomplete(_INCOMPLETE[finish])


# -- the provider ----------------------------------------------------------------------------


class ChatCompletionsProvider(GatewayProvider):
    """Open Responses in front of a Chat Completions upstream.

    Configuration: `base_url`, `api_key` and `model`, defaulting to `$CHAT_COMPLETIONS_BASE_URL`,
    `$CHAT_COMPLETIONS_API_KEY` and `$CHAT_COMPLETIONS_MODEL` (which, when set, replaces the model
    a request names); `models`: upstream names for the models requests name (the rest pass
    through); `max_tokens_field`: the name the upstream takes for `max_output_tokens`;
    `reasoning_field`: where `reasoning` goes, `"reasoning_effort"` or OpenRouter's `"reasoning"`
    (by default the latter for openrouter.ai only); `extra_body`: fields sent with every request
    (a vendor's own, such as Z.ai's `thinking`).
    Subclass and override `chat_request` to change any mapping.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        models: Mapping[str, str] | None = None,
        max_tokens_field: str | None = None,
        reasoning_field: str | None = None,
        extra_body: dict[str, Any] | None = None,
        timeout: float = 120.0,
        ca_file: str | None = None,
    ):
        base_url = base_url or os.environ.get("CHAT_COMPLETIONS_BASE_URL")
        if not base_url:
            raise ValueError(
                "set CHAT_COMPLETIONS_BASE_URL (or pass base_url=): the upstream API root, e.g. https://api.openai.com/v1"
            )
        super().__init__(
            base_url=base_url,
            api_key=api_key if api_key is not None else os.environ.get("CHAT_COMPLETIONS_API_KEY", ""),
            model=model or os.environ.get("CHAT_COMPLETIONS_MODEL"),
            models=models,
            extra_body=extra_body,
            timeout=timeout,
            ca_file=ca_file,
        )
        # OpenAI's newer models refuse max_tokens; most compatible servers know only max_tokens.
        openai = urlsplit(self.base_url).hostname == "api.openai.com"
        self.max_tokens_field = max_tokens_field or ("max_completion_tokens" if openai else "max_tokens")
        # OpenRouter takes its own `reasoning` object, which also turns reasoning on without an effort.
        openrouter = urlsplit(self.base_url).hostname == "openrouter.ai"
        if reasoning_field not in (None, "reasoning", "reasoning_effort"):
            raise ValueError(
                f"reasoning_field={reasoning_field!r}: choose 'reasoning_effort' or 'reasoning' (OpenRouter's)"
            )
        self.reasoning_field = reasoning_field or ("reasoning" if openrouter else "reasoning_effort")

    def chat_request(self, request: ProviderRequest) -> dict[str, Any]:
        """The body sent upstream for one turn; override to change a mapping."""
        model = self.upstream_model(request.model)
        body = to_chat_request(request, model, self.max_tokens_field, self.reasoning_field)
        return {**body, **self.extra_body}

    def upstream_request(self, request: ProviderRequest) -> dict[str, Any]:
        return self.chat_request(request)

    def endpoint(self, request: ProviderRequest, body: dict[str, Any]) -> str:
        return f"{self.base_url}/chat/completions"

    def upstream_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def stream_events(self, reply: UpstreamResponse) -> AsyncIterator[dict[str, Any]]:
        return chat_chunks(reply)

    def steps(self, request: ProviderRequest, events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[Step]:
        return steps_from_chunks(events)

    def whole_answer(self, kind: str, body: bytes) -> Iterable[dict[str, Any]]:
        """Some servers answer whole whatever `stream` says: the completion read as one chunk."""
        return [_chunk_of_completion(_whole_completion(kind, body))]


def _chunk_of_completion(completion: dict[str, Any]) -> dict[str, Any]:
    """A whole `chat.completion` as the one chunk that streams it: each choice's message as its delta."""
    choices = []
    for choice in completion.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        calls = [
            {**call, "index": call.get("index", i)}
            for i, call in enumerate(message.get("tool_calls") or ())
            if isinstance(call, dict)
        ]
        delta = {**message, "tool_calls": calls} if calls else {k: v for k, v in message.items() if k != "tool_calls"}
        choices.append({"index": choice.get("index", 0), "delta": delta, "finish_reason": choice.get("finish_reason")})
    return {key: value for key, value in completion.items() if key != "choices"} | {"choices": choices}


def _whole_completion(kind: str, body: bytes) -> dict[str, Any]:
    """A 200 that is not an event stream: a whole `chat.completion`, or the upstream's error, or a 502."""
    try:
        answer = json.loads(body) if kind == "application/json" else None
    except ValueError:
        answer = None
    if isinstance(answer, dict) and isinstance(answer.get("choices"), list):
        return answer
    raise _not_a_stream(kind, body, answer)


def _not_a_stream(kind: str, body: bytes, answer: Any = None) -> Exception:
    """A 200 whose body is neither an event stream nor a completion: a JSON error keeps its meaning,
    anything else is a 502."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if error is not None:
        return ModelError(f"The upstream failed: {_error_message(error)}", status=502)
    return ModelError(
        f"The upstream answered 200 with {kind or 'no content type'}, not an event stream: "
        f"{body.decode(errors='replace')[:100]!r}",
        code="upstream_bad_response",
        status=502,
    )
