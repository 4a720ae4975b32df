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

from openresponses_runtime.gateways.chat_completions import ChatCompletionsProvider
from openresponses_runtime.server import create_app
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from .server_helpers import API_KEY, live_server

UPSTREAM_KEY = "sk-upstream"


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
def gateway(url: str, **options) -> Iterator[str]:
    """An Open Responses server around `ChatCompletionsProvider(base_url=url, **options)`: its base URL."""
    provider = ChatCompletionsProvider(base_url=url, api_key=UPSTREAM_KEY, **options)
    with live_server(create_app(provider, store="memory:", api_keys=API_KEY)) as base:
        yield base


def chunk(delta: dict | None = None, finish: str | None = None, index: int = 0, **extra) -> bytes:
    """One `data:` frame of a Chat Completions stream."""
    choices = [] if delta is None else [{"index": index, "delta": delta, "finish_reason": finish}]
    return b"data: " + json.dumps({"object": "chat.completion.chunk", "choices": choices, **extra}).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"
