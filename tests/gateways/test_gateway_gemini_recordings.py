"""Every Gemini recording of `../shared/recordings/upstream/gemini/` replayed, byte for byte (with its
recorded status and content type), as the upstream of the Gemini gateway.

For each recording the test builds the Open Responses request a client would send for the recorded
conversation, checks that the gateway asks the upstream for the same thing (contents, system
instruction, tools and settings, compared as data), and that its stream carries everything the
recording holds: it passes the stream checker, and the text, thoughts, function calls, grounding,
usage and finish reason come through. The two recorded round trips (09a then 09b, 10a then 10b)
are then made by the gateway itself: the thought signature goes back byte for byte, by
`previous_response_id` and in the history a client carries.
"""

from __future__ import annotations

import base64
import json
import re

import httpx
import pytest
from openresponses_runtime.events import iter_sse
from openresponses_runtime.gateways.gemini import DEFAULT_THINKING_BUDGETS, DEFAULT_THINKING_LEVELS, GeminiProvider
from openresponses_runtime.server.auth import owner_of
from openresponses_runtime.server.sealing import Sealer
from openresponses_runtime.streaming import check_sse

from ..conftest import SHARED
from ..server_helpers import API_KEY
from ..upstream_replay import REASONING_KEY, UPSTREAM_KEY, next_turn, output_text, upstream
from ..upstream_replay import gateway as upstream_gateway

RECORDINGS = SHARED / "recordings" / "upstream" / "gemini"
MANIFEST = (
    {entry["name"]: entry for entry in json.loads((RECORDINGS / "manifest.json").read_text())}
    if (RECORDINGS / "manifest.json").is_file()
    else {}
)
NAMES = sorted(MANIFEST) or ["(none)"]
HEADERS = {"Authorization": f"Bearer {API_KEY}"}
MINIMUM_MAX_OUTPUT_TOKENS = 16  # the spec's minimum for max_output_tokens
MINTED = "call_gemini_"  # the gateway's ids for calls Gemini gave none: they go back as none
# generationConfig fields an Open Responses request carries (`thinkingConfig` as `reasoning`); the rest
# are the upstream's own (extra_body)
CARRIED_GENERATION = {"temperature", "topP", "maxOutputTokens", "responseMimeType", "responseSchema", "thinkingConfig"}
# a request for the blocked prompt, whose request was not recorded
BLOCKED_PROMPT = {"contents": [{"role": "user", "parts": [{"text": "Something the model will not read."}]}]}


@pytest.fixture(scope="module")
def replay():
    with upstream() as (url, replay):
        yield url.removesuffix("/v1") + "/v1beta", replay


def gateway(url: str, **options):
    return upstream_gateway(url, GeminiProvider, **options)


def load(name: str) -> tuple[dict, bytes, str, int]:
    """The recorded request, the recorded answer, its content type and its status."""
    entry = MANIFEST[name]
    path = RECORDINGS / f"{name}.request.json"
    request = json.loads(path.read_text()) if path.is_file() else BLOCKED_PROMPT
    body = (RECORDINGS / entry["response_file"]).read_bytes()
    kind = (entry.get("response_content_type") or "").split(";")[0]
    kind = kind or ("text/event-stream" if entry["response_file"].endswith(".sse") else "application/json")
    return request, body, kind, entry.get("status") or 200


def model_of(name: str) -> str:
    return MANIFEST[name].get("model") or "gemini-3.7-flash"


# -- the recorded request as an Open Responses request ------------------------------------


def _sealed_reasoning(signature: str, index: int) -> dict:
    """A reasoning item as the gateway's server hands it to a client that asks for `reasoning.encrypted_content`."""
    item_id = f"rs_recorded_{index}"
    state = {"gemini": {"thoughtSignature": signature, "part": "functionCall"}}
    blob = Sealer(REASONING_KEY).seal_reasoning(item_id, {"content": []}, json.dumps(state), tenant=owner_of(API_KEY))
    return {"type": "reasoning", "id": item_id, "summary": [], "encrypted_content": blob}


def _call_id(call: dict, index: int) -> str:
    return call.get("id") or f"{MINTED}recorded_{index}"


def responses_body(recorded: dict, model: str) -> dict:
    """The Open Responses request for the recorded Gemini request."""
    items: list[dict] = []
    calls = 0
    for content in recorded["contents"]:
        for part in content["parts"]:
            if content["role"] == "model" and "text" in part:
                items.append(
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": part["text"]}]}
                )
            elif "text" in part:
                items.append(
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": part["text"]}]}
                )
            elif "inlineData" in part:
                data = part["inlineData"]
                url = f"data:{data['mimeType']};base64,{data['data']}"
                items.append(
                    {"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": url}]}
                )
            elif "functionCall" in part:
                call = part["functionCall"]
                if "thoughtSignature" in part:
                    items.append(_sealed_reasoning(part["thoughtSignature"], calls))
                arguments = json.dumps(call["args"])
                items.append(
                    {
                        "type": "function_call",
                        "call_id": _call_id(call, calls),
                        "name": call["name"],
                        "arguments": arguments,
                    }
                )
                calls += 1
            elif "functionResponse" in part:
                answer = part["functionResponse"]
                call_id = answer.get("id") or next(
                    item["call_id"]
                    for item in items
                    if item["type"] == "function_call" and item["name"] == answer["name"]
                )
                items.append(
                    {"type": "function_call_output", "call_id": call_id, "output": json.dumps(answer["response"])}
                )
            else:
                raise AssertionError(f"no recording sends a part like {sorted(part)}: teach the test")
    body: dict = {"model": model, "stream": True, "input": items}
    system = [part["text"] for part in (recorded.get("systemInstruction") or {}).get("parts") or ()]
    if system:
        body["instructions"] = system[0]
        body["input"] = [{"type": "message", "role": "system", "content": text} for text in system[1:]] + items
    tools = [
        {
            "type": "function",
            "name": declaration["name"],
            "parameters": declaration.get("parameters") or declaration.get("parametersJsonSchema"),
            **({"description": declaration["description"]} if "description" in declaration else {}),
        }
        for tool in recorded.get("tools") or ()
        for declaration in tool.get("functionDeclarations") or ()
    ]
    if tools:
        body["tools"] = tools
    generation = recorded.get("generationConfig") or {}
    if "maxOutputTokens" in generation:
        body["max_output_tokens"] = max(generation["maxOutputTokens"], MINIMUM_MAX_OUTPUT_TOKENS)
    for field, name in (("temperature", "temperature"), ("top_p", "topP")):
        if name in generation:
            body[field] = generation[name]
    if "responseSchema" in generation:
        body["text"] = {"format": {"type": "json_schema", "name": "answer", "schema": generation["responseSchema"]}}
    reasoning = _reasoning(_camel(generation.get("thinkingConfig") or {}))
    if reasoning:
        body["reasoning"] = reasoning
    return body


def _camel(config: dict) -> dict:
    """A `thinkingConfig` with its fields as the API names them in JSON (08 writes `include_thoughts`)."""
    return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key): value for key, value in config.items()}


def _effort(table: dict, value) -> str:
    """The effort whose default row is `value`, else `medium` (which `provider_options` sets to it)."""
    return next((effort for effort, row in table.items() if row == value), "medium")


def _reasoning(thinking: dict) -> dict:
    """The Open Responses `reasoning` that asks for the recorded `thinkingConfig` (the gateway's
    table): a budget or a level by its effort, `includeThoughts` by a summary."""
    reasoning = {"summary": "auto"} if thinking.get("includeThoughts") else {}
    if "thinkingBudget" in thinking:
        reasoning["effort"] = _effort(DEFAULT_THINKING_BUDGETS, thinking["thinkingBudget"])
    if "thinkingLevel" in thinking:
        reasoning["effort"] = _effort(DEFAULT_THINKING_LEVELS, thinking["thinkingLevel"])
    return reasoning


def provider_options(recorded: dict) -> dict:
    """How a project would configure the gateway for this conversation: the upstream's own fields."""
    extra = {
        key: value
        for key, value in recorded.items()
        if key not in ("contents", "systemInstruction", "tools", "generationConfig")
    }
    own_generation = {k: v for k, v in (recorded.get("generationConfig") or {}).items() if k not in CARRIED_GENERATION}
    if own_generation:
        extra["generationConfig"] = own_generation
    hosted = [tool for tool in recorded.get("tools") or () if "functionDeclarations" not in tool]
    if hosted:
        extra["tools"] = hosted
    options: dict = {"extra_body": extra}
    thinking = _camel((recorded.get("generationConfig") or {}).get("thinkingConfig") or {})
    # a deployment's own row, as `--thinking-budget` / `--thinking-level` set it
    if thinking.get("thinkingBudget", 0) not in DEFAULT_THINKING_BUDGETS.values():
        options["thinking_budgets"] = {"medium": thinking["thinkingBudget"]}
    if thinking.get("thinkingLevel", "high") not in DEFAULT_THINKING_LEVELS.values():
        options["thinking_levels"] = {"medium": thinking["thinkingLevel"]}
    return options


def _signature(value: str) -> bytes:
    """A thought signature as bytes: Google's SDK sends back URL-safe what the API gave in standard base64."""
    return base64.b64decode(value.replace("-", "+").replace("_", "/"))


def semantic(request: dict) -> dict:
    """A Gemini request as what it asks for: no `role` on the system instruction (the API ignores it),
    no empty `generationConfig`, a schema as one field whichever dialect it is written in, no response
    schema on a function (Open Responses has none), signatures as bytes, `maxOutputTokens` at least 16,
    `thinkingConfig` fields as the API names them (not in snake case)."""
    body = json.loads(json.dumps(request))
    if "systemInstruction" in body:
        body["systemInstruction"].pop("role", None)
    generation = body.get("generationConfig") or {}
    if "thinkingConfig" in generation:
        generation["thinkingConfig"] = _camel(generation["thinkingConfig"])
    if "responseSchema" in generation:
        generation["responseJsonSchema"] = generation.pop("responseSchema")
    if "maxOutputTokens" in generation:
        generation["maxOutputTokens"] = max(generation["maxOutputTokens"], MINIMUM_MAX_OUTPUT_TOKENS)
    if not generation:
        body.pop("generationConfig", None)
    for tool in body.get("tools") or ():
        for declaration in tool.get("functionDeclarations") or ():
            if "parameters" in declaration:
                declaration["parametersJsonSchema"] = declaration.pop("parameters")
            declaration.pop("responseJsonSchema", None)
    for content in body["contents"]:
        for part in content["parts"]:
            if "thoughtSignature" in part:
                part["thoughtSignature"] = _signature(part["thoughtSignature"]).hex()
    return body


# -- what the recording holds --------------------------------------------------------------


def chunks(body: bytes, content_type: str) -> list[dict]:
    if content_type == "text/event-stream":
        return [json.loads(frame.data) for frame in iter_sse(body)]
    answer = json.loads(body)
    return answer if isinstance(answer, list) else [answer]


def recorded_answer(body: bytes, content_type: str) -> dict:
    """The recorded answer: its text, thoughts, calls, signatures, grounding, usage, finish and block."""
    want: dict = {"text": "", "thoughts": "", "calls": [], "signatures": [], "grounding": None, "usage": {}}
    want |= {"finish": None, "blocked": None, "error": None}
    for chunk in chunks(body, content_type):
        if "error" in chunk:
            want["error"] = chunk["error"]
            continue
        want["usage"] = chunk.get("usageMetadata") or want["usage"]
        want["blocked"] = (chunk.get("promptFeedback") or {}).get("blockReason") or want["blocked"]
        for candidate in chunk.get("candidates") or ():
            for part in (candidate.get("content") or {}).get("parts") or ():
                if part.get("thought"):
                    want["thoughts"] += part.get("text", "")
                elif "functionCall" in part:
                    want["calls"].append(part["functionCall"])
                elif "text" in part:
                    want["text"] += part["text"]
                if "thoughtSignature" in part:
                    want["signatures"].append(part["thoughtSignature"])
            want["grounding"] = candidate.get("groundingMetadata") or want["grounding"]
            want["finish"] = candidate.get("finishReason") or want["finish"]
    return want


def expected_status(want: dict) -> tuple[str, dict | None]:
    """The finish reason mapped as the gateway's table says."""
    if want["finish"] == "MAX_TOKENS":
        return "incomplete", {"reason": "max_output_tokens"}
    if want["finish"] == "SAFETY" or (want["finish"] is None and want["blocked"]):
        return "incomplete", {"reason": "content_filter"}
    if want["finish"] is None:
        return "failed", None
    return "completed", None


@pytest.mark.parametrize("name", NAMES)
def test_recording_translates_faithfully(shared, replay, name):
    url, upstream_ = replay
    request, body, content_type, status = load(name)
    upstream_.answer(body, status=status, content_type=content_type)
    want = recorded_answer(body, content_type) if status == 200 else {}
    with gateway(url, **provider_options(request)) as base:
        sent_body = responses_body(request, model_of(name))
        reply = httpx.post(base + "/responses", json=sent_body, headers=HEADERS, timeout=30)
        raw, reply_status = reply.content, reply.status_code

    sent, headers, path = upstream_.requests[-1], upstream_.headers[-1], upstream_.paths[-1]
    assert path == f"/v1beta/models/{model_of(name)}:streamGenerateContent?alt=sse"
    assert headers["x-goog-api-key"] == UPSTREAM_KEY
    assert semantic(sent) == semantic(request)

    if status != 200:  # an HTTP error before any stream, as the base's table and Gemini's own rules map it
        error = json.loads(raw)["error"]
        recorded_error = json.loads(body)["error"]
        if recorded_error["status"] == "NOT_FOUND":
            assert (reply_status, error["code"], error["param"]) == (404, "model_not_found", "model")
            assert recorded_error["message"] in error["message"]
        else:  # API_KEY_INVALID: the gateway's key, not the client's request
            assert (reply_status, error["code"]) == (500, "upstream_unauthorized")
        return
    assert reply_status == 200, raw
    assert [str(v) for v in check_sse(raw)] == []  # not even a warning
    events = [json.loads(m.data) for m in iter_sse(raw) if m.data != "[DONE]"]
    final = events[-1]["response"]
    assert (final["status"], final["incomplete_details"]) == expected_status(want)
    output = final["output"]

    assert output_text(output, "message", "output_text") == want["text"]
    assert output_text(output, "reasoning", "reasoning_text") == want["thoughts"]
    calls = [item for item in output if item["type"] == "function_call"]
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [(c["name"], c["args"]) for c in want["calls"]]
    for call, recorded in zip(calls, want["calls"], strict=True):
        assert call["call_id"] == recorded["id"] if "id" in recorded else call["call_id"].startswith(MINTED)
    signed = [item for item in output if item["type"] == "reasoning" and item.get("encrypted_content")]
    assert len(signed) >= len(want["signatures"])  # each signature sealed in a reasoning item
    grounding = [item["grounding_metadata"] for item in output if item["type"] == "gemini:grounding"]
    assert grounding == ([want["grounding"]] if want["grounding"] else [])

    usage = want["usage"]
    thoughts = usage.get("thoughtsTokenCount") or 0
    assert final["usage"]["input_tokens"] == usage["promptTokenCount"] + (usage.get("toolUsePromptTokenCount") or 0)
    assert final["usage"]["output_tokens"] == (usage.get("candidatesTokenCount") or 0) + thoughts
    assert final["usage"]["output_tokens_details"]["reasoning_tokens"] == thoughts
    assert final["usage"]["input_tokens_details"]["cached_tokens"] == (usage.get("cachedContentTokenCount") or 0)


ROUND_TRIPS = [
    ("09a_thought_signature_function_call_json", "09b_thought_signature_roundtrip_json"),
    ("10a_thought_signature_parallel_calls_sse", "10b_thought_signature_roundtrip_sse"),
]


@pytest.mark.parametrize(("first_name", "second_name"), ROUND_TRIPS, ids=["09a-09b", "10a-10b"])
@pytest.mark.parametrize("carried_by", ["previous_response_id", "client"])
def test_the_recorded_round_trip_sends_the_signature_back_byte_for_byte(
    shared, replay, first_name, second_name, carried_by
):
    url, upstream_ = replay
    first_request, first_answer, first_kind, _ = load(first_name)
    second_request, second_answer, second_kind, _ = load(second_name)
    upstream_.answer(first_answer, content_type=first_kind)
    upstream_.answer(second_answer, content_type=second_kind)
    first_body = {**responses_body(first_request, model_of(first_name)), "stream": False}
    responses = {}
    for content in second_request["contents"]:
        for part in content["parts"]:
            if "functionResponse" in part:
                answer = part["functionResponse"]
                responses[answer.get("id") or answer["name"]] = json.dumps(answer["response"])
    with gateway(url, **provider_options(first_request)) as base:
        if carried_by == "client":
            first_body.update(store=False, include=["reasoning.encrypted_content"])
        first = httpx.post(base + "/responses", json=first_body, headers=HEADERS, timeout=30)
        assert first.status_code == 200, first.text
        output = first.json()["output"]
        follow = [
            {
                "type": "function_call_output",
                "call_id": item["call_id"],
                "output": responses.get(item["call_id"]) or responses[item["name"]],
            }
            for item in output
            if item["type"] == "function_call"
        ]
        second = {k: v for k, v in first_body.items() if k not in ("input", "store")}
        if carried_by == "client":
            carried = [{k: v for k, v in i.items() if i["type"] != "reasoning" or k != "content"} for i in output]
            second["input"] = first_body["input"] + carried + follow  # reasoning params take no content
        else:
            second.update(previous_response_id=first.json()["id"], input=follow)
        reply = httpx.post(base + "/responses", json=second, headers=HEADERS, timeout=30)
        assert reply.status_code == 200, reply.text
    sent = upstream_.requests[-1]
    assert semantic(sent) == semantic(second_request)  # the recorded second request, made by the gateway
    recorded = recorded_answer(first_answer, first_kind)["signatures"]
    signatures = [
        part["thoughtSignature"] for c in sent["contents"] for part in c["parts"] if "thoughtSignature" in part
    ]
    assert signatures == recorded  # byte for byte as the upstream gave them
    want = recorded_answer(second_answer, second_kind)
    answered = reply.json()["output"]
    assert output_text(answered, "message", "output_text") == want["text"]
    assert [(i["name"], json.loads(i["arguments"])) for i in answered if i["type"] == "function_call"] == [
        (c["name"], c["args"]) for c in want["calls"]
    ]


SIGNED = [
    name
    for name in NAMES
    if name != "(none)" and load(name)[3] == 200 and recorded_answer(*load(name)[1:3])["signatures"]
]


@pytest.mark.parametrize("name", SIGNED)
@pytest.mark.parametrize("carried_by", ["previous_response_id", "client"])
def test_every_signature_goes_back_byte_for_byte_next_turn(shared, replay, name, carried_by):
    url, upstream_ = replay
    request, body, content_type, _ = load(name)
    upstream_.answer(body, content_type=content_type)
    upstream_.answer((RECORDINGS / "01_text_json.response.json").read_bytes(), content_type="application/json")
    first_body = {**responses_body(request, model_of(name)), "stream": False}
    with gateway(url, **provider_options(request)) as base:
        if carried_by == "client":
            first_body.update(store=False, include=["reasoning.encrypted_content"])
        first = httpx.post(base + "/responses", json=first_body, headers=HEADERS, timeout=30)
        assert first.status_code == 200, first.text
        second = next_turn(first_body, first.json(), carried_by, '{"ok": true}')
        reply = httpx.post(base + "/responses", json=second, headers=HEADERS, timeout=30)
        assert reply.status_code == 200, reply.text
    turn = upstream_.requests[-1]["contents"][len(request["contents"])]  # the model turn the first answer made
    assert turn["role"] == "model"
    recorded = [
        part
        for chunk in chunks(body, content_type)
        for candidate in chunk.get("candidates") or ()
        for part in candidate["content"].get("parts") or ()
        if "thoughtSignature" in part
    ]
    sent = [part for part in turn["parts"] if "thoughtSignature" in part]
    assert [p["thoughtSignature"] for p in sent] == [p["thoughtSignature"] for p in recorded]
    for part, original in zip(sent, recorded, strict=True):  # on the part it came with
        assert part.get("functionCall", {}).get("name") == original.get("functionCall", {}).get("name")
        assert ("text" in part) == ("text" in original)
