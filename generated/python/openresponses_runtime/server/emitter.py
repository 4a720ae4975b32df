"""Turn provider steps into spec-exact streaming events, and events into SSE bytes.

The emitter owns everything a provider must not get wrong: `sequence_number`s, output and
content indexes, item ids (`msg_`, `fc_`, `rs_`), the bracket events around every item and
part, `.done` events carrying the full text, the lifecycle (`response.created`,
`response.in_progress`, then exactly one of `response.completed`, `response.incomplete`,
`response.failed`) and `tool_choice` enforcement. With `check=True` every event also goes
through the `StreamChecker`, and a violation raises `StreamViolation` at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .. import bindings
from ..streaming import StreamChecker, Violation
from .errors import ModelError, OpenResponsesError
from .ids import new_id
from .steps import (
    Accepted,
    ArgumentsDelta,
    FunctionCallEnd,
    FunctionCallStart,
    Incomplete,
    MessageEnd,
    MessageStart,
    ProviderError,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningSummary,
    Refusal,
    Step,
    TextDelta,
    UsageReport,
    VendorItem,
)
from .wire import DONE_FRAME, dumps, loads, sse_frame

__all__ = ["DONE_FRAME", "Emitter", "StreamViolation", "ToolPolicy", "dumps", "loads", "new_id", "sse_frame"]


def _event(role: str) -> str:
    """The `type` the spec gives the event of `role` (`bindings.EVENTS`, found in the event registry
    by its wire value): the emitter writes no event name itself, so the events it sends follow the
    spec. A role the spec has no event for is "" here, and `unserved()` names it."""
    return bindings.EVENTS.get(role, "")


# The events every response needs, whatever the provider does; the rest are needed only by the
# steps that write them (a refusal, reasoning, a function call).
_NEEDED = ("created", "in_progress", "completed", "failed", "item_added", "item_done")
_NEEDED += ("part_added", "part_done", "text_delta", "text_done")


def unserved() -> list[str]:
    """Why this package cannot serve responses (empty when it can): what the spec it was built from
    lacks of the response object and the events every response needs, as the build reported it."""
    if bindings.ResponseObject is not None and all(role in bindings.EVENTS for role in _NEEDED):
        return []
    return list(bindings.MISSING)


_DETAILS = bindings.USAGE_DETAILS  # the counts the spec requires beyond those a provider reports
_CREATED = _event("created")
_IN_PROGRESS = _event("in_progress")
_FINISHED = {"completed": _event("completed"), "incomplete": _event("incomplete")}
_FAILED = _event("failed")
_ERROR = _event("error")
_ITEM_ADDED = _event("item_added")
_ITEM_DONE = _event("item_done")
_PART_ADDED = _event("part_added")
_PART_DONE = _event("part_done")
_DELTA = {"text": _event("text_delta"), "refusal": _event("refusal_delta"), "reasoning": _event("reasoning_delta")}
# Each streamed part: its item type, the part it starts as, the field its text ends in, and the
# event that closes that text.
_PARTS = {
    "text": ("message", "output_text", "text", _event("text_done")),
    "refusal": ("message", "refusal", "refusal", _event("refusal_done")),
    "reasoning": ("reasoning", "reasoning_text", "text", _event("reasoning_done")),
}
_SUMMARY_PART_ADDED = _event("summary_part_added")
_SUMMARY_PART_DONE = _event("summary_part_done")
_SUMMARY_DELTA = _event("summary_delta")
_SUMMARY_DONE = _event("summary_done")
_ARGUMENTS_DELTA = _event("arguments_delta")
_ARGUMENTS_DONE = _event("arguments_done")


class StreamViolation(AssertionError):
    """The emitter produced a stream the checker rejects: a bug in the server or the emitter."""

    def __init__(self, violations: list[Violation]):
        super().__init__("; ".join(map(str, violations)))
        self.violations = violations


class ToolPolicy:
    """Which function calls `tool_choice` lets through, and whether one is required."""

    __slots__ = ("allowed", "required")

    def __init__(self, allowed: frozenset[str], required: bool):
        self.allowed = allowed
        self.required = required

    @classmethod
    def from_request(cls, tools: list[dict[str, Any]], tool_choice: Any) -> ToolPolicy:
        if not tools and tool_choice in (None, "auto", "none"):
            return cls(frozenset(), False)  # most requests: nothing the model may call
        names = frozenset(t["name"] for t in tools if t.get("type") == "function" and isinstance(t.get("name"), str))
        if tool_choice is None or tool_choice == "auto":
            return cls(names, False)
        if tool_choice == "none":
            return cls(frozenset(), False)
        if tool_choice == "required":
            return cls(names, True)
        if isinstance(tool_choice, dict) and tool_choice.get("type") == "function":
            return cls(names & {tool_choice.get("name")}, True)
        if isinstance(tool_choice, dict) and tool_choice.get("type") == "allowed_tools":
            listed = {t.get("name") for t in tool_choice.get("tools") or () if isinstance(t, dict)}
            mode = tool_choice.get("mode") or "auto"
            if mode == "none":
                return cls(frozenset(), False)
            return cls(names & listed, mode == "required")
        return cls(names, False)

    @property
    def mode(self) -> str:
        return "required" if self.required else ("auto" if self.allowed else "none")


class _Open:
    """The item being streamed: its output index, dict and open part."""

    __slots__ = ("index", "item", "part_index", "part_field", "chunks", "kind", "frame")

    def __init__(self, index: int, item: dict[str, Any]):
        self.index = index
        self.item = item
        self.kind = item["type"]
        self.part_index: int | None = None
        self.part_field: str | None = None  # a key of _PARTS
        self.chunks: list[str] = []
        self.frame: bytes | None = None  # its deltas' SSE frame, to fill with `% (delta JSON, number)`

    def part_ids(self) -> dict[str, Any]:
        """The fields that name the open part in its events, in the order they are written."""
        return {"item_id": self.item["id"], "output_index": self.index, "content_index": self.part_index}


def _delta_frame(ids: dict[str, Any]) -> bytes:
    """The SSE frame of a delta event with these leading fields, as a template for
    `% (JSON of the delta, sequence number)`: the bytes `sse_frame` writes for the whole dict,
    whose remaining keys are `delta`, the text delta's empty `logprobs`, and `sequence_number`."""
    kind = ids["type"]
    head = b"event: " + kind.encode() + b"\ndata: " + dumps(ids)[:-1]
    logprobs = b',"logprobs":[]' if kind == _DELTA["text"] else b""
    return head.replace(b"%", b"%%") + b',"delta":%b' + logprobs + b',"sequence_number":%d}\n\n'


class Emitter:
    """Builds the events of one response from its skeleton and the provider's steps.

    `response` is a complete `ResponseResource` dict in status `in_progress` (see
    `app.response_skeleton`). Each method returns the events it produced, as dicts, or with
    `frames=True` as their SSE frames (`sse_frame`); a text, refusal or arguments delta is then
    written straight into its frame, byte for byte what `sse_frame` writes, without the dict.
    With `events=False` (a non-streamed response, where only the final `response` is sent) no
    event is made, and the methods return none: nobody would see them, and the response is built
    all the same. `check=True` always builds every event whole, for the checker. `seal(item_id,
    item fields, provider state)`: the `encrypted_content` of each reasoning item, or None for none
    (see `sealing`); without it a reasoning item carries the provider's state as it is, if any.
    """

    def __init__(
        self,
        response: dict[str, Any],
        policy: ToolPolicy | None = None,
        *,
        check: bool = False,
        events: bool = True,
        frames: bool = False,
        seal: Callable[[str, dict[str, Any], str | None], str | None] | None = None,
    ):
        self.response = response
        self.seal = seal
        self.policy = policy or ToolPolicy(frozenset(), False)
        self.output: list[dict[str, Any]] = response["output"]
        self.checker = StreamChecker() if check else None
        self.whole = events or check
        self._copy = _copy if self.whole else _same
        self._out = sse_frame if frames else _same
        # Deltas no checker needs as dicts: written straight into their frames, or (events=False,
        # nobody sees them) only numbered.
        self._framed_deltas = frames and not check
        self._plain_deltas = not check and (frames or not events)
        if not self.whole:
            self._emit = _drop  # type: ignore[method-assign,assignment]
        self.seq = 0
        self.open: _Open | None = None
        self.suppressing = False
        self.calls = 0
        self.suppressed: list[str] = []
        self.finished = False
        self.completed_at: int | None = None
        self.usage: UsageReport | None = None
        self.incomplete: str | None = None
        self.error: OpenResponsesError | None = None

    # -- events ------------------------------------------------------------------------------

    def _emit(self, out: list[dict[str, Any]], event: dict[str, Any]) -> None:
        if not event["type"]:  # a step whose event the spec does not define (see `unserved`)
            raise ModelError(f"the spec this server was built from has no event for {sorted(event)}")
        event["sequence_number"] = self.seq
        self.seq += 1
        if self.checker is not None:
            before = len(self.checker.violations)
            self.checker.feed_event(event, event["type"])
            if len(self.checker.violations) > before:
                raise StreamViolation(self.checker.violations[before:])
        out.append(self._out(event))

    def _snapshot(self) -> dict[str, Any] | None:
        if not self.whole:
            return None
        return {**self.response, "output": [_copy(item) for item in self.output]}

    def start(self) -> list[dict[str, Any]]:
        """`response.created` then `response.in_progress`."""
        out: list[dict[str, Any]] = []
        if self.whole:  # here and below: without `whole`, events would be made only to be dropped
            self._emit(out, {"type": _CREATED, "response": self._snapshot()})
            self._emit(out, {"type": _IN_PROGRESS, "response": self._snapshot()})
        return out

    def step(self, step: Step) -> list[dict[str, Any]]:
        """The events for one provider step (none for a suppressed tool call)."""
        if self.finished or self.incomplete is not None:
            raise ProviderError(f"{type(step).__name__} after the response ended")
        item = self.open
        if type(step) is TextDelta and self._plain_deltas and item is not None and item.part_field == "text":
            item.chunks.append(step.text)  # more text for the open part, most steps of most responses
            if item.frame is None:
                return []  # events=False: nobody sees it
            self.seq += 1  # as in `_delta`, without the call
            return [item.frame % (dumps(step.text), self.seq - 1)]
        out: list[dict[str, Any]] = []
        if self.suppressing and not isinstance(step, ArgumentsDelta | FunctionCallEnd):
            self.suppressing = False
        if isinstance(step, TextDelta):
            self._text(out, step.text, "text")
        elif isinstance(step, ArgumentsDelta):
            if self.suppressing:
                return out
            item = self._need("function_call", step)
            item.chunks.append(step.delta)
            if self._plain_deltas:
                if self._framed_deltas and item.frame is None:
                    item.frame = _delta_frame(
                        {"type": _ARGUMENTS_DELTA, "item_id": item.item["id"], "output_index": item.index}
                    )
                self._delta(out, item, step.delta)
            else:
                self._emit(
                    out,
                    {
                        "type": _ARGUMENTS_DELTA,
                        "item_id": item.item["id"],
                        "output_index": item.index,
                        "delta": step.delta,
                    },
                )
        elif isinstance(step, FunctionCallStart):
            self._close(out)
            if step.name not in self.policy.allowed:
                self.suppressing = True
                self.suppressed.append(step.name)
                return out
            self.calls += 1
            self._open_item(
                out,
                {
                    "id": new_id("fc"),
                    "type": "function_call",
                    "status": "in_progress",
                    "call_id": step.call_id or new_id("call"),
                    "name": step.name,
                    "arguments": "",
                },
            )
        elif isinstance(step, FunctionCallEnd):
            if self.suppressing:
                self.suppressing = False
                return out
            self._need("function_call", step)
            self._close(out)
        elif isinstance(step, MessageStart):
            self._close(out)
            item = {"id": new_id("msg"), "type": "message", "status": "in_progress", "role": "assistant", "content": []}
            if step.phase is not None:
                item["phase"] = step.phase
            self._open_item(out, item)
        elif isinstance(step, MessageEnd):
            self._need("message", step)
            self._close(out)
        elif isinstance(step, Refusal):
            self._text(out, step.text, "refusal")
            self._close_part(out)
        elif isinstance(step, ReasoningDelta):
            self._text(out, step.text, "reasoning")
        elif isinstance(step, ReasoningEnd):
            item = self.open
            if item is None or item.kind != "reasoning":  # reasoning with no text (redacted thinking)
                self._close(out)
                empty = {"id": new_id("rs"), "type": "reasoning", "status": "in_progress", "summary": [], "content": []}
                item = self._open_item(out, empty)
            self._close_part(out)  # its text complete, for the seal
            self._carry(item.item, {"content": item.item.get("content", [])}, step.encrypted_content)
            self._close(out)
        elif isinstance(step, ReasoningSummary):
            self._reasoning(out, step)
        elif isinstance(step, VendorItem):
            self._vendor(out, step)
        elif isinstance(step, UsageReport):
            self.usage = step
        elif isinstance(step, Accepted):
            pass  # no event: it only lets the stream begin
        elif isinstance(step, Incomplete):
            self.incomplete = step.reason
        else:
            raise ProviderError(f"not a step: {step!r}")
        return out

    def finish(self) -> list[dict[str, Any]]:
        """Close what is open and end the response: completed, incomplete, or failed (tool_choice)."""
        out: list[dict[str, Any]] = []
        if self.finished:
            return out
        if self.policy.required and self.calls == 0 and self.incomplete is None:
            suppressed = f" (suppressed calls to: {', '.join(self.suppressed)})" if self.suppressed else ""
            return self.fail(
                ModelError(
                    f"tool_choice requires a call to one of {sorted(self.policy.allowed)} but the model made none"
                    + suppressed,
                    code="tool_choice_violation",
                    param="tool_choice",
                )
            )
        self._close(out, "incomplete" if self.incomplete is not None else "completed")
        self.finished = True
        status = "incomplete" if self.incomplete is not None else "completed"
        self.response["status"] = status
        self.response["completed_at"] = self._ended_at()
        if self.incomplete is not None:
            self.response["incomplete_details"] = {"reason": self.incomplete}
        self.response["usage"] = self._usage()
        if self.whole:
            self._emit(out, {"type": _FINISHED[status], "response": self._snapshot()})
        return out

    def fail(self, error: OpenResponsesError) -> list[dict[str, Any]]:
        """An `error` event, then `response.failed` carrying the error."""
        out: list[dict[str, Any]] = []
        if self.finished:
            return out
        self.finished = True
        self.error = error
        self._so_far()
        self._emit(out, {"type": _ERROR, "error": error.payload(headers=True)})
        self.response["status"] = "failed"
        self.response["completed_at"] = self._ended_at()
        self.response["error"] = {"code": error.code or error.type, "message": error.message}
        self.response["usage"] = self._usage()
        self._emit(out, {"type": _FAILED, "response": self._snapshot()})
        return out

    def fail_unseen(self, error: OpenResponsesError) -> list[dict[str, Any]]:
        """`fail` for a response that `finish` ended with no event made (`events=False`), when what
        came after (its save) failed: nobody saw it end, so it ends failed after all."""
        if self.whole:
            return []
        self.finished = False
        return self.fail(error)

    def abort(self, error: OpenResponsesError, sent: int) -> list[dict[str, Any]]:
        """`fail` for a response whose events broke off: an `error` event, then `response.failed`.

        For when the emitter itself broke (a bug, a value no JSON holds, an event the checker
        refused), maybe mid-step, so that its state cannot be trusted: the two events are numbered
        after the `sent` events the client has, and go unchecked. The response keeps its output
        unless that cannot be written; its usage is unknown."""
        self.finished = True
        self.error = error
        self.checker = None
        self.seq = sent
        self.open = None
        self.response.update(
            status="failed",
            completed_at=self._ended_at(),
            error={"code": error.code or error.type, "message": error.message},
            usage=None,
        )
        try:
            dumps(self.response)
        except (TypeError, ValueError):
            self.output.clear()
        out: list[dict[str, Any]] = []
        self._emit(out, {"type": _ERROR, "error": error.payload(headers=True)})
        self._emit(out, {"type": _FAILED, "response": self._snapshot()})
        return out

    def _so_far(self) -> None:
        """The open item as far as it was streamed (its part's text, its arguments), left open:
        a failed response holds what its client was sent."""
        item = self.open
        if item is not None and item.part_field is not None:
            item.item["content"][item.part_index][item.part_field] = "".join(item.chunks)
        elif item is not None and item.kind == "function_call":
            item.item["arguments"] = "".join(item.chunks)

    def preview(self) -> dict[str, Any]:
        """The response as `finish()` will leave it, made on a copy: no event, this emitter unchanged.

        What the server saves before it tells the client the response ended, so that a save
        that fails can still end it `failed` instead."""
        if self.finished:
            return self.response
        dry = Emitter({**self.response, "output": [_copy(item) for item in self.output]}, self.policy, events=False)
        dry.calls, dry.suppressed, dry.usage, dry.incomplete = self.calls, self.suppressed, self.usage, self.incomplete
        if self.open is not None:
            dry.open = _Open(self.open.index, dry.output[self.open.index])
            dry.open.part_index, dry.open.part_field = self.open.part_index, self.open.part_field
            dry.open.chunks = list(self.open.chunks)
        dry.completed_at = self._ended_at()  # both end at the same second
        dry.finish()
        return dry.response

    def _ended_at(self) -> int:
        if self.completed_at is None:
            self.completed_at = int(time.time())
        return self.completed_at

    def verify(self) -> None:
        """With `check=True`: the end of the stream (`[DONE]` sent) must leave no violation."""
        if self.checker is not None:
            self.checker.feed(None, "[DONE]")
            violations = self.checker.finish()
            if violations:
                raise StreamViolation(violations)

    # -- items -------------------------------------------------------------------------------

    def _need(self, kind: str, step: Step) -> _Open:
        if self.open is None or self.open.kind != kind:
            what = self.open.kind if self.open else "nothing"
            raise ProviderError(f"{type(step).__name__} needs an open {kind}, but {what} is open")
        return self.open

    def _open_item(self, out: list[dict[str, Any]], item: dict[str, Any]) -> _Open:
        index = len(self.output)
        self.output.append(item)
        self.open = _Open(index, item)
        if self.whole:
            self._emit(out, {"type": _ITEM_ADDED, "output_index": index, "item": _copy(item)})
        return self.open

    def _text(self, out: list[dict[str, Any]], text: str, field: str) -> None:
        kind, part_type, key, _ = _PARTS[field]
        if self.open is None or self.open.kind != kind:
            self._close(out)
            if kind == "message":
                item = {"id": new_id("msg"), "type": "message", "status": "in_progress", "role": "assistant"}
            else:
                item = {"id": new_id("rs"), "type": "reasoning", "status": "in_progress", "summary": []}
            self._open_item(out, {**item, "content": []})
        item = self.open
        assert item is not None
        if item.part_field != field:
            self._close_part(out)
            part = {"type": part_type, key: ""}
            if field == "text":
                part.update(annotations=[], logprobs=[])
            item.part_index = len(item.item["content"])
            item.part_field = field
            item.item["content"].append(part)
            ids = item.part_ids()
            if self._framed_deltas:
                item.frame = _delta_frame({"type": _DELTA[field], **ids})
            if self.whole:
                self._emit(out, {"type": _PART_ADDED, **ids, "part": _copy(part)})
        item.chunks.append(text)
        if self._plain_deltas:
            self._delta(out, item, text)
            return
        event = {"type": _DELTA[field], **item.part_ids(), "delta": text}
        if field == "text":
            event["logprobs"] = []
        self._emit(out, event)

    def _delta(self, out: list[Any], item: _Open, delta: str) -> None:
        """A delta no checker reads: its frame from the item's template (none with events=False)."""
        if item.frame is not None:
            out.append(item.frame % (dumps(delta), self.seq))
            self.seq += 1

    def _close_part(self, out: list[dict[str, Any]]) -> None:
        item = self.open
        if item is None or item.part_field is None:
            return
        field = item.part_field
        _, _, key, done = _PARTS[field]
        text = "".join(item.chunks)
        item.chunks = []
        part = item.item["content"][item.part_index]
        part[key] = text
        if self.whole:
            ids = item.part_ids()
            event = {"type": done, **ids, key: text}
            if field == "text":
                event["logprobs"] = []
            self._emit(out, event)
            self._emit(out, {"type": _PART_DONE, **ids, "part": _copy(part)})
        item.part_field = None
        item.part_index = None

    def _close(self, out: list[dict[str, Any]], status: str = "completed") -> None:
        item = self.open
        if item is None:
            return
        if item.kind in ("message", "reasoning"):
            self._close_part(out)
        elif item.kind == "function_call":
            arguments = "".join(item.chunks)
            item.item["arguments"] = arguments
            if self.whole:
                self._emit(
                    out,
                    {
                        "type": _ARGUMENTS_DONE,
                        "item_id": item.item["id"],
                        "output_index": item.index,
                        "arguments": arguments,
                    },
                )
        item.item["status"] = status
        if self.whole:
            self._emit(out, {"type": _ITEM_DONE, "output_index": item.index, "item": _copy(item.item)})
        self.open = None

    def _carry(self, item: dict[str, Any], fields: dict[str, Any], state: str | None) -> None:
        """A reasoning item's `encrypted_content`: sealed by `seal` when it says so, else the provider's state as is."""
        blob = self.seal(item["id"], fields, state) if self.seal is not None else state
        if blob is not None:
            item["encrypted_content"] = blob

    def _reasoning(self, out: list[dict[str, Any]], step: ReasoningSummary) -> None:
        self._close(out)
        item: dict[str, Any] = {"id": new_id("rs"), "type": "reasoning", "status": "in_progress", "summary": []}
        part = {"type": "summary_text", "text": step.text}
        self._carry(item, {"summary": [part]}, step.encrypted_content)
        index = len(self.output)
        self.output.append(item)
        self._emit(out, {"type": _ITEM_ADDED, "output_index": index, "item": self._copy(item)})
        ids = {"item_id": item["id"], "output_index": index, "summary_index": 0}
        self._emit(out, {"type": _SUMMARY_PART_ADDED, **ids, "part": {"type": "summary_text", "text": ""}})
        self._emit(out, {"type": _SUMMARY_DELTA, **ids, "delta": step.text})
        self._emit(out, {"type": _SUMMARY_DONE, **ids, "text": step.text})
        self._emit(out, {"type": _SUMMARY_PART_DONE, **ids, "part": self._copy(part)})
        item["summary"].append(part)
        item["status"] = "completed"
        self._emit(out, {"type": _ITEM_DONE, "output_index": index, "item": self._copy(item)})

    def _vendor(self, out: list[dict[str, Any]], step: VendorItem) -> None:
        item = dict(step.item)
        kind = item.get("type")
        if not isinstance(kind, str) or ":" not in kind:
            raise ProviderError(f"a vendor item's type must be vendor-prefixed (`myco:thing`), not {kind!r}")
        self._close(out)
        item.setdefault("id", new_id(kind.split(":", 1)[0]))
        final_status = item.get("status") or "completed"
        item["status"] = "in_progress"
        index = len(self.output)
        self.output.append(item)
        self._emit(out, {"type": _ITEM_ADDED, "output_index": index, "item": self._copy(item)})
        item["status"] = final_status
        self._emit(out, {"type": _ITEM_DONE, "output_index": index, "item": self._copy(item)})

    def _usage(self) -> dict[str, Any] | None:
        u = self.usage
        if u is None:
            return None  # the provider reported none: unknown, which zeros would misstate
        return {
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "total_tokens": u.input_tokens + u.output_tokens,
            "input_tokens_details": {**_DETAILS.get("input_tokens_details", {}), "cached_tokens": u.cached_tokens},
            "output_tokens_details": {
                **_DETAILS.get("output_tokens_details", {}),
                "reasoning_tokens": u.reasoning_tokens,
            },
        }


def _copy(value: Any) -> Any:
    """A deep copy of JSON data (events must not change when the emitter updates its state)."""
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value


def _same(value: Any) -> Any:
    return value


def _drop(out: list[Any], event: dict[str, Any]) -> None:
    """`Emitter._emit` when no event is wanted (`events=False`)."""
