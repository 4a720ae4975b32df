"""The Anthropic Messages gateway (`openresponses_runtime.gateways.anthropic_messages`): the translation
both ways beyond what the recordings hold, and what it does with an upstream that misbehaves."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from contextlib import contextmanager

import httpx
import pytest
from openresponses_runtime.gateways.anthropic_messages import (
    DEFAULT_MAX_TOKENS,
    AnthropicMessagesProvider,
    steps_from_events,
    thinking_kind,
    to_anthropic_messages,
)
from openresponses_runtime.server import FunctionCallEnd, FunctionCallStart, TextDelta, create_app
from openresponses_runtime.streaming import check_sse

from ..conftest import SHARED
from ..server_helpers import API_KEY, live_server
from ..upstream_replay import UPSTREAM_KEY, event_types_until, upstream

HEADERS = {"Authorization": f"Bearer {API_KEY}"}
TEXT_SSE = SHARED / "recordings" / "upstream" / "anthropic" / "text.response.sse"


@contextmanager
def served(url: str, **options):
    provider = AnthropicMessagesProvider(base_url=url.removesuffix("/v1"), api_key=UPSTREAM_KEY, **options)
    with live_server(create_app(provider, store="memory:", api_keys=API_KEY)) as base:
        yield base


@pytest.fixture(scope="module")
def replay():
    with upstream() as (url, replay), served(url) as base:
        yield base, replay


def frame(event: dict) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


START = frame({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 5, "output_tokens": 1}}})
STOP = frame({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}) + frame(
    {"type": "message_stop"}
)


def text_block(text: str, index: int = 0) -> bytes:
    return (
        frame({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
        + frame({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})
        + frame({"type": "content_block_stop", "index": index})
    )


def post(base: str, **body) -> httpx.Response:
    return httpx.post(base + "/responses", json={"model": "claude", **body}, headers=HEADERS, timeout=30)


def stream(base: str, **body) -> tuple[bytes, list[dict]]:
    with httpx.stream(
        "POST", base + "/responses", json={"model": "claude", "stream": True, **body}, headers=HEADERS
    ) as r:
        assert r.status_code == 200, r.read()
        raw = r.read()
    return raw, [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: {")]


def steps(events: list[dict]) -> list:
    async def source():
        for event in events:
            yield event

    async def collect():
        return [step async for step in steps_from_events(source())]

    return asyncio.run(collect())


# -- requests --------------------------------------------------------------------------------


def test_context_translation():
    items = [
        {"type": "message", "role": "developer", "content": "Be brief."},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Look:"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
            {"type": "input_image", "image_url": "https://example.com/cat.png"},
        ]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Calling."}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": ""}]},
        {"type": "function_call", "call_id": "toolu_1", "name": "a", "arguments": '{"x": 1}'},
        {"type": "function_call", "call_id": "toolu_2", "name": "b", "arguments": ""},
        {"type": "function_call_output", "call_id": "toolu_1", "output": "one"},
        {"type": "function_call_output", "call_id": "toolu_2", "output": [{"type": "input_text", "text": "two"}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "someone else's"}]},
        {"type": "anthropic:content_block", "block": {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}},
        {"type": "anthropic:citations", "citations": [{"type": "web_search_result_location"}]},
    ]  # fmt: skip
    system, messages = to_anthropic_messages(items, "Answer in French.")
    assert system == [{"type": "text", "text": "Answer in French."}, {"type": "text", "text": "Be brief."}]
    assert messages == [
        {"role": "user", "content": [
            {"type": "text", "text": "Look:"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
        ]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Calling."},
            {"type": "tool_use", "id": "toolu_1", "name": "a", "input": {"x": 1}},
            {"type": "tool_use", "id": "toolu_2", "name": "b", "input": {}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "one"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "two"}]},
        ]},
        {"role": "assistant", "content": [{"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}]},
    ]  # fmt: skip


def test_settings_go_upstream(replay):
    base, upstream_ = replay
    call = {"type": "tool_use", "id": "toolu_1", "name": "a", "input": {}}
    upstream_.answer(
        START
        + frame({"type": "content_block_start", "index": 0, "content_block": call})
        + frame({"type": "content_block_stop", "index": 0})
        + STOP
    )
    tools = [
        {"type": "function", "name": "a", "description": "A.", "parameters": {"type": "object"}},
        {"type": "function", "name": "b"},
    ]
    reply = post(
        base, input="hi", tools=tools, tool_choice={"type": "function", "name": "a"}, parallel_tool_calls=False,
        max_output_tokens=300, temperature=0.5, top_p=0.9, reasoning={"effort": "low"}, instructions="Be brief.",
    )  # fmt: skip
    assert reply.status_code == 200, reply.text
    assert reply.json()["output"][0]["call_id"] == "toolu_1" and reply.json()["output"][0]["arguments"] == "{}"
    sent, headers = upstream_.requests[-1], upstream_.headers[-1]
    assert (headers["x-api-key"], headers["anthropic-version"]) == (UPSTREAM_KEY, "2023-06-01")
    assert sent == {
        "model": "claude",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "max_tokens": 300,
        "stream": True,
        "system": [{"type": "text", "text": "Be brief."}],
        "tools": [{"name": "a", "description": "A.", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": "a", "disable_parallel_tool_use": True},
        "temperature": 0.5,
        "top_p": 0.9,
    }  # Anthropic refuses thinking with a forced tool: the effort is left out, and said so
    assert reply.headers["OpenResponses-Ignored"] == "parameter:reasoning"


# -- reasoning -------------------------------------------------------------------------------

BUDGET_MODEL, ADAPTIVE_MODEL = "claude-sonnet-4-5-20250929", "claude-opus-4-6"


def sent_for(replay, **body) -> tuple[dict, httpx.Response]:
    """The Messages request the gateway sends for this Open Responses request, and the reply."""
    base, upstream_ = replay
    upstream_.answer(START + text_block("Hi") + STOP)
    reply = post(base, input="hi", **body)
    assert reply.status_code == 200, reply.text
    return upstream_.requests[-1], reply


def test_reasoning_of_another_model_is_left_out_and_said_so(replay):
    """Unsigned reasoning (another model's, or ours sent back without its blob) cannot go to Anthropic."""
    base, upstream_ = replay
    thought = {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "Hmm."}]}
    empty = {"type": "reasoning", "summary": []}  # nothing lost: nothing said
    headers = []
    for item in (thought, empty):
        upstream_.answer(START + text_block("Hi") + STOP)
        history = [{"role": "user", "content": "hi"}, item, {"role": "assistant", "content": "Hello."}]
        reply = post(base, input=[*history, {"role": "user", "content": "and?"}])
        assert reply.status_code == 200, reply.text
        messages = upstream_.requests[-1]["messages"]
        blocks = [b for m in messages for b in ([m["content"]] if isinstance(m["content"], str) else m["content"])]
        assert [b if isinstance(b, str) else b["type"] for b in blocks] == ["hi", "text", "and?"]  # no thinking
        headers.append(reply.headers.get("OpenResponses-Ignored"))
    assert headers == ["item:reasoning", None]


THINKING_FIELDS = ("thinking", "output_config", "max_tokens")


@pytest.mark.parametrize(
    ("reasoning", "budget_model", "adaptive_model"),
    [
        (None, {"max_tokens": DEFAULT_MAX_TOKENS}, {"max_tokens": DEFAULT_MAX_TOKENS}),
        ({"effort": "none"}, {"max_tokens": DEFAULT_MAX_TOKENS}, {"max_tokens": DEFAULT_MAX_TOKENS}),
        (
            {"effort": "low"},
            {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": DEFAULT_MAX_TOKENS + 1024},
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}, "max_tokens": DEFAULT_MAX_TOKENS + 1024},
        ),
        (
            {"effort": "medium"},
            {"thinking": {"type": "enabled", "budget_tokens": 4096}, "max_tokens": DEFAULT_MAX_TOKENS + 4096},
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}, "max_tokens": DEFAULT_MAX_TOKENS + 4096},
        ),
        (
            {"effort": "high"},
            {"thinking": {"type": "enabled", "budget_tokens": 16384}, "max_tokens": DEFAULT_MAX_TOKENS + 16384},
            {"thinking": {"type": "adaptive"}, "max_tokens": DEFAULT_MAX_TOKENS + 16384},
        ),
        (
            {"effort": "xhigh"},
            {"thinking": {"type": "enabled", "budget_tokens": 24576}, "max_tokens": DEFAULT_MAX_TOKENS + 24576},
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "max"}, "max_tokens": DEFAULT_MAX_TOKENS + 24576},
        ),
        (
            {"summary": "auto"},
            {"thinking": {"type": "enabled", "budget_tokens": 4096, "display": "summarized"}, "max_tokens": DEFAULT_MAX_TOKENS + 4096},
            {"thinking": {"type": "adaptive", "display": "summarized"}, "max_tokens": DEFAULT_MAX_TOKENS + 4096},
        ),
        (
            {"effort": "low", "summary": "detailed"},
            {"thinking": {"type": "enabled", "budget_tokens": 1024, "display": "summarized"}, "max_tokens": DEFAULT_MAX_TOKENS + 1024},
            {"thinking": {"type": "adaptive", "display": "summarized"}, "output_config": {"effort": "low"}, "max_tokens": DEFAULT_MAX_TOKENS + 1024},
        ),
        ({"effort": "none", "summary": "auto"}, {"max_tokens": DEFAULT_MAX_TOKENS}, {"max_tokens": DEFAULT_MAX_TOKENS}),
    ],
    ids=["absent", "none", "low", "medium", "high", "xhigh", "summary", "low-summary", "none-summary"],
)  # fmt: skip
def test_effort_turns_thinking_on_by_the_table(replay, reasoning, budget_model, adaptive_model):
    body = {"reasoning": reasoning} if reasoning else {}
    for model, expected in ((BUDGET_MODEL, budget_model), (ADAPTIVE_MODEL, adaptive_model)):
        sent, reply = sent_for(replay, model=model, **body)
        assert {key: sent[key] for key in THINKING_FIELDS if key in sent} == expected, model
        assert "OpenResponses-Ignored" not in reply.headers


def test_the_budget_stays_under_the_requests_limit_or_thinking_stays_off(replay):
    sent, _ = sent_for(replay, model=BUDGET_MODEL, reasoning={"effort": "high"}, max_output_tokens=3000)
    assert (sent["max_tokens"], sent["thinking"]) == (3000, {"type": "enabled", "budget_tokens": 2999})
    sent, reply = sent_for(replay, model=BUDGET_MODEL, reasoning={"effort": "low"}, max_output_tokens=1024)
    assert sent["max_tokens"] == 1024 and "thinking" not in sent  # no room for the least budget, 1024
    assert reply.headers["OpenResponses-Ignored"] == "parameter:reasoning"
    sent, _ = sent_for(replay, model=ADAPTIVE_MODEL, reasoning={"effort": "high"}, max_output_tokens=300)
    assert (sent["max_tokens"], sent["thinking"]) == (300, {"type": "adaptive"})  # no budget to fit


@pytest.mark.parametrize(
    ("model", "kind"),
    [
        ("claude-3-5-haiku-latest", None),
        ("claude-3-opus-20240229", None),
        ("claude-3-7-sonnet-20250219", "budget"),
        ("claude-sonnet-4-20250514", "budget"),
        ("claude-opus-4-1-20250805", "budget"),
        ("claude-haiku-4-5-20251001", "budget"),
        ("claude-opus-4-5", "budget"),
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", "budget"),
        ("claude-sonnet-4-6", "adaptive"),
        ("claude-opus-4-7", "adaptive"),
        ("claude-opus-4.6", "adaptive"),
        ("claude-mythos-preview", "adaptive"),
    ],
)
def test_how_each_model_thinks(model, kind):
    assert thinking_kind(model) == kind


def test_a_model_that_does_not_think_gets_no_thinking_and_says_so(replay):
    sent, reply = sent_for(replay, model="claude-3-5-haiku-latest", reasoning={"effort": "high"})
    assert not {"thinking", "output_config"} & set(sent) and sent["max_tokens"] == DEFAULT_MAX_TOKENS
    assert reply.headers["OpenResponses-Ignored"] == "parameter:reasoning"


def test_sampling_anthropic_refuses_with_thinking_is_left_out_and_named(replay):
    sent, reply = sent_for(replay, model=BUDGET_MODEL, reasoning={"effort": "low"}, temperature=0.2, top_p=0.5)
    assert "thinking" in sent and not {"temperature", "top_p"} & set(sent)
    assert reply.headers["OpenResponses-Ignored"] == "parameter:temperature, parameter:top_p"
    sent, reply = sent_for(replay, model=BUDGET_MODEL, reasoning={"effort": "low"}, temperature=1, top_p=0.95)
    assert (sent["temperature"], sent["top_p"]) == (1, 0.95)  # what Anthropic takes with thinking
    assert "OpenResponses-Ignored" not in reply.headers
    sent, reply = sent_for(replay, model=BUDGET_MODEL, temperature=0.2, top_p=0.5)  # no thinking: all of it goes
    assert (sent["temperature"], sent["top_p"]) == (0.2, 0.5) and "OpenResponses-Ignored" not in reply.headers


def test_a_stream_names_what_was_left_out_too(replay):
    base, upstream_ = replay
    upstream_.answer(START + text_block("Hi") + STOP)
    body = {"model": BUDGET_MODEL, "input": "hi", "stream": True, "reasoning": {"effort": "low"}, "temperature": 0}
    with httpx.stream("POST", base + "/responses", json=body, headers=HEADERS, timeout=30) as reply:
        assert reply.status_code == 200, reply.read()
        assert reply.headers["OpenResponses-Ignored"] == "parameter:temperature"
        reply.read()
    assert "temperature" not in upstream_.requests[-1] and "thinking" in upstream_.requests[-1]


def test_a_deployment_overrides_rows_of_the_tables():
    with upstream() as (url, upstream_):
        options = {"thinking_budgets": {"low": 2048}, "thinking_levels": {"xhigh": "high", "low": "medium"}}
        with served(url, **options) as base:
            for model, effort in (
                (BUDGET_MODEL, "low"),
                (BUDGET_MODEL, "medium"),
                (ADAPTIVE_MODEL, "xhigh"),
                (ADAPTIVE_MODEL, "low"),
            ):
                upstream_.answer(START + text_block("Hi") + STOP)
                reply = post(base, model=model, input="hi", reasoning={"effort": effort}, max_output_tokens=20000)
                assert reply.status_code == 200, reply.text
    sent = [(r["thinking"], r.get("output_config")) for r in upstream_.requests]
    assert sent == [
        ({"type": "enabled", "budget_tokens": 2048}, None),
        ({"type": "enabled", "budget_tokens": 4096}, None),  # the rows not overridden keep their default
        ({"type": "adaptive"}, None),  # high: Anthropic's default, not sent
        ({"type": "adaptive"}, {"effort": "medium"}),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"thinking_budgets": {"minimal": 1024}}, "thinking budget: no effort 'minimal'; the efforts are low, medium, high, xhigh"),
        ({"thinking_budgets": {"none": 1024}}, "thinking budget: no effort 'none'"),
        ({"thinking_budgets": {"low": 512}}, "thinking budget low=512: a whole number of tokens, at least 1024"),
        ({"thinking_budgets": {"low": "2048"}}, "thinking budget low='2048': a whole number of tokens"),
        ({"thinking_levels": {"high": ""}}, "thinking level high='': an effort level Anthropic takes"),
    ],
)  # fmt: skip
def test_a_bad_table_row_is_refused_saying_which(options, message):
    with pytest.raises(ValueError) as refused:
        AnthropicMessagesProvider(api_key="k", **options)
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize(
    ("choice", "tools", "expected"),
    [
        ("auto", ["b", "a"], {"type": "auto"}),
        ("required", ["b", "a"], {"type": "any"}),
        ("none", ["b", "a"], {"type": "none"}),
        (
            {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "b"}]},
            ["b"],
            {"type": "auto"},
        ),
    ],
)
def test_tool_choice_and_allowed_tools(replay, choice, tools, expected):
    base, upstream_ = replay
    upstream_.answer(START + text_block("ok") + STOP)
    offered = [{"type": "function", "name": "b"}, {"type": "function", "name": "a"}]  # sent in this order
    reply = post(base, input="hi", tools=offered, tool_choice=choice)
    assert reply.status_code in (200, 500), reply.text  # `required` with no call fails after the upstream answered
    sent = upstream_.requests[-1]
    assert [tool["name"] for tool in sent["tools"]] == tools and sent["tool_choice"] == expected
    assert sent["max_tokens"] == DEFAULT_MAX_TOKENS


def test_content_it_cannot_send_is_refused_with_a_400(replay):
    base, upstream_ = replay
    before = len(upstream_.requests)
    file = {"type": "input_file", "file_data": "data:application/pdf;base64,AAAA", "filename": "a.pdf"}
    reply = post(base, input=[{"type": "message", "role": "user", "content": [file]}])
    assert reply.status_code == 400
    assert "'input_file' content" in reply.json()["error"]["message"]
    assert len(upstream_.requests) == before  # nothing went upstream


def test_the_key_is_required_and_the_error_says_which_variable(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="set ANTHROPIC_API_KEY"):
        AnthropicMessagesProvider()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://upstream.test/")
    provider = AnthropicMessagesProvider()
    assert (provider.api_key, provider.base_url) == ("sk-env", "http://upstream.test")


# -- answers ---------------------------------------------------------------------------------


def test_parallel_tool_uses_stream_by_block():
    def use(index: int, call_id: str, pieces: list[str]) -> list[dict]:
        block = {"type": "tool_use", "id": call_id, "name": "f", "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        return [
            {"type": "content_block_start", "index": index, "content_block": block},
            *({"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas),
            {"type": "content_block_stop", "index": index},
        ]

    events = [*use(0, "t1", ['{"a"', ": 1}"]), *use(1, "t2", ['{"b": 2}']), {"type": "message_stop"}]
    got = steps(events)
    assert [type(step).__name__ for step in got] == [
        "FunctionCallStart", "ArgumentsDelta", "ArgumentsDelta", "FunctionCallEnd",
        "FunctionCallStart", "ArgumentsDelta", "FunctionCallEnd",
    ]  # fmt: skip
    assert got[0] == FunctionCallStart("f", call_id="t1") and got[3] == FunctionCallEnd()
    assert "".join(step.delta for step in got[1:3]) == '{"a": 1}'


def test_unknown_events_and_deltas_are_skipped_and_counted(caplog):
    events = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "hologram_delta"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "telepathy"},
        {"type": "message_stop"},
    ]
    with caplog.at_level(logging.WARNING, "openresponses_runtime.gateways"):
        got = steps(events)
    assert got == [TextDelta("hi")]
    assert "skipped 2 upstream events" in caplog.text


def test_pings_are_passed_over_without_a_word(caplog):
    events = [
        {"type": "ping"},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]
    with caplog.at_level(logging.WARNING, "openresponses_runtime.gateways"):
        assert steps(events) == [TextDelta("hi")]
    assert "skipped" not in caplog.text


def test_invalid_json_input_is_delivered_as_sent_with_a_warning(caplog):
    block = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
    events = [
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"a": '}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]
    with caplog.at_level(logging.WARNING, "openresponses_runtime.gateways"):
        got = steps(events)
    assert got[1].delta == '{"a": ' and "not valid JSON" in caplog.text


def test_thinking_streams_to_the_client_while_the_upstream_still_thinks(replay):
    base, upstream_ = replay
    release = threading.Event()
    thinking = {"type": "thinking", "thinking": "", "signature": ""}
    upstream_.answer(
        [
            START,
            frame({"type": "content_block_start", "index": 0, "content_block": thinking}),
            frame({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Hm"}}),
            release,
            frame({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "s"}}),
            frame({"type": "content_block_stop", "index": 0}),
            text_block("Done", 1),
            STOP,
        ]
    )
    body = {"model": "claude", "stream": True, "input": "Hi"}
    seen = event_types_until(base, body, "response.reasoning.delta")
    release.set()
    assert seen[0] == "response.created" and seen[-1] == "response.reasoning.delta"


def test_a_mid_stream_error_event_fails_the_response_in_the_stream(replay, shared):
    base, upstream_ = replay
    recorded = TEXT_SSE.read_bytes()
    cut = recorded[: recorded.index(b"event: content_block_stop")]
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    upstream_.answer(cut + frame(error))
    raw, events = stream(base, input="hi")
    assert check_sse(raw) == []
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"] and raw.endswith(b"data: [DONE]\n\n")
    assert "Overloaded" in events[-2]["error"]["message"] and events[-2]["error"]["code"] == "upstream_overloaded"
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "Hello"  # what the client was sent


def test_a_stream_that_stops_without_message_stop_fails_cleanly(replay):
    base, upstream_ = replay
    upstream_.answer(START + text_block("partial"))
    raw, events = stream(base, input="hi")
    assert check_sse(raw) == []
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2]["error"]["code"] == "upstream_stream_incomplete"


@pytest.mark.parametrize(
    ("status", "expected_status", "code"),
    [(529, 503, "upstream_overloaded"), (429, 429, None), (400, 400, "upstream_invalid_request"), (500, 502, None)],
)
def test_upstream_errors_keep_their_meaning_and_retry_after(replay, status, expected_status, code):
    base, upstream_ = replay
    kinds = {529: "overloaded_error", 429: "rate_limit_error", 400: "invalid_request_error", 500: "api_error"}
    body = {"type": "error", "error": {"type": kinds[status], "message": f"upstream says {status}"}}
    upstream_.answer(
        json.dumps(body).encode(), status=status, content_type="application/json", headers={"retry-after": "7"}
    )
    reply = post(base, input="hi")
    assert reply.status_code == expected_status
    error = reply.json()["error"]
    assert f"upstream says {status}" in error["message"] and set(error) == {"type", "code", "param", "message"}
    if code is not None:
        assert error["code"] == code
    if status in (429, 529):
        assert reply.headers["retry-after"] == "7"


def test_refused_credentials_are_a_server_error(replay):
    base, upstream_ = replay
    body = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    upstream_.answer(json.dumps(body).encode(), status=401, content_type="application/json")
    reply = post(base, input="hi")
    assert reply.status_code == 500 and reply.json()["error"]["code"] == "upstream_unauthorized"


def test_a_200_with_an_html_body_is_a_502_error_object(replay):
    base, upstream_ = replay
    upstream_.answer(b"<html>Bad gateway</html>", content_type="text/html")
    reply = post(base, input="hi")
    assert reply.status_code == 502
    assert reply.json()["error"]["code"] == "upstream_bad_response" and "text/html" in reply.json()["error"]["message"]


def test_an_unreachable_upstream_is_a_502():
    with served("http://127.0.0.1:9") as base:
        reply = post(base, input="hi")
    assert reply.status_code == 502 and reply.json()["error"]["code"] == "upstream_unreachable"


def test_turns_share_one_upstream_connection(replay):
    base, upstream = replay
    for text in ("One", "Two"):
        upstream.answer(START + text_block(text) + STOP)
        stream(base, input="Hi")
    first, second = upstream.clients[-2:]
    assert first == second  # the body was read to its end, so the connection went back to the pool
