"""Codex CLI (npm `@openai/codex`, unchanged) through each gateway run by `orspec serve --gateway KIND
--upstream URL`, with a loopback upstream replaying real reasoning recordings from
`../shared/recordings/upstream/`.

Codex keeps nothing on the server: every turn it sends `store: false`, `include:
["reasoning.encrypted_content"]` and the whole history, the reasoning items the gateway emitted among
it (with their `content` and sealed `encrypted_content`). A small relay between Codex and the gateway
keeps each exchange, so the tests see what Codex sent and what the gateway answered. Two scenarios:

- three turns (`codex exec`, then `codex exec resume --last` twice): Codex says what each recording
  says, and each turn's upstream request holds every earlier answer in its place, reasoning
  signatures byte for byte (Anthropic `signature` and redacted `data`, OpenRouter's signed
  `reasoning_details`, Gemini's `thoughtSignature`);
- one turn with a tool call Codex runs: a recording with reasoning and a call, whose call alone is
  rewritten here to Codex's own shell tool (`exec_command`) printing a marker in the read-only
  sandbox; the follow-up request carries the call, its output with the marker, and the signature.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from openresponses_runtime.events import iter_sse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from ..conftest import SHARED, npm_client
from ..gateways.test_gateway_anthropic_recordings import recorded_answer as anthropic_answer
from ..gateways.test_gateway_gemini_recordings import chunks as gemini_chunks
from ..gateways.test_gateway_recordings import recorded as chat_answer
from ..server_helpers import API_KEY, free_port, live_server, served_process
from ..upstream_replay import UPSTREAM_KEY, ReplayUpstream, upstream

pytestmark = [pytest.mark.clients, pytest.mark.process, pytest.mark.slow]

RECORDINGS = SHARED / "recordings" / "upstream"
PROMPTS = ("Say something", "Again", "Once more")
SHELL = "exec_command"  # Codex's shell tool, as its request's tools list names it


@dataclass(frozen=True)
class Gateway:
    path: str  # where the upstream API sits under the replay's root
    folder: str
    turns: tuple[str, str, str]  # the recorded answers to the three turns, in order
    tool: str  # an answer with reasoning and a call, the call rewritten to Codex's shell tool
    followup: str  # the recorded text answer to the call's output


GATEWAYS = {
    "anthropic-messages": Gateway(
        "",
        "anthropic",
        ("thinking-text.response.sse", "redacted-thinking.response.sse", "thinking-long.response.sse"),
        "thinking-tool-use.response.sse",
        "tool-result-followup.response.sse",
    ),
    "chat-completions": Gateway(
        "/v1",
        "chat",
        (
            "openrouter-claude-reasoning.response.sse",
            "deepseek-reasoner.response.sse",
            "zai-glm-reasoning.response.sse",
        ),
        "groq-gptoss-reasoning-tool.response.sse",
        "openai-tool-followup.response.sse",
    ),
    "gemini": Gateway(
        "/v1beta",
        "gemini",
        (
            "11_stream_json_array_thinking.response.json",  # a thought, the answer, a signed empty part
            "07_thinking_sse_include_thoughts.response.sse",
            "02_text_sse_system_instruction.response.sse",
        ),
        "10a_thought_signature_parallel_calls_sse.response.sse",  # three calls, the first signed
        "10b_thought_signature_roundtrip_sse.response.sse",
    ),
}


# What Codex's `reasoning: {effort: "medium", summary: "auto"}` turns on upstream, for the model name
# "recorded", which no gateway knows (so Anthropic's adaptive thinking and Gemini's levels, the newest).
THINKING = {
    "anthropic-messages": {"thinking": {"type": "adaptive", "display": "summarized"}, "effort": "medium"},
    "chat-completions": {"reasoning_effort": "medium"},
    "gemini": {"thinkingConfig": {"thinkingLevel": "medium", "includeThoughts": True}},
}


def thinking_asked(kind: str, request: dict) -> dict:
    """The fields of an upstream request that ask for thinking."""
    if kind == "anthropic-messages":
        return {"thinking": request.get("thinking"), "effort": (request.get("output_config") or {}).get("effort")}
    if kind == "chat-completions":
        return {"reasoning_effort": request.get("reasoning_effort")}
    return {"thinkingConfig": request.get("generationConfig", {}).get("thinkingConfig")}


def recording(folder: str, name: str) -> bytes:
    """A recorded answer as the upstream streams it. Gemini's JSON-array stream (the other wire
    format of streamGenerateContent) goes out as its SSE form: one `data:` frame per element."""
    body = (RECORDINGS / folder / name).read_bytes()
    if name.endswith(".json"):
        return b"".join(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n" for chunk in json.loads(body))
    return body


# -- what each recording says, and what its next upstream request must hold ----------------------


def said(kind: str, body: bytes) -> str:
    """The answer's text."""
    if kind == "chat-completions":
        return chat_answer(body)["text"]
    if kind == "gemini":
        return "".join(part.get("text", "") for part in _gemini_parts(body) if not part.get("thought"))
    return "".join(
        block["text"] for block in anthropic_answer(body, "text/event-stream")["blocks"] if block["type"] == "text"
    )


def _gemini_parts(body: bytes) -> list[dict]:
    return [
        part
        for chunk in gemini_chunks(body, "text/event-stream")
        for candidate in chunk.get("candidates") or ()
        for part in (candidate.get("content") or {}).get("parts") or ()
    ]


def carried(kind: str, body: bytes) -> dict:
    """The assistant turn a recorded answer becomes in the next upstream request: its text, and the
    reasoning the upstream needs back, byte for byte, where the upstream takes it."""
    if kind == "anthropic-messages":
        blocks = anthropic_answer(body, "text/event-stream")["blocks"]
        kept = {
            "thinking": ("thinking", "signature"),
            "redacted_thinking": ("data",),
            "text": ("text",),
            "tool_use": ("id", "name", "input"),
        }
        return {
            "role": "assistant",
            "content": [{"type": b["type"]} | {k: b[k] for k in kept[b["type"]]} for b in blocks],
        }
    if kind == "chat-completions":
        details: dict[int, dict] = {}  # OpenRouter streams each detail in pieces, by index: texts join
        chunks = [json.loads(message.data) for message in iter_sse(body) if message.data != "[DONE]"]
        for choice in (choice for chunk in chunks for choice in chunk.get("choices") or ()):
            for piece in (choice.get("delta") or {}).get("reasoning_details") or ():
                detail = details.setdefault(piece["index"], {})
                for key, value in piece.items():
                    if key == "text":
                        detail["text"] = detail.get("text", "") + value
                    elif value or key not in detail:  # the signature comes once, after empty ones
                        detail[key] = value
        signed = [detail for _, detail in sorted(details.items()) if detail.get("signature")]
        calls = [
            {
                "id": call["call_id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"]},
            }
            for _, call in sorted(chat_answer(body)["calls"].items())
        ]
        return (
            {"role": "assistant", "content": said(kind, body) or None}
            | ({"tool_calls": calls} if calls else {})
            | ({"reasoning_details": signed} if signed else {})
        )
    # Gemini takes back the answer's parts but its thought summaries and empty unsigned text, adjacent
    # unsigned text joined.
    parts: list[dict] = []
    for part in _gemini_parts(body):
        if part.get("thought") or part == {"text": ""}:
            continue
        if parts and set(part) == set(parts[-1]) == {"text"}:
            parts[-1] = {"text": parts[-1]["text"] + part["text"]}
        else:
            parts.append(part)
    return {"role": "model", "parts": parts}


def assistant_turns(kind: str, request: dict) -> list[dict]:
    """An upstream request's assistant (model) turns, in order."""
    if kind == "gemini":
        return [content for content in request["contents"] if content["role"] == "model"]
    return [message for message in request["messages"] if message["role"] == "assistant"]


def outputs(kind: str, request: dict) -> dict[str, str]:
    """An upstream request's function call outputs: each call id's output, as text."""
    if kind == "anthropic-messages":
        return {
            block["tool_use_id"]: json.dumps(block["content"])
            for message in request["messages"]
            if message["role"] == "user" and isinstance(message["content"], list)
            for block in message["content"]
            if block["type"] == "tool_result"
        }
    if kind == "chat-completions":
        return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}
    return {
        part["functionResponse"]["id"]: json.dumps(part["functionResponse"]["response"])
        for content in request["contents"]
        for part in content["parts"]
        if "functionResponse" in part
    }


# -- the tool turn -----------------------------------------------------------------------------


def marker(n: int) -> str:
    return f"orspec-codex-ran-{n}"


def command(n: int) -> str:
    return f"echo {marker(n)}"


def rewrite_frames(body: bytes, edit: Callable[[dict], bool]) -> bytes:
    """`body` with each `data:` JSON frame that `edit` changes written anew; every other byte as recorded."""
    lines = body.split(b"\n")
    for i, line in enumerate(lines):
        if line.startswith(b"data: {"):
            event = json.loads(line[len(b"data: ") :])
            if edit(event):
                lines[i] = b"data: " + json.dumps(event).encode() + (b"\r" if line.endswith(b"\r") else b"")
    return b"\n".join(lines)


def to_shell_calls(kind: str, body: bytes) -> bytes:
    """The recording with its calls' names and arguments alone rewritten: the n-th call runs `command(n)`."""
    calls: dict[int, bool] = {}  # each call's index in its stream: whether its arguments are written yet

    def arguments(index: int) -> str:
        """The call's arguments, whole in its first piece; its other pieces empty."""
        if calls[index]:
            return ""
        calls[index] = True
        return json.dumps({"cmd": command(list(calls).index(index) + 1)})

    def edit(event: dict) -> bool:
        changed = False
        if kind == "anthropic-messages":
            if (event.get("content_block") or {}).get("type") == "tool_use":
                calls[event["index"]] = False
                event["content_block"]["name"] = SHELL
                changed = True
            elif (event.get("delta") or {}).get("type") == "input_json_delta":
                event["delta"]["partial_json"] = arguments(event["index"])
                changed = True
        elif kind == "chat-completions":
            for choice in event.get("choices") or ():
                for call in (choice.get("delta") or {}).get("tool_calls") or ():
                    function = call.get("function") or {}
                    if function.get("name"):
                        calls[call["index"]] = False
                        function["name"] = SHELL
                    if "arguments" in function:
                        function["arguments"] = arguments(call["index"])
                    changed = True
        else:
            for candidate in event.get("candidates") or ():
                for part in (candidate.get("content") or {}).get("parts") or ():
                    if "functionCall" in part:
                        calls[len(calls)] = False
                        part["functionCall"] |= {"name": SHELL, "args": json.loads(arguments(len(calls) - 1))}
                        changed = True
        return bool(changed)

    rewritten = rewrite_frames(body, edit)
    assert calls and all(calls.values()), "the recording's calls were not all rewritten"
    return rewritten


# -- Codex, and the relay that keeps what it sends and gets --------------------------------------


@dataclass
class Exchange:
    request: dict  # what Codex sent
    status: int  # the gateway's status
    answer: bytearray  # the gateway's answer, as it streamed

    def output(self) -> list[dict]:
        """The answer's output items, as its terminal event has them."""
        for message in iter_sse(bytes(self.answer)):
            event = json.loads(message.data)
            if event.get("type") in ("response.completed", "response.incomplete", "response.failed"):
                return event["response"]["output"]
        raise AssertionError(f"no terminal event in {bytes(self.answer)[-500:]!r}")


@contextmanager
def relay(target: str) -> Iterator[tuple[str, list[Exchange]]]:
    """A relay on loopback in front of `target` (a `.../v1` URL): its own base URL, and each exchange."""
    exchanges: list[Exchange] = []

    async def forward(request: Request) -> StreamingResponse:
        body = await request.body()
        headers = {k: v for k, v in request.headers.items() if k not in ("host", "content-length", "accept-encoding")}
        client = httpx.AsyncClient(timeout=httpx.Timeout(60))
        url = target + request.url.path.removeprefix("/v1")
        answer = await client.send(client.build_request("POST", url, content=body, headers=headers), stream=True)
        exchange = Exchange(json.loads(body), answer.status_code, bytearray())
        exchanges.append(exchange)

        async def tee() -> AsyncIterator[bytes]:
            try:
                async for piece in answer.aiter_raw():
                    exchange.answer += piece
                    yield piece
            finally:
                await answer.aclose()
                await client.aclose()

        return StreamingResponse(tee(), status_code=answer.status_code, media_type=answer.headers["content-type"])

    with live_server(Starlette(routes=[Route("/v1/{path:path}", forward, methods=["POST"])])) as url:
        yield url, exchanges


@contextmanager
def through(kind: str) -> Iterator[tuple[str, ReplayUpstream, list[Exchange]]]:
    """`orspec serve --gateway KIND` in front of a replaying upstream, behind the relay: the relay's base
    URL, the upstream, and the exchanges."""
    with upstream() as (url, replay):
        port = free_port()
        root = url.removesuffix("/v1") + GATEWAYS[kind].path
        serve = [
            sys.executable,
            "-m",
            "orspec",
            "serve",
            "--port",
            str(port),
            "--api-key",
            API_KEY,
            "--store",
            "memory:",
        ]
        env = {"ORSPEC_UPSTREAM_API_KEY": UPSTREAM_KEY}
        gateway = [*serve, "--gateway", kind, "--upstream", root]
        with served_process(gateway, port=port, env=env) as base, relay(base) as (relayed, exchanges):
            yield relayed, replay, exchanges


class Codex:
    """`codex exec --json` in a throwaway CODEX_HOME, asking for reasoning, pointed at `base_url`; no retries,
    so that each turn is one request."""

    def __init__(self, folder: Path, base_url: str):
        self.home, self.work = folder / "home", folder / "work"
        self.home.mkdir()
        self.work.mkdir()
        (self.home / "config.toml").write_text(
            'model = "recorded"\nmodel_provider = "gateway"\nmodel_reasoning_effort = "medium"\n'
            "[model_providers.gateway]\n"
            f'name = "gateway"\nbase_url = "{base_url}"\nwire_api = "responses"\nenv_key = "ORSPEC_CODEX_KEY"\n'
            "request_max_retries = 0\nstream_max_retries = 0\n"
        )

    def exec(self, *args: str) -> list[dict]:
        env = {**os.environ, "CODEX_HOME": str(self.home), "ORSPEC_CODEX_KEY": API_KEY, "NO_COLOR": "1"}
        command = [str(npm_client(".bin/codex")), "exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only"]
        done = subprocess.run(
            [*command, *args], cwd=self.work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=90,
        )  # fmt: skip
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        failures = [e for e in events if e.get("type") in ("error", "turn.failed")]
        assert done.returncode == 0 and not failures, f"exit {done.returncode}: {failures or done.stderr[-2000:]}"
        return events


def completed(events: list[dict], item_type: str) -> list[dict]:
    return [e["item"] for e in events if e.get("type") == "item.completed" and e["item"]["type"] == item_type]


def reasoning(items: list[dict]) -> list[tuple]:
    """Reasoning items as a client carries them whole: id, sealed blob and text (Codex sends no text as
    `content: null` where the gateway emitted `[]`)."""
    return [(i["id"], i.get("encrypted_content"), i.get("content") or None) for i in items if i["type"] == "reasoning"]


# -- the tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(GATEWAYS))
def test_three_turns_with_the_whole_history(kind, shared, tmp_path):
    gateway = GATEWAYS[kind]
    answers = [recording(gateway.folder, name) for name in gateway.turns]
    with through(kind) as (base, replay, exchanges):
        for answer in answers:
            replay.answer(answer)
        codex = Codex(tmp_path, base)
        turns = [codex.exec(PROMPTS[0]), *(codex.exec("resume", "--last", prompt) for prompt in PROMPTS[1:])]

    assert [[m["text"] for m in completed(events, "agent_message")] for events in turns] == [
        [said(kind, answer)] for answer in answers
    ]
    # One request a turn, each answered 200: stateless, the sealed reasoning asked for, and every
    # reasoning item the gateway emitted on earlier turns carried back whole.
    assert [exchange.status for exchange in exchanges] == [200, 200, 200]
    emitted: list[dict] = []
    for exchange in exchanges:
        assert exchange.request["store"] is False
        assert "reasoning.encrypted_content" in exchange.request["include"]
        assert reasoning(exchange.request["input"]) == reasoning(emitted)
        emitted += exchange.output()
    assert reasoning(emitted) and all(blob for _, blob, _ in reasoning(emitted)), "no sealed reasoning emitted"
    # Upstream, each turn holds every earlier answer in its place: text and signatures byte for byte.
    assert [assistant_turns(kind, request) for request in replay.requests] == [
        [carried(kind, answer) for answer in answers[:n]] for n in range(3)
    ]
    # Codex asks `reasoning: {effort: "medium", summary: "auto"}`: thinking is on upstream every turn.
    assert [thinking_asked(kind, request) for request in replay.requests] == [THINKING[kind]] * 3


@pytest.mark.parametrize("kind", sorted(GATEWAYS))
def test_a_tool_call_that_codex_runs(kind, shared, tmp_path):
    gateway = GATEWAYS[kind]
    asked = to_shell_calls(kind, recording(gateway.folder, gateway.tool))
    followup = recording(gateway.folder, gateway.followup)
    with through(kind) as (base, replay, exchanges):
        replay.answer(asked)
        replay.answer(followup)
        events = Codex(tmp_path, base).exec("Run it")

    calls = [item for item in exchanges[-1].request["input"] if item["type"] == "function_call"]
    assert calls and {call["name"] for call in calls} == {SHELL}
    ran = {item["command"]: item for item in completed(events, "command_execution")}
    for n in range(1, len(calls) + 1):  # each call's command, run in the sandbox, printed its marker
        (done,) = [item for command_line, item in ran.items() if command(n) in command_line]
        assert done["exit_code"] == 0 and marker(n) in done["aggregated_output"]
    assert [m["text"] for m in completed(events, "agent_message")] == [said(kind, followup)]
    # Two requests, each answered 200; the second carries the first's reasoning whole, and each call's output.
    assert [exchange.status for exchange in exchanges] == [200, 200]
    assert reasoning(exchanges[1].request["input"]) == reasoning(exchanges[0].output()) != []
    # Upstream, the follow-up holds the recorded turn, signature in place, with Codex's calls, and each
    # call's output with what its command printed.
    (followed,) = replay.requests[1:]
    assert assistant_turns(kind, followed) == [carried(kind, asked)]
    given = outputs(kind, followed)
    for n, call in enumerate(calls, 1):
        assert json.loads(call["arguments"]) == {"cmd": command(n)} and marker(n) in given[call["call_id"]]
