"""Every streamed Chat Completions recording of `../shared/recordings/upstream/chat/` replayed, byte for
byte, as the upstream of the Chat Completions gateway.

For each recording the test builds the Open Responses request a client would send for the recorded
conversation, and checks that the gateway asks the upstream for the same thing (messages, tools and
settings, compared as data) and that its stream carries everything the recording holds: it passes the
stream checker, and the text, refusal, reasoning, tool calls, usage and stop reason come through.
"""

from __future__ import annotations

import json

import httpx
import pytest
from openresponses_runtime.events import iter_sse
from openresponses_runtime.streaming import check_sse

from ..conftest import SHARED
from ..server_helpers import API_KEY
from ..upstream_replay import gateway, output_text, upstream

CHAT = SHARED / "recordings" / "upstream" / "chat"
NAMES = sorted(p.name.removesuffix(".request.json") for p in CHAT.glob("*.request.json")) or ["(none)"]

# Request fields with no Open Responses counterpart, so never part of a request the gateway makes.
NOT_SENT = {
    "n": "one output: the gateway asks for one choice and reads choice 0 of any",
    "stream_options": "the gateway always asks for usage",
}
# Fields every request has, or that the test carries over as Open Responses settings.
CARRIED = {
    "model", "messages", "stream", "tools", "tool_choice", "max_tokens", "max_completion_tokens", "temperature",
    "top_p", "presence_penalty", "frequency_penalty", "parallel_tool_calls", "response_format", "reasoning_effort",
    "reasoning",
}  # fmt: skip
MINIMUM_MAX_OUTPUT_TOKENS = 16  # the spec's minimum: openrouter-length-error's 10 is sent as 16


@pytest.fixture(scope="module")
def replay():
    with upstream() as (url, replay):
        yield url, replay


# -- the recorded request as an Open Responses request ------------------------------------


def _item(message: dict) -> list[dict]:
    role, content = message["role"], message.get("content")
    if role == "tool":
        return [{"type": "function_call_output", "call_id": message["tool_call_id"], "output": content}]
    if role == "assistant":
        items = []
        if content is not None:
            items.append(
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": content}]}
            )
        for call in message.get("tool_calls") or ():
            function = call["function"]
            items.append(
                {
                    "type": "function_call",
                    "call_id": call["id"],
                    "name": function["name"],
                    "arguments": function["arguments"],
                }
            )
        return items
    if isinstance(content, list):
        parts = [
            {"type": "input_text", "text": p["text"]}
            if p["type"] == "text"
            else {"type": "input_image", "image_url": p["image_url"]["url"]}
            for p in content
        ]
        return [{"type": "message", "role": role, "content": parts}]
    return [{"type": "message", "role": role, "content": content}]


def responses_body(chat: dict) -> dict:
    """The Open Responses request for the recorded Chat Completions request."""
    body: dict = {"model": chat["model"], "stream": True, "input": [i for m in chat["messages"] for i in _item(m)]}
    if chat.get("tools"):
        body["tools"] = [{"type": "function", **tool["function"]} for tool in chat["tools"]]
    choice = chat.get("tool_choice")
    if choice is not None:
        body["tool_choice"] = (
            {"type": "function", "name": choice["function"]["name"]} if isinstance(choice, dict) else choice
        )
    limit = chat.get("max_tokens", chat.get("max_completion_tokens"))
    if limit is not None:
        body["max_output_tokens"] = max(limit, MINIMUM_MAX_OUTPUT_TOKENS)
    for field in ("temperature", "top_p", "presence_penalty", "frequency_penalty", "parallel_tool_calls"):
        if field in chat:
            body[field] = chat[field]
    if chat.get("reasoning_effort"):
        body["reasoning"] = {"effort": chat["reasoning_effort"]}
    openrouter = chat.get("reasoning")  # OpenRouter's object: an effort, or reasoning on at the model's default
    if openrouter:
        body["reasoning"] = {"effort": openrouter["effort"]} if "effort" in openrouter else {"summary": "auto"}
    fmt = chat.get("response_format")
    if fmt and fmt["type"] == "json_schema":
        body["text"] = {"format": {"type": "json_schema", **fmt["json_schema"]}}
    return body


def provider_options(chat: dict) -> dict:
    """How a project would configure the gateway for this upstream: its max tokens field and its own fields."""
    field = next((f for f in ("max_tokens", "max_completion_tokens") if f in chat), "max_tokens")
    extra = {key: value for key, value in chat.items() if key not in CARRIED and key not in NOT_SENT}
    options = {"max_tokens_field": field, "extra_body": extra}
    if "reasoning" in chat:  # an OpenRouter recording, replayed from loopback rather than openrouter.ai
        options["reasoning_field"] = "reasoning"
    return options


def semantic(chat: dict) -> dict:
    """A Chat Completions request as what it asks for: one assistant message per turn, empty content
    as none, one text part as its text, `tool_choice` `auto` when tools are offered and it is left out,
    no empty `tools`, no reasoning text on earlier turns."""
    body = {key: value for key, value in chat.items() if key not in NOT_SENT}
    messages: list[dict] = []
    for message in chat["messages"]:
        message = dict(message)
        content = message.get("content")
        if isinstance(content, list) and len(content) == 1 and content[0].get("type") == "text":
            message["content"] = content[0]["text"]  # one text part says what the text alone says
        if message["role"] == "assistant":
            # An earlier turn's reasoning text is not sent back (DeepSeek refuses it; the guide's table):
            # only the signed `reasoning_details` a model needs to continue go back.
            message.pop("reasoning", None)
            message.pop("reasoning_content", None)
            message["content"] = message.get("content") or None
            message["tool_calls"] = message.get("tool_calls") or []
            if messages and messages[-1]["role"] == "assistant" and not messages[-1]["tool_calls"]:
                previous = messages.pop()
                message["content"] = previous["content"] or message["content"]
            message["tool_calls"] = [{"type": "function", **call} for call in message["tool_calls"]]
        messages.append(message)
    body["messages"] = messages
    if body.get("tools"):
        body["tools"] = [{"type": "function", **tool} for tool in body["tools"]]
        body.setdefault("tool_choice", "auto")
    else:
        body.pop("tools", None)
    for field in ("max_tokens", "max_completion_tokens"):
        if field in body:
            body[field] = max(body[field], MINIMUM_MAX_OUTPUT_TOKENS)
    return body


# -- what the recording holds --------------------------------------------------------------


def recorded(sse: bytes) -> dict:
    """Choice 0 of the recorded stream: text, refusal, reasoning, tool calls, usage, finish reason, error."""
    out: dict = {"text": "", "refusal": "", "reasoning": "", "calls": {}, "usage": None, "finish": None, "error": None}
    for message in iter_sse(sse):
        if message.data == "[DONE]":
            break
        chunk = json.loads(message.data)
        usage = chunk.get("usage") or (chunk.get("x_groq") or {}).get("usage")
        out["usage"] = usage or out["usage"]
        if chunk.get("error"):
            out["error"] = chunk["error"]
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            out["text"] += delta.get("content") or ""
            out["refusal"] += delta.get("refusal") or ""
            out["reasoning"] += delta.get("reasoning_content") or delta.get("reasoning") or ""
            for call in delta.get("tool_calls") or ():
                kept = out["calls"].setdefault(call["index"], {"call_id": None, "name": "", "arguments": ""})
                kept["call_id"] = kept["call_id"] or call.get("id")
                kept["name"] += (call.get("function") or {}).get("name") or ""
                kept["arguments"] += (call.get("function") or {}).get("arguments") or ""
            out["finish"] = choice.get("finish_reason") or out["finish"]
    return out


def recorded_whole(body: bytes) -> dict:
    """Choice 0 of a recorded `chat.completion` answered whole, as `recorded` reads a stream."""
    completion = json.loads(body)
    (choice,) = [c for c in completion["choices"] if c.get("index", 0) == 0]
    message = choice["message"]
    calls = {
        call.get("index", i): {
            "call_id": call["id"],
            "name": call["function"]["name"],
            "arguments": call["function"]["arguments"],
        }
        for i, call in enumerate(message.get("tool_calls") or ())
    }
    return {
        "text": message.get("content") or "",
        "refusal": message.get("refusal") or "",
        "reasoning": message.get("reasoning_content") or message.get("reasoning") or "",
        "calls": calls,
        "usage": completion.get("usage"),
        "finish": choice.get("finish_reason"),
        "error": None,
    }


def load(name: str) -> tuple[dict, bytes, str]:
    """The recorded request, the recorded answer and its content type."""
    chat = json.loads((CHAT / f"{name}.request.json").read_text())
    sse = CHAT / f"{name}.response.sse"
    if sse.exists():
        return chat, sse.read_bytes(), "text/event-stream"
    return chat, (CHAT / f"{name}.response.json").read_bytes(), "application/json"


def expected_status(finish: str | None) -> tuple[str, dict | None]:
    """The stop reason mapped as the gateway's table says."""
    if finish == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    if finish == "content_filter":
        return "incomplete", {"reason": "content_filter"}
    if finish is None:
        return "failed", None
    return "completed", None


@pytest.mark.parametrize("name", NAMES)
def test_recording_translates_faithfully(shared, replay, name):
    url, upstream_ = replay
    chat, body, kind = load(name)
    upstream_.answer(body, content_type=kind)
    with gateway(url, **provider_options(chat)) as base:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        with httpx.stream("POST", base + "/responses", json=responses_body(chat), headers=headers, timeout=30) as r:
            assert r.status_code == 200, r.read()
            raw = r.read()

    sent = upstream_.requests[-1]
    assert sent.pop("stream_options") == {"include_usage": True}
    # The gateway always asks for a stream; an upstream that answers whole (as these recordings did,
    # asked without one) is read as one chunk.
    assert semantic(sent) == semantic({**chat, "stream": True})

    assert [str(v) for v in check_sse(raw)] == []  # not even a warning
    events = [json.loads(m.data) for m in iter_sse(raw) if m.data != "[DONE]"]
    final = events[-1]["response"]
    want = recorded(body) if kind == "text/event-stream" else recorded_whole(body)
    status, details = expected_status(want["finish"])
    assert (final["status"], final["incomplete_details"]) == (status, details)
    if status == "failed":
        assert events[-2]["type"] == "error" and want["error"]["message"] in events[-2]["error"]["message"]
    output = final["output"]
    assert output_text(output, "message", "output_text", "text") == want["text"]
    assert output_text(output, "message", "refusal", "refusal") == want["refusal"]
    assert output_text(output, "reasoning", "reasoning_text", "text") == want["reasoning"]
    calls = [
        {"call_id": item["call_id"], "name": item["name"], "arguments": item["arguments"]}
        for item in output
        if item["type"] == "function_call"
    ]
    assert calls == [want["calls"][index] for index in sorted(want["calls"])]
    if want["usage"] is None:
        assert final["usage"] is None
    else:
        usage = want["usage"]
        assert final["usage"]["input_tokens"] == usage["prompt_tokens"]
        assert final["usage"]["output_tokens"] == usage["completion_tokens"]
        reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        assert final["usage"]["output_tokens_details"]["reasoning_tokens"] == reasoning
        assert final["usage"]["input_tokens_details"]["cached_tokens"] == cached


@pytest.mark.parametrize("carried_by", ["previous_response_id", "client"])
def test_openrouters_signed_reasoning_goes_back_intact_next_turn(shared, replay, carried_by):
    url, upstream_ = replay
    name = "openrouter-claude-reasoning"
    chat = json.loads((CHAT / f"{name}.request.json").read_text())
    sse = (CHAT / f"{name}.response.sse").read_bytes()
    signatures = [
        detail["signature"]
        for message in iter_sse(sse)
        if message.data.startswith("{")
        for choice in json.loads(message.data).get("choices") or ()
        for detail in (choice.get("delta") or {}).get("reasoning_details") or ()
        if detail.get("signature")
    ]
    assert len(signatures) == 1  # what the recording holds
    upstream_.answer(sse)
    upstream_.answer(sse)
    headers = {"Authorization": f"Bearer {API_KEY}"}
    with gateway(url, **provider_options(chat)) as base:
        first_body = {**responses_body(chat), "stream": False}
        if carried_by == "client":  # Codex: nothing stored, the whole history sent every turn
            first_body.update(store=False, include=["reasoning.encrypted_content"])
        first = httpx.post(base + "/responses", json=first_body, headers=headers)
        assert first.status_code == 200, first.text
        if carried_by == "client":
            output = first.json()["output"]
            assert any(item["type"] == "reasoning" and item.get("content") for item in output)
            then = {"type": "message", "role": "user", "content": "And then?"}
            follow = {"model": chat["model"], "store": False, "input": first_body["input"] + output + [then]}
        else:
            follow = {"model": chat["model"], "previous_response_id": first.json()["id"], "input": "And then?"}
        second = httpx.post(base + "/responses", json=follow, headers=headers)
        assert second.status_code == 200, second.text
        assert "OpenResponses-Ignored" not in second.headers
    assistant = upstream_.requests[-1]["messages"][1]
    assert assistant["role"] == "assistant" and assistant["content"] == recorded(sse)["text"]
    (detail,) = assistant["reasoning_details"]
    assert detail["signature"] == signatures[0]
    assert detail["text"] == recorded(sse)["reasoning"]


def _reasons_to_the_end(name: str) -> bool:
    """A streamed recording whose answer reasons and ends without an error."""
    sse = CHAT / f"{name}.response.sse"
    answer = recorded(sse.read_bytes()) if sse.exists() else None
    return bool(answer and answer["reasoning"] and answer["error"] is None)


REASONING = [name for name in NAMES if _reasons_to_the_end(name)]


@pytest.mark.parametrize("name", REASONING)
def test_a_client_carrying_the_whole_history_gets_turn_two(shared, replay, name):
    """Codex's way (`store: false`, every item of every turn sent again, reasoning with its content):
    the second turn is accepted, and the upstream gets the first turn's answer back."""
    url, upstream_ = replay
    chat = json.loads((CHAT / f"{name}.request.json").read_text())
    sse = (CHAT / f"{name}.response.sse").read_bytes()
    want = recorded(sse)
    upstream_.answer(sse)
    upstream_.answer(sse)
    headers = {"Authorization": f"Bearer {API_KEY}"}
    first_body = {**responses_body(chat), "stream": False, "store": False}
    first_body["include"] = ["reasoning.encrypted_content"]
    with gateway(url, **provider_options(chat)) as base:
        first = httpx.post(base + "/responses", json=first_body, headers=headers, timeout=30)
        assert first.status_code == 200, first.text
        output = first.json()["output"]
        assert any(item["type"] == "reasoning" and item.get("content") for item in output)
        follow = [
            {"type": "function_call_output", "call_id": item["call_id"], "output": "1"}
            for item in output
            if item["type"] == "function_call"
        ] or [{"type": "message", "role": "user", "content": "And then?"}]
        second_body = {**first_body, "input": first_body["input"] + output + follow}
        second = httpx.post(base + "/responses", json=second_body, headers=headers, timeout=30)
        assert second.status_code == 200, second.text
        assert "OpenResponses-Ignored" not in second.headers
    messages = upstream_.requests[-1]["messages"]
    answered = messages[len(upstream_.requests[-2]["messages"])]
    assert answered["role"] == "assistant"
    assert (answered.get("content") or "") == want["text"]
    assert [call["id"] for call in answered.get("tool_calls") or ()] == [c["call_id"] for c in want["calls"].values()]
