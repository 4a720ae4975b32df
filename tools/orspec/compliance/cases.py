"""The compliance tests, each stated as data: what it sends, what it checks, the MUST it proves.

A test is a function taking a `Target` and raising `CheckFailed` with a reason. Tests that depend
on the model's behaviour prompt for it explicitly (name the tool to call, ask for a long answer),
so a real model and a deterministic demo model are held to the same checks.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from openresponses_runtime import models
from openresponses_runtime.client import APIStatusError
from openresponses_runtime.events import parse_event
from openresponses_runtime.streaming import StreamChecker
from pydantic import ValidationError

from .target import TERMINAL, CheckFailed, NotServed, Reply, Stream, Target

__all__ = ["CASES", "Case"]


@dataclass(frozen=True)
class Case:
    """One compliance test."""

    id: str
    title: str
    sends: str
    checks: str
    must: str
    run: Callable[[Target], None]
    group: str = "http"
    extension: str = ""  # the vendor fragment whose operations it tests; skipped where they are not served
    optional: bool = False  # an operation a server may decline (501 `not_implemented`); skipped where it does


CASES: list[Case] = []


def case(
    id: str,
    title: str,
    *,
    sends: str,
    checks: str,
    must: str,
    group: str = "http",
    extension: str = "",
    optional: bool = False,
):
    def register(fn: Callable[[Target], None]) -> Callable[[Target], None]:
        CASES.append(Case(id, title, sends, checks, must, fn, group, extension, optional))
        return fn

    return register


# -- fixtures ----------------------------------------------------------------------------------

BACKGROUND_SECONDS = 60  # how long a short background response may take to end
COUNT_TO = 200  # a long enough answer that a cancel sent at once usually finds it running

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
TIME = {
    "type": "function",
    "name": "get_time",
    "description": "Get the current local time in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
# A 1x1 PNG, inline so that no server has to fetch anything.
PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
LONG_TEXT = " ".join(["The quick brown fox jumps over the lazy dog."] * 12)


def _pdf(title: str) -> str:
    """A one-page PDF whose page reads `title`, as a base64 `data:` URL (offsets computed, so it opens)."""
    stream = f"BT /F1 18 Tf 40 60 Td ({title}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 320 120] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return "data:application/pdf;base64," + base64.b64encode(out).decode()


# A small PDF, inline so that no server has to fetch anything.
DOCUMENT = _pdf("Quarterly Lighthouse Report")
MISSING_ID = "resp_orspec_compliance_does_not_exist"


# -- checks ------------------------------------------------------------------------------------


def expect(condition: Any, reason: str) -> None:
    if not condition:
        raise CheckFailed(reason)


def _summary(exc: ValidationError, limit: int = 2) -> str:
    errors = exc.errors(include_url=False, include_input=False)
    parts = [f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in errors[:limit]]
    more = f" (+{len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(parts) + more


def check_resource(data: Any, *, status: str | None = "completed", where: str = "the response") -> dict[str, Any]:
    """`data` is a complete ResponseResource (validated by the generated model) with `status`."""
    expect(isinstance(data, dict), f"{where} is not a JSON object")
    try:
        models.ResponseResource.model_validate(data)
    except ValidationError as exc:
        raise CheckFailed(f"{where} is not a valid ResponseResource: {_summary(exc)}") from None
    expect(data.get("object") == "response", f"{where} has object {data.get('object')!r}, not 'response'")
    if status is not None:
        detail = ""
        if data.get("error"):
            detail = f" (error: {data['error'].get('code')}: {data['error'].get('message')})"
        expect(data.get("status") == status, f"{where} has status {data.get('status')!r}, expected {status!r}{detail}")
    for i, item in enumerate(data.get("output") or ()):
        if item.get("type") in ("message", "function_call", "reasoning"):
            for key in ("id", "type", "status") if item.get("type") != "reasoning" else ("id", "type"):
                expect(item.get(key), f"{where}: output[{i}] ({item.get('type')}) has no {key}")
    return data


def texts(data: dict[str, Any]) -> str:
    out = []
    for item in data.get("output") or ():
        if item.get("type") == "message":
            out += [p.get("text", "") for p in item.get("content") or () if p.get("type") == "output_text"]
    return "".join(out)


def calls(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in data.get("output") or () if item.get("type") == "function_call"]


def check_call(item: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """A function_call item with a call_id, an offered name and JSON-object arguments."""
    expect(isinstance(item.get("call_id"), str) and item["call_id"], "a function_call has no call_id")
    expect(item.get("name") in names, f"a function_call names {item.get('name')!r}, not one of {sorted(names)}")
    try:
        arguments = json.loads(item.get("arguments") or "")
    except (TypeError, ValueError):
        raise CheckFailed(f"function_call arguments are not JSON: {item.get('arguments')!r}") from None
    expect(isinstance(arguments, dict), f"function_call arguments are not a JSON object: {item.get('arguments')!r}")
    return arguments


def check_answer(data: dict[str, Any]) -> None:
    expect(texts(data).strip(), "the response has no assistant output_text")


def check_error(
    reply: Reply, status: int, error_type: str, *, code: str | None = None, param: bool = False
) -> dict[str, Any]:
    """An HTTP error reply: `status` and the spec's `{"error": {type, code, param, message}}`."""
    expect(reply.status_code == status, f"expected HTTP {status}, got {reply.status_code}: {reply.text[:160]}")
    body = reply.body
    expect(body is not None, f"the {status} reply is not JSON: {reply.text[:160]!r}")
    error = body.get("error") if isinstance(body, dict) else None
    expect(isinstance(error, dict), f"the {status} reply has no `error` object")
    for key in ("type", "code", "param", "message"):
        expect(key in error, f"the error object has no `{key}` field")
    try:
        models.ErrorPayload.model_validate(error)
    except ValidationError as exc:
        raise CheckFailed(f"the error object does not match the schema: {_summary(exc)}") from None
    expect(error["type"] == error_type, f"error.type is {error['type']!r}, expected {error_type!r}")
    if code is not None:
        expect(error["code"] == code, f"error.code is {error['code']!r}, expected {code!r}")
    if param:
        expect(isinstance(error.get("param"), str) and error["param"], "error.param does not name the bad field")
    expect(isinstance(error["message"], str) and error["message"], "error.message is empty")
    return error


def check_stream(stream: Stream, *, terminal: str = "response.completed") -> dict[str, Any]:
    """A clean SSE stream: 200, text/event-stream, registry-valid events, no checker violations."""
    expect(stream.status == 200, f"the stream answered HTTP {stream.status}: {stream.error[:160]}")
    expect(
        stream.content_type.split(";")[0].strip() == "text/event-stream",
        f"Content-Type is {stream.content_type!r}, not text/event-stream",
    )
    for event in stream.events:
        try:
            parse_event(event)
        except ValidationError as exc:
            raise CheckFailed(f"event {event.get('type')!r} fails the registry: {_summary(exc)}") from None
    if stream.violations:
        shown = "; ".join(str(v) for v in stream.violations[:3])
        more = f" (+{len(stream.violations) - 3} more)" if len(stream.violations) > 3 else ""
        raise CheckFailed(f"stream violations: {shown}{more}")
    final = stream.final
    expect(final is not None, "the stream has no terminal event with a response")
    kind = next(e["type"] for e in reversed(stream.events) if e.get("type") in TERMINAL)
    expect(kind == terminal, f"the stream ends with {kind}, expected {terminal}")
    return final


def check_ws_turn(messages: list[dict[str, Any]], *, terminal: str = "response.completed") -> dict[str, Any]:
    """A WebSocket turn: the same events as SSE, each checked, and no `[DONE]`."""
    last = messages[-1]
    if last.get("type") == "error" and "status" in last:
        raise CheckFailed(f"the turn failed: {last.get('status')} {json.dumps(last.get('error'))[:160]}")
    checker = StreamChecker()
    for message in messages:
        checker.feed_event(message, message.get("type"))
    checker.feed(None, "[DONE]")  # WebSocket mode has no marker; the checker wants one
    violations = checker.finish()
    if violations:
        raise CheckFailed("WebSocket events break the stream rules: " + "; ".join(str(v) for v in violations[:3]))
    expect(last.get("type") == terminal, f"the turn ends with {last.get('type')}, expected {terminal}")
    return check_resource(last["response"], status=None, where=f"the {terminal} response")


def check_ws_error(messages: list[dict[str, Any]], status: int, code: str | None = None) -> dict[str, Any]:
    last = messages[-1]
    expect(
        last.get("type") == "error" and "status" in last,
        f"expected a WebSocket error message ({status}), got {last.get('type')!r}",
    )
    try:
        models.WebSocketErrorEvent.model_validate(last)
    except ValidationError as exc:
        raise CheckFailed(f"the error message does not match WebSocketErrorEvent: {_summary(exc)}") from None
    expect(last["status"] == status, f"the error message has status {last['status']}, expected {status}")
    if code is not None:
        got = last["error"].get("code")
        expect(got == code, f"the error message has code {got!r}, expected {code!r}")
    return last


def _reply(response: httpx.Response) -> Reply:
    try:
        return Reply(response.status_code, response.json(), response.text)
    except ValueError:
        return Reply(response.status_code, None, response.text)


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": text}


# -- HTTP --------------------------------------------------------------------------------------


@case(
    "basic-text",
    "Basic text response",
    sends="POST /responses with a string input",
    checks="HTTP 200; a full ResponseResource (generated model), status completed, an assistant message "
    "with output_text, items with id/type/status, and usage",
    must="A response is a ResponseResource; output items carry id, type and status.",
)
def basic_text(client: Target) -> None:
    data = check_resource(client.create(input="Say hello in one short sentence."))
    check_answer(data)
    messages = [item for item in data["output"] if item.get("type") == "message"]
    expect(all(m.get("role") == "assistant" for m in messages), "an output message is not role assistant")
    usage = data.get("usage")
    expect(isinstance(usage, dict), "usage is missing")
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        expect(isinstance(usage.get(key), int), f"usage.{key} is not an integer")


@case(
    "streaming",
    "Streaming response",
    sends="POST /responses with stream: true",
    checks="text/event-stream; every event parses through the event registry; the whole stream passes "
    "StreamChecker (sequence numbers, lifecycle order, bracket events, SSE header = type, [DONE]); "
    "the final response is completed",
    must="Streams emit typed events in state-machine order, with increasing sequence_number, "
    "and end with `data: [DONE]`.",
)
def streaming(client: Target) -> None:
    final = check_stream(client.stream(input="Stream a short greeting to me."))
    check_answer(check_resource(final, where="the response.completed response"))


@case(
    "streaming-tool-call",
    "Streamed tool call",
    sends="stream: true with get_weather and a prompt that asks to call it",
    checks="a clean stream (StreamChecker) in which function_call_arguments deltas join to the done "
    "arguments, which are a JSON object, and the finished item has a call_id",
    must="Function call arguments stream as deltas bracketed by output_item added/done.",
)
def streaming_tool_call(client: Target) -> None:
    stream = client.stream(tools=[WEATHER], input="Call the get_weather tool for Paris now.")
    final = check_stream(stream)
    deltas: dict[str, list[str]] = {}
    done: dict[str, str] = {}
    for event in stream.events:
        if event.get("type") == "response.function_call_arguments.delta":
            deltas.setdefault(event.get("item_id"), []).append(event.get("delta", ""))
        elif event.get("type") == "response.function_call_arguments.done":
            done[event.get("item_id")] = event.get("arguments")
    expect(done, "no response.function_call_arguments.done event")
    for item_id, arguments in done.items():
        expect("".join(deltas.get(item_id, [])) == arguments, f"the argument deltas of {item_id} do not join to done")
    found = calls(final)
    expect(found, "the final response has no function_call")
    for item in found:
        check_call(item, {"get_weather"})


@case(
    "system-prompt",
    "System prompt and instructions",
    sends="instructions plus a system message and a user message",
    checks="HTTP 200, completed, instructions echoed on the response",
    must="Servers accept the instructions parameter and system-role messages.",
)
def system_prompt(client: Target) -> None:
    instructions = "You are a terse assistant. Answer in one sentence."
    data = check_resource(
        client.create(
            instructions=instructions,
            input=[{"type": "message", "role": "system", "content": "Always be polite."}, user("Say hello.")],
        )
    )
    expect(data.get("instructions") == instructions, f"instructions echoed as {data.get('instructions')!r}")
    check_answer(data)


@case(
    "developer-role",
    "Developer role",
    sends="a developer message (content parts) before a user message",
    checks="HTTP 200 and a completed response with an answer",
    must="Input messages may have role developer.",
)
def developer_role(client: Target) -> None:
    developer = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]}
    check_answer(check_resource(client.create(input=[developer, user("Say hello.")])))


@case(
    "tool-call",
    "Tool calling",
    sends="a function tool get_weather and a prompt that asks to call it",
    checks="a function_call item named get_weather with a call_id and JSON-object arguments; status completed",
    must="A model's tool request is a function_call item with call_id, name and JSON arguments.",
)
def tool_call(client: Target) -> None:
    data = check_resource(client.create(tools=[WEATHER], input="Call the get_weather tool for Paris now."))
    found = calls(data)
    expect(found, "no function_call item in the output")
    for item in found:
        check_call(item, {"get_weather"})


@case(
    "tool-round-trip",
    "Tool round trip",
    sends="a get_weather call, then its function_call_output with previous_response_id, with the tools "
    "and again without them",
    checks="both continuations complete with an assistant answer; previous_response_id is echoed",
    must="Function results come back as function_call_output items matched by call_id.",
)
def tool_round_trip(client: Target) -> None:
    first = check_resource(client.create(tools=[WEATHER], input="Call the get_weather tool for Paris now."))
    found = calls(first)
    expect(found, "no function_call item in the first response")
    outputs = [
        {"type": "function_call_output", "call_id": c["call_id"], "output": json.dumps({"temperature_c": 21})}
        for c in found
    ]
    second = check_resource(client.create(tools=[WEATHER], previous_response_id=first["id"], input=outputs))
    expect(second.get("previous_response_id") == first["id"], "previous_response_id is not echoed")
    check_answer(second)
    # The calls' results alone, the tools not sent again: the stored turn carries the calls.
    bare = check_resource(
        client.create(previous_response_id=first["id"], input=outputs), where="the continuation without tools"
    )
    check_answer(bare)


@case(
    "parallel-tool-calls",
    "Parallel tool calls",
    sends="two tools and a prompt naming both, first with parallel_tool_calls true, then false",
    checks="true: at least two function_calls with distinct call_ids and item ids; false: at most one call, "
    "and parallel_tool_calls echoed",
    must="With parallel_tool_calls false the model makes at most one tool call per turn.",
)
def parallel_tool_calls(client: Target) -> None:
    prompt = "Call both tools: the get_weather tool and the get_time tool, for Paris, in parallel."
    data = check_resource(client.create(tools=[WEATHER, TIME], parallel_tool_calls=True, input=prompt))
    found = calls(data)
    expect(len(found) >= 2, f"expected two function_calls, got {len(found)}")
    for item in found:
        check_call(item, {"get_weather", "get_time"})
    expect(len({c["call_id"] for c in found}) == len(found), "function_calls share a call_id")
    expect(len({c["id"] for c in found}) == len(found), "function_calls share an item id")
    data = check_resource(client.create(tools=[WEATHER, TIME], parallel_tool_calls=False, input=prompt))
    expect(data.get("parallel_tool_calls") is False, "parallel_tool_calls: false is not echoed")
    expect(len(calls(data)) <= 1, f"parallel_tool_calls false, yet {len(calls(data))} function_calls")


@case(
    "image-input",
    "Image input",
    sends="a user message with input_text and an input_image (a data: URL)",
    checks="HTTP 200 and a completed answer",
    must="User content may include input_image parts.",
)
def image_input(client: Target) -> None:
    content = [
        {"type": "input_text", "text": "Describe this image in one sentence."},
        {"type": "input_image", "image_url": PIXEL, "detail": "auto"},
    ]
    check_answer(check_resource(client.create(input=[{"type": "message", "role": "user", "content": content}])))


@case(
    "file-input",
    "File input",
    sends="a user message with input_text and an input_file (a one-page PDF as a base64 data: URL, with its filename)",
    checks="HTTP 200 and a completed answer; a server that reads no files may refuse the part with a 400 "
    "invalid_request error object (skipped)",
    must="User content may include input_file parts.",
    optional=True,
)
def file_input(client: Target) -> None:
    content = [
        {"type": "input_text", "text": "What is the title of the attached document? Answer with the title only."},
        {"type": "input_file", "filename": "lighthouse-report.pdf", "file_data": DOCUMENT},
    ]
    reply = client.post("/responses", client.body(input=[{"type": "message", "role": "user", "content": content}]))
    if reply.status_code == 400:
        error = check_error(reply, 400, "invalid_request")
        raise NotServed(f"the server refuses input_file: {error['message']}")
    expect(reply.status_code == 200, f"POST /responses answered {reply.status_code}: {reply.text[:160]}")
    check_answer(check_resource(reply.body))


@case(
    "multi-turn",
    "Multi-turn via input history",
    sends="user, assistant and user messages as input, the assistant's content as output_text parts, then as a string",
    checks="HTTP 200 and a completed answer",
    must="Input may carry the conversation history, including assistant messages.",
)
def multi_turn(client: Target) -> None:
    assistant = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Nice to meet you, Ada.", "annotations": []}],
    }
    history = [user("My name is Ada."), assistant, user("What is my name?")]
    check_answer(check_resource(client.create(input=history)))
    plain = {"type": "message", "role": "assistant", "content": "Nice to meet you, Ada."}
    check_answer(
        check_resource(
            client.create(input=[history[0], plain, history[2]]), where="the answer to string assistant content"
        )
    )


@case(
    "previous-response",
    "previous_response_id continuation",
    sends="one response, then a second with previous_response_id",
    checks="the second completes and echoes previous_response_id",
    must="previous_response_id continues a stored conversation.",
)
def previous_response(client: Target) -> None:
    first = check_resource(client.create(input="Remember the word pineapple."))
    second = check_resource(
        client.create(previous_response_id=first["id"], input="Which word did I ask you to remember?")
    )
    expect(second.get("previous_response_id") == first["id"], "previous_response_id is not echoed")
    check_answer(second)


@case(
    "tool-choice-none",
    "tool_choice none",
    sends="get_weather, tool_choice none, a prompt asking to call it",
    checks="no function_call in the output; tool_choice echoed as none",
    must='tool_choice "none": the model calls no tool.',
)
def tool_choice_none(client: Target) -> None:
    data = check_resource(
        client.create(tools=[WEATHER], tool_choice="none", input="Call the get_weather tool for Paris.")
    )
    expect(not calls(data), "tool_choice none, yet the output has a function_call")
    expect(data.get("tool_choice") == "none", f"tool_choice echoed as {data.get('tool_choice')!r}")


@case(
    "tool-choice-required",
    "tool_choice required",
    sends="get_weather, tool_choice required, a prompt that asks for no tool",
    checks="at least one function_call",
    must='tool_choice "required": the model invokes at least one tool.',
)
def tool_choice_required(client: Target) -> None:
    data = check_resource(client.create(tools=[WEATHER], tool_choice="required", input="Say hello."))
    expect(calls(data), "tool_choice required, yet no function_call")
    for item in calls(data):
        check_call(item, {"get_weather"})


@case(
    "tool-choice-function",
    "tool_choice for a specific function",
    sends='two tools, tool_choice {"type": "function", "name": "get_time"}, a prompt naming get_weather',
    checks="at least one function_call, all of them get_time",
    must="A forced function is the one the model calls.",
)
def tool_choice_function(client: Target) -> None:
    data = check_resource(
        client.create(
            tools=[WEATHER, TIME],
            tool_choice={"type": "function", "name": "get_time"},
            input="Call the get_weather tool for Paris.",
        )
    )
    expect(calls(data), "a forced function, yet no function_call")
    for item in calls(data):
        check_call(item, {"get_time"})


@case(
    "allowed-tools",
    "tool_choice allowed_tools",
    sends="two tools, allowed_tools [get_time] (mode auto), a prompt asking for both",
    checks="no function_call outside the allowed set",
    must="Servers MUST enforce allowed_tools as a hard constraint.",
)
def allowed_tools(client: Target) -> None:
    data = check_resource(
        client.create(
            tools=[WEATHER, TIME],
            tool_choice={"type": "allowed_tools", "tools": [{"type": "function", "name": "get_time"}], "mode": "auto"},
            input="Call the get_weather tool and the get_time tool for Paris.",
        )
    )
    for item in calls(data):
        check_call(item, {"get_time"})


@case(
    "max-output-tokens",
    "max_output_tokens makes a response incomplete",
    sends="max_output_tokens 16 and a prompt asking for a long answer, as JSON and as a stream",
    checks="status incomplete, incomplete_details.reason max_output_tokens, the cut message incomplete; "
    "the stream ends with response.incomplete and passes StreamChecker",
    must="If any item ends incomplete, the containing response MUST also be incomplete.",
)
def max_output_tokens(client: Target) -> None:
    prompt = f"Repeat this text back word for word, then write a long essay about it: {LONG_TEXT}"
    data = check_resource(client.create(max_output_tokens=16, input=prompt), status="incomplete")
    reason = (data.get("incomplete_details") or {}).get("reason")
    expect(reason == "max_output_tokens", f"incomplete_details.reason is {reason!r}")
    messages = [item for item in data["output"] if item.get("type") == "message"]
    if messages:
        expect(messages[-1].get("status") == "incomplete", "the cut message is not status incomplete")
    final = check_stream(client.stream(max_output_tokens=16, input=prompt), terminal="response.incomplete")
    check_resource(final, status="incomplete", where="the response.incomplete response")


@case(
    "error-invalid-request",
    "Bad input is a 400 invalid_request with param",
    sends="input: 42 (not a string or a list), then a body that is not JSON",
    checks="HTTP 400, error.type invalid_request, error.param names the field, error.message set",
    must="Errors are `{error: {type, code, param, message}}` with the matching HTTP status.",
    group="errors",
)
def error_invalid_request(client: Target) -> None:
    error = check_error(client.post("/responses", client.body(input=42)), 400, "invalid_request", param=True)
    expect("input" in error["param"], f"error.param is {error['param']!r}, expected it to name input")
    # Bodies no client sends go out through httpx itself.
    raw = httpx.post(
        client.base_url + "/responses",
        content=b"{not json",
        headers={"Authorization": f"Bearer {client.api_key}", "Content-Type": "application/json"},
        timeout=client.timeout,
    )
    check_error(_reply(raw), 400, "invalid_request")


@case(
    "error-auth",
    "Bad or missing credentials are a 401",
    sends="a valid body with a wrong bearer token, then with no Authorization header",
    checks="HTTP 401 with the error object both times",
    must="Requests authenticate with `Authorization: Bearer`; a bad key is refused.",
    group="errors",
)
def error_auth(client: Target) -> None:
    body = client.body(input="hello")
    check_error(client.post("/responses", body, key="sk-orspec-compliance-wrong-key"), 401, "invalid_request")
    reply = httpx.post(client.base_url + "/responses", json=body, timeout=client.timeout)  # no Authorization at all
    check_error(_reply(reply), 401, "invalid_request")


@case(
    "error-not-found",
    "Unknown previous_response_id is a 404",
    sends="previous_response_id naming no response",
    checks="HTTP 404, error.type not_found",
    must="An unknown previous_response_id is a not_found error (404).",
    group="errors",
)
def error_not_found(client: Target) -> None:
    check_error(client.post("/responses", client.body(input="hi", previous_response_id=MISSING_ID)), 404, "not_found")


@case(
    "compaction",
    "Compaction endpoint",
    sends="a stored response, then POST /responses/compact with its id; then the output as the next input",
    checks="a CompactResource (object response.compaction, items, usage); the compacted items are accepted "
    "as input and the next response completes",
    must="POST /responses/compact returns a shortened context that round-trips as input.",
)
def compaction(client: Target) -> None:
    first = check_resource(client.create(input="Remember the word pineapple."))
    reply = client.post("/responses/compact", client.body(previous_response_id=first["id"]))
    expect(reply.status_code == 200, f"POST /responses/compact answered {reply.status_code}: {reply.text[:160]}")
    data = reply.body
    try:
        models.CompactResource.model_validate(data)
    except ValidationError as exc:
        raise CheckFailed(f"the compaction is not a CompactResource: {_summary(exc)}") from None
    expect(data["output"], "the compaction has no output items")
    check_answer(check_resource(client.create(input=[*data["output"], user("Which word was it?")])))


@case(
    "input-tokens",
    "Input token count",
    sends="POST /responses/input_tokens with a short input, a long one, and the short one continuing a stored response",
    checks="an InputTokenCountResource (object response.input_tokens, a whole number); the long input and the "
    "continued one count more than the short one; a server whose model cannot count answers 501 "
    "not_implemented with the error object (skipped)",
    must="POST /responses/input_tokens counts the input a create with the same body would take.",
    optional=True,
)
def input_tokens(client: Target) -> None:
    def count(**fields: Any) -> int:
        reply = client.post("/responses/input_tokens", client.body(**fields))
        if reply.status_code == 501:
            check_error(reply, 501, "server_error", code="not_implemented")
            raise NotServed("the server's model cannot count input tokens (501 not_implemented)")
        if reply.status_code in (404, 405):
            raise NotServed(f"the server answers {reply.status_code} to POST /responses/input_tokens")
        expect(
            reply.status_code == 200, f"POST /responses/input_tokens answered {reply.status_code}: {reply.text[:160]}"
        )
        try:
            counted = models.InputTokenCountResource.model_validate(reply.body)
        except ValidationError as exc:
            raise CheckFailed(f"the count is not an InputTokenCountResource: {_summary(exc)}") from None
        expect(counted.object == "response.input_tokens", f"object is {counted.object!r}, not response.input_tokens")
        return counted.input_tokens

    short = count(input="hello")
    expect(count(input=LONG_TEXT) > short, "a long input counts no more tokens than `hello`")
    first = check_resource(client.create(input="Remember the word pineapple."))
    continued = count(input="hello", previous_response_id=first["id"])
    expect(continued > short, "the history of previous_response_id adds no tokens to the count")


# -- stored responses (the `openai` fragment's operations) -------------------------------------
# Through the generated client's methods, so the paths come from the spec. Each case first calls
# an operation on a response it has just stored: a 404 or 405 there means the server does not serve
# the operation (a core-only server), and the case is skipped, not failed.


def _served(name: str, call: Callable[[], Any]) -> Any:
    """`call()` of the operation `name`, the first on a stored response; NotServed if the server lacks it."""
    try:
        return call()
    except APIStatusError as exc:
        if exc.status_code in (404, 405):
            raise NotServed(f"the server answers {exc.status_code} to {name} on a response it just stored") from None
        raise CheckFailed(f"{name} answered {exc.status_code}: {exc.message[:160]}") from None


def _status_error(call: Callable[[], Any], name: str) -> APIStatusError:
    """The error `call()` must answer with."""
    try:
        call()
    except APIStatusError as exc:
        return exc
    raise CheckFailed(f"{name} succeeded where it must fail")


def _check_status_error(exc: APIStatusError, status: int, error_type: str, name: str) -> None:
    expect(exc.status_code == status, f"{name} answered {exc.status_code}, expected {status}")
    expect(exc.type == error_type, f"{name}: error.type is {exc.type!r}, expected {error_type!r}")
    expect(bool(exc.message), f"{name}: error.message is empty")


@case(
    "lifecycle-retrieve",
    "Retrieve a stored response",
    sends="a stored response, then getResponse with its id; then with an id no response has",
    checks="the same ResponseResource as the create call answered; a 404 not_found for the unknown id",
    must="A stored response can be fetched again by its id, unchanged.",
    group="lifecycle",
    extension="openai",
)
def lifecycle_retrieve(client: Target) -> None:
    created = check_resource(client.create(input="Say hello in one short sentence."))
    again = _served("retrieve", lambda: client.client.responses.retrieve(created["id"]))
    fetched = check_resource(again.model_dump(mode="json", by_alias=True, exclude_unset=True), where="retrieve")
    expect(fetched["id"] == created["id"], f"retrieve answered response {fetched['id']!r}, not {created['id']!r}")
    expect(fetched["output"] == created["output"], "retrieve answered other output than the create call")
    missing = _status_error(lambda: client.client.responses.retrieve(MISSING_ID), "retrieve of an unknown id")
    _check_status_error(missing, 404, "not_found", "retrieve of an unknown id")


@case(
    "lifecycle-input-items",
    "Page through a response's input items",
    sends="a stored response with three input messages, then listInputItems on it in pages of two",
    checks="a list page (object list, data, first_id, last_id, has_more); the pages hold the three items in "
    "order, each with an id, and the second page starts after the first page's last_id",
    must="The input items of a stored response are listed in cursor pages.",
    group="lifecycle",
    extension="openai",
)
def lifecycle_input_items(client: Target) -> None:
    words = ["first", "second", "third"]
    created = check_resource(client.create(input=[user(f"The {w} message.") for w in words]))
    listing = client.client.responses.input_items
    page = _served("input_items.list", lambda: listing.list(created["id"], order="asc", limit=2))
    expect(page.object == "list", f"the page has object {page.object!r}, not 'list'")
    expect(
        len(page.data) == 2 and page.has_more,
        f"a page of 2 of 3 items holds {len(page.data)}, has_more {page.has_more}",
    )
    rest = listing.list(created["id"], order="asc", limit=2, after=page.last_id)
    expect(
        len(rest.data) == 1 and not rest.has_more,
        f"the last page holds {len(rest.data)} items, has_more {rest.has_more}",
    )
    items = [item.model_dump(mode="json", by_alias=True, exclude_unset=True) for item in [*page.data, *rest.data]]
    ids = [item.get("id") for item in items]
    expect(all(ids) and len(set(ids)) == 3, f"the items' ids are not three distinct ids: {ids}")
    expect((page.first_id, page.last_id) == (ids[0], ids[1]), "first_id and last_id do not name the page's ends")
    sent = [json.dumps(item.get("content")) for item in items]
    expect(all(w in text for w, text in zip(words, sent, strict=True)), f"the items are not the input in order: {sent}")


@case(
    "lifecycle-delete",
    "Delete a stored response",
    sends="a stored response, then deleteResponse on it, then getResponse",
    checks="a response.deleted object naming the id with deleted true; then a 404 not_found",
    must="A deleted response is gone: retrieving it is a 404.",
    group="lifecycle",
    extension="openai",
)
def lifecycle_delete(client: Target) -> None:
    created = check_resource(client.create(input="Say hello."))
    deleted = _served("delete", lambda: client.client.responses.delete(created["id"]))
    expect(
        (deleted.id, deleted.object, deleted.deleted) == (created["id"], "response.deleted", True),
        f"delete answered {deleted.model_dump(mode='json')}",
    )
    gone = _status_error(lambda: client.client.responses.retrieve(created["id"]), "retrieve of a deleted response")
    _check_status_error(gone, 404, "not_found", "retrieve of a deleted response")


@case(
    "lifecycle-cancel-finished",
    "Cancelling a finished response is refused",
    sends="a stored response created without background mode, then cancelResponse on it",
    checks="HTTP 400, error.type invalid_request; the response is still completed afterwards",
    must="Only a background response that is still running can be cancelled.",
    group="lifecycle",
    extension="openai",
)
def lifecycle_cancel_finished(client: Target) -> None:
    created = check_resource(client.create(input="Say hello."))
    _served("retrieve", lambda: client.client.responses.retrieve(created["id"]))
    refused = _status_error(lambda: client.client.responses.cancel(created["id"]), "cancel of a finished response")
    if refused.status_code in (404, 405):
        raise NotServed(f"the server answers {refused.status_code} to cancel on a response it just stored")
    _check_status_error(refused, 400, "invalid_request", "cancel of a finished response")
    after = client.client.responses.retrieve(created["id"])
    expect(after.status == "completed", f"after a refused cancel the response is {after.status!r}")


@case(
    "lifecycle-background",
    "Background mode: poll to the end, or cancel",
    sends="a request with background true, then getResponse until it ends; another, then cancelResponse at once",
    checks="each create call answers queued or in_progress at once; polling ends completed, with output; the "
    "cancel answers the response cancelled, or a 400 when it had already ended, and retrieve agrees",
    must="A background response is polled to its end, and one still running can be cancelled.",
    group="lifecycle",
    extension="openai",
)
def lifecycle_background(client: Target) -> None:
    created = check_resource(client.create(input="Say hello.", background=True), status=None)
    expect(created.get("status") in ("queued", "in_progress"), f"background true answered {created.get('status')!r}")
    retrieve = client.client.responses.retrieve
    _served("retrieve", lambda: retrieve(created["id"]))
    deadline = time.monotonic() + BACKGROUND_SECONDS
    while (polled := retrieve(created["id"])).status in ("queued", "in_progress"):
        expect(time.monotonic() < deadline, f"the response is still {polled.status} after {BACKGROUND_SECONDS} s")
        time.sleep(0.1)
    ended = check_resource(
        polled.model_dump(mode="json", by_alias=True, exclude_unset=True), where="the polled response"
    )
    expect(bool(texts(ended)), "the polled response ended completed without output text")
    running = check_resource(client.create(input=f"Count from 1 to {COUNT_TO}.", background=True), status=None)
    try:
        status = client.client.responses.cancel(running["id"]).status
    except APIStatusError as exc:  # it may have ended before the cancel arrived
        _check_status_error(exc, 400, "invalid_request", "cancel of a background response that had ended")
        status = None
    after = retrieve(running["id"]).status
    if status is None:
        expect(after not in ("queued", "in_progress"), f"cancel was refused, yet the response is still {after!r}")
    else:
        expect(status == after == "cancelled", f"cancel answered status {status!r}, and retrieve then {after!r}")


# -- WebSocket mode ----------------------------------------------------------------------------


def _ws(client: Target) -> Any:
    try:
        return client.websocket()
    except Exception as exc:  # pragma: no cover - connection errors surface on enter
        raise CheckFailed(f"cannot open a WebSocket: {exc}") from None


@case(
    "ws-single-turn",
    "WebSocket: single turn",
    sends="a response.create message on a WebSocket to /responses",
    checks="the streaming events, one per message, pass StreamChecker; ends with response.completed",
    must="WebSocket mode answers response.create with the same events as SSE.",
    group="websocket",
)
def ws_single_turn(client: Target) -> None:
    with _ws(client) as ws:
        check_answer(check_ws_turn(ws.turn(input="Hello over a WebSocket.")))


@case(
    "ws-auth",
    "WebSocket: bad credentials are refused",
    sends="a WebSocket upgrade to /responses with a wrong bearer token",
    checks="the upgrade is refused with HTTP 401 (no connection opens)",
    must="WebSocket mode authenticates with the same bearer token as HTTP.",
    group="websocket",
)
def ws_auth(client: Target) -> None:
    try:
        with client.websocket(key="sk-orspec-compliance-wrong-key") as ws:
            ws.turn(input="hello")
    except APIStatusError as exc:
        status = exc.status_code
        expect(status == 401, f"the upgrade was refused with HTTP {status}, expected 401")
        return
    except CheckFailed:
        pass
    raise CheckFailed("a WebSocket with a wrong key was accepted")


@case(
    "ws-sequential",
    "WebSocket: sequential turns",
    sends="two response.create messages, one after the other, on one connection",
    checks="two clean turns with distinct response ids",
    must="Turns on one connection run one after another.",
    group="websocket",
)
def ws_sequential(client: Target) -> None:
    with _ws(client) as ws:
        a = check_ws_turn(ws.turn(input="First turn."))
        b = check_ws_turn(ws.turn(input="Second turn."))
        expect(a["id"] != b["id"], "two turns share a response id")


@case(
    "ws-continuation",
    "WebSocket: continuation",
    sends="a turn, then a turn with previous_response_id naming it",
    checks="the second turn completes and echoes previous_response_id",
    must="previous_response_id may continue from any response the connection has seen.",
    group="websocket",
)
def ws_continuation(client: Target) -> None:
    with _ws(client) as ws:
        first = check_ws_turn(ws.turn(input="Remember the word pineapple."))
        second = check_ws_turn(ws.turn(input="Which word?", previous_response_id=first["id"]))
        expect(second.get("previous_response_id") == first["id"], "previous_response_id is not echoed")


@case(
    "ws-store-false",
    "WebSocket: store false recovery",
    sends="a store: false turn, a continuation on the same connection, then one on a new connection",
    checks="the same connection continues; a new connection gets 404 previous_response_not_found",
    must="store: false responses live only as long as the connection that made them.",
    group="websocket",
)
def ws_store_false(client: Target) -> None:
    with _ws(client) as ws:
        first = check_ws_turn(ws.turn(input="Remember the word pineapple.", store=False))
        check_ws_turn(ws.turn(input="Which word?", previous_response_id=first["id"]))
    with _ws(client) as other:
        check_ws_error(
            other.turn(input="Which word?", previous_response_id=first["id"]), 404, "previous_response_not_found"
        )


@case(
    "ws-missing-previous",
    "WebSocket: missing previous response",
    sends="a turn whose previous_response_id names no response, then a plain turn",
    checks="a WebSocketErrorEvent with status 404 and code previous_response_not_found; the connection stays usable",
    must="A failed turn is reported as an error message and the connection stays open.",
    group="websocket",
)
def ws_missing_previous(client: Target) -> None:
    with _ws(client) as ws:
        check_ws_error(ws.turn(input="hi", previous_response_id=MISSING_ID), 404, "previous_response_not_found")
        check_ws_turn(ws.turn(input="Still there?"))


@case(
    "ws-evict-after-failure",
    "WebSocket: eviction after a failed continuation",
    sends="a store: false turn; a continuation that fails (tool_choice names a function not in tools); "
    "the same continuation again",
    checks="the failed continuation is an error message; the next continuation gets 404 previous_response_not_found",
    must="A continuation that fails evicts the previous response from the connection cache.",
    group="websocket",
)
def ws_evict_after_failure(client: Target) -> None:
    with _ws(client) as ws:
        first = check_ws_turn(ws.turn(input="Remember the word pineapple.", store=False))
        failed = ws.turn(
            input="Which word?",
            previous_response_id=first["id"],
            tools=[WEATHER],
            tool_choice={"type": "function", "name": "orspec_no_such_tool"},
        )
        last = failed[-1]
        expect(
            (last.get("type") == "error" and "status" in last) or last.get("type") == "response.failed",
            f"a continuation with an invalid tool_choice did not fail (got {last.get('type')!r})",
        )
        check_ws_error(
            ws.turn(input="Which word?", previous_response_id=first["id"]), 404, "previous_response_not_found"
        )
