"""What a tolerant server (the default) accepts from real clients, and how it says what it ignored:
Codex's request, unchanged, over HTTP and WebSocket. What both modes refuse, and what a strict
server refuses besides, is in test_server_refusals.py."""

from __future__ import annotations

import json
import logging
import sys

import openai
import pytest
from openresponses_runtime.server import MemoryStore, create_app
from openresponses_runtime.server.acceptance import MAX_LOGGED, MAX_NAME, MAX_REPORTED
from openresponses_runtime.streaming import StreamChecker
from starlette.testclient import TestClient
from websockets.sync.client import connect

from ..server_helpers import API_KEY, RecordingProvider, free_port, live_server, served_process, ws_turn

AUTH = {"Authorization": f"Bearer {API_KEY}"}
SHELL = {
    "type": "function",
    "name": "shell",
    "description": "Runs a shell command and returns its output.",
    "strict": False,
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "array", "items": {"type": "string"}}, "workdir": {"type": "string"}},
        "required": ["command"],
        "additionalProperties": False,
    },
}
PLAN = {
    "type": "function",
    "name": "update_plan",
    "description": "Updates the task plan.",
    "strict": False,
    "parameters": {"type": "object", "properties": {"explanation": {"type": "string"}}, "additionalProperties": False},
}
SEARCH_DOCS = {
    "type": "function",
    "name": "search_docs",
    "description": "Search the project documentation for a query.",
    "strict": False,
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
        "additionalProperties": False,
    },
}
# What Codex CLI sends with every turn: function tools, a free-form `custom` tool, OpenAI's unprefixed
# `web_search`, an MCP server's tools in a `namespace` (at `tools[4]`), and `client_metadata`.
CODEX = {
    "model": "gpt-5-codex",
    "instructions": "You are a coding agent.",
    "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>"}]},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "search the docs for websocket"}],
        },
    ],
    "tools": [
        SHELL,
        PLAN,
        {
            "type": "custom",
            "name": "apply_patch",
            "description": "Edit files with a patch.",
            "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
        },
        {"type": "web_search", "external_web_access": False},
        {"type": "namespace", "name": "mcp__docs__", "description": "The docs MCP server.", "tools": [SEARCH_DOCS]},
    ],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "reasoning": {"effort": "medium", "summary": "auto"},
    "store": False,
    "stream": True,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "019a7c3e-thread",
    "client_metadata": {"x-codex-thread-id": "019a7c3e", "x-codex-session-id": "s1", "x-codex-turn-id": "t1"},
}
CODEX_IGNORED = "parameter:client_metadata, tool:custom, tool:web_search"


@pytest.fixture(scope="module")
def provider():
    return RecordingProvider()


@pytest.fixture(scope="module")
def server(provider):
    with live_server(create_app(provider, store=MemoryStore(), api_keys=API_KEY, debug=True)) as base:
        yield base


def local_client(provider=None, **options) -> TestClient:
    """A fresh app (its own log memory) served in-process."""
    app = create_app(provider or RecordingProvider(), store=MemoryStore(), api_keys=API_KEY, **options)
    return TestClient(app)


def sse_events(text: str) -> list[dict]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]


# -- HTTP ----------------------------------------------------------------------------------------


def test_codex_request_is_answered_and_what_was_ignored_is_named(server, provider):
    client = openai.OpenAI(base_url=server, api_key=API_KEY, max_retries=0)
    body = {k: v for k, v in CODEX.items() if k not in ("stream", "client_metadata", "tools")}
    raw = client.responses.with_raw_response.create(
        **body, tools=CODEX["tools"], extra_body={"client_metadata": CODEX["client_metadata"]}
    )
    assert raw.headers["OpenResponses-Ignored"] == CODEX_IGNORED
    response = raw.parse()
    (call,) = [item for item in response.output if item.type == "function_call"]
    assert call.name == "search_docs"  # the name the namespace's function has, as OpenAI calls it
    assert json.loads(call.arguments) == {"query": "example query"}
    # the model was offered the functions only, and the provider never saw client_metadata
    seen = provider.requests[-1]
    assert [t["name"] for t in seen.tools] == ["shell", "update_plan", "search_docs"]
    assert seen.allowed_tools == {"shell", "update_plan", "search_docs"}
    assert seen.body.model_extra == {} and [t.name for t in seen.body.tools] == ["shell", "update_plan", "search_docs"]
    assert seen.ignored == tuple(CODEX_IGNORED.split(", "))
    # what the response echoes is what the model was offered
    assert [t.name for t in response.tools] == ["shell", "update_plan", "search_docs"]


def test_codex_request_streams_with_the_header(server):
    with openai.OpenAI(base_url=server, api_key=API_KEY, max_retries=0).responses.with_streaming_response.create(
        **{k: v for k, v in CODEX.items() if k not in ("stream", "client_metadata")},
        stream=True,
        extra_body={"client_metadata": CODEX["client_metadata"]},
    ) as raw:
        assert raw.headers["OpenResponses-Ignored"] == CODEX_IGNORED
        events = [event.type for event in raw.parse()]
    assert events[0] == "response.created" and events[-1] == "response.completed"
    assert "response.function_call_arguments.done" in events


def test_a_namespaced_function_can_be_chosen_and_answered(server):
    client = openai.OpenAI(base_url=server, api_key=API_KEY, max_retries=0)
    tools = CODEX["tools"]
    first = client.responses.create(
        model="demo", input="look it up", tools=tools, tool_choice={"type": "function", "name": "search_docs"}
    )
    (call,) = first.output
    assert call.type == "function_call" and call.name == "search_docs"
    final = client.responses.create(
        model="demo",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "found 3 pages"}],
        tools=tools,
    )
    assert final.output_text == "The function returned: found 3 pages"


def test_nothing_ignored_means_no_header(server):
    client = openai.OpenAI(base_url=server, api_key=API_KEY, max_retries=0)
    raw = client.responses.with_raw_response.create(model="demo", input="hi", tools=[SHELL])
    assert "OpenResponses-Ignored" not in raw.headers


@pytest.mark.parametrize(
    ("namespace", "param"),
    [
        ({"type": "namespace", "name": "n", "description": "d"}, "tools[0].tools"),
        (
            {"type": "namespace", "name": "n", "tools": [{**SEARCH_DOCS, "name": "no spaces, please"}]},
            "tools[0].tools[0].name",
        ),
        ({"type": "namespace", "name": "n", "tools": [{**SEARCH_DOCS, "strict": "yes"}]}, "tools[0].tools[0].strict"),
    ],
)
def test_a_malformed_namespace_is_refused(namespace, param):
    with local_client() as client:
        answer = client.post("/v1/responses", json={"input": "hi", "tools": [namespace]}, headers=AUTH)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["code"], error["param"]) == ("invalid_value", param) and param in error["message"]


def test_a_namespace_of_other_tools_offers_only_its_functions():
    provider = RecordingProvider()
    grep = {"type": "custom", "name": "grep", "description": "free-form"}
    namespace = {"type": "namespace", "name": "tools", "description": "d", "tools": [grep, SEARCH_DOCS]}
    with local_client(provider) as client:
        answer = client.post("/v1/responses", json={"input": "hi", "tools": [namespace]}, headers=AUTH)
    assert answer.status_code == 200, answer.text
    assert answer.headers["OpenResponses-Ignored"] == "tool:custom"
    assert [t["name"] for t in provider.requests[-1].tools] == ["search_docs"]


def test_a_tool_choice_naming_an_ignored_tool_is_refused():
    body = {"input": "hi", "tools": [{"type": "web_search"}], "tool_choice": {"type": "function", "name": "web_search"}}
    with local_client() as client:
        answer = client.post("/v1/responses", json=body, headers=AUTH)
    assert answer.status_code == 400
    assert (answer.json()["error"]["code"], answer.json()["error"]["param"]) == ("unknown_tool", "tool_choice.name")


def test_compaction_ignores_and_names_unknown_parameters():
    with local_client() as client:
        answer = client.post(
            "/v1/responses/compact", json={"model": "demo", "input": "hi", "client_metadata": {"a": "b"}}, headers=AUTH
        )
    assert answer.status_code == 200, answer.text
    assert answer.headers["OpenResponses-Ignored"] == "parameter:client_metadata"


# -- reporting: one log line per name, and caps --------------------------------------------------


def test_each_ignored_name_is_logged_once_and_says_what_it_is(caplog):
    with local_client() as client, caplog.at_level(logging.WARNING, "openresponses_runtime.server"):
        for _ in range(3):
            body = {**CODEX, "stream": False, "conversation": "conv_1"}
            assert client.post("/v1/responses", json=body, headers=AUTH).status_code == 200
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4, lines
    assert lines[0].startswith("ignored parameter client_metadata (OpenAI: free-form key-value pairs")
    assert lines[1].startswith("ignored parameter conversation (OpenAI: a server-side conversation object")
    assert [line.split(" (")[0] for line in lines[2:]] == ["ignored tool custom", "ignored tool web_search"]
    assert all(
        line.endswith("named in the OpenResponses-Ignored header of every response that ignores it") for line in lines
    )
    # a name OpenAI does not define either is still named, as unknown
    with local_client() as client, caplog.at_level(logging.WARNING, "openresponses_runtime.server"):
        caplog.clear()
        client.post("/v1/responses", json={"input": "hi", "zeta:boost": 1}, headers=AUTH)
    assert [r.getMessage().split(";")[0] for r in caplog.records] == [
        "ignored parameter zeta:boost (not in this server's spec)"
    ]


def test_a_flood_of_unknown_names_grows_neither_the_header_nor_the_log(caplog):
    huge = {f"key{i}": "x" * 100 for i in range(20_000)}  # a 2 MB client_metadata
    flood = {f"p{i}": i for i in range(5_000)}
    with local_client(max_body_bytes=64 * 1024 * 1024) as client, caplog.at_level(logging.WARNING):
        answer = client.post("/v1/responses", json={"input": "hi", "client_metadata": huge, **flood}, headers=AUTH)
        assert answer.status_code == 200
        entries = answer.headers["OpenResponses-Ignored"].split(", ")
        # the first names, then how many more: every ignored name is counted, few are named
        assert entries[:2] == ["parameter:client_metadata", "parameter:p0"] and len(entries) == MAX_REPORTED + 1
        assert entries[-1] == f"+{5_001 - MAX_REPORTED} more"
        assert len(answer.headers["OpenResponses-Ignored"]) < 20 * (MAX_REPORTED + 1)
        # named ones are logged once each; past MAX_LOGGED names, one line says logging stopped
        for turn in range(MAX_LOGGED // MAX_REPORTED + 3):
            body = {"input": "hi", **{f"t{turn}_{i}": i for i in range(MAX_REPORTED)}}
            assert client.post("/v1/responses", json=body, headers=AUTH).status_code == 200
    lines = [r.getMessage() for r in caplog.records if r.name == "openresponses_runtime.server"]
    assert len(lines) == MAX_LOGGED + 1
    assert lines[-1] == f"ignored {MAX_LOGGED} different names; no longer logging new ones (see OpenResponses-Ignored)"


def test_a_name_is_one_short_header_token():
    long_name, odd_name = "n" * 10_000, "wéird, name\r\nX-Injected: 1"
    with local_client() as client:
        answer = client.post("/v1/responses", json={"input": "hi", long_name: 1, odd_name: 2}, headers=AUTH)
    assert answer.status_code == 200
    first, second = answer.headers["OpenResponses-Ignored"].split(", ")
    assert first == "parameter:" + "n" * (MAX_NAME - 3) + "..."
    assert second == "parameter:w%C3%A9ird%2C%20name%0D%0AX-Injected:%201"
    assert "X-Injected" not in answer.headers


# -- WebSocket -----------------------------------------------------------------------------------


def open_ws(server):
    return connect(server.replace("http://", "ws://") + "/responses", additional_headers=AUTH, open_timeout=10)


def check(events: list[dict]) -> None:
    checker = StreamChecker()
    for event in events:
        checker.feed_event(event, event["type"])
    checker.feed(None, "[DONE]")  # WebSocket mode has no marker; the checker wants one
    assert checker.finish() == [], checker.violations


def test_codex_warm_up_then_turn_over_websocket(server, provider):
    with open_ws(server) as ws:
        before = len(provider.requests)
        # Codex's first message: its whole request, `stream: true`, and `generate: false`
        warm = ws_turn(ws, **{**CODEX, "generate": False})
        check(warm)
        assert [e["type"] for e in warm] == ["response.created", "response.in_progress", "response.completed"]
        assert warm[0]["openresponses:ignored"] == CODEX_IGNORED.split(", ")
        assert all("openresponses:ignored" not in e for e in warm[1:])
        done = warm[-1]["response"]
        assert (done["status"], done["output"]) == ("completed", [])
        assert len(provider.requests) == before  # no model ran
        # the warm-up is the next turn's previous response: its input is the model's context
        turn = ws_turn(ws, **{**CODEX, "previous_response_id": done["id"], "input": "thanks"})
        check(turn)
        assert turn[-1]["type"] == "response.completed"
        seen = provider.requests[-1]
        assert [item.get("role") for item in seen.input] == ["developer", "user", "user"]
        assert seen.input[-1]["content"][0]["text"] == "thanks"
        assert [t["name"] for t in seen.tools] == ["shell", "update_plan", "search_docs"]


def test_a_warm_up_meets_tool_choice_required_by_generating_nothing(server):
    with open_ws(server) as ws:
        warm = ws_turn(ws, input="hi", tools=[SHELL], tool_choice="required", generate=False)
        check(warm)
        assert (warm[-1]["type"], warm[-1]["response"]["output"]) == ("response.completed", [])
        # the turn after it is held to tool_choice as always
        turn = ws_turn(
            ws, previous_response_id=warm[-1]["response"]["id"], input="run ls", tools=[SHELL], tool_choice="required"
        )
        assert [item["name"] for item in turn[-1]["response"]["output"]] == ["shell"]


def test_openai_sdk_websocket_warm_up_and_continuation(server, provider):
    client = openai.OpenAI(base_url=server, api_key=API_KEY, max_retries=0)

    def turn(connection) -> list:
        events = []
        for event in connection:
            events.append(event)
            if event.type in ("response.completed", "response.failed", "error"):
                return events
        raise AssertionError("the connection closed mid-turn")

    developer = {"type": "message", "role": "developer", "content": "Answer in one word."}
    with client.responses.connect() as connection:
        connection.response.create(
            model="demo", input=[developer], tools=CODEX["tools"], store=False, stream=True, generate=False
        )
        warm = turn(connection)
        assert [e.type for e in warm] == ["response.created", "response.in_progress", "response.completed"]
        assert warm[0].model_extra == {"openresponses:ignored": ["tool:custom", "tool:web_search"]}
        connection.response.create(
            model="demo", previous_response_id=warm[-1].response.id, input="search the docs", tools=CODEX["tools"]
        )
        final = turn(connection)[-1]
    assert final.type == "response.completed"
    assert [item.name for item in final.response.output if item.type == "function_call"] == ["search_docs"]
    assert [item["role"] for item in provider.requests[-1].input] == ["developer", "user"]  # the warm-up's input first


def test_websocket_turn_with_stream_true_is_an_ordinary_turn(server):
    with open_ws(server) as ws:
        events = ws_turn(ws, input="hello", stream=True, generate=True)
        check(events)
        assert events[-1]["response"]["output"][0]["content"][0]["text"] == "You said: hello"
        assert all("openresponses:ignored" not in e for e in events)  # nothing was left out
        (error,) = ws_turn(ws, input="hello", generate="no")
        assert (error["status"], error["error"]["code"], error["error"]["param"]) == (400, "invalid_value", "generate")
        assert "not a boolean" in error["error"]["message"]


def test_generate_over_http_is_ignored_and_named(server):
    answer = openai.OpenAI(base_url=server, api_key=API_KEY, max_retries=0).responses.with_raw_response.create(
        model="demo", input="hi", extra_body={"generate": False}
    )
    assert answer.headers["OpenResponses-Ignored"] == "parameter:generate"
    assert answer.parse().output_text == "You said: hi"  # HTTP has no warm-up: the model answers


# -- strict, as the command line serves it -------------------------------------------------------


@pytest.mark.process
def test_orspec_serve_strict_refuses_what_the_default_ignores():
    port = free_port()
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY, "--store", "memory:"]
    with served_process([*command, "--strict"], port=port) as base:
        client = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0)
        with pytest.raises(openai.BadRequestError) as info:
            client.responses.create(model="demo", input="hi", tools=CODEX["tools"])
        assert (info.value.code, info.value.param) == ("unsupported_tool_type", "tools[2].type")
        with pytest.raises(openai.BadRequestError) as info:
            client.responses.create(model="demo", input="hi", extra_body={"client_metadata": {}})
        assert (info.value.code, info.value.param) == ("unknown_parameter", "client_metadata")
