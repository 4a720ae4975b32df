"""`openresponses_runtime.client` against `orspec serve` and a freshly scaffolded provider.

Each call is made through our client and through the official `openai` client; once ids and
timestamps are masked the two agree. The agentic loop runs real tools against both servers.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading

import httpx
import pytest
from openai import OpenAI
from openresponses_runtime import models
from openresponses_runtime.client import (
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    Client,
    NotFoundError,
    Tool,
    response_text,
)
from orspec.scaffold import scaffold

from ..server_helpers import API_KEY, free_port, served_process

pytestmark = pytest.mark.process

ORSPEC = [sys.executable, "-m", "orspec"]
PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
MASKED = {"id", "call_id", "item_id", "previous_response_id", "created_at", "completed_at", "response_id"}


@pytest.fixture(scope="module", params=["orspec serve", "scaffolded provider"])
def base_url(request, tmp_path_factory):
    port = free_port()
    if request.param == "orspec serve":
        command = [*ORSPEC, "serve", "--port", str(port), "--api-key", API_KEY, "--store", "memory:", "--delay", "0"]
        with served_process(command, port=port) as base:
            yield base
        return
    project = tmp_path_factory.mktemp("provider")
    scaffold("client-check", project, force=True)
    command = [sys.executable, "-m", "client_check", "--port", str(port), "--api-key", API_KEY, "--store", "memory:"]
    with served_process(command, port=port, env={"PYTHONPATH": str(project / "src")}) as base:
        yield base


@pytest.fixture(scope="module")
def client(base_url):
    with Client(base_url=base_url, api_key=API_KEY) as client:
        yield client


@pytest.fixture(scope="module")
def sdk(base_url):
    return OpenAI(base_url=base_url, api_key=API_KEY)


def masked(value):
    """`value` with ids and timestamps replaced, so two runs of the same call compare equal."""
    if isinstance(value, dict):
        return {k: ("<masked>" if k in MASKED and v is not None else masked(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


def ours(model) -> dict:
    return masked(model.model_dump(mode="json", by_alias=True, exclude_unset=True))


def theirs(model) -> dict:
    return masked(model.model_dump(mode="json", exclude_unset=True))


def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city's name, in English.
    """
    return f"Sunny in {city}"


def get_time(city: str) -> dict:
    """Get the local time in a city."""
    return {"city": city, "time": "12:00"}


CALLS = {
    "text": {"input": "Say hello in one short sentence."},
    "instructions": {"input": "Hello.", "instructions": "Answer briefly."},
    "tools": {
        "input": "Call the get_weather tool for Paris now.",
        "tools": [Tool(get_weather).definition],
    },
    "parallel tools": {
        "input": "Call get_weather and get_time for Paris.",
        "tools": [Tool(get_weather).definition, Tool(get_time).definition],
        "parallel_tool_calls": True,
    },
    "image": {
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is in this picture?"},
                    {"type": "input_image", "image_url": PIXEL},
                ],
            }
        ]
    },
}


@pytest.mark.parametrize("call", CALLS)
def test_create_agrees_with_the_openai_client(client, sdk, call):
    params = {"model": "demo", **CALLS[call]}
    response = client.responses.create(**params)
    assert isinstance(response, models.ResponseResource) and response.status == "completed"
    assert ours(response) == theirs(sdk.responses.create(**params))


@pytest.mark.parametrize("call", ["text", "parallel tools"])
def test_streams_agree_with_the_openai_client(client, sdk, call):
    params = {"model": "demo", **CALLS[call]}
    with client.responses.create(**params, stream=True, check=True) as stream:
        events = list(stream)
        final = stream.final_response()
    sdk_events = list(sdk.responses.create(**params, stream=True))
    assert [e.type for e in events] == [e.type for e in sdk_events]
    assert [ours(e) for e in events] == [theirs(e) for e in sdk_events]
    assert ours(final) == ours(events[-1].response) == theirs(sdk_events[-1].response)


def test_text_and_instructions(client):
    response = client.responses.create(model="demo", input="Hello there.", instructions="Answer briefly.")
    assert response.instructions == "Answer briefly."
    assert "Hello there." in response_text(response)


def test_text_deltas_join_to_the_final_text(client):
    stream = client.responses.create(model="demo", input="Stream a short greeting to me.", stream=True)
    text = "".join(stream.text_deltas())
    assert text and text == response_text(stream.final_response())


def test_image_input(client):
    response = client.responses.create(model="demo", **CALLS["image"])
    assert response.status == "completed" and response_text(response)


def test_chain_by_previous_response_id(client, sdk):
    first = client.responses.create(model="demo", input="Remember the word pineapple.")
    second = client.responses.create(model="demo", input="Which word?", previous_response_id=first.id)
    assert second.previous_response_id == first.id
    sdk_second = sdk.responses.create(model="demo", input="Which word?", previous_response_id=first.id)
    assert ours(second) == theirs(sdk_second)


def test_compaction_round_trips_as_input(client):
    first = client.responses.create(model="demo", input="Remember the word pineapple.")
    compacted = client.responses.compact(model="demo", previous_response_id=first.id)
    assert isinstance(compacted, models.CompactResource) and compacted.output
    follow_up = [*compacted.output, {"type": "message", "role": "user", "content": "Which word was it?"}]
    assert client.responses.create(model="demo", input=follow_up).status == "completed"


def test_input_tokens_count_agrees_with_the_openai_client_and_the_usage(client, sdk):
    first = client.responses.create(model="demo", input="Remember the word pineapple.")
    counted = client.responses.input_tokens.count(
        model="demo", input="Which word?", previous_response_id=first.id, tools=[], truncation="disabled"
    )
    assert isinstance(counted, models.InputTokenCountResource) and counted.object == "response.input_tokens"
    theirs_ = sdk.responses.input_tokens.count(model="demo", input="Which word?", previous_response_id=first.id)
    assert (theirs_.object, theirs_.input_tokens) == (counted.object, counted.input_tokens)
    second = client.responses.create(model="demo", input="Which word?", previous_response_id=first.id)
    assert counted.input_tokens == second.usage.input_tokens


def test_errors_are_typed(client, base_url):
    with pytest.raises(BadRequestError) as bad:
        client.responses.create(model="demo", input=42)
    assert bad.value.status_code == 400 and bad.value.param == "input" and bad.value.code
    with pytest.raises(NotFoundError) as missing:
        client.responses.create(model="demo", input="hi", previous_response_id="resp_missing")
    assert missing.value.code == "previous_response_not_found"
    with pytest.raises(AuthenticationError), Client(base_url=base_url, api_key="sk-wrong") as wrong:
        wrong.responses.create(model="demo", input="hi")


def test_websocket_turns(client):
    with client.responses.connect(check=True) as session:
        first = session.create(model="demo", input="Remember the word pineapple.", store=False)
        second = session.create(model="demo", input="Which word?", previous_response_id=first.id)
        events = list(session.stream(model="demo", input="And again."))
    assert first.status == second.status == "completed" and second.previous_response_id == first.id
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    with client.responses.connect() as other, pytest.raises(NotFoundError):
        other.create(model="demo", input="Which word?", previous_response_id=first.id)  # store=False stays local


@pytest.mark.filterwarnings("error::DeprecationWarning")
def test_websocket_session_uses_no_deprecated_websockets_call(client):
    """websockets 17 deprecates a sync connection not entered as a context manager (it warned at every send)."""
    with client.responses.connect() as session:
        assert session.create(model="demo", input="Hi.").status == "completed"
        assert session.create(model="demo", input="Again.").status == "completed"


def test_run_round_trip_with_parallel_tools_in_call_order(base_url):
    sent: list[dict] = []
    barrier = threading.Barrier(2, timeout=10)  # both tools must be running at once to get past it

    def weather(city: str) -> str:
        """Get the weather."""
        barrier.wait()
        return f"Sunny in {city}"

    def local_time(city: str) -> dict:
        """Get the local time."""
        barrier.wait()
        return {"city": city, "time": "12:00"}

    hooks = {"request": [lambda request: sent.append(json.loads(request.content))]}
    with Client(base_url=base_url, api_key=API_KEY, http_client=httpx.Client(event_hooks=hooks)) as client:
        result = client.responses.run(
            model="demo", input="Call weather and local_time for Paris.", tools=[weather, local_time]
        )
    assert result.completed and len(result.responses) == 2
    calls = [item for item in result.responses[0].output if item.type == "function_call"]
    assert [c.name for c in calls] == ["weather", "local_time"] == [t.name for t in result.tool_calls]
    assert sent[1]["previous_response_id"] == result.responses[0].id
    assert [o["call_id"] for o in sent[1]["input"]] == [c.call_id for c in calls]
    assert sent[1]["input"][0]["output"].startswith("Sunny in") and json.loads(sent[1]["input"][1]["output"])["time"]
    assert result.output_text == response_text(result.final_response)


def test_run_with_store_false_resends_the_conversation(base_url):
    sent: list[dict] = []
    hooks = {"request": [lambda request: sent.append(json.loads(request.content))]}
    with Client(base_url=base_url, api_key=API_KEY, http_client=httpx.Client(event_hooks=hooks)) as client:
        result = client.responses.run(
            model="demo", input="Call get_weather for Oslo.", tools=[get_weather], store=False
        )
    assert result.completed and len(result.tool_calls) == 1 and result.tool_calls[0].output.startswith("Sunny in ")
    assert "previous_response_id" not in sent[1]
    kinds = [item["type"] for item in sent[1]["input"]]
    assert kinds == ["message", "function_call", "function_call_output"]


def test_failing_tool_becomes_an_error_output(client):
    def get_weather(city: str) -> str:
        """Get the weather."""
        raise RuntimeError("the weather service is down")

    result = client.responses.run(model="demo", input="Call get_weather for Paris.", tools=[get_weather])
    assert result.completed
    (call,) = result.tool_calls
    assert call.error and call.output == "Error: RuntimeError: the weather service is down"


def test_max_turns_stops_with_the_calls_pending(client):
    result = client.responses.run(model="demo", input="Call get_weather for Paris.", tools=[get_weather], max_turns=1)
    assert result.stopped == "max_turns" and not result.completed
    assert [c.name for c in result.pending_calls] == ["get_weather"] and not result.tool_calls


def test_streaming_run_yields_every_turn(client):
    run = client.responses.run_stream(model="demo", input="Call get_weather for Rome.", tools=[get_weather])
    events = list(run)
    assert [e.type for e in events].count("response.completed") == 2
    assert run.result.completed and run.result.tool_calls[0].name == "get_weather"


def test_async_client(base_url):
    async def main():
        started = asyncio.Event()
        other = asyncio.Event()

        async def weather(city: str) -> str:
            """Get the weather."""
            started.set()
            await asyncio.wait_for(other.wait(), 10)  # only returns if local_time runs meanwhile
            return f"Sunny in {city}"

        async def local_time(city: str) -> str:
            """Get the local time."""
            await asyncio.wait_for(started.wait(), 10)
            other.set()
            return "12:00"

        async with AsyncClient(base_url=base_url, api_key=API_KEY) as client:
            response = await client.responses.create(model="demo", input="Hello.")
            stream = await client.responses.create(model="demo", input="Stream please.", stream=True, check=True)
            deltas = [d async for d in stream.text_deltas()]
            result = await client.responses.run(
                model="demo", input="Call weather and local_time for Paris.", tools=[weather, local_time]
            )
            run = client.responses.run_stream(model="demo", input="Call get_weather for Rome.", tools=[get_weather])
            streamed = [e.type async for e in run]
            async with client.responses.connect(check=True) as session:
                turn = await session.create(model="demo", input="Over a WebSocket.")
        return response, deltas, result, streamed, await run.result(), turn

    response, deltas, result, streamed, run_result, turn = asyncio.run(main())
    assert response.status == "completed" and "".join(deltas)
    assert result.completed and [t.name for t in result.tool_calls] == ["weather", "local_time"]
    assert result.tool_calls[0].output.startswith("Sunny in ") and result.tool_calls[1].output == "12:00"
    assert streamed.count("response.completed") == 2 and run_result.completed
    assert turn.status == "completed"
