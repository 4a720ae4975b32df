"""Checking traffic on the side: requests and JSON bodies against the models, streams as they pass.

Nothing here touches the bytes the client receives: the proxy forwards a chunk first and hands a
copy to the observer after.
"""

from __future__ import annotations

import json
import time
import zlib
from typing import Any

from openresponses_runtime import models
from openresponses_runtime.events import TERMINAL_EVENT_TYPES
from openresponses_runtime.server.acceptance import Acceptance, check_function_outputs
from openresponses_runtime.server.bodies import parse_body
from openresponses_runtime.server.errors import OpenResponsesError
from openresponses_runtime.server.resource import input_items
from openresponses_runtime.server.websocket import transport_fields
from openresponses_runtime.streaming import StreamChecker
from pydantic import ValidationError

from .recorder import Exchange, RequestCheck

__all__ = ["RequestCheck", "SSEFeed", "StreamObserver", "check_json_response", "check_request", "side_decoder"]

_TERMINAL = TERMINAL_EVENT_TYPES or frozenset({"response.completed", "response.incomplete", "response.failed"})
_LIFECYCLE = frozenset({"response.created", "response.queued", "response.in_progress"})
_ARGS_DELTA = "response.function_call_arguments.delta"
_ARGS_DONE = "response.function_call_arguments.done"
_ITEM_DONE = "response.output_item.done"
_TRACKED = _LIFECYCLE | _TERMINAL | {_ARGS_DELTA, _ARGS_DONE, _ITEM_DONE}  # the events the diagnoses read
# The JSON a successful answer carries, per checked path.
_RESPONSE_MODELS: dict[str, type] = {
    "/v1/responses": models.ResponseResource,
    "/v1/responses/compact": models.CompactResource,
}


def check_request(raw: bytes, model: type, acceptance: Acceptance, *, websocket: bool = False) -> RequestCheck:
    """Check a request body with the server's own code: `parse_body`, then `acceptance`.

    A `function_call_output` is checked against the calls of this request only when it starts a
    conversation: the proxy does not have the history behind a `previous_response_id`."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        data = None
    data = data if isinstance(data, dict) else {}
    try:
        if websocket and not acceptance.strict:  # as a tolerant server reads a turn
            raw, _ = transport_fields(raw)
        parsed, body = parse_body(raw, model)
        admitted = acceptance.admit(parsed, body)
        if not parsed.get("previous_response_id"):
            check_function_outputs(input_items(parsed.get("input")), [])
    except OpenResponsesError as exc:
        return RequestCheck(data, refusal=exc)
    return RequestCheck(data, admitted.ignored)


def check_json_response(path: str, status: int, raw: bytes) -> tuple[Any, list[str]]:
    """A JSON answer and what is wrong with it: a success against its model, an error against the error object."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, [f"the body is not valid JSON ({exc})"]
    return data, _problems(path, status, data)


def _problems(path: str, status: int, data: Any) -> list[str]:
    try:
        if status < 400:
            model = _RESPONSE_MODELS.get(path)
            if model is not None:
                model.model_validate(data)
        elif not isinstance(data, dict) or not isinstance(data.get("error"), dict):
            return [f'the {status} answer is not the spec\'s error object {{"error": {{...}}}}']
        else:
            models.ErrorPayload.model_validate(data["error"])
    except ValidationError as exc:
        return [_summarize(exc)]
    return []


def _summarize(exc: ValidationError, limit: int = 3) -> str:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    parts = [f"{'.'.join(map(str, e['loc'])) or '/'}: {e['msg']}" for e in errors[:limit]]
    return "; ".join(parts) + (f" (+{len(errors) - limit} more)" if len(errors) > limit else "")


def side_decoder(content_encoding: str | None) -> Any:
    """A decompressor for the observer's copy of a compressed body (the client gets it as sent).

    None for an identity body; False for an encoding the observer cannot read.
    """
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "identity":
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    return False


class SSEFeed:
    """Incremental SSE parsing: bytes in as they arrive (split anywhere), whole messages out.

    Lines end in LF or CRLF; comments and `id:`/`retry:` fields are skipped (the checker needs
    neither); several `data:` lines join with newlines.
    """

    __slots__ = ("_pending", "_event", "_data")

    def __init__(self) -> None:
        self._pending = b""
        self._event: str | None = None
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[tuple[str | None, bytes]]:
        lines = (self._pending + chunk if self._pending else chunk).split(b"\n")
        self._pending = lines.pop()
        return self._lines(lines) if lines else []

    @property
    def mid_message(self) -> bool:
        """Whether the bytes so far end inside a message (a partial line, or lines not yet dispatched)."""
        return bool(self._pending or self._data or self._event)

    def close(self) -> list[tuple[str | None, bytes]]:
        """The message still open when the stream ends, if any."""
        lines, self._pending = [self._pending] if self._pending else [], b""
        return self._lines([*lines, b""])

    def _lines(self, lines: list[bytes]) -> list[tuple[str | None, bytes]]:
        out = []
        event, data = self._event, self._data
        for line in lines:
            if line[-1:] == b"\r":
                line = line[:-1]
            if line[:5] == b"data:":
                data.append(line[6:] if line[5:6] == b" " else line[5:])
            elif not line:
                if data:
                    out.append((event, data[0] if len(data) == 1 else b"\n".join(data)))
                    data = []
                event = None
            elif line[:6] == b"event:":
                event = line[6:].strip().decode("utf-8", "replace")
        self._event, self._data = event, data
        return out


class StreamObserver:
    """Feeds a `StreamChecker` from the raw stream and keeps what the diagnoses need.

    `websocket=True` for a WebSocket turn: each message is one event and no `[DONE]` is expected.
    """

    def __init__(self, exchange: Exchange, *, websocket: bool = False) -> None:
        self.exchange = exchange
        self.websocket = websocket
        self.checker = StreamChecker()
        self.sse = SSEFeed()
        self.last_event_at = time.monotonic()
        self.open_tool_args: dict[str, float] = {}  # item id -> when its last arguments delta came
        self.snapshot: dict[str, Any] | None = None  # the response of the latest lifecycle event
        self.done_items: list[dict[str, Any]] = []
        self.last_seq: int | None = None
        self.terminal: str | None = None
        self._finished = False

    def feed_bytes(self, chunk: bytes) -> None:
        messages = self.sse.feed(chunk)
        if messages:
            self.last_event_at = time.monotonic()
            for event_name, data in messages:
                self.feed(event_name, data)

    def feed(self, event_name: str | None, data: bytes | str) -> None:
        model = self.checker.feed(event_name, data)
        if model is not None:
            kind = model.type
            if isinstance(seq := getattr(model, "sequence_number", None), int):
                self.last_seq = seq
            if kind == _ARGS_DELTA:  # the only frequent one of them: no dump
                self.open_tool_args[str(model.item_id)] = time.monotonic()
            elif kind in _TRACKED:
                self._track(kind, model.model_dump(mode="json", by_alias=True, exclude_unset=True))
            return
        # An event that breaks its schema still moves the stream on: read what the diagnoses need.
        try:
            event = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            return
        if isinstance(event, dict) and isinstance(event.get("type"), str):
            self._track(event["type"], event)

    def _track(self, kind: str, event: dict[str, Any]) -> None:
        seq = event.get("sequence_number")
        if isinstance(seq, int):
            self.last_seq = seq
        if kind == _ARGS_DELTA:
            self.open_tool_args[str(event.get("item_id"))] = time.monotonic()
        elif kind == _ARGS_DONE:
            self.open_tool_args.pop(str(event.get("item_id")), None)
        elif kind == _ITEM_DONE and isinstance(item := event.get("item"), dict):
            self.open_tool_args.pop(str(item.get("id")), None)
            self.done_items.append(item)
        elif kind in _LIFECYCLE or kind in _TERMINAL:
            response = event.get("response")
            if isinstance(response, dict):
                self.snapshot = response
                if isinstance(response.get("id"), str):
                    self.exchange.response_id = response["id"]
            if kind in _TERMINAL:
                self.terminal = kind
                self.open_tool_args.clear()

    def next_deadline(self, stall_timeout: float, tool_timeout: float) -> tuple[float, str, str]:
        """When the next diagnosis would fire (monotonic time), its kind and message."""
        deadline = self.last_event_at + stall_timeout
        found = ("stream-stall", f"no event for {stall_timeout:g} s")
        for item_id, last in self.open_tool_args.items():
            if last + tool_timeout < deadline:
                deadline = last + tool_timeout
                found = (
                    "tool-args-stall",
                    f"function call {item_id} streamed arguments but no response.function_call_arguments.done "
                    f"within {tool_timeout:g} s",
                )
        return (deadline, *found)

    def finish(self, *, ended_early: bool) -> None:
        """The stream is over: collect the checker's findings and the end-of-stream diagnoses."""
        if self._finished:
            return
        self._finished = True
        if not self.websocket and not ended_early:  # a message cut off by the proxy is no finding
            for event_name, data in self.sse.close():
                self.feed(event_name, data)
        checker = self.checker
        violations = [] if ended_early else checker.finish()
        if ended_early:  # the stream was cut: only what it broke before the cut counts
            violations = list(checker.violations)
        if not checker.done:
            # OpenAI and many compatible servers end streams without `[DONE]`: an observation, not a
            # broken stream (and WebSocket turns never carry one).
            violations = checker.without_missing_done(violations)
            if not self.websocket and not ended_early and checker.terminal is not None:
                self.exchange.diagnose("no-done-marker", "the stream ended after its terminal event without [DONE]")
        if not ended_early and checker.terminal is None and checker.known:
            self.exchange.diagnose("no-terminal", "the stream ended without a terminal event")
        self.exchange.events = dict(checker.counts)
        self.exchange.violations = [
            {"rule": v.rule, "sequence_number": v.sequence_number, "message": v.message} for v in violations
        ]

    def closing_events(self, code: str, message: str) -> list[dict[str, Any]]:
        """An `error` event and, when the response is known, `response.failed`: a clean end for the client."""
        seq = (self.last_seq if self.last_seq is not None else -1) + 1
        error = {"type": "server_error", "code": code, "param": None, "message": message}
        events: list[dict[str, Any]] = [{"type": "error", "sequence_number": seq, "error": error}]
        if self.snapshot is not None:
            response = dict(self.snapshot, status="failed", error={"code": code, "message": message})
            response["output"] = list(self.done_items)
            events.append({"type": "response.failed", "sequence_number": seq + 1, "response": response})
        return events
