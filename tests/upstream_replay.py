"""An upstream on loopback for the gateway tests (Chat Completions, Anthropic Messages, Gemini: any
POST path): it answers each request with the answer prepared for it, byte for byte, and keeps every
request body (and its path, query and headers) it receives."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
from openresponses_runtime.gateways.chat_completions import ChatCompletionsProvider
from openresponses_runtime.server import create_app
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from .server_helpers import API_KEY, live_server

UPSTREAM_KEY = "sk-upstream"
REASONING_KEY = "test-reasoning-key"


@dataclass
class Answer:
    """What the upstream sends: `pieces` of the body in order; a `threading.Event` among them holds
    the rest back until it is set."""

    pieces: list[bytes | threading.Event]
    status: int = 200
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)


class ReplayUpstream:
    def __init__(self) -> None:
        self.answers: list[Answer] = []
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.clients: list[tuple[str, int]] = []  # the address each request came from: one per connection
        self.paths: list[str] = []  # each request's path and query, e.g. /v1/chat/completions
        self.app = Starlette(routes=[Route("/{path:path}", self._completions, methods=["POST"])])

    def answer(self, body: bytes | list[bytes | threading.Event], **options) -> None:
        self.answers.append(Answer(body if isinstance(body, list) else [body], **options))

    async def _completions(self, request: Request) -> Response:
        self.requests.append(json.loads(await request.body()))
        self.headers.append(dict(request.headers))
        self.clients.append(tuple(request.client))
        query = request.url.query
        self.paths.append(request.url.path + (f"?{query}" if query else ""))
        answer = self.answers.pop(0)

        async def body():
            for piece in answer.pieces:
                if isinstance(piece, threading.Event):
                    while not piece.is_set():
                        await asyncio.sleep(0.01)
                else:
                    yield piece

        return StreamingResponse(
            body(), status_code=answer.status, media_type=answer.content_type, headers=answer.headers
        )


@contextmanager
def upstream() -> Iterator[tuple[str, ReplayUpstream]]:
    """The replaying upstream served on loopback: its base URL and itself."""
    replay = ReplayUpstream()
    with live_server(replay.app) as url:
        yield url, replay


@contextmanager
def gateway(url: str, provider=ChatCompletionsProvider, **options) -> Iterator[str]:
    """An Open Responses server around `provider(base_url=url, **options)` (a gateway's provider class,
    Chat Completions by default), checking its own streams and sealing reasoning with a fixed key:
    its base URL."""
    gateway_ = provider(base_url=url, api_key=UPSTREAM_KEY, **options)
    app = create_app(gateway_, store="memory:", api_keys=API_KEY, reasoning_key=REASONING_KEY, debug=True)
    with live_server(app) as base:
        yield base


def output_text(output: list[dict], item_type: str, part_type: str, field: str = "text") -> str:
    """The `field` of every `part_type` part of the `item_type` items of a response's output, joined."""
    return "".join(
        part[field]
        for item in output
        if item["type"] == item_type
        for part in item.get("content") or ()
        if part["type"] == part_type
    )


def next_turn(first_body: dict, first: dict, carried_by: str, call_output: str) -> dict:
    """The body of the turn after `first` (a response to `first_body`): each function call answered
    with `call_output`, else a user message; carried by `previous_response_id`, or by the client
    sending the whole history, the output as it came (reasoning with its content)."""
    output = first["output"]
    follow = [
        {"type": "function_call_output", "call_id": item["call_id"], "output": call_output}
        for item in output
        if item["type"] == "function_call"
    ] or [{"type": "message", "role": "user", "content": "And then?"}]
    second = {k: v for k, v in first_body.items() if k not in ("input", "store")}
    if carried_by == "client":
        return {**second, "input": first_body["input"] + output + follow}
    return {**second, "previous_response_id": first["id"], "input": follow}


def chunk(delta: dict | None = None, finish: str | None = None, index: int = 0, **extra) -> bytes:
    """One `data:` frame of a Chat Completions stream."""
    choices = [] if delta is None else [{"index": index, "delta": delta, "finish_reason": finish}]
    return b"data: " + json.dumps({"object": "chat.completion.chunk", "choices": choices, **extra}).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"


def event_types_until(base: str, body: dict, last: str) -> list[str]:
    """The types of the events a streamed `POST /responses` sends, up to the first of type `last`
    (read as they arrive, so a test can hold the upstream back meanwhile)."""
    seen: list[str] = []
    headers = {"Authorization": f"Bearer {API_KEY}"}
    with httpx.stream("POST", base + "/responses", json=body, headers=headers, timeout=10) as reply:
        for line in reply.iter_lines():
            if line.startswith("data: {"):
                seen.append(json.loads(line[6:])["type"])
            if last in seen:
                break
    return seen
