"""The Chat Completions gateway (`openresponses_runtime.gateways.chat_completions`): the translation
both ways, and what it does with an upstream that misbehaves."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time

import httpx
import pytest
from openresponses_runtime.gateways.chat_completions import ChatCompletionsProvider, steps_from_chunks, to_chat_messages
from openresponses_runtime.server import (
    ArgumentsDelta,
    FunctionCallEnd,
    FunctionCallStart,
    Incomplete,
    ReasoningDelta,
    ReasoningEnd,
    TextDelta,
    UsageReport,
)
from openresponses_runtime.streaming import check_sse

from .. import cpu_time
from ..server_helpers import API_KEY
from ..upstream_replay import DONE, chunk, event_types_until, gateway, upstream

HEADERS = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture(scope="module")
def upstream_url():
    with upstream() as (url, replay):
        yield url, replay


@pytest.fixture(scope="module")
def replay(upstream_url):
    url, replay = upstream_url
    with gateway(url) as base:
        yield base, replay


@pytest.fixture(scope="module")
def openrouter_gateway(upstream_url):
    """A gateway told that the upstream `replay` serves is OpenRouter: its base URL."""
    with gateway(upstream_url[0], reasoning_field="reasoning") as base:
        yield base


def stream(base: str, **body) -> tuple[bytes, list[dict]]:
    """The gateway's SSE answer to a streamed request: the raw bytes and the events."""
    with httpx.stream("POST", base + "/responses", json={"model": "m", "stream": True, **body}, headers=HEADERS) as r:
        assert r.status_code == 200, r.read()
        raw = r.read()
    events = [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: {")]
    return raw, events


def steps(chunks: list[dict]) -> list:
    async def source():
        for item in chunks:
            yield item

    async def collect():
        return [step async for step in steps_from_chunks(source())]

    return asyncio.run(collect())


def delta(**fields) -> dict:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def finish(reason: str = "stop") -> dict:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


# -- requests --------------------------------------------------------------------------------


def test_context_translation():
    items = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Look:"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "low"},
        ]},
        {"type": "function_call", "call_id": "c1", "name": "a", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "b", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "one"},
        {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "two"}]},
        {"type": "reasoning", "summary": []},
    ]  # fmt: skip
    messages = to_chat_messages(items, "Answer in French.")
    assert [m["role"] for m in messages] == ["system", "system", "user", "assistant", "tool", "tool"]
    assert messages[2]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"},
    }
    assert [c["id"] for c in messages[3]["tool_calls"]] == ["c1", "c2"]  # parallel calls share one message
    assert messages[5] == {"role": "tool", "tool_call_id": "c2", "content": "two"}


def test_an_assistant_text_and_the_calls_after_it_are_one_message():
    items = [
        {"type": "message", "role": "user", "content": "Weather?"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    ]
    messages = to_chat_messages(items)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[1]["content"] == "Let me look." and messages[1]["tool_calls"][0]["id"] == "c1"


def test_signed_reasoning_details_go_back_on_the_next_assistant_message():
    details = [{"type": "reasoning.text", "text": "Hm.", "signature": "c2lnbmVk", "index": 0}]
    items = [
        {"type": "message", "role": "user", "content": "Hi"},
        {"type": "reasoning", "summary": [], "encrypted_content": json.dumps({"reasoning_details": details})},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello"}]},
        {"type": "reasoning", "summary": [], "encrypted_content": "someone else's"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Again"}]},
    ]
    messages = to_chat_messages(items)
    assert messages[1] == {"role": "assistant", "content": "Hello", "reasoning_details": details}
    assert messages[2] == {"role": "assistant", "content": "Again"}


def test_settings_go_upstream(replay):
    base, upstream = replay
    upstream.answer([chunk({"content": "{}"}), chunk({}, "stop"), DONE])
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    stream(
        base,
        input="Hi",
        max_output_tokens=64,
        temperature=0.5,
        reasoning={"effort": "low"},
        text={"format": {"type": "json_schema", "name": "empty", "schema": schema, "strict": True}},
    )
    sent = upstream.requests[-1]
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "empty", "schema": schema, "strict": True},
    }
    assert sent["reasoning_effort"] == "low" and sent["temperature"] == 0.5
    assert sent["max_tokens"] == 64 and "max_completion_tokens" not in sent


def test_api_openai_com_gets_max_completion_tokens_and_the_field_can_be_chosen():
    assert ChatCompletionsProvider(base_url="https://api.openai.com/v1").max_tokens_field == "max_completion_tokens"
    assert ChatCompletionsProvider(base_url="http://127.0.0.1:8000/v1").max_tokens_field == "max_tokens"
    chosen = ChatCompletionsProvider(base_url="https://api.openai.com/v1", max_tokens_field="max_tokens")
    assert chosen.max_tokens_field == "max_tokens"


@pytest.mark.parametrize(
    ("reasoning", "openai_style", "openrouter"),
    [
        (None, {}, {}),
        ({"effort": "none"}, {"reasoning_effort": "none"}, {"reasoning": {"effort": "none"}}),
        ({"effort": "low"}, {"reasoning_effort": "low"}, {"reasoning": {"effort": "low"}}),
        ({"effort": "medium"}, {"reasoning_effort": "medium"}, {"reasoning": {"effort": "medium"}}),
        ({"effort": "high"}, {"reasoning_effort": "high"}, {"reasoning": {"effort": "high"}}),
        ({"effort": "xhigh"}, {"reasoning_effort": "xhigh"}, {"reasoning": {"effort": "xhigh"}}),
        ({"summary": "auto"}, {}, {"reasoning": {"enabled": True}}),
        ({"effort": "high", "summary": "detailed"}, {"reasoning_effort": "high"}, {"reasoning": {"effort": "high"}}),
    ],
    ids=["absent", "none", "low", "medium", "high", "xhigh", "summary", "high-summary"],
)
def test_reasoning_goes_as_each_upstream_takes_it(replay, openrouter_gateway, reasoning, openai_style, openrouter):
    body = {"reasoning": reasoning} if reasoning else {}
    base, upstream_ = replay
    for gateway_base in (base, openrouter_gateway):  # the same upstream behind both
        upstream_.answer([chunk({"content": "Hi"}, "stop"), DONE])
        stream(gateway_base, input="Hi", **body)
    sent = [{key: r[key] for key in ("reasoning_effort", "reasoning") if key in r} for r in upstream_.requests[-2:]]
    assert sent == [openai_style, openrouter]


def test_openrouter_is_known_by_its_host_and_the_field_can_be_chosen():
    assert ChatCompletionsProvider(base_url="https://openrouter.ai/api/v1").reasoning_field == "reasoning"
    assert ChatCompletionsProvider(base_url="https://api.groq.com/openai/v1").reasoning_field == "reasoning_effort"
    chosen = ChatCompletionsProvider(base_url="https://openrouter.ai/api/v1", reasoning_field="reasoning_effort")
    assert chosen.reasoning_field == "reasoning_effort"
    with pytest.raises(ValueError, match="reasoning_field='thinking': choose 'reasoning_effort' or 'reasoning'"):
        ChatCompletionsProvider(base_url="http://127.0.0.1:8000/v1", reasoning_field="thinking")


# -- answers ---------------------------------------------------------------------------------


def test_tool_call_deltas_become_steps():
    chunks = [
        delta(tool_calls=[{"index": 0, "id": "call_a", "function": {"name": "get_", "arguments": ""}}]),
        delta(tool_calls=[{"index": 0, "function": {"name": "weather", "arguments": '{"ci'}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": 'ty": "Paris"}'}}]),
        delta(tool_calls=[{"index": 1, "id": "call_b", "function": {"name": "get_time", "arguments": "{}"}}]),
        finish("length"),
    ]
    assert steps(chunks) == [
        FunctionCallStart("get_weather", call_id="call_a"),
        ArgumentsDelta('{"ci'),
        ArgumentsDelta('ty": "Paris"}'),
        FunctionCallEnd(),
        FunctionCallStart("get_time", call_id="call_b"),
        ArgumentsDelta("{}"),
        FunctionCallEnd(),
        Incomplete("max_output_tokens"),
    ]


def test_reasoning_of_each_dialect_streams_and_signed_details_are_kept():
    signed = [
        delta(reasoning="Hm", reasoning_details=[{"type": "reasoning.text", "text": "Hm", "index": 0}]),
        delta(reasoning=".", reasoning_details=[{"type": "reasoning.text", "text": ".", "index": 0}]),
        delta(reasoning_details=[{"type": "reasoning.text", "signature": "sig", "index": 0}]),
        delta(content="Hi"),
        finish(),
    ]
    kept = json.dumps(
        {"reasoning_details": [{"type": "reasoning.text", "text": "Hm.", "index": 0, "signature": "sig"}]}
    )
    assert steps(signed) == [ReasoningDelta("Hm"), ReasoningDelta("."), ReasoningEnd(kept), TextDelta("Hi")]
    ours = json.dumps({"reasoning_details": []})  # no details: the item still known for this gateway's
    deepseek = [delta(reasoning_content="Think"), delta(content="Answer"), finish()]
    assert steps(deepseek) == [ReasoningDelta("Think"), ReasoningEnd(ours), TextDelta("Answer")]
    groq = [delta(reasoning="Plan", channel="analysis"), delta(tool_calls=[{"index": 0, "id": "fc_1", "function": {"name": "f", "arguments": "{}"}}]), finish("tool_calls")]  # fmt: skip
    assert steps(groq)[:3] == [ReasoningDelta("Plan"), ReasoningEnd(ours), FunctionCallStart("f", call_id="fc_1")]


def test_usage_from_x_groq_and_none_when_the_upstream_sends_none():
    groq = [delta(content="Hi"), {**finish(), "x_groq": {"usage": {"prompt_tokens": 18, "completion_tokens": 73}}}]
    assert steps(groq)[-1] == UsageReport(18, 73)
    assert not any(isinstance(step, UsageReport) for step in steps([delta(content="Hi"), finish()]))


def test_only_choice_zero_is_read():
    both = [
        {"choices": [{"index": 0, "delta": {"content": "I'm"}}, {"index": 1, "delta": {"content": "I am"}}]},
        {"choices": [{"index": 1, "delta": {"content": " sure"}, "finish_reason": "stop"}]},
        {"choices": [{"index": 0, "delta": {"content": " here"}, "finish_reason": "stop"}]},
    ]
    assert steps(both) == [TextDelta("I'm"), TextDelta(" here")]


def test_unknown_chunk_shapes_are_skipped_and_counted(caplog):
    odd = [
        {"choices": "soon"},
        {"choices": [7, {"index": 0, "delta": "x"}]},
        {"object": "ping"},
        delta(content=["a", "list"]),
        delta(tool_calls={"index": 0}),
        delta(tool_calls=["call"]),
        delta(tool_calls=[{"index": 0, "function": "f()"}]),
        delta(content="ok"),
    ]
    with caplog.at_level(logging.WARNING, "openresponses_runtime.gateways"):
        assert steps([*odd, finish()]) == [TextDelta("ok")]
    assert "skipped 8 upstream chunks of a shape this gateway does not know" in caplog.text


def test_first_events_arrive_while_the_upstream_still_reasons(replay):
    base, upstream = replay
    release = threading.Event()
    upstream.answer([chunk({"reasoning_content": "Thinking"}), release, chunk({"content": "Done"}, "stop"), DONE])
    body = {"model": "m", "stream": True, "input": "Hi"}
    seen = event_types_until(base, body, "response.reasoning.delta")
    release.set()
    assert seen[0] == "response.created" and seen[-1] == "response.reasoning.delta"


def test_the_stream_begins_when_the_upstream_accepts_before_its_first_chunk(replay):
    base, upstream = replay
    release = threading.Event()
    upstream.answer([release, chunk({"content": "Late"}, "stop"), DONE])  # headers now, the body later
    body = {"model": "m", "stream": True, "input": "Hi"}
    with httpx.stream("POST", base + "/responses", json=body, headers=HEADERS, timeout=10) as reply:
        lines = reply.iter_lines()
        first = next(line for line in lines if line.startswith("data: {"))
        release.set()
        rest = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
    assert json.loads(first[6:])["type"] == "response.created"
    assert (
        rest[-1]["type"] == "response.completed" and rest[-1]["response"]["output"][0]["content"][0]["text"] == "Late"
    )


def test_an_error_before_any_output_still_ends_the_stream_in_it(replay):
    base, upstream = replay
    error = {"error": {"message": "Overloaded", "type": "server_error"}}
    upstream.answer([chunk({"role": "assistant", "content": ""}), b"data: " + json.dumps(error).encode() + b"\n\n"])
    raw, events = stream(base, input="Hi")
    assert [e["type"] for e in events] == ["response.created", "response.in_progress", "error", "response.failed"]
    assert events[-2]["error"]["message"] == "The upstream failed mid-stream: Overloaded"
    assert check_sse(raw) == []


def test_a_mid_stream_error_fails_the_response_in_the_stream(replay):
    base, upstream = replay
    error = {"error": {"message": "Tool call validation failed", "code": "tool_use_failed"}}
    upstream.answer([chunk({"reasoning": "We"}), b"event: error\ndata: " + json.dumps(error).encode() + b"\n\n"])
    raw, events = stream(base, input="Hi")
    assert [e["type"] for e in events][-2:] == ["error", "response.failed"]
    assert events[-2]["error"]["message"] == "The upstream failed mid-stream: Tool call validation failed"
    assert events[-1]["response"]["output"][0]["content"] == [{"type": "reasoning_text", "text": "We"}]
    assert [v for v in check_sse(raw) if not v.is_warning] == []


def test_length_then_an_error_chunk_is_incomplete(replay):
    base, upstream = replay
    usage = {"prompt_tokens": 43, "completion_tokens": 10}
    upstream.answer([
        chunk({"content": "Hel"}),
        chunk({}, "length"),
        chunk({"content": ""}, error={"code": 400, "message": "Token limit reached"}, usage=usage),
        DONE,
    ])  # fmt: skip
    raw, events = stream(base, input="Hi", max_output_tokens=16)
    final = events[-1]["response"]
    assert events[-1]["type"] == "response.incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert (final["usage"]["input_tokens"], final["usage"]["output_tokens"]) == (43, 10)
    assert [v for v in check_sse(raw) if not v.is_warning] == []


# -- an upstream that misbehaves -------------------------------------------------------------


def test_a_stream_that_stops_without_its_end_fails_cleanly(replay):
    base, upstream = replay
    upstream.answer([chunk({"content": "Half an ans"})])  # no finish_reason, no [DONE]: the connection closed
    raw, events = stream(base, input="Hi")
    assert [e["type"] for e in events][-2:] == ["error", "response.failed"]
    assert events[-2]["error"]["code"] == "upstream_stream_incomplete"
    assert raw.endswith(b"data: [DONE]\n\n")
    assert [v for v in check_sse(raw) if not v.is_warning] == []


def test_a_200_with_an_html_body_is_a_502_error_object(replay):
    base, upstream = replay
    upstream.answer(b"<html><body>Bad gateway</body></html>", content_type="text/html")
    reply = httpx.post(base + "/responses", json={"model": "m", "input": "Hi", "stream": True}, headers=HEADERS)
    assert reply.status_code == 502
    error = reply.json()["error"]
    assert set(error) == {"type", "code", "param", "message"}
    assert error["code"] == "upstream_bad_response"
    assert error["message"].startswith("The upstream answered 200 with text/html, not an event stream")


def test_a_rate_limit_keeps_its_status_and_retry_after(replay):
    base, upstream = replay
    body = json.dumps({"error": {"message": "Slow down"}}).encode()
    upstream.answer(body, status=429, content_type="application/json", headers={"Retry-After": "7"})
    reply = httpx.post(base + "/responses", json={"model": "m", "input": "Hi"}, headers=HEADERS)
    assert reply.status_code == 429 and reply.headers["retry-after"] == "7"
    assert reply.json()["error"]["message"] == "The upstream is rate limited: Slow down"


def test_invalid_json_arguments_are_delivered_as_sent_with_a_warning(caplog):
    broken = [delta(tool_calls=[{"index": 0, "id": "call_x", "function": {"name": "f", "arguments": '{"a": '}}]), finish("tool_calls")]  # fmt: skip
    with caplog.at_level(logging.WARNING, "openresponses_runtime.gateways"):
        assert steps(broken) == [FunctionCallStart("f", call_id="call_x"), ArgumentsDelta('{"a": '), FunctionCallEnd()]
    assert "tool call call_x (f): the upstream's arguments are not valid JSON" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, "openresponses_runtime.gateways"):
        steps([delta(tool_calls=[{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]), finish()])
    assert "not valid JSON" not in caplog.text


def test_an_error_after_the_finish_reason_leaves_the_whole_answer_alone():
    after_stop = [delta(content="Hi"), finish("stop"), {"error": {"message": "late"}}]
    assert steps(after_stop) == [TextDelta("Hi")]
    after_length = [delta(content="Hi"), finish("length"), {"error": {"message": "Token limit reached"}}]
    assert steps(after_length) == [TextDelta("Hi"), Incomplete("max_output_tokens")]


def test_text_after_a_call_whose_arguments_never_came_opens_and_ends_that_call_first():
    named = [delta(tool_calls=[{"index": 0, "id": "call_a", "function": {"name": "f", "arguments": ""}}])]
    assert steps([*named, delta(content="Done."), finish()]) == [
        FunctionCallStart("f", call_id="call_a"),
        FunctionCallEnd(),
        TextDelta("Done."),
    ]


def test_turns_share_one_upstream_connection(replay):
    base, upstream = replay
    for text in ("One", "Two"):
        upstream.answer([chunk({"content": text}), chunk({}, "stop"), DONE])
        stream(base, input="Hi")
    first, second = upstream.clients[-2:]
    assert first == second  # the body was read to its end, so the connection went back to the pool


def test_an_upstream_that_keeps_its_body_open_after_done_delays_the_end_a_second_at_most(replay):
    base, upstream = replay
    hold = threading.Event()
    upstream.answer([chunk({"content": "Hi"}), chunk({}, "stop"), DONE, hold])
    started = time.monotonic()
    try:
        _, events = stream(base, input="Hi")
    finally:
        hold.set()
    assert events[-1]["type"] == "response.completed"
    took = time.monotonic() - started
    assert took < cpu_time.scaled(4)  # the reading gives up after one second


def test_reasoning_text_that_cannot_go_upstream_is_said_so(replay):
    """Chat Completions takes no reasoning text back: a reasoning item with text and no
    `reasoning_details` of this gateway's is left out, and named in `OpenResponses-Ignored`."""
    base, upstream_ = replay
    thought = {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "Hmm."}]}
    summary = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Thought."}]}
    empty = {"type": "reasoning", "summary": []}  # nothing lost: nothing said
    headers = []
    for item in (thought, summary, empty):
        upstream_.answer([chunk({"content": "Hi"}), chunk({}, "stop"), DONE])
        history = [{"role": "user", "content": "hi"}, item, {"role": "assistant", "content": "Hello."}]
        reply = httpx.post(
            base + "/responses", json={"model": "m", "input": [*history, {"role": "user", "content": "and?"}]},
            headers=HEADERS, timeout=30,
        )  # fmt: skip
        assert reply.status_code == 200, reply.text
        sent = upstream_.requests[-1]["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "user"] and "reasoning" not in json.dumps(sent)
        headers.append(reply.headers.get("OpenResponses-Ignored"))
    assert headers == ["item:reasoning", "item:reasoning", None]
