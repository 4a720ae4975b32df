"""The Gemini gateway (`openresponses_runtime.gateways.gemini`): each mapping of its tables that no
recording shows, and what it does with an upstream that misbehaves (recordings:
tests/test_gateway_gemini_recordings.py)."""

from __future__ import annotations

import json

import httpx
import pytest
from openresponses_runtime.gateways.gemini import GeminiProvider, thinking_kind
from openresponses_runtime.server import create_app
from openresponses_runtime.streaming import check_sse

from ..server_helpers import API_KEY, live_server
from ..upstream_replay import UPSTREAM_KEY, upstream

HEADERS = {"Authorization": f"Bearer {API_KEY}"}
WEATHER = {"type": "function", "name": "weather", "parameters": {"type": "object", "properties": {}}}
TIME = {"type": "function", "name": "time", "description": "The time.", "parameters": {"type": "object"}}


def sse(*chunks: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n" for chunk in chunks)


def candidate(*parts: dict, finish: str | None = "STOP", **extra) -> dict:
    body = {"content": {"parts": list(parts), "role": "model"}, "index": 0, **extra}
    if finish:
        body["finishReason"] = finish
    return {"candidates": [body], "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2}}


TEXT = sse(candidate({"text": "Hello"}))


@pytest.fixture(scope="module")
def replay():
    with upstream() as (url, replay):
        provider = GeminiProvider(
            base_url=url.removesuffix("/v1") + "/v1beta",
            api_key=UPSTREAM_KEY,
            models={"fast": "gemini-2.5-flash"},
            extra_body={"generationConfig": {"thinkingConfig": {"includeThoughts": True}}},
        )
        app = create_app(provider, store="memory:", api_keys=API_KEY, reasoning_key="k", debug=True)
        with live_server(app) as base:
            yield base, replay


def post(base: str, **body) -> httpx.Response:
    return httpx.post(base + "/responses", json={"model": "fast", "input": "hi", **body}, headers=HEADERS, timeout=30)


def sent_for(replay_, base: str, answer: bytes = TEXT, **body) -> dict:
    """The Gemini request the gateway sends for this Open Responses request."""
    _, upstream_ = replay_
    upstream_.answer(answer)
    reply = post(base, **body)
    assert reply.status_code == 200, reply.text
    return upstream_.requests[-1]


@pytest.mark.parametrize(
    ("tools", "choice", "declared", "config"),
    [
        ([WEATHER, TIME], "auto", ["weather", "time"], None),
        ([WEATHER, TIME], "required", ["weather", "time"], {"mode": "ANY"}),
        ([WEATHER], "required", ["weather"], {"mode": "ANY", "allowedFunctionNames": ["weather"]}),
        ([WEATHER, TIME], "none", ["weather", "time"], {"mode": "NONE"}),
        (
            [WEATHER, TIME],
            {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "time"}]},
            ["time"],
            None,
        ),
    ],
    ids=["auto", "required", "required-one", "none", "allowed-tools"],
)
def test_tools_and_tool_choice(replay, tools, choice, declared, config):
    base, _ = replay
    call = sse(candidate({"functionCall": {"name": declared[0], "args": {}}}))  # what `required` asks for
    sent = sent_for(replay, base, call, tools=tools, tool_choice=choice)
    declarations = sent["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == declared
    assert all(
        d["parametersJsonSchema"] == {"type": "object", **d.get("parametersJsonSchema", {})} for d in declarations
    )
    assert [d.get("description") for d in declarations if d["name"] == "time"] in ([], ["The time."])
    assert sent.get("toolConfig") == ({"functionCallingConfig": config} if config else None)


def test_settings_go_into_generation_config_beside_the_projects_own(replay):
    base, upstream_ = replay
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    text = {"format": {"type": "json_schema", "name": "answer", "schema": schema}}
    sent = sent_for(replay, base, max_output_tokens=64, temperature=0.5, top_p=0.9, text=text)
    assert sent["generationConfig"] == {
        "maxOutputTokens": 64,
        "temperature": 0.5,
        "topP": 0.9,
        "responseMimeType": "application/json",
        "responseJsonSchema": schema,
        "thinkingConfig": {"includeThoughts": True},  # extra_body, merged field by field
    }
    assert upstream_.paths[-1] == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"  # renamed
    sent_for(replay, base, model="models/gemini-2.0-flash")
    assert upstream_.paths[-1] == "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"


def test_images_by_url_and_data_url(replay):
    base, _ = replay
    content = [
        {"type": "input_text", "text": "Compare"},
        {"type": "input_image", "image_url": "https://example.com/cat.jpeg"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
    ]
    sent = sent_for(replay, base, input=[{"type": "message", "role": "user", "content": content}])
    assert sent["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "Compare"},
                {"fileData": {"fileUri": "https://example.com/cat.jpeg", "mimeType": "image/jpeg"}},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
            ],
        }
    ]


@pytest.mark.parametrize(
    "item",
    [
        {"type": "message", "role": "user", "content": [{"type": "input_image", "file_id": "file_1"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_file", "file_data": "data:x"}]},
        {"type": "function_call_output", "call_id": "call_nowhere", "output": "1"},
    ],
    ids=["image-file-id", "input-file", "output-of-no-call"],
)
def test_what_cannot_go_upstream_is_refused(replay, item):
    base, _ = replay
    reply = post(base, input=[item])
    assert reply.status_code == 400 and reply.json()["error"]["param"] in ("input", "input[0].call_id"), reply.text


def test_function_outputs_go_back_with_the_calls_name_and_id(replay):
    base, _ = replay
    calls = [
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call", "call_id": "call_gemini_0123", "name": "time", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": '{"temp": 3}'},
        {"type": "function_call_output", "call_id": "call_gemini_0123", "output": "noon"},
    ]
    sent = sent_for(replay, base, input=[{"type": "message", "role": "user", "content": "hi"}, *calls])
    assert sent["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}},
                {"functionCall": {"name": "time", "args": {}}},  # the gateway's own id goes back as none
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "weather", "response": {"temp": 3}, "id": "c1"}},
                {"functionResponse": {"name": "time", "response": {"output": "noon"}}},
            ],
        },
    ]


def test_a_kept_part_goes_back_in_its_place(replay):
    base, upstream_ = replay
    code = {"executableCode": {"language": "PYTHON", "code": "print(6 * 7)"}}
    result = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "42\n"}}
    upstream_.answer(sse(candidate(code, result, {"text": "42"})))
    first = post(base)
    assert first.status_code == 200, first.text
    kept = [item["part"] for item in first.json()["output"] if item["type"] == "gemini:part"]
    assert kept == [code, result]
    sent = sent_for(replay, base, previous_response_id=first.json()["id"], input="Thanks")
    assert sent["contents"][1] == {"role": "model", "parts": [code, result, {"text": "42"}]}


def test_a_signature_on_text_goes_back_on_its_text_and_one_alone_on_an_empty_part(replay):
    base, upstream_ = replay
    upstream_.answer(
        sse(
            {"candidates": [{"content": {"parts": [{"text": "Think", "thought": True}]}, "index": 0}]},
            candidate({"text": "Pelly", "thoughtSignature": "c2lnLTE="}, finish=None),
            candidate({"text": "", "thoughtSignature": "c2lnLTI="}),
        )
    )
    first = post(base)
    assert first.status_code == 200, first.text
    sent = sent_for(replay, base, previous_response_id=first.json()["id"], input="Again")
    assert sent["contents"][1] == {
        "role": "model",
        "parts": [{"text": "Pelly", "thoughtSignature": "c2lnLTE="}, {"text": "", "thoughtSignature": "c2lnLTI="}],
    }


def test_cached_and_thought_tokens(replay):
    base, upstream_ = replay
    usage = {"promptTokenCount": 100, "cachedContentTokenCount": 80, "candidatesTokenCount": 5, "thoughtsTokenCount": 7}
    upstream_.answer(sse({**candidate({"text": "Hi"}), "usageMetadata": usage}))
    final = post(base).json()
    assert final["usage"]["input_tokens"] == 100 and final["usage"]["input_tokens_details"]["cached_tokens"] == 80
    assert final["usage"]["output_tokens"] == 12 and final["usage"]["output_tokens_details"]["reasoning_tokens"] == 7


@pytest.mark.parametrize(
    ("answer", "status", "details"),
    [
        (sse(candidate({"text": "To be"}, finish="RECITATION")), "incomplete", {"reason": "content_filter"}),
        (sse(candidate({"text": "x"}, finish="PROHIBITED_CONTENT")), "incomplete", {"reason": "content_filter"}),
        (sse(candidate({"text": "Done"}, finish="OTHER")), "completed", None),
    ],
    ids=["recitation", "prohibited", "other"],
)
def test_finish_reasons(replay, answer, status, details):
    base, upstream_ = replay
    upstream_.answer(answer)
    final = post(base).json()
    assert (final["status"], final["incomplete_details"]) == (status, details)


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (sse(candidate({"text": "Hel"}, finish=None), {"error": {"code": 500, "message": "boom"}}), "model_error"),
        (sse(candidate({"text": "Hel"}, finish=None)), "upstream_stream_incomplete"),
        (sse(candidate(finish="MALFORMED_FUNCTION_CALL")), "upstream_malformed_function_call"),
    ],
    ids=["error-chunk", "cut-short", "malformed-call"],
)
def test_a_failure_mid_stream_ends_the_stream_failed(replay, answer, code):
    base, upstream_ = replay
    upstream_.answer(answer)
    with httpx.stream(
        "POST", base + "/responses", json={"model": "m", "input": "hi", "stream": True}, headers=HEADERS
    ) as r:
        raw = r.read()
    assert check_sse(raw) == []
    events = [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: {")]
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2]["error"]["code"] == code


@pytest.mark.parametrize(
    ("body", "content_type", "code"),
    [
        (b"<html>Bad gateway</html>", "text/html", "upstream_bad_response"),
        (json.dumps({"error": {"code": 500, "message": "internal"}}).encode(), "application/json", "model_error"),
    ],
    ids=["html", "json-error"],
)
def test_a_200_that_is_no_answer_is_a_502(replay, body, content_type, code):
    base, upstream_ = replay
    upstream_.answer(body, content_type=content_type)
    reply = post(base)
    assert reply.status_code == 502 and reply.json()["error"]["code"] == code


def test_the_key_is_required():
    with pytest.raises(ValueError, match="GEMINI_API_KEY"):
        GeminiProvider(api_key="")


def test_without_parallel_calls_only_the_first_call_passes(replay):
    base, upstream_ = replay
    two = sse(candidate(*({"functionCall": {"name": name, "args": {}, "id": name}} for name in ("weather", "time"))))
    for parallel, expected in ((False, ["weather"]), (True, ["weather", "time"])):
        upstream_.answer(two)
        reply = post(base, tools=[WEATHER, TIME], parallel_tool_calls=parallel)
        assert reply.status_code == 200, reply.text
        assert [item["name"] for item in reply.json()["output"] if item["type"] == "function_call"] == expected


def test_a_signature_on_a_thought_goes_back_on_that_thought_before_its_call(replay):
    base, upstream_ = replay
    thought = {"text": "Weather first.", "thought": True, "thoughtSignature": "c2lnLTM="}
    call = {"functionCall": {"name": "weather", "args": {}}}
    upstream_.answer(sse(candidate(thought, call)))
    first = post(base, tools=[WEATHER])
    assert first.status_code == 200, first.text
    call_id = next(item["call_id"] for item in first.json()["output"] if item["type"] == "function_call")
    follow = [{"type": "function_call_output", "call_id": call_id, "output": "sunny"}]
    sent = sent_for(replay, base, previous_response_id=first.json()["id"], input=follow, tools=[WEATHER])
    assert sent["contents"][1] == {"role": "model", "parts": [thought, call]}


def test_two_signed_thoughts_keep_one_signature_each(replay):
    base, upstream_ = replay
    thoughts = [{"text": f"Step {n}.", "thought": True, "thoughtSignature": f"c2ln{n}"} for n in (1, 2)]
    upstream_.answer(sse(candidate(*thoughts, {"text": "Done"})))
    first = post(base)
    assert [len(i["content"]) for i in first.json()["output"] if i["type"] == "reasoning"] == [1, 1]
    sent = sent_for(replay, base, previous_response_id=first.json()["id"], input="Next")
    assert sent["contents"][1] == {"role": "model", "parts": [*thoughts, {"text": "Done"}]}


# -- reasoning -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def thinking():
    """A gateway with no `extra_body`, and a deployment's own rows over the thinking tables: its
    base URL, the upstream, and the gateway's thinkingConfig for a request."""
    with upstream() as (url, upstream_):
        provider = GeminiProvider(
            base_url=url.removesuffix("/v1") + "/v1beta",
            api_key=UPSTREAM_KEY,
            thinking_budgets={"low": 2048},
            thinking_levels={"medium": "high"},
        )
        with live_server(create_app(provider, store="memory:", api_keys=API_KEY)) as base:
            yield base, upstream_


def thinking_config(thinking, model: str, reasoning: dict | None) -> tuple[dict | None, httpx.Response]:
    base, upstream_ = thinking
    upstream_.answer(TEXT)
    body = {"model": model, "input": "hi", **({"reasoning": reasoning} if reasoning else {})}
    reply = httpx.post(base + "/responses", json=body, headers=HEADERS, timeout=30)
    assert reply.status_code == 200, reply.text
    return (upstream_.requests[-1].get("generationConfig") or {}).get("thinkingConfig"), reply


@pytest.mark.parametrize(
    ("reasoning", "budget_model", "level_model"),
    [
        (None, None, None),
        ({"effort": "none"}, {"thinkingBudget": 0}, {"thinkingLevel": "minimal"}),
        ({"effort": "low"}, {"thinkingBudget": 2048}, {"thinkingLevel": "low"}),  # the deployment's budget
        ({"effort": "medium"}, {"thinkingBudget": 8192}, {"thinkingLevel": "high"}),  # the deployment's level
        ({"effort": "high"}, {"thinkingBudget": 16384}, {"thinkingLevel": "high"}),
        ({"effort": "xhigh"}, {"thinkingBudget": 24576}, {"thinkingLevel": "high"}),
        ({"summary": "auto"}, {"includeThoughts": True}, {"includeThoughts": True}),
        (
            {"effort": "high", "summary": "concise"},
            {"thinkingBudget": 16384, "includeThoughts": True},
            {"thinkingLevel": "high", "includeThoughts": True},
        ),
        ({"effort": "none", "summary": "auto"}, {"thinkingBudget": 0}, {"thinkingLevel": "minimal"}),
    ],
    ids=["absent", "none", "low", "medium", "high", "xhigh", "summary", "high-summary", "none-summary"],
)
def test_effort_and_summary_set_thinking_config_by_the_table(thinking, reasoning, budget_model, level_model):
    for model, expected in (("gemini-2.5-flash", budget_model), ("gemini-3-flash-preview", level_model)):
        config, reply = thinking_config(thinking, model, reasoning)
        assert config == expected, model
        assert "OpenResponses-Ignored" not in reply.headers


def test_pro_cannot_stop_thinking_and_old_models_do_not_think(thinking):
    assert thinking_config(thinking, "gemini-2.5-pro", {"effort": "none"})[0] == {"thinkingBudget": 128}
    config, reply = thinking_config(thinking, "gemini-2.0-flash", {"effort": "high", "summary": "auto"})
    assert config is None and reply.headers["OpenResponses-Ignored"] == "parameter:reasoning"


@pytest.mark.parametrize(
    ("model", "kind"),
    [
        ("gemini-2.5-flash", "budget"),
        ("models/gemini-2.5-pro", "budget"),
        ("gemini-2.5-flash-lite", "budget"),
        ("gemini-3-flash-preview", "level"),
        ("gemini-3-pro-preview", "level"),
        ("gemini-flash-latest", "level"),
        ("gemini-2.0-flash", None),
        ("gemini-1.5-flash", None),
        ("gemma-3-27b-it", None),
    ],
)
def test_how_each_model_thinks(model, kind):
    assert thinking_kind(model) == kind


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"thinking_budgets": {"max": 1}}, "thinking budget: no effort 'max'; the efforts are none, low, medium, high, xhigh"),
        ({"thinking_budgets": {"low": -2}}, "thinking budget low=-2: a whole number of tokens, 0 or more, or -1"),
        ({"thinking_levels": {"low": 3}}, "thinking level low=3: a thinking level Gemini takes"),
    ],
)  # fmt: skip
def test_a_bad_table_row_is_refused_saying_which(options, message):
    with pytest.raises(ValueError) as refused:
        GeminiProvider(api_key="k", **options)
    assert str(refused.value).startswith(message)


def test_thought_text_that_cannot_go_upstream_is_said_so(replay):
    """Gemini takes back signatures, not thought text: a reasoning item with text and no signature
    of this gateway's is left out, and named in `OpenResponses-Ignored`."""
    base, upstream_ = replay
    thought = {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "Hmm."}]}
    empty = {"type": "reasoning", "summary": []}  # nothing lost: nothing said
    headers = []
    for item in (thought, empty):
        upstream_.answer(TEXT)
        history = [{"role": "user", "content": "hi"}, item, {"role": "assistant", "content": "Hello."}]
        reply = post(base, input=[*history, {"role": "user", "content": "and?"}])
        assert reply.status_code == 200, reply.text
        contents = upstream_.requests[-1]["contents"]
        assert [c["role"] for c in contents] == ["user", "model", "user"] and "Hmm." not in json.dumps(contents)
        headers.append(reply.headers.get("OpenResponses-Ignored"))
    assert headers == ["item:reasoning", None]
