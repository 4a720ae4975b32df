"""Every Anthropic Messages recording of `../shared/recordings/upstream/anthropic/` replayed, byte for
byte, as the upstream of the Anthropic Messages gateway.

For each recording the test builds the Open Responses request a client would send for the recorded
conversation, checks that the gateway asks the upstream for the same thing (messages, tools and
settings, compared as data), and that its stream carries everything the recording holds: it passes
the stream checker, and the text, thinking, tool calls, kept blocks, usage and stop reason come
through. Thinking signatures then go back upstream byte for byte in the next turn.
"""

from __future__ import annotations

import json

import httpx
import pytest
from openresponses_runtime.events import iter_sse
from openresponses_runtime.gateways.anthropic_messages import DEFAULT_THINKING_BUDGETS, AnthropicMessagesProvider
from openresponses_runtime.server.auth import owner_of
from openresponses_runtime.server.sealing import Sealer
from openresponses_runtime.streaming import check_sse

from ..conftest import SHARED
from ..server_helpers import API_KEY
from ..upstream_replay import REASONING_KEY, UPSTREAM_KEY, next_turn, output_text, upstream
from ..upstream_replay import gateway as upstream_gateway

RECORDINGS = SHARED / "recordings" / "upstream" / "anthropic"
NAMES = sorted(p.name.removesuffix(".request.json") for p in RECORDINGS.glob("*.request.json")) or ["(none)"]
HEADERS = {"Authorization": f"Bearer {API_KEY}"}

# Fields every request has, or that the test carries over as Open Responses settings (`thinking` as
# `reasoning`); the rest (stop_sequences, context_management, top-level cache_control) are the
# upstream's own, which a project sets with `extra_body`. So is error-400-json's `output_config`
# without thinking: `effort: xhigh` alone, which the gateway never sends (its `xhigh` is adaptive
# thinking at `max`, a level the model takes).
CARRIED = {
    "model", "messages", "system", "stream", "tools", "tool_choice", "max_tokens", "temperature", "top_p",
    "thinking",
}  # fmt: skip
MINIMUM_MAX_OUTPUT_TOKENS = 16  # the spec's minimum for max_output_tokens


@pytest.fixture(scope="module")
def replay():
    with upstream() as (url, replay):
        yield url.removesuffix("/v1"), replay


def gateway(url: str, **options):
    return upstream_gateway(url, AnthropicMessagesProvider, **options)


def load(name: str) -> tuple[dict, bytes, str]:
    """The recorded request, the recorded answer and its content type."""
    request = json.loads((RECORDINGS / f"{name}.request.json").read_text())
    sse = RECORDINGS / f"{name}.response.sse"
    if sse.exists():
        return request, sse.read_bytes(), "text/event-stream"
    return request, (RECORDINGS / f"{name}.response.json").read_bytes(), "application/json"


def answer(replay, body: bytes, content_type: str) -> None:
    status = 400 if content_type == "application/json" and json.loads(body).get("type") == "error" else 200
    replay.answer(body, status=status, content_type=content_type)


# -- the recorded request as an Open Responses request ------------------------------------


def _blocks(content) -> list[dict]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _sealed_reasoning(block: dict, index: int) -> dict:
    """A reasoning item as the gateway's server hands it to a client that asks for `reasoning.encrypted_content`."""
    item_id = f"rs_recorded_{index}"
    if block["type"] == "thinking":
        content = [{"type": "reasoning_text", "text": block["thinking"]}]
        state = {"anthropic": {"type": "thinking", "signature": block["signature"]}}
    else:
        content, state = [], {"anthropic": {"type": "redacted_thinking", "data": block["data"]}}
    sealer = Sealer(REASONING_KEY)  # sealed for the key the test's server gives the client
    blob = sealer.seal_reasoning(item_id, {"content": content}, json.dumps(state), tenant=owner_of(API_KEY))
    return {"type": "reasoning", "id": item_id, "summary": [], "encrypted_content": blob}


def _items(message: dict, index: int) -> list[dict]:
    role, items = message["role"], []
    for block in _blocks(message["content"]):
        kind = block["type"]
        if kind == "text" and role == "assistant":
            items.append(
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": block["text"]}]}
            )
        elif kind == "text":
            items.append({"type": "message", "role": role, "content": [{"type": "input_text", "text": block["text"]}]})
        elif kind == "tool_use":
            arguments = json.dumps(block["input"])
            items.append(
                {"type": "function_call", "call_id": block["id"], "name": block["name"], "arguments": arguments}
            )
        elif kind == "tool_result":
            items.append({"type": "function_call_output", "call_id": block["tool_use_id"], "output": block["content"]})
        elif kind in ("thinking", "redacted_thinking"):
            items.append(_sealed_reasoning(block, index))
        else:
            raise AssertionError(f"no recording sends a {kind} block: teach the test")
    if role == "user" and isinstance(message["content"], str):
        return [{"type": "message", "role": "user", "content": message["content"]}]
    return items


def responses_body(recorded: dict) -> dict:
    """The Open Responses request for the recorded Messages request."""
    items = [item for i, message in enumerate(recorded["messages"]) for item in _items(message, i)]
    body: dict = {"model": recorded["model"], "stream": True, "input": items}
    system = _blocks(recorded.get("system") or [])
    if system:
        body["instructions"] = system[0]["text"]
        body["input"] = [{"type": "message", "role": "system", "content": b["text"]} for b in system[1:]] + items
    tools = []
    for tool in recorded.get("tools") or ():
        if tool.get("type") in (None, "custom"):
            function = {"type": "function", "name": tool["name"], "parameters": tool["input_schema"]}
            if "description" in tool:
                function["description"] = tool["description"]
            tools.append(function)
        else:
            tools.append({"type": "anthropic:server_tool", "definition": tool})
    if tools:
        body["tools"] = tools
    choice = recorded.get("tool_choice")
    if choice is not None:
        body["tool_choice"] = {"auto": "auto", "any": "required", "none": "none"}.get(choice["type"]) or {
            "type": "function",
            "name": choice["name"],
        }
        if choice.get("disable_parallel_tool_use"):
            body["parallel_tool_calls"] = False
    body["max_output_tokens"] = max(recorded["max_tokens"], MINIMUM_MAX_OUTPUT_TOKENS)
    for field in ("temperature", "top_p"):
        if field in recorded:
            body[field] = recorded[field]
    reasoning = _reasoning(recorded.get("thinking"))
    if reasoning:
        body["reasoning"] = reasoning
    return body


def _budget_effort(budget: int) -> str:
    """The effort whose default budget is `budget`, else `medium` (which `provider_options` sets to it)."""
    return next((effort for effort, tokens in DEFAULT_THINKING_BUDGETS.items() if tokens == budget), "medium")


def _reasoning(thinking: dict | None) -> dict:
    """The Open Responses `reasoning` that asks for the recorded `thinking` (the gateway's table):
    a budget by its effort, `adaptive` with no `output_config` by `high` (Anthropic's default
    effort), `display: summarized` by a summary."""
    if not thinking:
        return {}
    effort = _budget_effort(thinking["budget_tokens"]) if thinking["type"] == "enabled" else "high"
    return {"effort": effort} | ({"summary": "auto"} if thinking.get("display") == "summarized" else {})


def provider_options(recorded: dict) -> dict:
    """How a project would configure the gateway for this conversation: the upstream's own fields, and
    the server tools its operator allows."""
    server_tools = [t["type"] for t in recorded.get("tools") or () if t.get("type") not in (None, "custom")]
    options = {
        "extra_body": {key: value for key, value in recorded.items() if key not in CARRIED},
        "server_tools": server_tools,
    }
    budget = (recorded.get("thinking") or {}).get("budget_tokens")
    if budget is not None and budget not in DEFAULT_THINKING_BUDGETS.values():
        options["thinking_budgets"] = {"medium": budget}  # a deployment's own budget, as `--thinking-budget` sets
    return options


def _uncached(value):
    """`value` without prompt-caching hints (`cache_control`), which no Open Responses request carries."""
    if isinstance(value, dict):
        return {k: _uncached(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_uncached(v) for v in value]
    return value


def semantic(request: dict) -> dict:
    """A Messages request as what it asks for: no transport (`stream`) or caching hints, content as
    blocks, one message per turn, `tool_choice` `auto` as the default it is, `max_tokens` at least 16."""
    body = _uncached({key: value for key, value in request.items() if key != "stream"})
    if "system" in body:
        body["system"] = _blocks(body["system"])
    messages: list[dict] = []
    for message in body["messages"]:
        if messages and messages[-1]["role"] == message["role"]:
            messages[-1]["content"] = messages[-1]["content"] + _blocks(message["content"])
        else:
            messages.append({"role": message["role"], "content": _blocks(message["content"])})
    body["messages"] = messages
    if body.get("tool_choice") == {"type": "auto"}:
        del body["tool_choice"]
    body["max_tokens"] = max(body["max_tokens"], MINIMUM_MAX_OUTPUT_TOKENS)
    return body


# -- what the recording holds --------------------------------------------------------------


def recorded_answer(body: bytes, content_type: str) -> dict:
    """The recorded message: its blocks (text and thinking joined, tool input as sent), usage and stop reason."""
    if content_type == "application/json":
        message = json.loads(body)
        if message.get("type") == "error":
            return {"blocks": [], "usage": {}, "stop": None, "error": message["error"]}
        blocks = [dict(block) for block in message["content"]]
        for block in blocks:
            if block["type"] == "tool_use":
                block["arguments"] = json.dumps(block["input"])
        return {"blocks": blocks, "usage": message["usage"], "stop": message["stop_reason"], "error": None}
    blocks: dict[int, dict] = {}
    usage: dict = {}
    stop = error = None
    for frame in iter_sse(body):
        event = json.loads(frame.data)
        kind = event["type"]
        if kind == "message_start":
            usage.update(event["message"]["usage"])
        elif kind == "content_block_start":
            blocks[event["index"]] = {**event["content_block"], "arguments": ""}
        elif kind == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = block.get("signature", "") + delta["signature"]
            elif delta["type"] == "input_json_delta":
                block["arguments"] += delta["partial_json"]
            elif delta["type"] == "citations_delta":
                block.setdefault("citations", []).append(delta["citation"])
            elif delta["type"] == "compaction_delta":
                block["content"] = delta["content"]
        elif kind == "message_delta":
            usage.update(event["usage"])
            stop = event["delta"]["stop_reason"]
        elif kind == "error":
            error = event["error"]
    for block in blocks.values():
        if block["type"] in ("tool_use", "server_tool_use"):
            block["arguments"] = block["arguments"] or "{}"
            block["input"] = json.loads(block["arguments"])
        if block["type"] != "tool_use":
            block.pop("arguments")
    return {"blocks": [blocks[i] for i in sorted(blocks)], "usage": usage, "stop": stop, "error": error}


def expected_status(stop: str | None) -> tuple[str, dict | None]:
    """The stop reason mapped as the gateway's table says."""
    if stop in ("max_tokens", "model_context_window_exceeded"):
        return "incomplete", {"reason": "max_output_tokens"}
    if stop == "refusal":
        return "incomplete", {"reason": "content_filter"}
    if stop is None:
        return "failed", None
    return "completed", None


@pytest.mark.parametrize("name", NAMES)
def test_recording_translates_faithfully(shared, replay, name):
    url, upstream_ = replay
    request, body, content_type = load(name)
    answer(upstream_, body, content_type)
    want = recorded_answer(body, content_type)
    with gateway(url, **provider_options(request)) as base:
        reply = httpx.post(base + "/responses", json=responses_body(request), headers=HEADERS, timeout=30)
        raw, status = reply.content, reply.status_code

    sent, headers = upstream_.requests[-1], upstream_.headers[-1]
    assert sent["stream"] is True
    assert (headers["x-api-key"], headers["anthropic-version"]) == (UPSTREAM_KEY, "2023-06-01")
    assert semantic(sent) == semantic(request)

    if want["error"] is not None and content_type == "application/json":  # an HTTP error before any stream
        assert status == 400
        error = json.loads(raw)["error"]
        assert error["code"] == "upstream_invalid_request" and want["error"]["message"] in error["message"]
        return
    assert status == 200, raw
    assert [str(v) for v in check_sse(raw)] == []  # not even a warning
    events = [json.loads(m.data) for m in iter_sse(raw) if m.data != "[DONE]"]
    final = events[-1]["response"]
    assert (final["status"], final["incomplete_details"]) == expected_status(want["stop"])
    output, blocks = final["output"], want["blocks"]

    assert output_text(output, "message", "output_text") == "".join(b["text"] for b in blocks if b["type"] == "text")
    assert output_text(output, "reasoning", "reasoning_text") == "".join(
        b["thinking"] for b in blocks if b["type"] == "thinking"
    )
    reasoning = [item for item in output if item["type"] == "reasoning"]
    assert len(reasoning) == sum(b["type"] in ("thinking", "redacted_thinking") for b in blocks)
    assert all(item["encrypted_content"] for item in reasoning)  # the signature or data, sealed
    calls = [(item["call_id"], item["name"], item["arguments"]) for item in output if item["type"] == "function_call"]
    assert calls == [(b["id"], b["name"], b["arguments"]) for b in blocks if b["type"] == "tool_use"]
    kept = [item["block"] for item in output if item["type"] == "anthropic:content_block"]
    untranslated = ("text", "thinking", "redacted_thinking", "tool_use")
    assert kept == [b for b in blocks if b["type"] not in untranslated]
    citations = [c for item in output if item["type"] == "anthropic:citations" for c in item["citations"]]
    assert citations == [c for b in blocks if b["type"] == "text" for c in b.get("citations") or ()]

    usage = want["usage"]
    read, created = usage.get("cache_read_input_tokens") or 0, usage.get("cache_creation_input_tokens") or 0
    assert final["usage"]["input_tokens"] == usage["input_tokens"] + read + created
    assert final["usage"]["output_tokens"] == usage["output_tokens"]
    assert final["usage"]["input_tokens_details"]["cached_tokens"] == read
    thinking = (usage.get("output_tokens_details") or {}).get("thinking_tokens") or 0
    assert final["usage"]["output_tokens_details"]["reasoning_tokens"] == thinking


THINKING = [
    name
    for name in NAMES
    if name != "(none)"
    and any(b["type"] in ("thinking", "redacted_thinking") for b in recorded_answer(*load(name)[1:])["blocks"])
]


@pytest.mark.parametrize("name", THINKING)
@pytest.mark.parametrize("carried_by", ["previous_response_id", "client"])
def test_thinking_goes_back_byte_for_byte_next_turn(shared, replay, name, carried_by):
    url, upstream_ = replay
    request, body, content_type = load(name)
    want = recorded_answer(body, content_type)["blocks"]
    answer(upstream_, body, content_type)
    answer(upstream_, (RECORDINGS / "text.response.sse").read_bytes(), "text/event-stream")
    first_body = {**responses_body(request), "stream": False}
    with gateway(url, **provider_options(request)) as base:
        if carried_by == "client":
            first_body.update(store=False, include=["reasoning.encrypted_content"])
        first = httpx.post(base + "/responses", json=first_body, headers=HEADERS, timeout=30)
        assert first.status_code == 200, first.text
        output = first.json()["output"]
        if carried_by == "client":  # the whole history, the output as it came (reasoning with its content)
            assert all("content" in item and "summary" in item for item in output if item["type"] == "reasoning")
        second = next_turn(first_body, first.json(), carried_by, "1.0")
        reply = httpx.post(base + "/responses", json=second, headers=HEADERS, timeout=30)
        assert reply.status_code == 200, reply.text
        assert "OpenResponses-Ignored" not in reply.headers  # the sealed items bring their content back
    messages = upstream_.requests[-1]["messages"]
    turn = messages[len(semantic(request)["messages"])]  # the assistant turn the first answer made
    assert turn["role"] == "assistant"
    sent = [b for b in turn["content"] if b["type"] in ("thinking", "redacted_thinking")]
    recorded_thinking = [
        {"type": "thinking", "thinking": b["thinking"], "signature": b["signature"]}
        if b["type"] == "thinking"
        else {"type": "redacted_thinking", "data": b["data"]}
        for b in want
        if b["type"] in ("thinking", "redacted_thinking")
    ]
    assert sent == recorded_thinking
    calls = [b for b in turn["content"] if b["type"] == "tool_use"]
    results = [b for b in messages[-1]["content"] if isinstance(b, dict) and b["type"] == "tool_result"]
    assert [b["id"] for b in calls] == [b["tool_use_id"] for b in results]


def test_the_tool_result_turn_is_the_recorded_second_request(shared, replay):
    """`tool-result-followup` is the second turn of `text-and-two-tool-uses` (one cassette): the
    gateway's second request, made from its own first answer, is the recorded one."""
    url, upstream_ = replay
    first_request, first_answer, _ = load("text-and-two-tool-uses")
    second_request, second_answer, _ = load("tool-result-followup")
    answer(upstream_, first_answer, "text/event-stream")
    answer(upstream_, second_answer, "text/event-stream")
    first_body = {**responses_body(first_request), "stream": False}
    outputs = {
        block["tool_use_id"]: block["content"]
        for block in second_request["messages"][-1]["content"]
        if block["type"] == "tool_result"
    }
    with gateway(url) as base:
        first = httpx.post(base + "/responses", json=first_body, headers=HEADERS, timeout=30).json()
        follow = [
            {"type": "function_call_output", "call_id": item["call_id"], "output": outputs[item["call_id"]]}
            for item in first["output"]
            if item["type"] == "function_call"
        ]
        assert len(follow) == 2
        body = {**first_body, "previous_response_id": first["id"], "input": follow}
        second = httpx.post(base + "/responses", json=body, headers=HEADERS, timeout=30)
    assert second.status_code == 200, second.text
    assert semantic(upstream_.requests[-1]) == semantic(second_request)
    assert second.json()["output"][0]["content"][0]["text"] == "".join(
        b["text"] for b in recorded_answer(second_answer, "text/event-stream")["blocks"] if b["type"] == "text"
    )
