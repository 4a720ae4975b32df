"""The recorded OpenAI answers of `../shared/recordings` (12 streams, 12 bodies) served on loopback as
`POST /v1/responses`: the request's `model` names the file, sent byte for byte with an `x-request-id`,
so that each client reads real traffic as it came."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from openresponses_runtime.events import iter_sse, parse_event
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .conftest import SHARED
from .server_helpers import live_server

RECORDINGS = SHARED / "recordings"
STREAMS = sorted((RECORDINGS / "streams").glob("*.sse"))
BODIES = sorted((RECORDINGS / "responses").glob("*.json"))


def name_of(path: Path) -> str:
    """What a request's `model` says to be answered with `path`."""
    return f"{path.parent.name}/{path.name}"


def request_id(path: Path) -> str:
    return f"req_{path.stem}"


def invalid_events(path: Path) -> list[tuple[str, int | None]]:
    """The (type, sequence_number) of each event of a recorded stream that breaks the spec's schema."""
    found = []
    for message in iter_sse(path.read_bytes()):
        try:
            parse_event(message.data)
        except ValidationError:
            event = json.loads(message.data)
            found.append((event["type"], event.get("sequence_number")))
    return found


async def _answer(request: Request) -> Response:
    path = RECORDINGS / json.loads(await request.body())["model"]
    kind = "text/event-stream" if path.suffix == ".sse" else "application/json"
    return Response(path.read_bytes(), media_type=kind, headers={"x-request-id": request_id(path)})


@contextmanager
def recordings_server() -> Iterator[str]:
    """The base URL (`.../v1`) of a server answering each request with the recording its `model` names."""
    with live_server(Starlette(routes=[Route("/v1/responses", _answer, methods=["POST"])])) as base:
        yield base
