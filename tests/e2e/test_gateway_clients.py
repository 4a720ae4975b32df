"""The official clients on the far side of each gateway, with a loopback upstream replaying real
recordings from `../shared/recordings/upstream/`: the openai SDK (create, stream, and a tool loop through
`previous_response_id`) and Codex CLI's `codex exec`. What they get is what the recording said."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import openai
import pytest
from openresponses_runtime.gateways.anthropic_messages import AnthropicMessagesProvider
from openresponses_runtime.gateways.chat_completions import ChatCompletionsProvider
from openresponses_runtime.gateways.gemini import GeminiProvider
from openresponses_runtime.server import create_app

from ..conftest import SHARED, npm_client
from ..gateways.test_gateway_anthropic_recordings import recorded_answer
from ..gateways.test_gateway_gemini_recordings import recorded_answer as gemini_answer
from ..gateways.test_gateway_recordings import recorded
from ..server_helpers import API_KEY, live_server
from ..upstream_replay import UPSTREAM_KEY, upstream

pytestmark = [pytest.mark.clients, pytest.mark.process]

RECORDINGS = SHARED / "recordings" / "upstream"
# Per gateway: its provider, where its upstream API sits under the replay's /v1, and three recordings:
# a text answer, an answer with tool calls, and the answer to the tool results that follow it.
GATEWAYS = {
    "chat-completions": (ChatCompletionsProvider, "/v1", "chat", "openai-gpt4o-text", "openai-tool-single"),
    "anthropic-messages": (AnthropicMessagesProvider, "", "anthropic", "text", "text-and-two-tool-uses"),
    "gemini": (
        GeminiProvider,
        "/v1beta",
        "gemini",
        "02_text_sse_system_instruction",
        "10a_thought_signature_parallel_calls_sse",
    ),
}
FOLLOWUP = {
    "chat-completions": "openai-tool-followup",
    "anthropic-messages": "tool-result-followup",
    "gemini": "10b_thought_signature_roundtrip_sse",
}


def _answer(folder: str, name: str) -> bytes:
    return (RECORDINGS / folder / f"{name}.response.sse").read_bytes()


def _text(kind: str, body: bytes) -> str:
    """The text the recorded answer holds."""
    if kind == "chat-completions":
        return recorded(body)["text"]
    if kind == "gemini":
        return gemini_answer(body, "text/event-stream")["text"]
    blocks = recorded_answer(body, "text/event-stream")["blocks"]
    return "".join(block.get("text", "") for block in blocks if block["type"] == "text")


def _tools(kind: str, folder: str, name: str) -> list[dict]:
    """The recorded request's tools, as Open Responses function tools."""
    request = json.loads((RECORDINGS / folder / f"{name}.request.json").read_text())
    if kind == "chat-completions":
        return [{"type": "function", **tool["function"]} for tool in request["tools"]]
    if kind == "gemini":
        declarations = [d for tool in request["tools"] for d in tool["functionDeclarations"]]
        return [
            {
                "type": "function",
                "name": d["name"],
                "description": d.get("description"),
                "parameters": d["parametersJsonSchema"],
            }
            for d in declarations
        ]
    return [
        {"type": "function", "name": t["name"], "description": t.get("description"), "parameters": t["input_schema"]}
        for t in request["tools"]
    ]


@pytest.fixture(params=sorted(GATEWAYS))
def served(request, shared):
    """(kind, the gateway's base URL, the replaying upstream, its recordings folder)."""
    provider_class, prefix, folder, *_ = GATEWAYS[request.param]
    with upstream() as (url, replay):
        provider = provider_class(base_url=url.removesuffix("/v1") + prefix, api_key=UPSTREAM_KEY, model="recorded")
        with live_server(create_app(provider, store="memory:", api_keys=API_KEY)) as base:
            yield request.param, base, replay, folder


def test_openai_sdk_create_stream_and_tool_loop(served):
    kind, base, replay, folder = served
    _, _, _, text_name, tool_name = GATEWAYS[kind]
    client = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0)
    text = _answer(folder, text_name)

    replay.answer(text)
    assert client.responses.create(model="recorded", input="Say something").output_text == _text(kind, text)
    replay.answer(text)
    with client.responses.stream(model="recorded", input="Say something") as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text == _text(kind, text)

    tools = _tools(kind, folder, tool_name)
    replay.answer(_answer(folder, tool_name))
    asked = client.responses.create(model="recorded", input="Use the tools", tools=tools)
    calls = [item for item in asked.output if item.type == "function_call"]
    assert calls and all(json.loads(call.arguments) is not None for call in calls)
    followup = _answer(folder, FOLLOWUP[kind])
    replay.answer(followup)
    outputs = [{"type": "function_call_output", "call_id": call.call_id, "output": "42"} for call in calls]
    answered = client.responses.create(model="recorded", previous_response_id=asked.id, input=outputs, tools=tools)
    assert answered.output_text == _text(kind, followup)
    sent = json.dumps(replay.requests[-1])  # the chain went upstream: the calls and their outputs
    assert all(call.call_id in sent for call in calls)


@pytest.mark.slow
def test_codex_exec_through_the_gateway(served, tmp_path: Path):
    kind, base, replay, folder = served
    text = _answer(folder, GATEWAYS[kind][3])
    for _ in range(3):  # one turn is one request; a retry would find an answer too
        replay.answer(text)
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(
        'model = "recorded"\nmodel_provider = "gateway"\n[model_providers.gateway]\n'
        f'name = "gateway"\nbase_url = "{base}"\nwire_api = "responses"\nenv_key = "ORSPEC_CODEX_KEY"\n'
    )
    env = {**os.environ, "CODEX_HOME": str(home), "ORSPEC_CODEX_KEY": API_KEY, "NO_COLOR": "1"}
    command = [str(npm_client(".bin/codex")), "exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only"]
    done = subprocess.run(
        [*command, "Say something"], cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, events or done.stderr[-2000:]
    said = [
        e["item"]["text"] for e in events if e.get("type") == "item.completed" and e["item"]["type"] == "agent_message"
    ]
    assert said == [_text(kind, text)]
    assert replay.requests, "Codex's turn never reached the upstream"
