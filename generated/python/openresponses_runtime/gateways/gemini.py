"""A gateway from Open Responses to Google's Gemini API (`generateContent`, streamed).

Each turn becomes one `POST {base_url}/models/{model}:streamGenerateContent?alt=sse` with
`x-goog-api-key` (`base_url` with its version: `https://generativelanguage.googleapis.com/v1beta`).
Requests translate so:

| Open Responses | Gemini |
|---|---|
| `instructions`, system and developer messages | `systemInstruction` text parts, in order |
| user messages: text, images by data URL, images by URL | `user` content: `text`, `inlineData` (`mimeType`, `data` as sent), `fileData` (`fileUri`) |
| assistant messages | `model` content: `text` parts |
| function calls | `functionCall` parts: `name`, `args` parsed from `arguments`, `id` when the upstream gave one |
| `function_call_output` | a `functionResponse` part in a `user` content: the `name` and `id` of its call; `response` the output when it is a JSON object, else `{"output": <the output>}` |
| consecutive items of one role | one content: a turn's text, calls and signatures; the responses to parallel calls |
| a reasoning item this gateway made | its `thoughtSignature`, byte for byte, on the part it came with (a thought part with the item's text, a function call, the text before it, or an empty text part) |
| a reasoning item this gateway made without a signature | left out: Gemini takes back only signatures, not thought summaries |
| someone else's reasoning item | left out, and named `item:reasoning` in `OpenResponses-Ignored` when it held text |
| `gemini:part` items | the part they keep, in place |
| `gemini:grounding` items | left out: the grounded text goes back as text |
| function tools under `tool_choice` | `tools[].functionDeclarations` (`parameters` as `parametersJsonSchema`), `toolConfig.functionCallingConfig.mode` `AUTO` (not sent: the default), `ANY` (`required`; one function: `allowedFunctionNames`), `NONE` |
| `max_output_tokens`, `temperature`, `top_p` | `generationConfig.maxOutputTokens`, `temperature`, `topP` |
| `text.format` json_schema | `generationConfig.responseMimeType` `application/json` and `responseJsonSchema` |
| `reasoning.effort`, `reasoning.summary` | `generationConfig.thinkingConfig`: see below |
| `input_file` content, images by `file_id` | refused: 400 |

`parallel_tool_calls: false` has no Gemini counterpart: the gateway passes on the first function
call of the answer and drops the others (logged).

`reasoning` sets `generationConfig.thinkingConfig`, as the model takes it (`thinking_kind`): Gemini
2.5 models a token budget (`thinkingBudget`), Gemini 3 and later (and the `-latest` aliases) a level
(`thinkingLevel`); Gemini 2.0, 1.x and Gemma do not think. By effort (`DEFAULT_THINKING_BUDGETS`,
`DEFAULT_THINKING_LEVELS`; a deployment overrides rows with the provider's `thinking_budgets` and
`thinking_levels`, or `orspec serve --thinking-budget low=2048` and `--thinking-level medium=high`):

| `reasoning.effort` | Gemini 2.5: `thinkingBudget` | Gemini 3: `thinkingLevel` |
|---|---|---|
| absent (no `reasoning`) | not sent: the model's default (dynamic thinking) | not sent: the model's default (`high`) |
| `none` | 0: thinking off (2.5 Pro, which cannot stop thinking: 128, its least) | `minimal` (Gemini 3 cannot stop thinking; 3 Pro takes only `low` and `high`) |
| `low` | 1024 | `low` |
| `medium` | 8192 | `medium` |
| `high` | 16384 | `high` |
| `xhigh` | 24576 (the most 2.5 Flash takes) | `high` |

`reasoning.summary` (any value, with an effort other than `none`) sends `includeThoughts: true`:
the model's thought summaries come back as reasoning text. A model that does not think gets no
`thinkingConfig`, and `reasoning` is named in the `OpenResponses-Ignored` header.
`safetySettings`, Google's own tools (`googleSearch`, `codeExecution`) and the rest of Gemini's own
fields are set with `extra_body` (merged into the body, and into `generationConfig` field by field:
an `extra_body` `thinkingConfig` replaces the gateway's) or in `gemini_request`.

The stream translates back, part by part (candidate 0 only): `text` as text; a `thought: true` part
as reasoning streamed as it arrives; `functionCall` as a function call (its `id`, or one the gateway
makes, `call_gemini_...`, which goes back as no id); a `thoughtSignature` as a reasoning item that
keeps it in `encrypted_content` (the thoughts before it, or an empty item before its function call
or after its text); any other part (`executableCode`, `codeExecutionResult`, `inlineData`) as a
`gemini:part` item holding the part as it arrived; `groundingMetadata` as a `gemini:grounding` item
after the text. Usage: `input_tokens` is `promptTokenCount` plus `toolUsePromptTokenCount`,
`output_tokens` `candidatesTokenCount` plus `thoughtsTokenCount` (the latter also as
`reasoning_tokens`), `cached_tokens` `cachedContentTokenCount`. Stop reasons:

| `finishReason`, `promptFeedback` | response |
|---|---|
| `STOP`, `OTHER`, anything else | `completed` |
| `MAX_TOKENS` | `incomplete`, reason `max_output_tokens` |
| `SAFETY`, `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`, `IMAGE_SAFETY`, and a prompt blocked (`promptFeedback.blockReason`, no candidates) | `incomplete`, reason `content_filter` |
| `MALFORMED_FUNCTION_CALL`, `UNEXPECTED_TOOL_CALL`, `TOO_MANY_TOOL_CALLS` | `failed` (`upstream_malformed_function_call`) |
| none: an `error` came, or the stream ended | `failed` (`error` event, then `response.failed`) |

Upstream failures before the answer begins map as `gateways.base` maps them for every gateway, and
Gemini's own: a 404 (the model named in the path does not exist) is a 404 `model_not_found`, and a
400 whose reason is `API_KEY_INVALID` is a refused key, 500 `upstream_unauthorized`. The SSE
endpoint answers its errors as plain JSON under `text/event-stream`: read the same way. A 200 with
a whole `GenerateContentResponse` or a JSON array of them (a proxy that does not stream, or the
endpoint without `alt=sse`) is translated the same way; a 200 with anything else is a 502.
"""

from __future__ import annotations

import json
import logging
import mimetypes
import os
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from ..server import (
    ArgumentsDelta,
    FunctionCallEnd,
    FunctionCallStart,
    Incomplete,
    InvalidRequest,
    ModelError,
    OpenResponsesError,
    ProviderRequest,
    ReasoningDelta,
    ReasoningEnd,
    Step,
    TextDelta,
    UsageReport,
    VendorItem,
)
from .base import (
    MODEL_NOT_FOUND,
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
    loads,
    new_id,
    reasoning_asked,
    replayable,
)

__all__ = [
    "DEFAULT_THINKING_BUDGETS",
    "DEFAULT_THINKING_LEVELS",
    "GeminiProvider",
    "steps_from_responses",
    "thinking_kind",
    "to_gemini_contents",
    "to_gemini_request",
]

log = logging.getLogger("openresponses_runtime.gateways")

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
_PART_ITEM = "gemini:part"
_GROUNDING_ITEM = "gemini:grounding"
_MINTED_CALL = "call_gemini"  # ids the gateway made for calls the upstream gave none: they go back as none
_INCOMPLETE = {
    "MAX_TOKENS": "max_output_tokens",
    **dict.fromkeys(
        ("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT"),
        "content_filter",
    ),
}
_MALFORMED = ("MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS")

# reasoning.effort -> thinkingConfig, by the module docstring's table
DEFAULT_THINKING_BUDGETS = {"none": 0, "low": 1024, "medium": 8192, "high": 16384, "xhigh": 24576}
DEFAULT_THINKING_LEVELS = {"none": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
_LEAST_PRO_BUDGET = 128  # Gemini 2.5 Pro refuses a budget of 0: it always thinks
_NOT_THINKING = re.compile(r"gemini-(?:1\.|2\.0|pro$|pro-vision)|gemma")


# -- requests --------------------------------------------------------------------------------


def _image(part: dict[str, Any]) -> dict[str, Any]:
    url = part.get("image_url")
    if not url:
        raise InvalidRequest(
            "The Gemini gateway takes images by image_url (a URL or a data URL), not by file_id.", param="input"
        )
    if url.startswith("data:"):
        media_type, data = data_url(url)
        return {"inlineData": {"mimeType": media_type, "data": data}}
    kind = mimetypes.guess_type(url)[0]
    return {"fileData": {"fileUri": url, **({"mimeType": kind} if kind else {})}}


def _user_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}]
    parts: list[dict[str, Any]] = []
    for part in content or ():
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text"):
            parts.append({"text": part.get("text", "")})
        elif kind == "input_image":
            parts.append(_image(part))
        else:
            raise InvalidRequest(
                f"The Gemini gateway cannot send {kind!r} content upstream: send text and images only.", param="input"
            )
    return parts


def _kept(item: dict[str, Any]) -> dict[str, Any] | None:
    """The signature this gateway kept in a reasoning item's `encrypted_content`, if it is one of ours."""
    try:
        kept = loads(item.get("encrypted_content") or "")
    except ValueError:
        return None
    gemini = kept.get("gemini") if isinstance(kept, dict) else None
    return gemini if isinstance(gemini, dict) and isinstance(gemini.get("thoughtSignature"), str) else None


_UNSIGNED_THOUGHT = json.dumps({"gemini": {"part": "thought"}})  # thoughts that came with no signature


def _dropped(item: dict[str, Any]) -> bool:
    """A reasoning item with text that is not this gateway's: its text goes nowhere upstream."""
    if item.get("type") != "reasoning" or not (item.get("content") or item.get("summary")):
        return False
    try:
        kept = loads(item.get("encrypted_content") or "")
    except ValueError:
        return True
    return not (isinstance(kept, dict) and isinstance(kept.get("gemini"), dict))


def _call_part(item: dict[str, Any]) -> dict[str, Any]:
    try:
        arguments = loads(item.get("arguments") or "{}")
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        raise InvalidRequest(
            f"Function call {item.get('call_id')!r} has arguments that are not a JSON object; Gemini takes "
            "function call arguments as an object.",
            param="input",
        )
    call: dict[str, Any] = {"name": item.get("name"), "args": arguments}
    call_id = item.get("call_id")
    if isinstance(call_id, str) and not call_id.startswith(_MINTED_CALL + "_"):
        call["id"] = call_id
    return {"functionCall": call}


def _response_part(item: dict[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    call_id = item.get("call_id")
    if call_id not in names:
        raise InvalidRequest(
            f"function_call_output {call_id!r} answers no function call in the conversation; Gemini needs "
            "the function's name.",
            param="input",
        )
    output = item.get("output")
    text = output if isinstance(output, str) else content_text(output)
    try:
        value = loads(text)
    except ValueError:
        value = None
    response: dict[str, Any] = {
        "name": names[call_id],
        "response": value if isinstance(value, dict) else {"output": text},
    }
    if not call_id.startswith(_MINTED_CALL + "_"):
        response["id"] = call_id
    return {"functionResponse": response}


def to_gemini_contents(
    items: list[dict[str, Any]], instructions: str | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The Open Responses context as Gemini's `systemInstruction` parts and `contents`.

    Consecutive items of one role join one content. A signature kept in a reasoning item goes back
    on the part it came with: a thought, the next function call, the text before it, or an empty
    text part."""
    items = expand_compactions(items)
    system = [{"text": instructions}] if instructions else []
    contents: list[dict[str, Any]] = []
    names = {item.get("call_id"): item.get("name") for item in items if item.get("type") == "function_call"}
    waiting: str | None = None  # a signature for the next function call of this model turn

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        nonlocal waiting
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"] += parts
        else:
            if waiting is not None:  # the turn ended before its call: the signature goes back on its own
                contents[-1]["parts"].append({"text": "", "thoughtSignature": waiting})
                waiting = None
            contents.append({"role": role, "parts": parts})

    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role in ("system", "developer"):
                system.append({"text": content_text(item.get("content"))})
            elif role == "assistant":
                text = content_text(item.get("content"))
                if text:
                    add("model", [{"text": text}])
            else:
                add("user", _user_parts(item.get("content")))
        elif kind == "function_call":
            part = _call_part(item)
            if waiting is not None:
                part["thoughtSignature"], waiting = waiting, None
            add("model", [part])
        elif kind == "function_call_output":
            add("user", [_response_part(item, names)])
        elif kind == "reasoning":
            kept = _kept(item)
            if kept is None:
                continue  # thought summaries, or someone else's reasoning: Gemini takes back only signatures
            signature, on = kept["thoughtSignature"], kept.get("part")
            turn = contents[-1]["parts"] if contents and contents[-1]["role"] == "model" else []
            if on == "functionCall":
                add("model", [{"text": "", "thoughtSignature": waiting}] if waiting is not None else [])
                waiting = signature
            elif on == "text" and turn and "text" in turn[-1] and "thoughtSignature" not in turn[-1]:
                turn[-1]["thoughtSignature"] = signature  # the text it came with
            elif on == "thought":  # the thought part it came with, with the thoughts the item still has
                text = "".join(
                    p.get("text", "") for p in item.get("content") or () if p.get("type") == "reasoning_text"
                )
                add("model", [{"text": text, "thought": True, "thoughtSignature": signature}])
            else:  # it came on an empty text part
                add("model", [{"text": "", "thoughtSignature": signature}])
        elif kind == _PART_ITEM:
            add("model", [dict(item.get("part") or {})])
        elif kind == _GROUNDING_ITEM:
            continue  # the grounded text goes back as text
        else:
            raise InvalidRequest(
                f"The Gemini gateway cannot send a {kind!r} item upstream; leave it out of the input.", param="input"
            )
    if waiting is not None:
        contents[-1]["parts"].append({"text": "", "thoughtSignature": waiting})
    return system, contents


def _response_format(request: ProviderRequest) -> dict[str, Any]:
    fmt = getattr(getattr(request.body, "text", None), "format", None)
    if fmt is None:
        return {}
    fmt = fmt.model_dump(mode="json", by_alias=True, exclude_none=True)
    if fmt.get("type") == "json_schema":
        return {"responseMimeType": "application/json", "responseJsonSchema": fmt.get("schema") or {}}
    return {}  # plain text, the upstream's default


def thinking_kind(model: str) -> str | None:
    """How `model` is told how much to think: `"budget"` (`thinkingBudget`, Gemini 2.5), `"level"`
    (`thinkingLevel`, Gemini 3 and later, and any name this gateway does not know), or None (it does not think)."""
    name = model.lower().removeprefix("models/")
    if _NOT_THINKING.search(name):
        return None
    return "budget" if "gemini-2.5" in name else "level"


def _thinking_config(
    request: ProviderRequest, model: str, budgets: Mapping[str, int], levels: Mapping[str, str]
) -> dict[str, Any]:
    """The `thinkingConfig` that the request's `reasoning` asks for, by the module docstring's table."""
    effort, summary = reasoning_asked(request)
    if effort is None and summary is None:
        return {}
    kind = thinking_kind(model)
    if kind is None or (effort is not None and effort not in budgets):
        ignore(request, "reasoning")
        return {}
    config: dict[str, Any] = {}
    if effort is not None and kind == "budget":
        budget = budgets[effort]
        config["thinkingBudget"] = _LEAST_PRO_BUDGET if budget == 0 and "2.5-pro" in model.lower() else budget
    elif effort is not None:
        config["thinkingLevel"] = levels[effort]
    if summary is not None and effort != "none":
        config["includeThoughts"] = True
    return config


def to_gemini_request(
    request: ProviderRequest,
    model: str,
    budgets: Mapping[str, int] = DEFAULT_THINKING_BUDGETS,
    levels: Mapping[str, str] = DEFAULT_THINKING_LEVELS,
) -> dict[str, Any]:
    """The body of one turn's `streamGenerateContent` (the model goes in the URL; its name says how
    `reasoning` is sent, by `budgets` or `levels`: the module docstring's table). What the model
    cannot take is left out and named in `request.ignored`."""
    system, contents = to_gemini_contents(request.input, request.instructions)
    if any(_dropped(item) for item in expand_compactions(request.input)):
        ignore(request, "reasoning", kind="item")  # thought text Gemini cannot take back: said so
    payload: dict[str, Any] = {"contents": contents}
    if system:
        payload["systemInstruction"] = {"parts": system}
    functions = request.function_tools
    if request.tool_choice != "none":
        functions = {name: tool for name, tool in functions.items() if name in request.allowed_tools}
    if functions:
        declarations = [
            {
                "name": tool["name"],
                **({"description": tool["description"]} if tool.get("description") is not None else {}),
                **({"parametersJsonSchema": tool["parameters"]} if tool.get("parameters") else {}),
            }
            for tool in functions.values()
        ]
        payload["tools"] = [{"functionDeclarations": declarations}]
        if request.tool_choice == "none":
            payload["toolConfig"] = {"functionCallingConfig": {"mode": "NONE"}}
        elif request.tool_choice == "required":
            config: dict[str, Any] = {"mode": "ANY"}
            if len(functions) == 1:
                config["allowedFunctionNames"] = list(functions)
            payload["toolConfig"] = {"functionCallingConfig": config}
    generation: dict[str, Any] = {}
    if request.max_output_tokens is not None:
        generation["maxOutputTokens"] = request.max_output_tokens
    for field, name in (("temperature", "temperature"), ("top_p", "topP")):
        value = getattr(request.body, field, None)
        if value is not None:
            generation[name] = value
    generation.update(_response_format(request))
    thinking = _thinking_config(request, model, budgets, levels)
    if thinking:
        generation["thinkingConfig"] = thinking
    if generation:
        payload["generationConfig"] = generation
    return payload


# -- answers ---------------------------------------------------------------------------------


def _usage(usage: dict[str, Any]) -> UsageReport:
    thoughts = usage.get("thoughtsTokenCount") or 0
    return UsageReport(
        (usage.get("promptTokenCount") or 0) + (usage.get("toolUsePromptTokenCount") or 0),
        (usage.get("candidatesTokenCount") or 0) + thoughts,
        reasoning_tokens=thoughts,
        cached_tokens=usage.get("cachedContentTokenCount") or 0,
    )


def _error_message(body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("status") or json.dumps(error))
    return json.dumps(body)


def _kept_signature(signature: str, on: str) -> ReasoningEnd:
    return ReasoningEnd(json.dumps({"gemini": {"thoughtSignature": signature, "part": on}}))


# What a chunk may hold besides its candidate and still be text and nothing more.
_PLAIN_KEYS = frozenset({"candidates", "usageMetadata", "modelVersion", "responseId", "createTime"})


def _plain_text(event: dict[str, Any]) -> str | None:
    """The text of a chunk of one text part of candidate 0 and nothing more (usage aside), else None."""
    candidates = event.get("candidates")
    if not event.keys() <= _PLAIN_KEYS or type(candidates) is not list or len(candidates) != 1:
        return None
    usage, candidate = event.get("usageMetadata"), candidates[0]
    if (usage is not None and type(usage) is not dict) or type(candidate) is not dict:
        return None
    content = candidate.get("content")
    if not candidate.keys() <= {"content", "index"} or candidate.get("index", 0) != 0 or type(content) is not dict:
        return None
    parts = content.get("parts")
    if type(parts) is not list or len(parts) != 1 or type(parts[0]) is not dict or parts[0].keys() != {"text"}:
        return None
    text = parts[0]["text"]
    return text if type(text) is str else None


_PLAIN = PlainShape(b'"text"', _plain_text)


async def steps_from_responses(
    events: AsyncIterator[dict[str, Any] | PlainText], *, parallel: bool = True
) -> AsyncIterator[Step]:
    """`GenerateContentResponse` chunks as steps, part by part (see the module docstring).

    Usage is cumulative (the last chunk's wins); the answer ends at a `finishReason`, or at a
    blocked prompt; a stream that ends before either, or an `error`, fails the response. Without
    `parallel` (the request's `parallel_tool_calls: false`, which Gemini has no switch for) only
    the first function call passes; the others are dropped and logged."""
    thinking = False  # thought text streaming now, as a reasoning item
    signature: str | None = None  # one that came on a thought: it ends that reasoning item
    finish: str | None = None
    blocked: str | None = None
    usage: dict[str, Any] | None = None
    grounding: dict[str, Any] | None = None
    calls = dropped = skipped = 0

    def end_thinking() -> list[Step]:
        nonlocal thinking, signature
        if not thinking:
            return []
        thinking, kept, signature = False, signature, None
        # Marked even without a signature: the item is then known for ours, whose text Gemini never takes back.
        return [_kept_signature(kept, "thought") if kept else ReasoningEnd(_UNSIGNED_THOUGHT)]

    events, again = replayable(events)
    async for event in events:
        if type(event) is PlainText:  # a run of text chunks (see `_plain_text`)
            if thinking:  # the first ends the thought: read it whole
                again.extend(event.first())
                continue
            if type(kept := event.template.like.get("usageMetadata")) is dict:  # each the same as this
                usage = kept
            for text in event[0]:
                if text:
                    yield TextDelta(text)
            continue
        if event.get("error") is not None:
            for step in end_thinking():
                yield step
            raise ModelError(f"The upstream failed mid-stream: {_error_message(event)}", status=502)
        if isinstance(event.get("usageMetadata"), dict):
            usage = event["usageMetadata"]
        feedback = event.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            blocked = str(feedback["blockReason"])
        candidates = event.get("candidates")
        if not isinstance(candidates, list):
            skipped += "usageMetadata" not in event and "promptFeedback" not in event
            continue
        first = candidates[0] if candidates else None  # nearly always candidate 0, alone
        candidate = (
            first
            if isinstance(first, dict) and first.get("index", 0) == 0
            else next((c for c in candidates if isinstance(c, dict) and c.get("index", 0) == 0), None)
        )
        if candidate is None:
            continue
        content = candidate.get("content")
        for part in content.get("parts") or () if isinstance(content, dict) else ():
            if not isinstance(part, dict):
                skipped += 1
                continue
            if len(part) == 1 and isinstance(part.get("text"), str):  # first: nearly every part is plain text
                if thinking:
                    for step in end_thinking():
                        yield step
                if part["text"]:
                    yield TextDelta(part["text"])
                continue
            kept = part.get("thoughtSignature")
            if part.get("thought"):
                if kept and signature is not None:  # each signature keeps its own thought
                    for step in end_thinking():
                        yield step
                thinking = True
                if part.get("text"):
                    yield ReasoningDelta(str(part["text"]))
                signature = kept or signature
            elif isinstance(part.get("functionCall"), dict):
                for step in end_thinking():
                    yield step
                call = part["functionCall"]
                if calls and not parallel:
                    dropped += 1
                    continue
                calls += 1
                if kept:
                    yield _kept_signature(kept, "functionCall")
                yield FunctionCallStart(str(call.get("name") or ""), call_id=call.get("id") or new_id(_MINTED_CALL))
                yield ArgumentsDelta(json.dumps(call.get("args") or {}))
                yield FunctionCallEnd()
            elif isinstance(part.get("text"), str):
                for step in end_thinking():
                    yield step
                if part["text"]:
                    yield TextDelta(part["text"])
                if kept:
                    yield _kept_signature(kept, "text" if part["text"] else "empty")
            else:
                for step in end_thinking():
                    yield step
                yield VendorItem({"type": _PART_ITEM, "part": part})
        if isinstance(candidate.get("groundingMetadata"), dict):
            grounding = candidate["groundingMetadata"]
        if candidate.get("finishReason"):
            finish = str(candidate["finishReason"])
    if skipped:
        log.warning("skipped %d upstream chunks or parts of a shape this gateway does not know", skipped)
    if dropped:
        log.info("parallel_tool_calls is false: dropped %d function calls after the first", dropped)
    for step in end_thinking():
        yield step
    if grounding is not None:
        yield VendorItem({"type": _GROUNDING_ITEM, "grounding_metadata": grounding})
    if usage is not None:
        yield _usage(usage)
    if finish in _MALFORMED:
        raise ModelError(
            f"The model's function call could not be used ({finish}).",
            code="upstream_malformed_function_call",
            status=502,
        )
    if finish is None and blocked is not None:
        log.info("the upstream blocked the prompt: %s", blocked)
        yield Incomplete("content_filter")
        return
    if finish is None:
        raise ModelError(
            "The upstream's stream ended before a finishReason: the answer may be cut short.",
            code="upstream_stream_incomplete",
            status=502,
        )
    if finish in _INCOMPLETE:
        yield Incomplete(_INCOMPLETE[finish])


# -- the provider ----------------------------------------------------------------------------


def _merged(body: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """`extra` over `body`; an object in both (`generationConfig`) merged field by field."""
    out = dict(body)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


class GeminiProvider(GatewayProvider):
    """Open Responses in front of Google's Gemini API.

    Configuration: `base_url`, `api_key` and `model`, defaulting to `$GEMINI_BASE_URL` (else
    https://generativelanguage.googleapis.com/v1beta), `$GEMINI_API_KEY` and `$GEMINI_MODEL`
    (which, when set, replaces the model a request names); `models`: upstream names for the models
    requests name (the rest pass through); `extra_body`: fields sent with every request (such as
    `safetySettings`); `thinking_budgets` and `thinking_levels`: rows over `DEFAULT_THINKING_BUDGETS`
    (effort -> `thinkingBudget`: tokens, or -1 for the model to decide) and `DEFAULT_THINKING_LEVELS`
    (effort -> `thinkingLevel`), which turn `reasoning` into `thinkingConfig` (the module docstring's
    table; a bad row is a `ValueError`). Subclass and override `gemini_request` to change any mapping.
    """

    error_rules = {404: MODEL_NOT_FOUND}  # the path names the model: an API's own 404 is an unknown model

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        models: Mapping[str, str] | None = None,
        extra_body: dict[str, Any] | None = None,
        timeout: float = 600.0,
        ca_file: str | None = None,
        thinking_budgets: Mapping[str, int] | None = None,
        thinking_levels: Mapping[str, str] | None = None,
    ):
        api_key = api_key if api_key is not None else os.environ.get("GEMINI_API_KEY", "")
        if not api_key:
            raise ValueError("set GEMINI_API_KEY (or pass api_key=): the key the gateway sends upstream")
        super().__init__(
            base_url=base_url or os.environ.get("GEMINI_BASE_URL") or DEFAULT_BASE_URL,
            api_key=api_key,
            model=model or os.environ.get("GEMINI_MODEL"),
            models=models,
            extra_body=extra_body,
            timeout=timeout,
            ca_file=ca_file,
        )
        self.thinking_budgets = effort_table(
            DEFAULT_THINKING_BUDGETS,
            thinking_budgets,
            name="thinking budget",
            valid=lambda value: type(value) is int and value >= -1,
            expected="a whole number of tokens, 0 or more, or -1 (the model decides)",
        )
        self.thinking_levels = effort_table(
            DEFAULT_THINKING_LEVELS,
            thinking_levels,
            name="thinking level",
            valid=lambda value: isinstance(value, str) and bool(value),
            expected="a thinking level Gemini takes, such as minimal, low, medium or high",
        )

    def gemini_request(self, request: ProviderRequest) -> dict[str, Any]:
        """The body sent upstream for one turn; override to change a mapping."""
        model = self.upstream_model(request.model)
        body = to_gemini_request(request, model, self.thinking_budgets, self.thinking_levels)
        return _merged(body, self.extra_body)

    def upstream_request(self, request: ProviderRequest) -> dict[str, Any]:
        return self.gemini_request(request)

    def endpoint(self, request: ProviderRequest, body: dict[str, Any]) -> str:
        model = self.upstream_model(request.model).removeprefix("models/")
        return f"{self.base_url}/models/{model}:streamGenerateContent?alt=sse"

    def upstream_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self.api_key}

    def count_request(self, request: ProviderRequest) -> tuple[str, dict[str, Any]]:
        """`countTokens` of the whole `generateContent` request a turn would send (instructions and tools included)."""
        model = self.upstream_model(request.model).removeprefix("models/")
        body = {"model": f"models/{model}", **self.gemini_request(request)}
        return f"{self.base_url}/models/{model}:countTokens", {"generateContentRequest": body}

    def tokens_counted(self, answer: dict[str, Any]) -> Any:
        return answer.get("totalTokens")

    def stream_events(self, reply: UpstreamResponse) -> AsyncIterator[dict[str, Any] | PlainText]:
        return json_events(reply, _PLAIN)

    def steps(self, request: ProviderRequest, events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[Step]:
        return steps_from_responses(events, parallel=getattr(request.body, "parallel_tool_calls", None) is not False)

    def whole_answer(self, kind: str, body: bytes) -> Iterable[dict[str, Any]]:
        """A whole `GenerateContentResponse`, or a JSON array of them (`streamGenerateContent` without `alt=sse`)."""
        try:
            answer = loads(body) if kind == "application/json" else None
        except ValueError:
            answer = None
        if isinstance(answer, dict) and answer.get("error") is not None:
            raise ModelError(f"The upstream failed: {_error_message(answer)}", status=502)
        if isinstance(answer, dict):
            return [answer]
        if isinstance(answer, list) and all(isinstance(chunk, dict) for chunk in answer):
            return answer
        raise self.not_a_stream(kind, body)

    def error_message(self, body: Any) -> str:
        return _error_message(body)

    def upstream_error(self, status: int, body: bytes, retry_after: str | None = None) -> OpenResponsesError:
        try:
            error = loads(body).get("error") or {}
            reasons = {detail.get("reason") for detail in error.get("details") or () if isinstance(detail, dict)}
        except (ValueError, AttributeError):
            reasons = set()
        if "API_KEY_INVALID" in reasons:  # Google says 400; it is the gateway's key that is wrong
            status = 401
        return super().upstream_error(status, body, retry_after)
