"""schemathesis against the generated server, driven by the bundled spec (`generated/openapi.json`).

The app is what `orspec serve` runs: `create_app` with the built-in demo provider and one known
API key, served by uvicorn on loopback. schemathesis draws request bodies from the spec (valid
ones, and with negative mode ones that break it) for every operation; each answer must be
below 500, and every 4xx must carry the error envelope.

Which envelope: the spec's `Error` component is not it. `Error` (`{code, message}`) is the
`error` field of a *failed response object*. The HTTP error body the spec's prose requires is
`{"error": {...}}` whose object has the same `type`, `code`, `param` and `message` as the
streaming `error` event's payload, `ErrorPayload` (all four required, `code`/`param` nullable),
so 4xx bodies are checked against that, plus exactly those four keys in the object.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache

import httpx
import pytest
from openresponses_runtime.server import DemoProvider, MemoryStore, create_app
from openresponses_runtime.streaming import check_sse

from ..conftest import ROOT, examples
from ..server_helpers import API_KEY, live_server

schemathesis = pytest.importorskip("schemathesis")
jsonschema = pytest.importorskip("jsonschema")
from hypothesis import HealthCheck, Phase, settings  # noqa: E402  (after the importorskip)

DOCUMENT = json.loads((ROOT / "generated" / "openapi.json").read_text())


@cache
def _validator(name: str):
    return jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": DOCUMENT["components"]}
    )


ERROR_PAYLOAD = _validator("ErrorPayload")
MAX_EXAMPLES = int(os.environ.get("ORSPEC_SCHEMATHESIS_EXAMPLES", examples(50)))


def result_schema(path: str, method: str) -> str:
    """The component a 200 JSON answer of the operation must match, as the document declares it."""
    content = DOCUMENT["paths"][path][method.lower()]["responses"]["200"]["content"]
    return content["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]


schema = schemathesis.openapi.from_dict(DOCUMENT)
schema.config.generation.update(
    max_examples=MAX_EXAMPLES,
    modes=[schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE],
)
# schemathesis reads 20 events of a stream by default and drops the rest; the stream checks need
# the whole stream, which the demo model ends within a few hundred events.
schema.config.max_stream_events = 100_000


@pytest.fixture(scope="module")
def base_url():
    app = create_app(DemoProvider(), store=MemoryStore(), api_keys=API_KEY, debug=True)
    with live_server(app) as url:
        yield url


def _positive(case) -> bool:
    return case.meta is not None and case.meta.generation.mode == schemathesis.GenerationMode.POSITIVE


def _content_type(response) -> str:
    value = response.headers.get("content-type", "")
    return ",".join(value) if isinstance(value, list) else value  # schemathesis keeps every value


def assert_envelope(response, context: str) -> None:
    """4xx and 5xx answers carry `{"error": {type, code, param, message}}` and nothing else."""
    assert _content_type(response).startswith("application/json"), context
    body = response.json()
    assert isinstance(body, dict) and set(body) == {"error"}, f"{context}: {body!r}"
    error = body["error"]
    assert isinstance(error, dict) and set(error) == {"type", "code", "param", "message"}, f"{context}: {error!r}"
    problems = [e.message for e in ERROR_PAYLOAD.iter_errors(error)]
    assert not problems, f"{context}: {problems}"
    assert error["message"], context


def _describe(case, response) -> str:
    """The whole exchange, so that a failure can be replayed: the body as JSON (bytes as they were
    sent), then the status and the whole answer, each on lines of its own."""
    body = case.body if isinstance(case.body, bytes) else json.dumps(case.body, default=repr)
    return f"{case.method} {case.path}\nrequest body: {body}\nanswer {response.status_code}:\n{response.text}"


def _call(case, base_url):
    """The case sent as `test_api` sends it; a stream must be read to its end."""
    response = case.call(base_url=base_url, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30)
    assert not response.stream_cut_short, f"the client stopped reading the stream early:\n{_describe(case, response)}"
    return response


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_api(case, base_url):
    response = _call(case, base_url)
    context = _describe(case, response)
    assert response.status_code < 500, context
    if response.status_code >= 400:
        assert_envelope(response, context)
    elif not _positive(case):
        # An invalid request the server took anyway: the models accept `null` for optional fields
        # the spec does not make nullable, and unknown item and tool types by design, and the
        # server echoes what it took; only answers to valid requests must match the spec.
        return
    elif _content_type(response).startswith("text/event-stream"):
        violations = check_sse(response.content)
        assert not violations, f"{context}: {[str(v) for v in violations[:3]]}"
    else:
        problems = [e.message for e in _validator(result_schema(case.path, case.method)).iter_errors(response.json())]
        assert not problems, f"{context}: {problems[:3]}"


# Once a failure of `test_api`: a valid streamed request whose answer runs past 20 events (the
# reasoning summary adds six) was read only that far by schemathesis, so the checks found no
# terminal event and no `[DONE]`, and the truncated report showed little past `response.created`.
LONG_STREAM = {"stream": True, "x_unknown": 1, "reasoning": {"summary": "concise"}}


def test_a_stream_is_read_to_its_end(base_url):
    case = schema["/responses"]["POST"].Case(body=LONG_STREAM, media_type="application/json")
    response = _call(case, base_url)
    assert len(re.findall(r"^event: ", response.text, re.MULTILINE)) > 20, response.text
    assert response.text.endswith("data: [DONE]\n\n"), response.text
    assert not check_sse(response.content)
    assert response.headers["openresponses-ignored"] == ["parameter:x_unknown"]


def test_a_failure_report_holds_the_whole_exchange():
    body = {"input": "x" * 1000, "stream": True}
    case = schema["/responses"]["POST"].Case(body=body, media_type="application/json")
    answer = httpx.Response(200, text="event: response.created\n" + "y" * 1000)
    report = _describe(case, answer)
    assert json.loads(report.split("request body: ", 1)[1].split("\n", 1)[0]) == body
    assert report.endswith(answer.text)


# -- hand-picked: no auth, malformed bodies ---------------------------------------------------------

# Every operation, its path parameters filled in; the operations that take a body, for the malformed ones.
OPERATIONS = sorted(
    (method.upper(), re.sub(r"\{[^}]*\}", "unknown", path))
    for path, item in DOCUMENT["paths"].items()
    for method, op in item.items()
    if isinstance(op, dict) and "responses" in op
)
PATHS = sorted(path for path, item in DOCUMENT["paths"].items() if "requestBody" in item.get("post", {}))


@pytest.mark.parametrize(("method", "path"), OPERATIONS)
@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic abc"}, {"Authorization": "Bearer"}],
    ids=["none", "wrong-key", "basic", "empty-bearer"],
)
def test_without_valid_auth_is_401(base_url, method, path, headers):
    body = {"model": "demo", "input": "hi"}
    response = httpx.request(method, base_url + path, json=body, headers=headers, timeout=30)
    assert response.status_code == 401, response.text
    assert_envelope(response, f"{method} {path} {headers}")
    assert response.headers["www-authenticate"].lower().startswith("bearer")


MALFORMED = [
    (b"", "application/json"),
    (b"{", "application/json"),
    (b"null", "application/json"),
    (b"[]", "application/json"),
    (b'"text"', "application/json"),
    (b"123", "application/json"),
    (b"\xff\xfe\x00", "application/json"),
    (b'{"input": "\\ud800"}', "application/json"),
    (b'{"input": 1e999}', "application/json"),
    (b'{"input": NaN}', "application/json"),
    (b'{"model": {"nested": [1, 2]}}', "application/json"),
    (b'{"input": [{"type": "message"}]}', "application/json"),
    (b'{"input": [1, "two", null]}', "application/json"),
    (b'{"input": [{"role": 5, "content": "x"}]}', "application/json"),
    (b'{"tools": [{"type": "function"}]}', "application/json"),
    (b'{"tool_choice": {"type": "function"}}', "application/json"),
    (b'{"tool_choice": {"type": "allowed_tools", "tools": [{}], "mode": "auto"}}', "application/json"),
    (b'{"previous_response_id": "resp_nope"}', "application/json"),
    (b'{"previous_response_id": 7}', "application/json"),
    (b'{"temperature": "hot"}', "application/json"),
    (b'{"metadata": {"k": 1}}', "application/json"),
    (b'{"stream": "yes"}', "application/json"),
    (b'{"input": "hi", "top_p": false}', "application/json"),
    (b'{"input": "hi", "temperature": "1"}', "application/json"),
    (b'{"input": "hi", "tool_choice": "required"}', "application/json"),
    (b'{"input": "hi", "tools": [{"type": "openai:web_search"}], "tool_choice": "required"}', "application/json"),
    (b'{"input": "hi", "stream": true, "stream_options": 3}', "application/json"),
    (b"input=hi", "application/x-www-form-urlencoded"),
    (b"<xml/>", "text/xml"),
    (b'{"input": "hi"}', "text/plain"),
    (b'{"input": "hi"}', ""),
    (b'{"a": ' * 5000 + b"1" + b"}" * 5000, "application/json"),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("body", "content_type"), MALFORMED, ids=[f"malformed{i}" for i in range(len(MALFORMED))])
def test_malformed_bodies_get_4xx_envelope(base_url, path, body, content_type):
    headers = {"Authorization": f"Bearer {API_KEY}"}
    if content_type:
        headers["Content-Type"] = content_type
    response = httpx.post(base_url + path, content=body, headers=headers, timeout=30)
    context = f"POST {path} {body[:80]!r} ({content_type}) -> {response.status_code} {response.text[:300]}"
    assert 400 <= response.status_code < 500, context
    assert_envelope(response, context)


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_other_methods_and_routes(base_url, method):
    headers = {"Authorization": f"Bearer {API_KEY}"}
    response = httpx.request(method, base_url + "/responses", headers=headers, timeout=30)
    assert response.status_code == 405, response.text
    assert_envelope(response, method)
    response = httpx.request(method, base_url + "/nope", headers=headers, timeout=30)
    assert response.status_code == 404, response.text
    assert_envelope(response, method)


# Valid requests that once got a 500: an integer beyond 64 bits (valid JSON, which orjson refuses
# to write) echoed in a tool or kept in a compaction; `tool_choice: "required"` right after a
# function's output, where the demo model answered in text and broke its own tool_choice.
BIG = 2**70
VALID_EDGES = [
    (
        "/responses",
        {"model": "m", "input": "call f", "tools": [{"type": "function", "name": "f", "parameters": {"maximum": BIG}}]},
    ),
    ("/responses", {"model": "m", "input": "hi", "metadata": {"k": "\U0001f600 \\ud800 is text here"}}),
    (
        "/responses/compact",
        {"model": "m", "input": [{"type": "message", "role": "user", "content": "x", "acme:n": BIG}]},
    ),
    (
        "/responses",
        {
            "model": "m",
            "input": [
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            ],
            "tools": [{"type": "function", "name": "f"}],
            "tool_choice": "required",
        },
    ),
]


EDGE_IDS = ["big-int-echoed", "escaped-text", "big-int-compacted", "required-after-output"]
EDGE_CASES = [
    pytest.param(path, body, stream, id=f"{name}-{'sse' if stream else 'json'}")
    for name, (path, body) in zip(EDGE_IDS, VALID_EDGES, strict=True)
    for stream in (False, True)
    if not stream or path == "/responses"  # compaction does not stream
]


@pytest.mark.parametrize(("path", "body", "stream"), EDGE_CASES)
def test_valid_edge_bodies_succeed(base_url, path, body, stream):
    body = {**body, "stream": True} if stream else body
    headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
    response = httpx.post(base_url + path, content=json.dumps(body), headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    if stream:
        assert not check_sse(response.content)
    else:
        problems = [e.message for e in _validator(result_schema(path, "POST")).iter_errors(response.json())]
        assert not problems, problems
    if body.get("tool_choice") == "required":  # the demo model calls a tool even after a function's output
        assert '"type":"function_call"' in response.text
    if "maximum" in response.text:  # the tool is echoed with its parameters, big integer and all
        assert str(BIG) in response.text
