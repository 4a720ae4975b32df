"""`orspec scaffold provider NAME --lang typescript`, each template (the demo and the three gateways): the
project installs as its README says, type-checks with `tsc --strict`, and its own test (the server on
loopback, a gateway's in front of its fake upstream, under `orspec compliance`) passes every case. Each
gateway is also put in front of the recordings of `../shared/recordings/upstream/`, replayed byte for byte
by a local upstream as the Python gateways' tests replay them, and its stream must carry what each holds.

Node, npm and the npm tools (`.cache/typescript`, installed by `.ci/services`, whose npm cache holds zod,
TypeScript and @types/node) are needed: a missing one skips with its reason, and fails under CI (CI=true).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from openresponses_runtime.events import iter_sse
from openresponses_runtime.gateways.registry import GATEWAYS as GATEWAYS_REGISTRY
from openresponses_runtime.streaming import check_sse
from orspec.scaffold import TEMPLATES, ScaffoldError, scaffold

from ..conftest import ROOT
from ..gateways import test_gateway_anthropic_recordings as anthropic
from ..gateways import test_gateway_gemini_recordings as gemini
from ..gateways import test_gateway_recordings as chat
from ..server_helpers import free_port
from ..upstream_replay import UPSTREAM_KEY, next_turn, output_text, upstream

TOOLS = ROOT / ".cache" / "typescript" / "node_modules"
SET_UP = "npm install && npm run build && ORSPEC_API_KEY=sk-local npm start"
TEST = "npm install && npm test"


def needed(what: str, path: str | Path | None) -> Path:
    """`path`, or skip (fail under CI) saying what is missing and how to get it."""
    if path and Path(path).exists():
        return Path(path)
    message = f"{what} is missing (bash .ci/run installs it: Node and npm from Debian, the npm tools in {TOOLS})"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def run(command: list[str], cwd: Path, *, env: dict | None = None, timeout: float) -> subprocess.CompletedProcess:
    """`command` in its own process group, which is ended however it ends (the server it starts included)."""
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    return subprocess.CompletedProcess(command, proc.returncode, out, "")


def project(tmp_path: Path, template: str = "demo") -> Path:
    """A TypeScript provider beside an orspec checkout, so it installs the package from its folder."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "orspec").symlink_to(ROOT, target_is_directory=True)
    out = tmp_path / "acme-llm"
    scaffold("Acme LLM", out, lang="typescript", template=template, orspec_path=tmp_path / "orspec")
    return out


def tools() -> Path:
    """npm, once node and the npm tools are there (else skip, or fail under CI)."""
    needed("node", shutil.which("node"))
    npm = needed("npm", shutil.which("npm"))
    needed("TypeScript", TOOLS / "typescript")
    return npm


def install(npm: Path, out: Path) -> None:
    """`npm install` from npm's cache where it can (CI's services filled it), so that it needs no network."""
    done = run([str(npm), "install", "--prefer-offline", "--no-audit", "--no-fund"], out, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]


COMMON = [
    ".gitignore",
    ".npmrc",
    "README.md",
    "package.json",
    "src/main.ts",
    "src/provider.ts",
    "src/server.ts",
    "src/websocket.ts",
    "test/compliance.test.mjs",
    "tsconfig.json",
]


@pytest.mark.parametrize("template", TEMPLATES)
def test_writes_a_typescript_project_on_the_package_and_no_path_of_this_machine(tmp_path, template):
    out = project(tmp_path, template)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    gateway = ["src/gateway.ts", "test/fake-upstream.mjs"] if template != "demo" else []
    assert files == sorted(COMMON + gateway)
    package = json.loads((out / "package.json").read_text())
    assert package["dependencies"] == {"openresponses-runtime": "file:../orspec/generated/typescript"}
    assert package["scripts"]["test"] == "tsc -p . && node --test test/*.test.mjs"  # not the fake upstream
    assert (out / ".npmrc").read_text() == "install-links=true\n"  # a copy, so that zod is installed with it
    assert json.loads((out / "tsconfig.json").read_text())["compilerOptions"]["strict"] is True
    assert "export class AcmeLlmProvider implements Provider" in (out / "src" / "provider.ts").read_text()
    for path in out.rglob("*"):
        if path.is_file():
            assert str(tmp_path) not in path.read_text() and str(ROOT) not in path.read_text(), path


@pytest.mark.process
def test_prettier_leaves_every_templates_typescript_as_it_is(tmp_path):
    needed("node", shutil.which("node"))
    prettier = needed("prettier", TOOLS / "prettier" / "bin" / "prettier.cjs")
    outs = [project(tmp_path / template, template) for template in TEMPLATES]
    sources = [str(out / folder) for out in outs for folder in ("src", "test", "package.json", "tsconfig.json")]
    done = run(["node", str(prettier), "--check", *sources], tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]


def test_only_known_templates_and_languages(tmp_path):
    with pytest.raises(ScaffoldError, match="unknown template"):
        scaffold("x", tmp_path / "a", lang="typescript", template="bedrock")
    with pytest.raises(ScaffoldError, match="unknown language"):
        scaffold("x", tmp_path / "b", lang="go")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("template", TEMPLATES)
def test_scaffolded_project_installs_type_checks_and_passes_compliance(tmp_path, template):
    npm = tools()
    out = project(tmp_path, template)
    readme = (out / "README.md").read_text()
    run_env = GATEWAYS_REGISTRY[template].run_env if template != "demo" else ""
    set_up = SET_UP.replace("ORSPEC_API_KEY", f"{run_env} ORSPEC_API_KEY".strip())
    assert set_up in readme and TEST in readme  # the README's two commands, run below as it says
    install(npm, out)
    assert (out / "node_modules" / "zod" / "package.json").is_file()  # the package came with its dependency
    assert not (out / "node_modules" / "openresponses-runtime").is_symlink()
    strict = run([str(npm), "exec", "--", "tsc", "--strict", "--noEmit", "-p", "."], out, timeout=300)
    assert strict.returncode == 0, strict.stdout[-3000:]
    env = os.environ | {"ORSPEC": str(Path(sys.executable).parent / "orspec")}  # the README's .venv stands in
    tested = run([str(npm), "test"], out, env=env, timeout=600)
    assert tested.returncode == 0, tested.stdout[-6000:]
    assert re.search(r"^# pass 1$", tested.stdout, re.M) and re.search(r"^# fail 0$", tested.stdout, re.M)


# -- the gateways in front of the recordings ------------------------------------------------


@contextlib.contextmanager
def served(out: Path, env: dict[str, str]):
    """The built project's server (dist/main.js) on a free loopback port, ended however the test ends."""
    port = free_port()
    proc = subprocess.Popen(
        ["node", "dist/main.js", str(port)],
        cwd=out,
        env=os.environ | env | {"ORSPEC_API_KEY": API_KEY},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the server did not start within 20 s"
            with contextlib.suppress(httpx.TransportError):
                httpx.get(base + "/responses/none", timeout=1)
                break
            time.sleep(0.1)
        yield base
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


API_KEY = "sk-test-recordings"
HEADERS = {"Authorization": f"Bearer {API_KEY}"}
# What each gateway's provider reads its upstream from, and where its recordings' replay is served.
GATEWAYS = {
    "chat-completions": ("CHAT_COMPLETIONS_BASE_URL", "CHAT_COMPLETIONS_API_KEY", "/v1"),
    "anthropic-messages": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", ""),
    "gemini": ("GEMINI_BASE_URL", "GEMINI_API_KEY", "/v1beta"),
}


@pytest.fixture(scope="module")
def gateway_server(tmp_path_factory):
    """Each gateway project built once, served in front of one replaying upstream: (base URL, replay)."""
    npm = tools()
    started: dict[str, tuple[str, object]] = {}
    with contextlib.ExitStack() as stack:

        def get(template: str) -> tuple[str, object]:
            if template not in started:
                out = project(tmp_path_factory.mktemp(template), template)
                install(npm, out)
                built = run([str(npm), "run", "build"], out, timeout=300)
                assert built.returncode == 0, built.stdout[-3000:]
                url, replay = stack.enter_context(upstream())
                base_env, key_env, root = GATEWAYS[template]
                env = {base_env: url.removesuffix("/v1") + root, key_env: UPSTREAM_KEY}
                started[template] = (stack.enter_context(served(out, env)), replay)
            return started[template]

        yield get


def create(base: str, body: dict) -> tuple[int, bytes]:
    with httpx.stream("POST", base + "/responses", json={**body, "stream": True}, headers=HEADERS, timeout=60) as r:
        return r.status_code, r.read()


def finished(raw: bytes) -> tuple[list[dict], dict]:
    """A clean stream's events and its final response."""
    assert [str(v) for v in check_sse(raw)] == []  # not even a warning
    events = [json.loads(m.data) for m in iter_sse(raw) if m.data != "[DONE]"]
    return events, events[-1]["response"]


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("name", chat.NAMES)
def test_chat_completions_gateway_carries_each_recording(shared, gateway_server, name):
    base, replay = gateway_server("chat-completions")
    request, body, kind = chat.load(name)
    replay.answer(body, content_type=kind)
    status, raw = create(base, chat.responses_body(request))
    assert status == 200, raw
    sent = replay.requests[-1]
    assert [m["role"] for m in sent["messages"]] == [m["role"] for m in chat.semantic(request)["messages"]]
    events, final = finished(raw)
    want = chat.recorded(body) if kind == "text/event-stream" else chat.recorded_whole(body)
    expected, details = chat.expected_status(want["finish"])
    assert (final["status"], final["incomplete_details"]) == (expected, details)
    if expected == "failed":
        assert events[-2]["type"] == "error" and want["error"]["message"] in events[-2]["error"]["message"]
    output = final["output"]
    assert output_text(output, "message", "output_text") == want["text"]
    assert output_text(output, "message", "refusal", "refusal") == want["refusal"]
    assert output_text(output, "reasoning", "reasoning_text") == want["reasoning"]
    calls = [
        {k: item[k] for k in ("call_id", "name", "arguments")} for item in output if item["type"] == "function_call"
    ]
    assert calls == [want["calls"][index] for index in sorted(want["calls"])]
    if want["usage"] is not None:
        usage = want["usage"]
        assert (final["usage"]["input_tokens"], final["usage"]["output_tokens"]) == (
            usage["prompt_tokens"],
            usage["completion_tokens"],
        )


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("name", anthropic.NAMES)
def test_anthropic_gateway_carries_each_recording(shared, gateway_server, name):
    base, replay = gateway_server("anthropic-messages")
    request, body, kind = anthropic.load(name)
    anthropic.answer(replay, body, kind)
    want = anthropic.recorded_answer(body, kind)
    status, raw = create(base, anthropic.responses_body(request))
    headers = replay.headers[-1]
    assert (headers["x-api-key"], headers["anthropic-version"]) == (UPSTREAM_KEY, "2023-06-01")
    if want["error"] is not None and kind == "application/json":  # an HTTP error before any stream
        error = json.loads(raw)["error"]
        assert (status, error["code"]) == (400, "upstream_invalid_request")
        assert want["error"]["message"] in error["message"]
        return
    assert status == 200, raw
    _, final = finished(raw)
    assert (final["status"], final["incomplete_details"]) == anthropic.expected_status(want["stop"])
    output, blocks = final["output"], want["blocks"]
    assert output_text(output, "message", "output_text") == "".join(b["text"] for b in blocks if b["type"] == "text")
    thinking = "".join(b["thinking"] for b in blocks if b["type"] == "thinking")
    assert output_text(output, "reasoning", "reasoning_text") == thinking
    reasoning = [item for item in output if item["type"] == "reasoning"]
    assert len(reasoning) == sum(b["type"] in ("thinking", "redacted_thinking") for b in blocks)
    assert all(item["encrypted_content"] for item in reasoning)  # the signature or data, kept for next turn
    calls = [(item["call_id"], item["name"], item["arguments"]) for item in output if item["type"] == "function_call"]
    assert calls == [(b["id"], b["name"], b["arguments"]) for b in blocks if b["type"] == "tool_use"]
    usage = want["usage"]
    read, created = usage.get("cache_read_input_tokens") or 0, usage.get("cache_creation_input_tokens") or 0
    assert final["usage"]["input_tokens"] == usage["input_tokens"] + read + created
    assert final["usage"]["output_tokens"] == usage["output_tokens"]
    assert final["usage"]["input_tokens_details"]["cached_tokens"] == read


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("name", gemini.NAMES)
def test_gemini_gateway_carries_each_recording(shared, gateway_server, name):
    base, replay = gateway_server("gemini")
    request, body, kind, recorded_status = gemini.load(name)
    replay.answer(body, status=recorded_status, content_type=kind)
    status, raw = create(base, gemini.responses_body(request, gemini.model_of(name)))
    assert replay.paths[-1] == f"/v1beta/models/{gemini.model_of(name)}:streamGenerateContent?alt=sse"
    assert replay.headers[-1]["x-goog-api-key"] == UPSTREAM_KEY
    if recorded_status != 200:  # an HTTP error before any stream
        error, recorded_error = json.loads(raw)["error"], json.loads(body)["error"]
        if recorded_error["status"] == "NOT_FOUND":
            assert (status, error["code"], error["param"]) == (404, "model_not_found", "model")
        else:  # API_KEY_INVALID: the gateway's key, not the client's request
            assert (status, error["code"]) == (500, "upstream_unauthorized")
        return
    assert status == 200, raw
    _, final = finished(raw)
    want = gemini.recorded_answer(body, kind)
    assert (final["status"], final["incomplete_details"]) == gemini.expected_status(want)
    output = final["output"]
    assert output_text(output, "message", "output_text") == want["text"]
    assert output_text(output, "reasoning", "reasoning_text") == want["thoughts"]
    calls = [item for item in output if item["type"] == "function_call"]
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [(c["name"], c["args"]) for c in want["calls"]]
    for call, recorded in zip(calls, want["calls"], strict=True):
        assert call["call_id"] == recorded["id"] if "id" in recorded else call["call_id"].startswith("call_gemini_")
    signed = [item for item in output if item["type"] == "reasoning" and item.get("encrypted_content")]
    assert len(signed) == len(want["signatures"])  # each signature kept in a reasoning item
    usage = want["usage"]
    thoughts = usage.get("thoughtsTokenCount") or 0
    assert final["usage"]["input_tokens"] == usage["promptTokenCount"] + (usage.get("toolUsePromptTokenCount") or 0)
    assert final["usage"]["output_tokens"] == (usage.get("candidatesTokenCount") or 0) + thoughts


# -- what goes back next turn -----------------------------------------------------------------


def second_turn(base: str, first_body: dict, carried_by: str, call_output: str) -> None:
    """The first turn (`first_body`, answered by the upstream's next recording), then the turn after it,
    carried by `previous_response_id` or by the client sending the whole history; both must succeed."""
    if carried_by == "client":
        first_body = {**first_body, "store": False}
    first = httpx.post(base + "/responses", json={**first_body, "stream": False}, headers=HEADERS, timeout=60)
    assert first.status_code == 200, first.text
    second = next_turn({**first_body, "stream": False}, first.json(), carried_by, call_output)
    reply = httpx.post(base + "/responses", json=second, headers=HEADERS, timeout=60)
    assert reply.status_code == 200, reply.text


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("name", anthropic.THINKING)
@pytest.mark.parametrize("carried_by", ["previous_response_id", "client"])
def test_anthropic_gateway_sends_thinking_back_byte_for_byte(shared, gateway_server, name, carried_by):
    base, replay = gateway_server("anthropic-messages")
    request, body, kind = anthropic.load(name)
    anthropic.answer(replay, body, kind)
    anthropic.answer(replay, (anthropic.RECORDINGS / "text.response.sse").read_bytes(), "text/event-stream")
    second_turn(base, anthropic.responses_body(request), carried_by, "1.0")
    messages = replay.requests[-1]["messages"]
    turn = messages[len(anthropic.semantic(request)["messages"])]  # the assistant turn the first answer made
    assert turn["role"] == "assistant"
    recorded = [
        {"type": "thinking", "thinking": b["thinking"], "signature": b["signature"]}
        if b["type"] == "thinking"
        else {"type": "redacted_thinking", "data": b["data"]}
        for b in anthropic.recorded_answer(body, kind)["blocks"]
        if b["type"] in ("thinking", "redacted_thinking")
    ]
    assert [b for b in turn["content"] if b["type"] in ("thinking", "redacted_thinking")] == recorded
    calls = [b for b in turn["content"] if b["type"] == "tool_use"]
    results = [b for b in messages[-1]["content"] if isinstance(b, dict) and b["type"] == "tool_result"]
    assert [b["id"] for b in calls] == [b["tool_use_id"] for b in results]


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("name", gemini.SIGNED)
@pytest.mark.parametrize("carried_by", ["previous_response_id", "client"])
def test_gemini_gateway_sends_every_signature_back_byte_for_byte(shared, gateway_server, name, carried_by):
    base, replay = gateway_server("gemini")
    request, body, kind, _ = gemini.load(name)
    replay.answer(body, content_type=kind)
    replay.answer((gemini.RECORDINGS / "01_text_json.response.json").read_bytes(), content_type="application/json")
    second_turn(base, gemini.responses_body(request, gemini.model_of(name)), carried_by, '{"ok": true}')
    turn = replay.requests[-1]["contents"][len(request["contents"])]  # the model turn the first answer made
    assert turn["role"] == "model"
    recorded = [
        part
        for chunk in gemini.chunks(body, kind)
        for candidate in chunk.get("candidates") or ()
        for part in candidate["content"].get("parts") or ()
        if "thoughtSignature" in part
    ]
    sent = [part for part in turn["parts"] if "thoughtSignature" in part]
    assert [p["thoughtSignature"] for p in sent] == [p["thoughtSignature"] for p in recorded]
    for part, original in zip(sent, recorded, strict=True):  # on a part of the kind it came with
        assert part.get("functionCall", {}).get("name") == original.get("functionCall", {}).get("name")


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("carried_by", ["previous_response_id", "client"])
def test_chat_completions_gateway_sends_openrouters_signed_reasoning_back(shared, gateway_server, carried_by):
    base, replay = gateway_server("chat-completions")
    name = "openrouter-claude-reasoning"
    request, body, kind = chat.load(name)
    signatures = [
        detail["signature"]
        for message in iter_sse(body)
        if message.data.startswith("{")
        for choice in json.loads(message.data).get("choices") or ()
        for detail in (choice.get("delta") or {}).get("reasoning_details") or ()
        if detail.get("signature")
    ]
    assert len(signatures) == 1  # what the recording holds
    replay.answer(body, content_type=kind)
    replay.answer(body, content_type=kind)
    second_turn(base, chat.responses_body(request), carried_by, "1.0")
    assistant = replay.requests[-1]["messages"][1]
    assert assistant["role"] == "assistant" and assistant["content"] == chat.recorded(body)["text"]
    (detail,) = assistant["reasoning_details"]
    assert detail["signature"] == signatures[0] and detail["text"] == chat.recorded(body)["reasoning"]
