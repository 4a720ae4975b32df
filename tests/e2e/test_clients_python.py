"""Python clients, unchanged, against each server of the matrix (`client_servers.py`): the openai SDK,
an openai-agents Agent, pydantic-ai's OpenAI Responses model, langchain-openai with
`use_responses_api=True`, and litellm's `responses` (in a process of its own:
tests/e2e/clients/litellm_client.py). Each is in the test extra, so a missing one is an install error, never
a skip; the run's summary names each client's version (conftest)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from openresponses_runtime.server import MemoryStore, create_app
from pydantic import BaseModel

from .. import client_servers
from ..conftest import ROOT
from ..server_helpers import API_KEY, RecordingProvider, live_server

pytestmark = [pytest.mark.clients, pytest.mark.process]

served = client_servers.served  # a fixture: every test runs against each server of the matrix


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"Sunny in {city}"


class Forecast(BaseModel):
    city: str
    high: int


# -- openai and openai-agents ----------------------------------------------------------------------


def test_openai_create_stream_parse_tools_and_websocket(served):
    import openai

    client = openai.OpenAI(base_url=served, api_key=API_KEY, max_retries=0)
    assert client.responses.create(model="demo", input="Hello there").output_text == "You said: Hello there"
    with client.responses.stream(model="demo", input="Stream this please") as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas) == "You said: Stream this please"
    parsed = client.responses.parse(model="demo", input="Forecast for Paris", text_format=Forecast)
    assert parsed.output_parsed == Forecast(city="example city", high=1)
    weather = {"type": "function", "name": "get_weather", "description": get_weather.__doc__, "strict": False}
    weather["parameters"] = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    asked = client.responses.create(model="demo", input="What is the weather in Paris?", tools=[weather])
    (call,) = [item for item in asked.output if item.type == "function_call"]
    output = {
        "type": "function_call_output",
        "call_id": call.call_id,
        "output": get_weather(**json.loads(call.arguments)),
    }
    answered = client.responses.create(model="demo", previous_response_id=asked.id, input=[output], tools=[weather])
    assert answered.output_text == "The function returned: Sunny in example city"
    with client.responses.connect() as connection:
        connection.response.create(model="demo", input="Hello over a socket")
        kinds = []
        for event in connection:
            kinds.append(event.type)
            if event.type in ("response.completed", "response.failed", "error"):
                break
    assert kinds[-1] == "response.completed" and event.response.output_text == "You said: Hello over a socket"


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_openai_agents_agent_with_a_function_tool(served, streamed):
    import agents
    import openai

    agents.set_tracing_disabled(True)
    tool = agents.function_tool(get_weather)

    async def run() -> str:
        client = openai.AsyncOpenAI(base_url=served, api_key=API_KEY, max_retries=0)
        model = agents.OpenAIResponsesModel(model="demo", openai_client=client)
        agent = agents.Agent(name="forecaster", instructions="Answer about weather.", model=model, tools=[tool])
        try:
            if not streamed:
                return (await agents.Runner.run(agent, "What is the weather in Paris?")).final_output
            run = agents.Runner.run_streamed(agent, "What is the weather in Paris?")
            assert [event async for event in run.stream_events()]
            return run.final_output
        finally:
            await client.close()

    assert asyncio.run(run()) == "The function returned: Sunny in example city"


# -- pydantic-ai ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pydantic_ai_model(served):
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIResponsesModel("demo", provider=OpenAIProvider(base_url=served, api_key=API_KEY))


def test_pydantic_ai_run_sync_and_stream(pydantic_ai_model):
    from pydantic_ai import Agent

    agent = Agent(pydantic_ai_model, instructions="Be brief.")
    assert agent.run_sync("Hello there").output == "You said: Hello there"

    async def streamed() -> list[str]:
        async with agent.run_stream("Stream this please") as run:
            return [delta async for delta in run.stream_text(delta=True, debounce_by=None)]

    deltas = asyncio.run(streamed())
    assert len(deltas) > 1 and "".join(deltas) == "You said: Stream this please"


def test_pydantic_ai_tool_round_trip(pydantic_ai_model):
    from pydantic_ai import Agent

    agent = Agent(pydantic_ai_model, tools=[get_weather])
    result = agent.run_sync("What is the weather in Paris?")
    assert result.output == "The function returned: Sunny in example city"
    called = [part for message in result.all_messages() for part in message.parts if part.part_kind == "tool-call"]
    assert [part.tool_name for part in called] == ["get_weather"]


@pytest.mark.parametrize("mode", ["tool", "native"])
def test_pydantic_ai_structured_output(pydantic_ai_model, mode):
    from pydantic_ai import Agent, NativeOutput

    agent = Agent(pydantic_ai_model, output_type=Forecast if mode == "tool" else NativeOutput(Forecast))
    forecast = agent.run_sync("Forecast for Paris").output
    assert isinstance(forecast, Forecast) and forecast == Forecast(city="example city", high=1)


# -- langchain-openai -----------------------------------------------------------------------------


def _chat(served, **options):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="demo", base_url=served, api_key=API_KEY, use_responses_api=True, max_retries=0, **options)


def test_langchain_invoke_and_stream(served):
    chat = _chat(served)
    assert chat.invoke("Hello there").text == "You said: Hello there"
    chunks = list(chat.stream("Stream this please"))
    assert len(chunks) > 1 and "".join(chunk.text for chunk in chunks) == "You said: Stream this please"


def test_langchain_bind_tools_round_trip(served):
    from langchain_core.messages import HumanMessage, ToolMessage

    chat = _chat(served).bind_tools([get_weather])
    question = HumanMessage("What is the weather in Paris?")
    asked = chat.invoke([question])
    (call,) = asked.tool_calls
    assert call["name"] == "get_weather" and call["args"] == {"city": "example city"}
    answered = chat.invoke([question, asked, ToolMessage(get_weather(**call["args"]), tool_call_id=call["id"])])
    assert answered.text == "The function returned: Sunny in example city"


def test_langchain_previous_response_id():
    from langchain_core.messages import HumanMessage

    provider = RecordingProvider()  # in process, to see what the server handed the model
    with live_server(create_app(provider, store=MemoryStore(), api_keys=API_KEY)) as base_url:
        chat = _chat(base_url, use_previous_response_id=True)
        first = chat.invoke([HumanMessage("remember seven")])
        second = chat.invoke([HumanMessage("remember seven"), first, HumanMessage("and eight")])
    assert second.text == "You said: and eight"
    sent = provider.requests[-1]
    assert sent.body.previous_response_id == first.response_metadata["id"]
    assert [item.get("role") for item in sent.input] == ["user", "assistant", "user"]  # the chain, rebuilt


# -- litellm --------------------------------------------------------------------------------------


def test_litellm_responses_plain_streamed_and_tool(served):
    script = ROOT / "tests" / "e2e" / "clients" / "litellm_client.py"
    env = {**os.environ, "BASE_URL": served, "API_KEY": API_KEY}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["plain"] == "You said: Hello there"
    assert len(seen["deltas"]) > 1 and "".join(seen["deltas"]) == "You said: Stream this please"
    assert seen["last"] == "response.completed"
    assert seen["call"] == ["get_weather", {"city": "example city"}]
    # A function_call_output whose call is not in the context is refused: this answer shows the chain held
    # (litellm wraps the id it hands out, and unwraps it on the way back).
    assert seen["answered"] == "The function returned: Sunny in example city"
