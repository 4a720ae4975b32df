"""The server under test, reached through `openresponses_runtime.client` without retries.

The compliance cases want to see what the server sent, so answers stay close to the wire: JSON
responses as dicts, streams as the typed events the client parsed (checked against the state
machines as they arrive), error answers as the client's typed errors, WebSocket turns as their
messages. Retries are off: a compliance check must see every failure.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from openresponses_runtime.client import (
    APIStatusError,
    APITimeoutError,
    Client,
    ResponsesSession,
    StreamViolation,
)

__all__ = ["TERMINAL", "CheckFailed", "NotServed", "Reply", "Stream", "Target"]

TERMINAL = ("response.completed", "response.incomplete", "response.failed")


class CheckFailed(Exception):
    """A compliance check did not hold; the message is the reason shown to the user."""


class NotServed(Exception):
    """The server does not serve an operation a vendor fragment adds; an extension case is skipped for it."""


@dataclass
class Reply:
    """One HTTP answer: its status and its body (parsed JSON, or None if it was not JSON)."""

    status_code: int
    body: Any
    text: str


@dataclass
class Stream:
    """One `stream: true` answer: status, content type, the events as dicts, and the first broken rule."""

    status: int
    content_type: str
    events: list[dict[str, Any]] = field(default_factory=list)
    violations: list[Any] = field(default_factory=list)
    error: str = ""

    @property
    def final(self) -> dict[str, Any] | None:
        """The response carried by the terminal event, if there is one."""
        for event in reversed(self.events):
            if event.get("type") in TERMINAL and isinstance(event.get("response"), dict):
                return event["response"]
        return None


def _dump(event: Any) -> dict[str, Any]:
    return event.model_dump(mode="json", by_alias=True, exclude_unset=True)


class Target:
    """Requests against one server. `base_url` is the API root that `/responses` hangs off (`.../v1`)."""

    def __init__(self, base_url: str, api_key: str, *, model: str = "default", timeout: float = 60.0):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.timeout = timeout
        self.client = self._client(api_key)

    def _client(self, key: str) -> Client:
        return Client(base_url=self.base_url, api_key=key, timeout=self.timeout, max_retries=0)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def body(self, **fields: Any) -> dict[str, Any]:
        return {"model": self.model, **fields}

    def post(self, path: str, body: Any, *, key: str | None = None) -> Reply:
        """POST `body` to `path`; whatever the server answers, as a `Reply` (errors included)."""
        client = self.client if key is None else self._client(key)
        try:
            response = client.request("POST", path, body)
        except APIStatusError as exc:
            if isinstance(exc.body, str | None):
                return Reply(exc.status_code, None, exc.body or "")
            return Reply(exc.status_code, exc.body, json.dumps(exc.body))
        finally:
            if client is not self.client:
                client.close()
        try:
            return Reply(response.status_code, response.json(), response.text)
        except ValueError:
            return Reply(response.status_code, None, response.text)

    def create(self, **fields: Any) -> dict[str, Any]:
        """One non-streaming response; fails unless the server answers 200 with a JSON object."""
        reply = self.post("/responses", self.body(**fields))
        if reply.status_code != 200:
            raise CheckFailed(f"POST /responses answered {reply.status_code}: {_snippet(reply.text)}")
        if not isinstance(reply.body, dict):
            raise CheckFailed(f"POST /responses did not answer a JSON object: {_snippet(reply.text)}")
        return reply.body

    def stream(self, **fields: Any) -> Stream:
        """One `stream: true` response through the client's typed stream, with `check=True`."""
        try:
            events = self.client.responses.create(**self._keywords(fields), stream=True, check=True)
        except APIStatusError as exc:
            return Stream(exc.status_code, exc.headers.get("content-type", ""), error=exc.message)
        result = Stream(events.http_response.status_code, events.http_response.headers.get("content-type", ""))
        try:
            with events:
                for event in events:
                    result.events.append(_dump(event))
        except StreamViolation as exc:
            result.violations.append(exc.violation)
        return result

    def _keywords(self, fields: dict[str, Any]) -> dict[str, Any]:
        return {"model": self.model, **fields}

    @contextmanager
    def websocket(self, key: str | None = None) -> Iterator[WebSocketSession]:
        """A WebSocket session on `/responses`; a refused upgrade raises the client's typed error."""
        client = self.client if key is None else self._client(key)
        try:
            with client.responses.connect(timeout=self.timeout) as session:
                yield WebSocketSession(session, self)
        finally:
            if client is not self.client:
                client.close()


class WebSocketSession:
    """Turns on one WebSocket connection, each as the list of messages the server sent."""

    def __init__(self, session: ResponsesSession, target: Target):
        self.session = session
        self.target = target

    def turn(self, **fields: Any) -> list[dict[str, Any]]:
        """Send one `response.create`; the messages up to a terminal event or an error message."""
        out: list[dict[str, Any]] = []
        try:
            for event in self.session.stream(**self.target._keywords(fields)):
                out.append(_dump(event))
        except APIStatusError as exc:  # an error message ends the turn; the connection stays open
            out.append(exc.body if isinstance(exc.body, dict) else {"type": "error", "status": exc.status_code})
        except APITimeoutError:
            raise CheckFailed(
                f"no terminal event or error message within {self.target.timeout:g}s (got {len(out)} messages)"
            ) from None
        return out


def _snippet(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
