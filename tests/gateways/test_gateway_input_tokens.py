"""`POST /responses/input_tokens` through the gateways: Anthropic's `count_tokens` and Gemini's
`countTokens` count the body a turn would send; Chat Completions has no count, so a 501."""

from __future__ import annotations

import json

import httpx
from openresponses_runtime.gateways.anthropic_messages import AnthropicMessagesProvider
from openresponses_runtime.gateways.chat_completions import ChatCompletionsProvider
from openresponses_runtime.gateways.gemini import GeminiProvider

from ..server_helpers import API_KEY
from ..upstream_replay import gateway, upstream

HEADERS = {"Authorization": f"Bearer {API_KEY}"}
BODY = {
    "model": "m",
    "instructions": "Answer briefly.",
    "input": [{"type": "message", "role": "user", "content": "What is the weather in Paris?"}],
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}],
}


def _count(base: str, body: dict) -> httpx.Response:
    return httpx.post(f"{base}/responses/input_tokens", json=body, headers=HEADERS, timeout=10)


def test_anthropic_counts_with_count_tokens():
    with upstream() as (url, replay):
        replay.answer(json.dumps({"input_tokens": 42}).encode(), content_type="application/json")
        with gateway(url.removesuffix("/v1"), AnthropicMessagesProvider) as base:  # Anthropic's base has no version
            answer = _count(base, BODY)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"object": "response.input_tokens", "input_tokens": 42}
    assert replay.paths == ["/v1/messages/count_tokens"]
    sent = replay.requests[0]
    assert set(sent) == {"model", "messages", "system", "tools", "tool_choice"}  # no max_tokens, no stream
    assert sent["messages"][0]["role"] == "user" and sent["system"]


def test_gemini_counts_the_whole_generate_content_request():
    with upstream() as (url, replay):
        replay.answer(json.dumps({"totalTokens": 17}).encode(), content_type="application/json")
        with gateway(url.removesuffix("/v1") + "/v1beta", GeminiProvider, model="gemini-2.5-flash") as base:
            answer = _count(base, BODY)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"object": "response.input_tokens", "input_tokens": 17}
    assert replay.paths == ["/v1beta/models/gemini-2.5-flash:countTokens"]
    request = replay.requests[0]["generateContentRequest"]
    assert request["model"] == "models/gemini-2.5-flash"
    assert request["contents"] and request["systemInstruction"] and request["tools"]


def test_an_upstream_error_or_a_count_that_is_none_maps_as_a_turn_s_would():
    with upstream() as (url, replay):
        replay.answer(b'{"error": {"message": "bad model"}}', status=400, content_type="application/json")
        replay.answer(b'{"totalTokens": "many"}', content_type="application/json")
        with gateway(url, GeminiProvider) as base:
            refused = _count(base, {"model": "m", "input": "hi"})
            garbled = _count(base, {"model": "m", "input": "hi"})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "upstream_invalid_request"
    assert garbled.status_code == 502 and garbled.json()["error"]["code"] == "upstream_bad_response"


def test_chat_completions_has_no_count_so_answers_501_without_asking_upstream():
    with upstream() as (url, replay), gateway(url, ChatCompletionsProvider) as base:
        answer = _count(base, BODY)
    assert answer.status_code == 501
    assert answer.json()["error"]["type"] == "server_error" and answer.json()["error"]["code"] == "not_implemented"
    assert replay.requests == []
