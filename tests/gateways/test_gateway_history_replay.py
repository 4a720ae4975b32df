"""Every recorded upstream exchange replayed over two turns, as a client that keeps the history itself
sends it: the first turn streamed (`store: false`, `include: ["reasoning.encrypted_content"]`), its
output rebuilt from the final event and sent back whole, less each item's `id` and `status` (and, in
a second pass, less a sealed reasoning item's `content` too), to a gateway started again with the
same `--reasoning-key` (a restart).

A recording is faithful when the second turn is accepted with nothing ignored, the history of the
first upstream request goes upstream again unchanged, and the turn the first answer made comes
back as the recording holds it: its text, its tool calls, and every signature, redacted block and
signed reasoning detail byte for byte. Each test counts the faithful recordings of one upstream
and asserts all of them, naming those that are not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from openresponses_runtime.events import iter_sse
from openresponses_runtime.gateways.anthropic_messages import AnthropicMessagesProvider
from openresponses_runtime.gateways.chat_completions import ChatCompletionsProvider
from openresponses_runtime.gateways.gemini import GeminiProvider

from ..server_helpers import API_KEY
from ..upstream_replay import gateway, upstream
from . import test_gateway_anthropic_recordings as anthropic
from . import test_gateway_gemini_recordings as gemini
from . import test_gateway_recordings as chat

pytestmark = [pytest.mark.process, pytest.mark.slow]

HEADERS = {"Authorization": f"Bearer {API_KEY}"}
FOLLOW = {"type": "message", "role": "user", "content": "And then?"}


# What a client leaves out of each item it sends back: the server's fields (the shape), and
# those with a reasoning item's text too (a client that keeps only the blob and the summary).
SHAPES = {"whole less id and status": ("id", "status"), "less id, status and content": ("id", "status", "content")}


def as_clients_keep_it(output: list[dict], left_out: tuple[str, ...]) -> list[dict]:
    """A response's output as a client without server ids sends it back: whole, less `left_out`
    (a reasoning item's `content` only when its sealed blob carries it back)."""
    return [
        {k: v for k, v in item.items() if k not in left_out or (k == "content" and not item.get("encrypted_content"))}
        for item in output
    ]


def follow_up(output: list[dict]) -> list[dict]:
    """Each function call of `output` answered, else a user message."""
    answers = [
        {"type": "function_call_output", "call_id": item["call_id"], "output": '{"ok": true}'}
        for item in output
        if item["type"] == "function_call"
    ]
    return answers or [FOLLOW]


@dataclass(frozen=True)
class Upstream:
    """How to replay one upstream's recordings: where they are, the gateway, the URL suffix its
    replay serves under, the recorded turn (request body, answer, content type, status, gateway
    options, Open Responses body), the answer for the second turn, and how an upstream request and
    a recorded answer read as the turn they hold (`history`: the request's turns, each `(role,
    part)`; `turn`: the parts a model turn is compared by)."""

    names: list[str]
    provider: type
    suffix: str
    recording: Callable[[str], tuple[dict, bytes, str, int, dict, dict]]
    second: tuple[bytes, str]
    history: Callable[[dict], list[tuple[str, Any]]]
    answered: Callable[[list[tuple[str, Any]]], dict]
    recorded: Callable[[bytes, str], dict]


# -- Chat Completions ---------------------------------------------------------------------------


def _chat_recording(name: str):
    request, body, kind = chat.load(name)
    return request, body, kind, 200, chat.provider_options(request), chat.responses_body(request)


def _chat_history(request: dict) -> list[tuple[str, Any]]:
    return [(message["role"], message) for message in request["messages"]]


def _chat_answered(turn: list[tuple[str, Any]]) -> dict:
    (message,) = [message for role, message in turn if role == "assistant"] or [{}]
    return {
        "text": message.get("content") or "",
        "calls": [
            (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or ()
        ],
        "signed": [d["signature"] for d in message.get("reasoning_details") or () if d.get("signature")],
    }


def _chat_recorded(body: bytes, kind: str) -> dict:
    want = chat.recorded(body) if kind == "text/event-stream" else chat.recorded_whole(body)
    signed = [
        detail["signature"]
        for message in iter_sse(body)
        if kind == "text/event-stream" and message.data.startswith("{")
        for choice in json.loads(message.data).get("choices") or ()
        if choice.get("index", 0) == 0
        for detail in (choice.get("delta") or {}).get("reasoning_details") or ()
        if detail.get("signature")
    ]
    calls = [want["calls"][i] for i in sorted(want["calls"])]
    return {
        "text": want["text"] + want["refusal"],
        "calls": [(c["call_id"], c["name"], c["arguments"]) for c in calls],
        "signed": signed,
    }


# -- Anthropic Messages -------------------------------------------------------------------------


def _anthropic_recording(name: str):
    request, body, kind = anthropic.load(name)
    status = 400 if kind == "application/json" and json.loads(body).get("type") == "error" else 200
    return request, body, kind, status, anthropic.provider_options(request), anthropic.responses_body(request)


def _anthropic_history(request: dict) -> list[tuple[str, Any]]:
    return [
        (message["role"], block) for message in anthropic.semantic(request)["messages"] for block in message["content"]
    ]


_SIGNED_BLOCKS = ("thinking", "redacted_thinking")


def _anthropic_turn(blocks: list[dict]) -> dict:
    return {
        "text": "".join(b["text"] for b in blocks if b["type"] == "text"),
        "calls": [(b["id"], b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"],
        "signed": [
            {"type": "thinking", "thinking": b["thinking"], "signature": b["signature"]}
            if b["type"] == "thinking"
            else {"type": "redacted_thinking", "data": b["data"]}
            for b in blocks
            if b["type"] in _SIGNED_BLOCKS
        ],
        "kept": [b for b in blocks if b["type"] not in ("text", "tool_use", *_SIGNED_BLOCKS)],
    }


def _anthropic_answered(turn: list[tuple[str, Any]]) -> dict:
    return _anthropic_turn([block for role, block in turn if role == "assistant"])


def _anthropic_recorded(body: bytes, kind: str) -> dict:
    blocks = anthropic.recorded_answer(body, kind)["blocks"]
    return _anthropic_turn([{k: v for k, v in b.items() if k not in ("arguments", "citations")} for b in blocks])


# -- Gemini -------------------------------------------------------------------------------------


def _gemini_recording(name: str):
    request, body, kind, status = gemini.load(name)
    return (
        request,
        body,
        kind,
        status,
        gemini.provider_options(request),
        gemini.responses_body(request, gemini.model_of(name)),
    )


def _gemini_history(request: dict) -> list[tuple[str, Any]]:
    return [(content["role"], part) for content in request["contents"] for part in content["parts"]]


def _gemini_turn(parts: list[dict]) -> dict:
    return {
        "text": "".join(p["text"] for p in parts if "text" in p and not p.get("thought")),
        "calls": [(p["functionCall"]["name"], p["functionCall"].get("args")) for p in parts if "functionCall" in p],
        "signed": [gemini._signature(p["thoughtSignature"]) for p in parts if "thoughtSignature" in p],
    }


def _gemini_answered(turn: list[tuple[str, Any]]) -> dict:
    return _gemini_turn([part for role, part in turn if role == "model"])


def _gemini_recorded(body: bytes, kind: str) -> dict:
    return _gemini_turn(
        [
            part
            for chunk in gemini.chunks(body, kind)
            for candidate in chunk.get("candidates") or ()
            for part in (candidate.get("content") or {}).get("parts") or ()
        ]
    )


def _named(names: list[str]) -> list[str]:
    return [name for name in names if name != "(none)"]


UPSTREAMS = {
    "chat-completions": Upstream(
        names=[n for n in _named(chat.NAMES) if (chat.CHAT / f"{n}.response.sse").exists()],
        provider=ChatCompletionsProvider,
        suffix="",
        recording=_chat_recording,
        second=((chat.CHAT / "openai-gpt4o-text.response.sse").read_bytes(), "text/event-stream")
        if chat.CHAT.is_dir()
        else (b"", ""),
        history=_chat_history,
        answered=_chat_answered,
        recorded=_chat_recorded,
    ),
    "anthropic-messages": Upstream(
        names=[n for n in _named(anthropic.NAMES) if (anthropic.RECORDINGS / f"{n}.response.sse").exists()],
        provider=AnthropicMessagesProvider,
        suffix="/v1",
        recording=_anthropic_recording,
        second=((anthropic.RECORDINGS / "text.response.sse").read_bytes(), "text/event-stream")
        if anthropic.RECORDINGS.is_dir()
        else (b"", ""),
        history=_anthropic_history,
        answered=_anthropic_answered,
        recorded=_anthropic_recorded,
    ),
    "gemini": Upstream(
        names=_named(gemini.NAMES),
        provider=GeminiProvider,
        suffix="/v1beta",
        recording=_gemini_recording,
        second=((gemini.RECORDINGS / "01_text_json.response.json").read_bytes(), "application/json")
        if gemini.RECORDINGS.is_dir()
        else (b"", ""),
        history=_gemini_history,
        answered=_gemini_answered,
        recorded=_gemini_recorded,
    ),
}
EXPECTED = {"chat-completions": 17, "anthropic-messages": 16, "gemini": 20}  # the recordings replayed


def final_response(raw: bytes) -> dict | None:
    """The response of a stream's last `response.*` event that carries one."""
    events = [json.loads(m.data) for m in iter_sse(raw) if m.data.startswith("{")]
    return next((e["response"] for e in reversed(events) if "response" in e), None)


def replay_two_turns(url: str, upstream_, spec: Upstream, name: str, left_out: tuple[str, ...]) -> str | None:
    """None when `name` is faithful over two turns, else what is not."""
    request, body, kind, status, options, first_body = spec.recording(name)
    upstream_.answer(body, status=status, content_type=kind)
    upstream_.answer(spec.second[0], content_type=spec.second[1])
    first_body = {**first_body, "stream": True, "store": False, "include": ["reasoning.encrypted_content"]}
    with gateway(url, spec.provider, **options) as base:
        reply = httpx.post(base + "/responses", json=first_body, headers=HEADERS, timeout=30)
    first_sent = upstream_.requests[-1]
    final = final_response(reply.content) if reply.status_code == 200 else None
    output = final["output"] if final else []
    carried = as_clients_keep_it(output, left_out)
    second_body = {**first_body, "stream": False, "input": first_body["input"] + carried + follow_up(output)}
    second_body.pop("tool_choice", None)  # a call forced once is answered, not forced again
    with gateway(url, spec.provider, **options) as base:  # a restart: the same reasoning key, nothing stored
        second = httpx.post(base + "/responses", json=second_body, headers=HEADERS, timeout=30)
    if second.status_code != 200:
        upstream_.answers.clear()  # the second answer was never asked for
        return f"second turn {second.status_code}: {second.text[:300]}"
    if "OpenResponses-Ignored" in second.headers:
        return f"ignored: {second.headers['OpenResponses-Ignored']}"
    before, after = spec.history(first_sent), spec.history(upstream_.requests[-1])
    if after[: len(before)] != before:
        return "the first request's history did not go upstream again unchanged"
    turn = after[len(before) :]
    while turn and turn[-1][0] not in ("assistant", "model"):
        turn = turn[:-1]  # the follow-up: function results or the user's message
    if status != 200 or final is None:
        return None if not turn else f"a failed first turn added {turn!r}"
    got, want = spec.answered(turn), spec.recorded(body, kind)
    if final["status"] == "failed":  # what the stream held before it broke off goes back, and no more
        want = {key: value if key != "text" else got["text"] for key, value in want.items()}
    return None if got == want else f"the answered turn went back as {got!r}, recorded {want!r}"


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("which", sorted(UPSTREAMS))
def test_every_recording_is_faithful_with_the_output_sent_back(shared, which, shape):
    spec = UPSTREAMS[which]
    unfaithful = {}
    with upstream() as (url, upstream_):
        for name in spec.names:
            upstream_.answers.clear()
            problem = replay_two_turns(url.removesuffix("/v1") + spec.suffix, upstream_, spec, name, SHAPES[shape])
            if problem is not None:
                unfaithful[name] = problem
    faithful = len(spec.names) - len(unfaithful)
    assert (faithful, len(spec.names)) == (EXPECTED[which], EXPECTED[which]), unfaithful
