"""The generated server (`openresponses_runtime.server`) driven by the official `openai` client.

Most tests talk to one app served by uvicorn on loopback; the app runs with `debug=True`, so
every stream it emits also goes through the `StreamChecker` on the server side, and the tests
check the raw SSE bytes again on the client side.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import httpx
import openai
import pytest
from openresponses_runtime import models
from openresponses_runtime.server import (
    ROUTES,
    ArgumentsDelta,
    FunctionCallEnd,
    FunctionCallStart,
    MemoryStore,
    ModelError,
    SQLiteStore,
    TextDelta,
    TooManyRequests,
    VendorItem,
    create_app,
)
from openresponses_runtime.streaming import StreamChecker, check_sse

from ..server_helpers import (
    API_KEY,
    EndlessProvider,
    RecordingProvider,
    StepsProvider,
    free_port,
    live_server,
    start,
    stop,
    wait_answering,
)

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": True,
}
SEND_EMAIL = {
    "type": "function",
    "name": "send_email",
    "parameters": {"type": "object", "properties": {"to": {"type": "string"}}},
}
PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
RESPONSE_FIELDS = {field.alias or name for name, field in models.ResponseResource.model_fields.items()}


@pytest.fixture(scope="module")
def provider():
    return RecordingProvider()


@pytest.fixture(scope="module")
def server(provider):
    app = create_app(provider, store=MemoryStore(), api_keys=API_KEY, debug=True)
    with live_server(app) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server, api_key=API_KEY, max_retries=0)


def post(server: str, body, *, key: str | None = API_KEY, headers: dict | None = None, path="/responses"):
    head = {"Authorization": f"Bearer {key}"} if key else {}
    head.update(headers or {})
    if isinstance(body, dict):
        return httpx.post(server + path, json=body, headers=head, timeout=30)
    return httpx.post(server + path, content=body, headers={"Content-Type": "application/json", **head}, timeout=30)


def sse_messages(text: str) -> list[tuple[str | None, str]]:
    """(event, data) per SSE message; asserts each has at most one data line and no id."""
    out = []
    for block in text.split("\n\n"):
        if not block:
            continue
        lines = block.split("\n")
        assert not any(line.startswith("id:") for line in lines), block
        data = [line for line in lines if line.startswith("data: ")]
        assert len(data) == 1, block
        event = next((line[len("event: ") :] for line in lines if line.startswith("event: ")), None)
        out.append((event, data[0][len("data: ") :]))
    return out


def assert_error(response: httpx.Response, status: int, kind: str, code: str | None = None, param=...):
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) == {"type", "code", "param", "message"}
    assert error["type"] == kind
    if code is not None:
        assert error["code"] == code
    if param is not ...:
        assert error["param"] == param
    assert error["message"]
    return error


# -- requests and responses ------------------------------------------------------------------


def test_text_response_has_every_field(client, server):
    response = client.responses.create(model="demo-1", input="Hello there", metadata={"k": "v"}, temperature=0.5)
    assert response.output_text == "You said: Hello there"
    assert response.status == "completed"
    assert response.output[0].id.startswith("msg_")
    raw = post(server, {"model": "demo-1", "input": "Hi", "top_p": 0.5}).json()
    assert set(raw) >= RESPONSE_FIELDS
    assert raw["top_p"] == 0.5 and raw["model"] == "demo-1" and raw["incomplete_details"] is None
    assert raw["usage"]["total_tokens"] == raw["usage"]["input_tokens"] + raw["usage"]["output_tokens"]
    models.ResponseResource.model_validate(raw)


def test_function_call_round_trip(client, provider):
    first = client.responses.create(model="demo", input="What does get_weather say for Paris?", tools=[WEATHER])
    call = first.output[0]
    assert call.type == "function_call" and call.name == "get_weather" and call.id.startswith("fc_")
    assert json.loads(call.arguments) == {"city": "example city"}
    echoed = first.tools[0]
    assert (echoed.description, echoed.parameters, echoed.strict) == (
        WEATHER["description"],
        WEATHER["parameters"],
        True,
    )
    second = client.responses.create(
        model="demo",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": '{"temp": 21}'}],
        tools=[WEATHER],
    )
    assert second.output_text == 'The function returned: {"temp": 21}'
    assert second.previous_response_id == first.id
    context = provider.requests[-1].input
    assert [item["type"] for item in context] == ["message", "function_call", "function_call_output"]
    assert context[1]["call_id"] == call.call_id


def test_echoed_function_tool_without_optional_fields(server):
    raw = post(server, {"input": "hi", "tools": [SEND_EMAIL]}).json()
    assert raw["tools"] == [
        {
            "type": "function",
            "name": "send_email",
            "description": None,
            "parameters": SEND_EMAIL["parameters"],
            "strict": None,
        }
    ]


def test_image_input(client):
    response = client.responses.create(
        model="demo",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_image", "image_url": PNG, "detail": "low"},
                ],
            }
        ],
    )
    assert response.output_text == "You said and 1 image: What is this?"


def test_previous_response_chain(client, provider):
    one = client.responses.create(model="demo", input="one", instructions="Be brief.")
    two = client.responses.create(model="demo", input="two", previous_response_id=one.id)
    three = client.responses.create(model="demo", input="three", previous_response_id=two.id)
    assert three.output_text == "You said: three"
    context = provider.requests[-1].input
    texts = [part.get("text") for item in context for part in item["content"] if isinstance(item.get("content"), list)]
    assert texts == ["one", "You said: one", "two", "You said: two", "three"]
    assert provider.requests[-1].instructions is None  # instructions are not inherited
    assert three.instructions is None


def test_reasoning_and_max_output_tokens(client, server):
    response = client.responses.create(
        model="demo", input="think about it", reasoning={"effort": "low", "summary": "auto"}
    )
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.output[0].id.startswith("rs_") and response.output[0].summary[0].text
    assert response.reasoning.summary == "auto"
    words = " ".join(f"w{i}" for i in range(40))
    cut = client.responses.create(model="demo", input=words, max_output_tokens=16)
    assert cut.status == "incomplete" and cut.incomplete_details.reason == "max_output_tokens"
    assert cut.output[-1].status == "incomplete"
    stream = post(server, {"input": words, "max_output_tokens": 16, "stream": True})
    assert check_sse(stream.text) == []
    assert '"type":"response.incomplete"' in stream.text


def test_json_schema_format_is_echoed_with_its_schema(server):
    """Our spec types the echoed `schema` as an object (a deviation from upstream's null-only)."""
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    fmt = {"type": "json_schema", "name": "answer", "schema": schema, "strict": True}
    raw = post(server, {"input": "x", "text": {"format": fmt}})
    assert raw.status_code == 200, raw.text
    assert raw.json()["text"]["format"] == {**fmt, "description": None}
    assert models.ResponseResource.model_validate(raw.json()).text.format.schema_ == schema


def test_refusal(client):
    response = client.responses.create(model="demo", input="please refuse this")
    assert response.output[0].content[0].type == "refusal"


def test_compact(client, server):
    first = client.responses.create(model="demo", input="remember the number 7")
    raw = post(server, {"model": "demo", "previous_response_id": first.id, "input": "and 8"}, path="/responses/compact")
    assert raw.status_code == 200, raw.text
    compacted = models.CompactResource.model_validate(raw.json())
    assert compacted.object == "response.compaction" and compacted.output[0].type == "compaction"
    follow = post(server, {"input": [raw.json()["output"][0], {"role": "user", "content": "next"}]})
    assert follow.status_code == 200, follow.text


# -- streaming --------------------------------------------------------------------------------


def test_stream_with_openai_client(client):
    stream = client.responses.create(model="demo", input="stream this please", stream=True)
    events = list(stream)
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    done = next(event for event in events if event.type == "response.output_text.done")
    assert deltas == done.text == "You said: stream this please"
    assert events[-1].response.output_text == deltas


@pytest.mark.parametrize(
    "body",
    [
        {"input": "plain text"},
        {"input": "call get_weather", "tools": [WEATHER]},
        {"input": "think", "reasoning": {"summary": "detailed"}},
        {"input": "please refuse"},
        {"input": "call get_weather", "tools": [WEATHER], "tool_choice": "none"},
    ],
)
def test_raw_stream_is_spec_exact(server, body):
    response = post(server, {**body, "stream": True})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    messages = sse_messages(response.text)
    assert messages[-1] == (None, "[DONE]")
    for event, data in messages[:-1]:
        assert event == json.loads(data)["type"]
    checker = StreamChecker()
    assert checker.check_sse(response.text) == [], checker.violations
    assert checker.terminal == "response.completed"


def test_concurrent_streams_each_get_their_own(server):
    async def one(http: httpx.AsyncClient, n: int) -> tuple[int, str]:
        body = {"input": f"request number {n}", "stream": True}
        r = await http.post(server + "/responses", json=body, headers={"Authorization": f"Bearer {API_KEY}"})
        return n, r.text

    async def all_of_them():
        async with httpx.AsyncClient(timeout=60) as http:
            return await asyncio.gather(*(one(http, n) for n in range(24)))

    ids = set()
    for n, text in asyncio.run(all_of_them()):
        assert check_sse(text) == []
        final = json.loads(sse_messages(text)[-2][1])["response"]
        assert final["output"][0]["content"][0]["text"] == f"You said: request number {n}"
        ids.add(final["id"])
    assert len(ids) == 24


def test_client_disconnect_stops_the_provider():
    provider = EndlessProvider()
    app = create_app(provider, store=MemoryStore(), api_keys=API_KEY, debug=True)
    with live_server(app) as base:
        with httpx.stream(
            "POST",
            base + "/responses",
            json={"input": "x", "stream": True},
            headers={"Authorization": f"Bearer {API_KEY}"},
            timeout=10,
        ) as response:
            lines = response.iter_lines()
            for _ in range(20):
                next(lines)
        assert provider.started.is_set()
        assert provider.closed.wait(5), "the provider kept running after the client left"
        deadline = time.monotonic() + 1.5  # under the 2 s an unmarked test may take
        while app.state.openresponses.active and time.monotonic() < deadline:
            time.sleep(0.01)
        assert app.state.openresponses.active == 0 and provider.running == 0


def test_stream_failure_is_error_then_failed(server_factory=None):
    provider = StepsProvider([TextDelta("partial ")], error=RuntimeError("boom"), raise_after=True)
    app = create_app(provider, store=MemoryStore(), api_keys=API_KEY, debug=True)
    with live_server(app) as base:
        text = post(base, {"input": "x", "stream": True}).text
        checker = StreamChecker()
        assert checker.check_sse(text) == []
        assert checker.terminal == "response.failed" and checker.counts["error"] == 1
        error = json.loads(sse_messages(text)[-3][1])["error"]
        assert error["type"] == "server_error"
        assert_error(post(base, {"input": "x"}), 500, "server_error")


def test_provider_misuse_becomes_server_error():
    app = create_app(StepsProvider([ArgumentsDelta("{}")]), store=MemoryStore(), api_keys=API_KEY, debug=True)
    with live_server(app) as base:
        error = assert_error(post(base, {"input": "x"}), 500, "server_error", "provider_error")
        assert "ArgumentsDelta" in error["message"]


def test_vendor_item_is_streamed():
    item = {"type": "openai:web_search_call", "action": {"type": "search", "query": "weather"}}  # a fragment's item
    app = create_app(
        StepsProvider([VendorItem(item), TextDelta("done")]), store=MemoryStore(), api_keys=API_KEY, debug=True
    )
    with live_server(app) as base:
        text = post(base, {"input": "x", "stream": True}).text
        assert check_sse(text) == []
        final = post(base, {"input": "x"}).json()
        assert final["output"][0]["type"] == "openai:web_search_call" and final["output"][0]["status"] == "completed"


# -- tool_choice -------------------------------------------------------------------------------


def test_tool_choice_none_suppresses_calls(client):
    response = client.responses.create(model="demo", input="call get_weather", tools=[WEATHER], tool_choice="none")
    assert [item.type for item in response.output] == ["message"]


def test_allowed_tools_suppresses_other_calls():
    steps = [FunctionCallStart("send_email"), ArgumentsDelta('{"to": "x"}'), FunctionCallEnd(), TextDelta("ok")]
    app = create_app(StepsProvider(steps), store=MemoryStore(), api_keys=API_KEY, debug=True)
    choice = {"type": "allowed_tools", "tools": [{"type": "function", "name": "get_weather"}], "mode": "auto"}
    with live_server(app) as base:
        raw = post(base, {"input": "x", "tools": [WEATHER, SEND_EMAIL], "tool_choice": choice}).json()
        assert [item["type"] for item in raw["output"]] == ["message"]
        assert raw["tool_choice"] == choice
        stream = post(base, {"input": "x", "tools": [WEATHER, SEND_EMAIL], "tool_choice": choice, "stream": True})
        assert check_sse(stream.text) == [] and '"type":"function_call"' not in stream.text


def test_required_without_a_call_is_a_model_error():
    app = create_app(StepsProvider([TextDelta("no tools for you")]), store=MemoryStore(), api_keys=API_KEY, debug=True)
    with live_server(app) as base:
        for choice in ("required", {"type": "function", "name": "get_weather"}):
            body = {"input": "x", "tools": [WEATHER], "tool_choice": choice}
            assert_error(post(base, body), 500, "model_error", "tool_choice_violation", "tool_choice")
            text = post(base, {**body, "stream": True}).text
            checker = StreamChecker()
            assert checker.check_sse(text) == [] and checker.terminal == "response.failed"


def test_forced_function_and_required_call_the_tool(client):
    response = client.responses.create(
        model="demo",
        input="no names here",
        tools=[WEATHER, SEND_EMAIL],
        tool_choice={"type": "function", "name": "send_email"},
    )
    assert [(item.type, item.name) for item in response.output] == [("function_call", "send_email")]


# -- errors ------------------------------------------------------------------------------------


def test_validation_error_names_the_param(server):
    bad = {"input": [{"type": "message", "role": "user"}]}
    assert_error(post(server, bad), 400, "invalid_request", "invalid_value", "input[0].content")
    bad = {"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": 5}]}]}
    assert_error(post(server, bad), 400, "invalid_request", param="input[0].content[0].text")
    assert_error(post(server, {"temperature": "hot"}), 400, "invalid_request", param="temperature")
    assert_error(post(server, {"max_output_tokens": 1}), 400, "invalid_request", param="max_output_tokens")
    bad = {"tools": [WEATHER], "tool_choice": {"type": "allowed_tools", "tools": [{"type": "function", "name": "x"}]}}
    assert_error(post(server, bad), 400, "invalid_request", "unknown_tool", "tool_choice.tools[0].name")


def test_openai_client_sees_typed_errors(client):
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="demo", input="x", temperature="hot")
    assert info.value.status_code == 400 and info.value.body["param"] == "temperature"
    with pytest.raises(openai.NotFoundError) as info:
        client.responses.create(model="demo", input="x", previous_response_id="resp_missing")
    assert info.value.body["code"] == "previous_response_not_found"
    bad = openai.OpenAI(base_url=client.base_url, api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.responses.create(model="demo", input="x")


@pytest.mark.parametrize(
    ("body", "headers", "status", "code"),
    [
        (b"{not json", {}, 400, "invalid_json"),
        (b"[1, 2]", {}, 400, "invalid_json"),
        (b"\xff\xfe", {}, 400, "invalid_json"),
        (b'{"input": "x"}', {"Content-Type": "text/plain"}, 415, "unsupported_media_type"),
        (b"input=x", {"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"),
    ],
)
def test_malformed_requests(server, body, headers, status, code):
    assert_error(post(server, body, headers=headers), status, "invalid_request", code)


def test_auth_errors(server):
    error = assert_error(post(server, {"input": "x"}, key=None), 401, "invalid_request", "missing_api_key")
    assert "Bearer" in error["message"]
    assert_error(post(server, {"input": "x"}, key="nope"), 401, "invalid_request", "invalid_api_key")
    response = post(server, {"input": "x"}, headers={"Authorization": "Basic abc"}, key=None)
    assert_error(response, 401, "invalid_request")
    assert response.headers["www-authenticate"] == "Bearer"


def test_routes_and_methods(server):
    assert_error(post(server, {}, path="/nowhere"), 404, "not_found", "route_not_found")
    response = httpx.get(server + "/responses", headers={"Authorization": f"Bearer {API_KEY}"})
    assert_error(response, 405, "invalid_request", "method_not_allowed")
    assert response.headers["allow"] == "POST"
    # DELETE /responses/compact would delete a response with id `compact`; no route takes PUT.
    assert_error(httpx.put(server + "/responses/compact"), 405, "invalid_request")


def test_oversized_body():
    app = create_app(StepsProvider(), store=MemoryStore(), api_keys=API_KEY, max_body_bytes=1000)
    with live_server(app) as base:
        big = {"input": "x" * 2000}
        assert_error(post(base, big), 413, "invalid_request", "request_too_large")

        def chunked():
            yield b'{"input": "'
            yield b"y" * 2000
            yield b'"}'

        response = httpx.post(
            base + "/responses",
            content=chunked(),
            headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"},
        )
        assert_error(response, 413, "invalid_request", "request_too_large")


def test_rate_limit_and_model_errors_keep_their_status():
    for error, status, kind in (
        (TooManyRequests("slow down", headers={"Retry-After": "1"}), 429, "too_many_requests"),
        (ModelError("the model crashed"), 500, "model_error"),
    ):
        app = create_app(StepsProvider(error=error), store=MemoryStore(), api_keys=API_KEY)
        with live_server(app) as base:
            assert_error(post(base, {"input": "x"}), status, kind)
            response = post(base, {"input": "x", "stream": True})  # raised before the first step: plain HTTP
            assert_error(response, status, kind)
            if status == 429:
                assert response.headers["retry-after"] == "1"
                client = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0)
                with pytest.raises(openai.RateLimitError):
                    client.responses.create(model="m", input="x")


def test_store_false_cannot_be_continued(client, server):
    kept = client.responses.create(model="demo", input="x", store=False)
    assert kept.store is False
    response = post(server, {"input": "y", "previous_response_id": kept.id})
    assert_error(response, 404, "not_found", "previous_response_not_found", "previous_response_id")


def test_create_app_never_runs_open(monkeypatch):
    monkeypatch.delenv("ORSPEC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="API key"):
        create_app(StepsProvider(), store=MemoryStore())


# -- stores ------------------------------------------------------------------------------------


def test_sqlite_store_survives_restart(tmp_path):
    path = tmp_path / "responses.sqlite3"
    first_app = create_app(RecordingProvider(), store=SQLiteStore(path), api_keys=API_KEY)
    with live_server(first_app) as base:
        first = post(base, {"input": "before restart"}).json()
    provider = RecordingProvider()
    second_app = create_app(provider, store=str(path), api_keys=API_KEY)
    with live_server(second_app) as base:
        second = post(base, {"input": "after", "previous_response_id": first["id"]}).json()
    assert second["status"] == "completed"
    assert [item.get("role") for item in provider.requests[0].input] == ["user", "assistant", "user"]


def test_sqlite_store_concurrent_writes(tmp_path):
    from openresponses_runtime.server import StoredResponse

    store = SQLiteStore(tmp_path / "s.sqlite3")

    async def main():
        records = [StoredResponse(f"resp_{i}", None, [{"i": i}], [], {"id": f"resp_{i}"}) for i in range(50)]
        await asyncio.gather(*(store.put(r) for r in records))
        return await asyncio.gather(*(store.get(f"resp_{i}") for i in range(50)))

    got = asyncio.run(main())
    assert [r.input for r in got] == [[{"i": i}] for i in range(50)]


# -- generated routes and the command line ----------------------------------------------------


def test_routes_come_from_the_spec():
    assert {(op.method, op.path, op.operation_id) for op in ROUTES} == {
        ("POST", "/v1/responses", "createResponse"),
        ("POST", "/v1/responses/compact", "compactResponse"),
        ("POST", "/v1/responses/input_tokens", "countInputTokens"),
        ("GET", "/v1/responses/{response_id}", "getResponse"),  # these four from the openai fragment
        ("DELETE", "/v1/responses/{response_id}", "deleteResponse"),
        ("POST", "/v1/responses/{response_id}/cancel", "cancelResponse"),
        ("GET", "/v1/responses/{response_id}/input_items", "listInputItems"),
    }
    create = next(op for op in ROUTES if op.operation_id == "createResponse")
    assert create.request_model is models.CreateResponseBody and create.websocket
    # In matching order: a literal segment before a parameter, so `/responses/compact` is never an id.
    assert [op.handler for op in ROUTES] == [
        "create_response",
        "compact_response",
        "count_input_tokens",
        "delete_response",
        "get_response",
        "cancel_response",
        "list_input_items",
    ]


def test_route_specs_bind_handlers_by_method_and_path_whatever_the_operation_id():
    from orspec.generate.server import route_specs
    from orspec.schema import build

    document = {
        "servers": [{"url": "https://x.example/api/v2/"}],
        "components": {"schemas": {"T": {"type": "object"}, "U": {"type": "object"}}},
        "paths": {
            "/things/{thing-id}": {
                "post": {
                    "operationId": "makeThing",
                    "parameters": [
                        {"name": "thing-id", "in": "path", "required": True, "schema": {"type": "string"}},
                        {"name": "from", "in": "query", "schema": {"type": "string"}},
                    ],
                    "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/T"}}}},
                    "responses": {
                        "201": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/U"}}}}
                    },
                }
            },
            "/things/{id}/archive": {"post": {"operationId": "not an identifier"}},
            "/things/{x}/archive?beta=true": {"post": {"operationId": "betaArchive"}},
            "/things/mine": {"get": {"operationId": "Listmythings"}},
            "/things/{tid}/own": {
                "get": {"parameters": [{"name": "tid", "in": "path", "required": True, "schema": {"type": "string"}}]}
            },
        },
    }
    handlers = {("GET", "/things/mine"): "list_mine", ("GET", "/things/{thing_id}/own"): "get_own"}
    mine, made, archive, own = route_specs(build(document), handlers)
    # a handler's route keeps the parameter names the handler reads, whatever the spec calls them
    assert (own.path, own.handler, [p.json_name for p in own.path_params]) == (
        "/api/v2/things/{thing_id}/own",
        "get_own",
        ["thing_id"],
    )
    # bound by method and path, not by the id; a literal segment matches before a parameter
    assert (mine.path, mine.operation_id, mine.handler, mine.implement) == (
        "/api/v2/things/mine",
        "Listmythings",
        "list_mine",
        None,
    )
    assert (made.path, made.handler, made.implement, made.request_model, made.response_model, made.status) == (
        "/api/v2/things/{thing_id}",  # a parameter's route name is an identifier
        None,
        "make_thing",  # the provider method that implements the stub
        "T",
        "U",
        201,
    )
    assert [(p.json_name, p.name) for p in made.path_params] == [("thing_id", "thing_id")]
    assert [(p.json_name, p.name) for p in made.query_params] == [("from", "from_")]
    assert (archive.path, archive.implement, archive.body) == (
        "/api/v2/things/{id}/archive",
        "not_an_identifier",
        False,
    )


def test_a_path_that_differs_only_by_its_query_is_one_route_and_a_located_warning():
    from orspec.generate.server import check_operations
    from orspec.schema import build

    document = {
        "paths": {
            "/things": {"post": {"operationId": "makeThing"}},
            "/things?beta=true": {"post": {"operationId": "betaMakeThing"}},
        }
    }

    class Sources:
        def problem(self, pointer, message, **kw):
            return (pointer, message, kw["level"].value)

    assert check_operations(build(document), Sources()) == [
        (
            "/paths/~1things?beta=true/post",
            "operation 'betaMakeThing' (POST /things?beta=true) is served as 'makeThing', which has the same "
            "method and path; it gets no route of its own",
            "warning",
        )
    ]


@pytest.mark.process
def test_orspec_serve_prints_a_key_and_serves(tmp_path):
    port = free_port()
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("ORSPEC_API_KEY", "ORSPEC_STORE")}
    printed = tmp_path / "stdout"
    with printed.open("wb") as stdout:  # a file, not a pipe: reading it never waits
        command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--store", "memory:", "--delay", "0"]
        proc = start(command, cwd=tmp_path, env=env, stdout=stdout)
    try:
        base = f"http://127.0.0.1:{port}/v1"
        wait_answering(proc, base)
        key = printed.read_text().splitlines()[0].rsplit("Bearer ", 1)[1].strip()
        assert_error(post(base, {"input": "x"}, key=None), 401, "invalid_request")
        client = openai.OpenAI(base_url=base, api_key=key, max_retries=0)
        assert client.responses.create(model="demo", input="hi").output_text == "You said: hi"
    finally:
        stop(proc)


@pytest.mark.process
def test_threads_left_behind_are_daemons(tmp_path):
    """Once a served app has shut down, no thread it started keeps the process from exiting. Run in a
    fresh interpreter: in this one, threads earlier tests left would be counted too."""
    code = f"""
import threading
from starlette.testclient import TestClient
from openresponses_runtime.server import DemoProvider, SQLiteStore, create_app

app = create_app(DemoProvider(delay=0), store=SQLiteStore({str(tmp_path / "runs.db")!r}), api_keys=["k"])
with TestClient(app) as client:
    headers = {{"Authorization": "Bearer k"}}
    first = client.post("/v1/responses", json={{"model": "demo", "input": "hi"}}, headers=headers).json()
    body = {{"model": "demo", "input": "again", "stream": True, "previous_response_id": first["id"]}}
    with client.stream("POST", "/v1/responses", json=body, headers=headers) as stream:
        assert b"response.completed" in b"".join(stream.iter_bytes())
    assert client.get("/v1/responses/" + first["id"], headers=headers).status_code == 200
print([t.name for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()])
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"


# -- what the models take but the spec does not: nulls, unknown types --------------------------------


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "x", "top_p": None}, None),  # nullable in the spec: fine
        ({"input": "x", "stream_options": None, "tools": None, "model": None}, None),
        (
            {"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": None}]}]},
            "input[0].content[0].text",
        ),
        ({"input": "x", "text": {"format": {"type": None}}}, "text.format.type"),
        ({"input": [{"id": "x", "type": None}]}, "input[0].type"),
        ({"input": "x", "tools": [{"type": "function", "name": "f", "strict": None}]}, "tools[0].strict"),
        (
            {
                "input": [
                    {
                        "type": "openai:web_search_call",
                        "id": "w",
                        "status": "completed",
                        "action": {"type": "search", "query": "q", "sources": None},
                    }
                ]
            },
            "input[0].action.sources",
        ),
    ],
)
def test_explicit_null_where_the_spec_forbids_it_is_400(server, body, param):
    response = post(server, body)
    if param is None:
        assert response.status_code == 200, response.text
    else:
        error = assert_error(response, 400, "invalid_request", "invalid_value")
        assert error["param"] == param


def test_whole_numbers_written_as_floats_are_integers(server):
    response = post(server, {"input": "x", "top_logprobs": 3.0, "max_output_tokens": 1e3, "temperature": 1})
    assert response.status_code == 200, response.text
    assert response.json()["top_logprobs"] == 3 and response.json()["max_output_tokens"] == 1000
    assert_error(post(server, {"input": "x", "top_logprobs": 3.5}), 400, "invalid_request", "invalid_value")


def test_unknown_item_and_content_types_are_refused_and_tool_types_ignored(server):
    cases = [
        ({"input": [{"type": "bogus_item", "id": "b"}]}, "unsupported_item_type", "input[0].type"),
        (
            {"input": [{"role": "user", "content": [{"type": "bogus_part"}]}]},
            "unsupported_content_type",
            "input[0].content[0].type",
        ),
    ]
    for body, code, param in cases:
        error = assert_error(post(server, body), 400, "invalid_request", code)
        assert error["param"] == param
    # A tool the model cannot be offered is left out, not echoed, and named (see test_server_acceptance.py).
    ignored = post(server, {"input": "x", "tools": [{"type": "bogus_tool"}]})
    assert ignored.status_code == 200 and ignored.json()["tools"] == []
    assert ignored.headers["OpenResponses-Ignored"] == "tool:bogus_tool"
    # Vendor types declared by a fragment are known, and messages may leave out `type`.
    ok = post(server, {"input": [{"role": "user", "content": "hi"}], "tools": [{"type": "openai:web_search"}]})
    assert ok.status_code == 200, ok.text
