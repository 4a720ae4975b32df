"""A small client for the compliance suite: JSON and SSE over httpx, turns over WebSocket."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from openresponses_runtime.events import iter_sse
from openresponses_runtime.streaming import StreamChecker, Violation

__all__ = ["CheckFailed", "Client", "Stream", "WebSocketSession"]

TERMINAL = ("response.completed", "response.incomplete", "response.failed")


class CheckFailed(Exception):
    """A compliance check did not hold; the message is the reason shown to the user."""


@dataclass
class Stream:
    """One SSE response: its status, the parsed events, the checker's verdict and the raw bytes."""

    status: int
    content_type: str
    events: list[dict[str, Any]] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    raw: bytes = b""

    @property
    def final(self) -> dict[str, Any] | None:
        """The response carried by the terminal event, if there is one."""
        for event in reversed(self.events):
            if event.get("type") in TERMINAL and isinstance(event.get("response"), dict):
                return event["response"]
        return None


class Client:
    """Requests against one server. `base_url` is the API root that `/responses` hangs off (`.../v1`)."""

    def __init__(self, base_url: str, api_key: str, *, model: str = "default", timeout: float = 60.0):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.timeout = timeout
        self.http = httpx.Client(timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def headers(self, key: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key if key is None else key}"}

    def post(self, path: str, body: Any, *, key: str | None = None, content: bytes | None = None) -> httpx.Response:
        """POST `body` as JSON (or raw `content`) to `path` under the base URL."""
        url = self.base_url + path
        if content is not None:
            headers = self.headers(key) | {"Content-Type": "application/json"}
            return self.http.post(url, content=content, headers=headers)
        return self.http.post(url, json=body, headers=self.headers(key))

    def body(self, **fields: Any) -> dict[str, Any]:
        return {"model": self.model, **fields}

    def create(self, **fields: Any) -> dict[str, Any]:
        """One non-streaming response; fails unless the server answers 200 with a JSON object."""
        reply = self.post("/responses", self.body(**fields))
        if reply.status_code != 200:
            raise CheckFailed(f"POST /responses answered {reply.status_code}: {_snippet(reply.text)}")
        try:
            data = reply.json()
        except ValueError:
            raise CheckFailed(f"POST /responses did not answer JSON: {_snippet(reply.text)}") from None
        if not isinstance(data, dict):
            raise CheckFailed("POST /responses answered JSON that is not an object")
        return data

    def stream(self, **fields: Any) -> Stream:
        """One `stream: true` response, every SSE message fed to a `StreamChecker`."""
        checker = StreamChecker()
        with self.http.stream(
            "POST", self.base_url + "/responses", json=self.body(stream=True, **fields), headers=self.headers()
        ) as reply:
            result = Stream(reply.status_code, reply.headers.get("content-type", ""))
            chunks = []
            for message in iter_sse(_collect(reply.iter_bytes(), chunks)):
                checker.feed(message.event, message.data)
                if message.is_done:
                    continue
                try:
                    event = json.loads(message.data)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    result.events.append(event)
            result.raw = b"".join(chunks)
        result.violations = checker.finish()
        return result

    @contextmanager
    def websocket(self, key: str | None = None) -> Iterator[WebSocketSession]:
        """A WebSocket connection to `/responses` (ws:// or wss:// for http:// or https://)."""
        from websockets.sync.client import connect

        url = self.base_url.replace("https://", "wss://", 1).replace("http://", "ws://", 1) + "/responses"
        with connect(url, additional_headers=self.headers(key), open_timeout=self.timeout) as ws:
            yield WebSocketSession(ws, self)


class WebSocketSession:
    """Turns on one WebSocket connection."""

    def __init__(self, ws: Any, client: Client):
        self.ws = ws
        self.client = client

    def turn(self, **fields: Any) -> list[dict[str, Any]]:
        """Send one `response.create`; the messages up to a terminal event or an error message."""
        self.ws.send(json.dumps({"type": "response.create", **self.client.body(**fields)}))
        out: list[dict[str, Any]] = []
        while True:
            try:
                raw = self.ws.recv(timeout=self.client.timeout)
            except TimeoutError:
                raise CheckFailed(
                    f"no terminal event or error message within {self.client.timeout:g}s (got {len(out)} messages)"
                ) from None
            try:
                message = json.loads(raw)
            except ValueError:
                raise CheckFailed(f"a WebSocket message is not JSON: {_snippet(str(raw))}") from None
            if not isinstance(message, dict):
                raise CheckFailed("a WebSocket message is not a JSON object")
            out.append(message)
            kind = message.get("type")
            if kind in TERMINAL or (kind == "error" and "status" in message):
                return out


def _collect(chunks: Iterator[bytes], into: list[bytes]) -> Iterator[bytes]:
    for chunk in chunks:
        into.append(chunk)
        yield chunk


def _snippet(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
