"""The server refuses what it cannot honour, with the spec's error object and the exact `param`,
over HTTP and WebSocket, in both modes; a strict server also refuses the parameters and tool types
a tolerant one ignores (test_server_acceptance.py); real clients (the `openai` SDK, an
`openai-agents` Agent) keep working."""

from __future__ import annotations

import asyncio
import json
import logging

import httpx
import openai
import pytest
from openresponses_runtime.server import Accept, MemoryStore, create_app
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from ..server_helpers import API_KEY, RecordingProvider, live_server, ws_turn

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current conditions for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
HELLO = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}


@pytest.fixture(scope="module")
def provider():
    return RecordingProvider()


@pytest.fixture(scope="module")
def server(provider):
    app = create_app(provider, store=MemoryStore(), api_keys=API_KEY, debug=True)
    with live_server(app) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def strict_server(provider):
    app = create_app(provider, store=MemoryStore(), api_keys=API_KEY, debug=True, strict=True)
    with live_server(app) as base_url:
        yield base_url


@pytest.fixture(params=["tolerant", "strict"])
def any_server(request):
    """Each server in turn: what both refuse."""
    return request.getfixturevalue("server" if request.param == "tolerant" else "strict_server")


def post(server: str, body: dict) -> httpx.Response:
    return httpx.post(server + "/responses", json=body, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30)


def refused(response: httpx.Response, status: int = 400) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"type", "code", "param", "message"} and error["type"] == "invalid_request"
    return error


# (body, code, param): each refused with a 400 before the provider runs, in both modes.
REFUSALS = {
    "unknown item type": (
        {"input": [HELLO, HELLO, HELLO, {"type": "bogus_item", "x": 1}]},
        "unsupported_item_type",
        "input[3].type",
    ),
    "unknown content part": (
        {
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "a"}, {"type": "input_hologram"}],
                }
            ]
        },
        "unsupported_content_type",
        "input[0].content[1].type",
    ),
    "orphan function_call_output": (
        {"input": [HELLO, {"type": "function_call_output", "call_id": "call_nowhere", "output": "42"}]},
        "function_call_not_found",
        "input",
    ),
    "tool_choice naming a missing tool": (
        {"input": "hi", "tools": [WEATHER], "tool_choice": {"type": "function", "name": "get_time"}},
        "unknown_tool",
        "tool_choice.name",
    ),
}
# What only a strict server refuses (a tolerant one ignores it and says so).
STRICT_REFUSALS = {
    "unknown parameter": ({"input": "hi", "conversation": "conv_1"}, "unknown_parameter", "conversation"),
    "undeclared vendor parameter": ({"input": "hi", "zeta:boost": True}, "unknown_parameter", "zeta:boost"),
    "unknown tool type": (
        {"input": "hi", "tools": [WEATHER, {"type": "bogus_tool"}]},
        "unsupported_tool_type",
        "tools[1].type",
    ),
    "OpenAI's web_search": (
        {"input": "hi", "tools": [{"type": "web_search", "external_web_access": False}]},
        "unsupported_tool_type",
        "tools[0].type",
    ),
    "namespace": (
        {"input": "hi", "tools": [{"type": "namespace", "name": "weather", "description": "w", "tools": [WEATHER]}]},
        "unsupported_tool_type",
        "tools[0].type",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_http_refusals(any_server, provider, case):
    body, code, param = REFUSALS[case]
    before = len(provider.requests)
    for stream in (False, True):
        error = refused(post(any_server, {**body, "stream": stream}))
        assert (error["code"], error["param"]) == (code, param)
    assert len(provider.requests) == before  # the provider never saw it


@pytest.mark.parametrize("case", sorted(STRICT_REFUSALS))
def test_http_strict_refusals(strict_server, provider, case):
    body, code, param = STRICT_REFUSALS[case]
    before = len(provider.requests)
    for stream in (False, True):
        error = refused(post(strict_server, {**body, "stream": stream}))
        assert (error["code"], error["param"]) == (code, param)
    assert len(provider.requests) == before


def test_what_the_spec_and_its_fragments_declare_is_accepted(server):
    # `anthropic:mcp_servers` is declared by a vendor fragment the server was built with
    assert post(server, {"input": "hi", "anthropic:mcp_servers": []}).status_code == 200
    vendor_item = {
        "type": "openai:web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "q"},
    }
    assert post(server, {"input": [vendor_item, HELLO]}).status_code == 200
    # a function_call_output answering a call in the same input
    call = {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "sunny"}
    assert post(server, {"input": [HELLO, call, output]}).status_code == 200


def test_function_call_output_answers_a_call_of_the_previous_response(server):
    first = post(server, {"input": "what is the weather in Paris?", "tools": [WEATHER]}).json()
    (call,) = [item for item in first["output"] if item["type"] == "function_call"]
    answer = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
    second = post(server, {"previous_response_id": first["id"], "input": [answer], "tools": [WEATHER]})
    assert second.status_code == 200, second.text
    assert second.json()["output"][0]["content"][0]["text"] == "The function returned: sunny"
    # The same output against a response without that call is an orphan.
    other = post(server, {"input": "hello"}).json()
    error = refused(post(server, {"previous_response_id": other["id"], "input": [answer]}))
    assert (error["code"], error["param"]) == ("function_call_not_found", "input")
    assert call["call_id"] in error["message"]


@pytest.mark.parametrize("strict", [False, True])
def test_a_provider_widens_what_it_accepts(strict):
    accept = Accept(input_items={"bogus_item"}, content={"input_hologram"}, parameters={"conversation"})
    provider = RecordingProvider()
    app = create_app(provider, store=MemoryStore(), api_keys=API_KEY, accept=accept, strict=strict)
    with live_server(app) as base:
        for body in (REFUSALS["unknown item type"][0], REFUSALS["unknown content part"][0]):
            assert post(base, body).status_code == 200
        answer = post(base, STRICT_REFUSALS["unknown parameter"][0])
        assert answer.status_code == 200 and "OpenResponses-Ignored" not in answer.headers  # honoured, not ignored
        assert provider.requests[0].input[-1] == {"type": "bogus_item", "x": 1}
        assert provider.requests[2].body.model_extra == {"conversation": "conv_1"}
        # ...and only that: other unknowns are still refused (strict) or ignored (tolerant)
        other = post(base, {"input": "hi", "thread": "t"})
        if strict:
            assert refused(other)["param"] == "thread"
        else:
            assert other.headers["OpenResponses-Ignored"] == "parameter:thread"
            assert provider.requests[-1].body.model_extra == {}


# -- WebSocket -----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_websocket_refusals(any_server, case):
    body, code, param = REFUSALS[case]
    url = any_server.replace("http://", "ws://") + "/responses"
    with connect(url, additional_headers={"Authorization": f"Bearer {API_KEY}"}, open_timeout=10) as ws:
        (error,) = ws_turn(ws, **body)
        assert (error["type"], error["status"]) == ("error", 400)
        assert (error["error"]["code"], error["error"]["param"]) == (code, param)
        assert ws_turn(ws, input="still open")[-1]["type"] == "response.completed"


@pytest.mark.parametrize("case", sorted(STRICT_REFUSALS))
def test_websocket_strict_refusals(strict_server, case):
    body, code, param = STRICT_REFUSALS[case]
    url = strict_server.replace("http://", "ws://") + "/responses"
    with connect(url, additional_headers={"Authorization": f"Bearer {API_KEY}"}, open_timeout=10) as ws:
        (error,) = ws_turn(ws, **body)
        assert (error["type"], error["status"]) == ("error", 400)
        assert (error["error"]["code"], error["error"]["param"]) == (code, param)
        # what real clients add to a WebSocket turn is refused as before: the spec does not define it
        (error,) = ws_turn(ws, input="hi", stream=True)
        assert (error["status"], error["error"]["code"], error["error"]["param"]) == (400, "invalid_value", "stream")
        (error,) = ws_turn(ws, input="hi", generate=False)
        assert (error["status"], error["error"]["code"], error["error"]["param"]) == (
            400,
            "unknown_parameter",
            "generate",
        )


def test_a_refused_continuation_evicts_the_cached_response(server):
    url = server.replace("http://", "ws://") + "/responses"
    with connect(url, additional_headers={"Authorization": f"Bearer {API_KEY}"}, open_timeout=10) as ws:
        first = ws_turn(ws, input="remember me", store=False)[-1]["response"]["id"]
        orphan = {"type": "function_call_output", "call_id": "call_nowhere", "output": "42"}
        (error,) = ws_turn(ws, previous_response_id=first, input=[orphan])
        assert (error["status"], error["error"]["param"]) == (400, "input")
        (gone,) = ws_turn(ws, previous_response_id=first, input="retry")
        assert (gone["status"], gone["error"]["code"]) == (404, "previous_response_not_found")


def test_websocket_auth_refusal_logs_no_asgi_error(server, caplog):
    url = server.replace("http://", "ws://") + "/responses"
    with caplog.at_level(logging.INFO):
        with pytest.raises(InvalidStatus) as info:
            connect(url, additional_headers={"Authorization": "Bearer wrong"}, open_timeout=10)
        with pytest.raises(InvalidStatus):
            connect(url, open_timeout=10)
        # the next connection works, and nothing was logged about the refused ones
        with connect(url, additional_headers={"Authorization": f"Bearer {API_KEY}"}, open_timeout=10) as ws:
            assert ws_turn(ws, input="after")[-1]["type"] == "response.completed"
    assert info.value.response.status_code == 401
    assert json.loads(info.value.response.body)["error"]["code"] == "invalid_api_key"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


# -- real clients --------------------------------------------------------------------------------


def test_openai_client_sees_the_refusals(server, strict_server):
    strict = openai.OpenAI(base_url=strict_server, api_key=API_KEY, max_retries=0)
    with pytest.raises(openai.BadRequestError) as info:
        strict.responses.create(model="demo", input="hi", extra_body={"conversation": "conv_1"})
    assert info.value.code == "unknown_parameter" and info.value.param == "conversation"
    client = openai.OpenAI(base_url=server, api_key=API_KEY, max_retries=0)
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="demo", input=[{"type": "bogus_item"}])  # type: ignore[list-item]
    assert info.value.param == "input[0].type"
    response = client.responses.create(model="demo", input="What's the weather like in San Francisco?", tools=[WEATHER])
    (call,) = response.output
    assert call.type == "function_call" and call.name == "get_weather"
    final = client.responses.create(
        model="demo",
        previous_response_id=response.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "18C and sunny"}],
        tools=[WEATHER],
    )
    assert final.output_text == "The function returned: 18C and sunny"


@pytest.mark.clients
def test_openai_agents_agent_with_a_function_tool(server):
    agents = pytest.importorskip("agents", reason="openai-agents is in the test extra")
    agents.set_tracing_disabled(True)
    seen: list[str] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """Current conditions for a city."""
        seen.append(city)
        return f"18C and sunny in {city}"

    async def run() -> agents.RunResult:
        client = openai.AsyncOpenAI(base_url=server, api_key=API_KEY, max_retries=0)
        model = agents.OpenAIResponsesModel(model="demo", openai_client=client)
        agent = agents.Agent(name="forecaster", instructions="Answer about weather.", model=model, tools=[get_weather])
        try:
            return await agents.Runner.run(agent, "What's the weather like in San Francisco?")
        finally:
            await client.close()

    result = asyncio.run(run())
    assert seen == ["example city"]  # the demo model fills string arguments with `example <name>`
    assert result.final_output == "The function returned: 18C and sunny in example city"


@pytest.mark.clients
def test_openai_agents_streaming(server):
    agents = pytest.importorskip("agents", reason="openai-agents is in the test extra")
    agents.set_tracing_disabled(True)

    @agents.function_tool
    def get_weather(city: str) -> str:
        """Current conditions for a city."""
        return f"rain in {city}"

    async def run() -> tuple[str, list[str]]:
        client = openai.AsyncOpenAI(base_url=server, api_key=API_KEY, max_retries=0)
        model = agents.OpenAIResponsesModel(model="demo", openai_client=client)
        agent = agents.Agent(name="forecaster", model=model, tools=[get_weather])
        try:
            streamed = agents.Runner.run_streamed(agent, "Weather in Oslo?")
            kinds = [event.type async for event in streamed.stream_events()]
            return streamed.final_output, kinds
        finally:
            await client.close()

    final, kinds = asyncio.run(run())
    assert final == "The function returned: rain in example city"
    assert "raw_response_event" in kinds and "run_item_stream_event" in kinds


def test_demo_tools_are_chosen_by_shared_words():
    from openresponses_runtime.server.demo import tools_matching

    email = {"type": "function", "name": "send_email", "description": "Send an email to someone."}
    tools = [WEATHER, email]
    assert tools_matching("What's the weather like in San Francisco?", tools) == [WEATHER]
    assert tools_matching("Any conditions to report?", tools) == [WEATHER]  # from the description
    assert tools_matching("email my boss, and the weather", tools) == [WEATHER, email]
    assert tools_matching("Tell me what you can get for me", tools) == []  # common words never count
