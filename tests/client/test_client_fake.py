"""The client's error, retry and unknown-type paths, against a scripted fake server on loopback."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from openresponses_runtime import models
from openresponses_runtime._base import UnknownItem
from openresponses_runtime.client import (
    APIConnectionError,
    APIResponseValidationError,
    APITimeoutError,
    AsyncClient,
    BadRequestError,
    Client,
    ConfigurationError,
    InternalServerError,
    RateLimitError,
    StreamViolation,
)
from openresponses_runtime.events import GenericEvent
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..server_helpers import live_server

KEY = "sk-fake"


def response_body(output=None, status="completed", **extra) -> dict:
    """A complete ResponseResource as a server would send it."""
    return {
        "id": "resp_1", "object": "response", "created_at": 1, "completed_at": 2, "status": status,
        "incomplete_details": None, "model": "fake", "previous_response_id": None, "instructions": None,
        "output": output if output is not None else [message("Hello.")], "error": None, "tools": [],
        "tool_choice": "auto", "truncation": "disabled", "parallel_tool_calls": True,
        "text": {"format": {"type": "text"}}, "top_p": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0,
        "top_logprobs": 0, "temperature": 1.0, "reasoning": None, "usage": None, "max_output_tokens": None,
        "max_tool_calls": None, "store": True, "background": False, "service_tier": "default", "metadata": {},
        "safety_identifier": None, "prompt_cache_key": None, **extra,
    }  # fmt: skip


def message(text: str, item_id: str = "msg_1") -> dict:
    return {
        "type": "message", "id": item_id, "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }  # fmt: skip


def error_body(status_type: str, code: str, message: str, param=None) -> dict:
    return {"error": {"type": status_type, "code": code, "message": message, "param": param}}


def sse(*events) -> bytes:
    out = b""
    for i, event in enumerate(events):
        if event == "[DONE]":
            out += b"data: [DONE]\n\n"
        else:
            event = {"sequence_number": i, **event}
            out += f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
    return out


def text_stream(text: str = "Hello.", *, extra_events=(), output_item=None) -> list:
    item = output_item or message(text)
    done = response_body([item])
    started = response_body([], status="in_progress", completed_at=None)
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    return [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
        *extra_events,
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress", "content": []}},
        {"type": "response.content_part.added", "output_index": 0, "content_index": 0, "item_id": item["id"], "part": part},
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": item["id"], "delta": text, "logprobs": []},
        {"type": "response.output_text.done", "output_index": 0, "content_index": 0, "item_id": item["id"], "text": text, "logprobs": []},
        {"type": "response.content_part.done", "output_index": 0, "content_index": 0, "item_id": item["id"], "part": {**part, "text": text}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": done},
        "[DONE]",
    ]  # fmt: skip


class Script:
    """The fake server: answers each request with the next scripted reply, and records what came in."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests: list[dict] = []

    def app(self) -> Starlette:
        async def endpoint(request):
            body = await request.body()
            self.requests.append({"headers": dict(request.headers), "body": json.loads(body) if body else None})
            reply = self.replies.pop(0)
            return await reply() if asyncio.iscoroutinefunction(reply) else reply()

        return Starlette(routes=[Route("/v1/responses", endpoint, methods=["POST"])])


@pytest.fixture
def serve():
    servers = []

    def start(*replies) -> tuple[Script, str]:
        script = Script(*replies)
        server = live_server(script.app())
        servers.append(server)
        return script, server.__enter__()

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def ok(body=None):
    return lambda: JSONResponse(body or response_body())


def status(code: int, body: dict, headers=None):
    return lambda: JSONResponse(body, status_code=code, headers=headers)


def streaming(events):
    return lambda: Response(sse(*events), media_type="text/event-stream")


def test_sends_authorization_and_content_type(serve):
    script, base = serve(ok())
    response = Client(base_url=base, api_key=KEY).responses.create(model="m", input="hi", temperature=0.5)
    assert isinstance(response, models.ResponseResource)
    sent = script.requests[0]
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"
    assert sent["headers"]["content-type"] == "application/json"
    assert sent["body"] == {"model": "m", "input": "hi", "temperature": 0.5}


def test_vendor_keywords_go_out_under_their_json_names(serve):
    script, base = serve(ok())
    servers = [{"type": "url", "url": "https://mcp.example/sse", "name": "docs"}]
    Client(base_url=base, api_key=KEY).responses.create(
        model="m", input="hi", anthropic_mcp_servers=servers, extra_body={"zeta:priority": 3}
    )
    assert script.requests[0]["body"] == {
        "model": "m", "input": "hi", "anthropic:mcp_servers": servers, "zeta:priority": 3,
    }  # fmt: skip


def test_final_response_is_built_from_deltas_when_the_terminal_event_lists_no_output(serve):
    done = ("response.output_text.done", "response.content_part.done", "response.output_item.done")
    events = [e for e in text_stream("Built from deltas.") if e == "[DONE]" or e["type"] not in done]
    events[-2]["response"]["output"] = []
    _, base = serve(streaming(events))
    final = Client(base_url=base, api_key=KEY).responses.create(model="m", input="hi", stream=True).final_response()
    assert final.output[0].content[0].text == "Built from deltas."


def test_429_is_retried_after_retry_after(serve):
    script, base = serve(
        status(429, error_body("rate_limit_error", "rate_limited", "slow down"), {"Retry-After": "0.3"}), ok()
    )
    started = time.monotonic()
    response = Client(base_url=base, api_key=KEY).responses.create(model="m", input="hi")
    assert response.status == "completed" and len(script.requests) == 2
    assert time.monotonic() - started >= 0.3


def test_500_is_retried_with_backoff(serve):
    script, base = serve(status(500, error_body("server_error", "boom", "it broke")), ok())
    assert Client(base_url=base, api_key=KEY).responses.create(model="m", input="hi").status == "completed"
    assert len(script.requests) == 2


def test_retries_run_out(serve):
    failing = status(503, error_body("server_error", "overloaded", "busy"), {"Retry-After": "0"})
    script, base = serve(failing, failing, failing)
    with pytest.raises(InternalServerError) as info:
        Client(base_url=base, api_key=KEY, max_retries=2).responses.create(model="m", input="hi")
    assert info.value.status_code == 503 and info.value.code == "overloaded" and len(script.requests) == 3


def test_per_call_max_retries(serve):
    script, base = serve(status(429, error_body("rate_limit_error", "rate_limited", "slow down"), {"Retry-After": "0"}))
    with pytest.raises(RateLimitError):
        Client(base_url=base, api_key=KEY, max_retries=5).responses.create(model="m", input="hi", max_retries=0)
    assert len(script.requests) == 1


def test_400_carries_param_and_is_not_retried(serve):
    script, base = serve(status(400, error_body("invalid_request", "invalid_value", "bad input", "input")), ok())
    with pytest.raises(BadRequestError) as info:
        Client(base_url=base, api_key=KEY).responses.create(model="m", input="hi")
    error = info.value
    assert (error.status_code, error.type, error.code, error.param) == (
        400,
        "invalid_request",
        "invalid_value",
        "input",
    )
    assert str(error) == "HTTP 400: bad input (param: input)" and len(script.requests) == 1


def test_dropped_connection_mid_stream_is_raised_not_retried(serve):
    async def broken():
        async def body():
            yield sse(*text_stream()[:3])
            raise RuntimeError("the server dies mid-stream")

        return StreamingResponse(body(), media_type="text/event-stream")

    script, base = serve(broken, streaming(text_stream()))
    stream = Client(base_url=base, api_key=KEY).responses.create(model="m", input="hi", stream=True)
    seen = []
    with pytest.raises(APIConnectionError, match="mid-stream"):
        for event in stream:
            seen.append(event.type)
    assert seen[:2] == ["response.created", "response.in_progress"] and len(script.requests) == 1


def test_stream_ending_without_a_terminal_event_is_an_error(serve):
    _, base = serve(streaming(text_stream()[:4]))
    with pytest.raises(APIConnectionError, match="terminal event"):
        Client(base_url=base, api_key=KEY).responses.create(model="m", input="hi", stream=True).final_response()


def test_unknown_event_and_item_types_pass_through(serve):
    widget = {"type": "zeta:widget", "id": "wid_1", "status": "completed", "size": 3}
    events = text_stream(extra_events=[{"type": "zeta:tick", "beat": 1}])
    events[-2:-2] = [
        {"type": "response.output_item.added", "output_index": 1, "item": {**widget, "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 1, "item": widget},
    ]
    events[-2]["response"]["output"].append(widget)
    _, base = serve(streaming(events), streaming(events), ok(response_body([message("Hi."), widget])))
    client = Client(base_url=base, api_key=KEY)
    stream = client.responses.create(model="m", input="hi", stream=True)
    received = list(stream)
    unknown = [e for e in received if e.type == "zeta:tick"]
    assert len(unknown) == 1 and isinstance(unknown[0], GenericEvent) and unknown[0].beat == 1
    final = stream.final_response()
    assert isinstance(final.output[1], UnknownItem) and final.output[1].size == 3
    checked = client.responses.create(model="m", input="hi", stream=True, check=True)
    assert checked.final_response().output[0].content[0].text == "Hello."  # unknown types break no rule
    plain = client.responses.create(model="m", input="hi")
    assert isinstance(plain.output[1], UnknownItem) and plain.output[1].type == "zeta:widget"


def test_check_raises_stream_violation_naming_the_rule(serve):
    events = text_stream()
    events[5]["sequence_number"] = 2  # goes backwards
    _, base = serve(streaming(events), streaming(text_stream()[:-1]))
    client = Client(base_url=base, api_key=KEY)
    with pytest.raises(StreamViolation) as info:
        list(client.responses.create(model="m", input="hi", stream=True, check=True))
    assert info.value.rule == "sequence" and info.value.sequence_number == 2
    with pytest.raises(StreamViolation) as missing:
        client.responses.create(model="m", input="hi", stream=True, check=True).final_response()
    assert missing.value.rule == "done-marker"


def test_known_event_breaking_its_schema_is_passed_on_and_reported(serve):
    events = text_stream()
    del events[4]["delta"]
    _, base = serve(streaming(events), streaming(events))
    told = []
    client = Client(base_url=base, api_key=KEY, on_invalid=told.append)
    with client.responses.create(model="m", input="hi", stream=True) as stream:
        read = list(stream)
        final = stream.final_response()
    assert [e.type for e in read] == [e["type"] for e in events[:-1]]
    assert read[4].delta is None and read[4].item_id == "msg_1"  # built from the fields it has
    assert [(i.type, i.sequence_number) for i in stream.issues] == [("response.output_text.delta", 4)]
    assert stream.issues[0].issues[0].path == "delta" and told == stream.issues
    assert final.output[0].content[0].text == "Hello."  # the done events carry the text
    strict = Client(base_url=base, api_key=KEY, validate="strict")
    with pytest.raises(APIResponseValidationError) as info:
        list(strict.responses.create(model="m", input="hi", stream=True))
    assert str(info.value) == (
        "event response.output_text.delta (sequence_number 4) breaks the spec's schema: delta: Field required"
    )
    assert info.value.event_type == "response.output_text.delta" and info.value.status_code == 200


def test_answer_breaking_its_schema_is_passed_on_and_reported(serve):
    body = response_body()
    del body["completed_at"]
    body["status"] = 42
    _, base = serve(ok(body), ok(body))
    told = []
    response = Client(base_url=base, api_key=KEY, on_invalid=told.append).responses.create(model="m", input="hi")
    assert response.status == 42 and response.completed_at is None and response.output[0].content[0].text == "Hello."
    assert [i.path for i in told[0].issues] == ["completed_at", "status"]
    with pytest.raises(APIResponseValidationError, match="the answer to POST /v1/responses breaks") as info:
        Client(base_url=base, api_key=KEY, validate="strict").responses.create(model="m", input="hi")
    assert info.value.status_code == 200 and info.value.body["status"] == 42
    with pytest.raises(ConfigurationError, match="validate"):
        Client(base_url=base, api_key=KEY, validate="loose")


def test_answer_that_is_not_json_raises_in_either_mode(serve):
    _, base = serve(lambda: Response(b"<html>oops</html>", media_type="text/html"))
    with pytest.raises(APIResponseValidationError, match="the answer to POST /v1/responses is not JSON") as info:
        Client(base_url=base, api_key=KEY, max_retries=0).responses.create(model="m", input="hi")
    assert info.value.status_code == 200 and info.value.body == b"<html>oops</html>"


def test_timeout(serve):
    async def slow():
        await asyncio.sleep(2)
        return JSONResponse(response_body())

    _, base = serve(slow)
    with pytest.raises(APITimeoutError):
        Client(base_url=base, api_key=KEY, timeout=0.2, max_retries=0).responses.create(model="m", input="hi")


def test_configuration_from_the_environment(serve, monkeypatch):
    script, base = serve(ok())
    monkeypatch.setenv("OPENRESPONSES_BASE_URL", base)
    monkeypatch.setenv("OPENRESPONSES_API_KEY", "sk-from-env")
    Client().responses.create(model="m", input="hi")
    assert script.requests[0]["headers"]["authorization"] == "Bearer sk-from-env"
    monkeypatch.delenv("OPENRESPONSES_API_KEY")
    with pytest.raises(ConfigurationError, match="OPENRESPONSES_API_KEY"):
        Client()
    monkeypatch.delenv("OPENRESPONSES_BASE_URL")
    with pytest.raises(ConfigurationError, match="OPENRESPONSES_BASE_URL"):
        Client(api_key="sk")
    assert len(script.requests) == 1


def test_loop_answers_an_unknown_tool_with_an_error_output(serve):
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "ghost",
        "arguments": "{}",
        "status": "completed",
    }
    script, base = serve(ok(response_body([call])), ok(response_body([message("Sorry.")])))

    def known() -> str:
        """A tool the model did not call."""
        return "never"

    result = Client(base_url=base, api_key=KEY).responses.run(model="m", input="hi", tools=[known])
    assert result.completed and result.output_text == "Sorry."
    (output,) = script.requests[1]["body"]["input"]
    assert output["call_id"] == "call_1" and output["output"].startswith("Error: no tool named 'ghost'")
    assert result.tool_calls[0].error


def test_loop_reports_arguments_that_do_not_fit(serve):
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "add",
        "arguments": '{"a": "x"}',
        "status": "completed",
    }
    script, base = serve(ok(response_body([call])), ok(response_body([message("Done.")])))

    def add(a: int, b: int = 0) -> int:
        """Add two numbers."""
        return a + b

    result = Client(base_url=base, api_key=KEY).responses.run(model="m", input="hi", tools=[add])
    assert result.tool_calls[0].error and "the arguments do not fit add" in result.tool_calls[0].output


def test_async_retries_and_errors(serve):
    script, base = serve(
        status(429, error_body("rate_limit_error", "rate_limited", "slow down"), {"Retry-After": "0"}),
        ok(),
        status(400, error_body("invalid_request", "invalid_value", "bad", "input")),
    )

    async def main():
        async with AsyncClient(base_url=base, api_key=KEY) as client:
            first = await client.responses.create(model="m", input="hi")
            with pytest.raises(BadRequestError) as info:
                await client.responses.create(model="m", input="hi")
            return first, info.value

    first, error = asyncio.run(main())
    assert first.status == "completed" and error.param == "input" and len(script.requests) == 3
