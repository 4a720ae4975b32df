"""Check an Open Responses event stream against the state machines, and rebuild its response.

`StreamChecker` is fed one SSE message at a time (`feed(event_name, data)`) or a whole capture
(`check_sse(data)`) and collects every violation it finds, each with the id of the rule it breaks
(see `openresponses_runtime.events.RULES`), rather than stopping at the first. Unknown event types
are ignored, as clients must ignore them. With schema checks on (the default), `feed` also returns
each event as its typed model, as `events.parse_event` would, validating it once for both uses.

`ResponseAccumulator` builds the final `ResponseResource` from the events of a stream.

This module is hand-written and shipped verbatim inside the generated runtime package.
"""

from __future__ import annotations

import enum
import json
import typing
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from pydantic import BaseModel, ValidationError

from . import bindings
from .events import (
    DONE,
    EVENT_TYPES,
    ITEM_STATUS_TYPES,
    OPAQUE_FIELDS,
    RESPONSE_STATUSES,
    TERMINAL_EVENT_TYPES,
    TEXT_PARTS,
    WARNING_RULES,
    GenericEvent,
    iter_sse,
    validate_event_json,
    validate_event_python,
)

try:  # orjson is optional; it only makes the checker faster
    from orjson import loads as _json_loads  # its JSONDecodeError is a ValueError, like json's
except ImportError:  # pragma: no cover
    from json import loads as _json_loads

__all__ = ["ResponseAccumulator", "StreamChecker", "Violation", "check_sse"]

_IN_PROGRESS = "in_progress"
# Every table below comes from the state machines, through the generated registry.
_DONE_FIELD = {done: field for done, field in TEXT_PARTS.values()}  # text `.done` event -> its text field
_TEXT_FIELD = {part: field for part, (_, field) in TEXT_PARTS.items()}  # part type -> its text field
_RESPONSE_STATES: dict[str, tuple[str, ...]] = {
    kind: info.requires["response"] for kind, info in EVENT_TYPES.items() if "response" in info.requires
} or {kind: (_IN_PROGRESS,) for kind in EVENT_TYPES if kind != "error" and kind not in RESPONSE_STATUSES}
# The events the ordering checks cannot fault while the response is in progress (most of a stream).
_STEADY = frozenset(kind for kind in EVENT_TYPES if _IN_PROGRESS in _RESPONSE_STATES.get(kind, (_IN_PROGRESS,)))
_PART_TEXT_EVENTS = frozenset(
    {
        *_DONE_FIELD,
        *(kind for kind, info in EVENT_TYPES.items() if info.accumulates and info.accumulates.done in _DONE_FIELD),
    }
)


def _nan_or_infinity(data: bytes | str) -> bool:
    """Whether JSON text holds NaN or Infinity (pydantic's parser reads them, JSON has neither).

    Looked for only where an N or I is (an int test is a bare memchr): a word inside a string,
    "NaN Infinity", is no more than a false alarm that lets orjson decide.
    """
    if type(data) is bytes:
        return (78 in data or 73 in data) and (b"NaN" in data or b"Infinity" in data)
    return ("N" in data or "I" in data) and ("NaN" in data or "Infinity" in data)


def _may_hold_float(annotation: Any) -> bool:
    """Whether a field of this type can hold a float, or any JSON value (where NaN could hide)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return False
    if origin is not None:  # unions, optionals, lists, Annotated: whatever they are made of
        return any(_may_hold_float(arg) for arg in typing.get_args(annotation) if arg is not Ellipsis)
    if annotation in (str, int, bool, type(None)):
        return False
    return not (isinstance(annotation, type) and issubclass(annotation, enum.Enum))


# The event types whose rules read only top-level scalars (ids, indexes, text), never the nested
# `response`, `item` or `part`, and whose fields carry their JSON names: for these a validated
# model's `__dict__` serves as the event dict, so their JSON is parsed once, by pydantic. Each
# maps to its fields that may hold a float (see `StreamChecker.feed`).
_FLAT: dict[str, tuple[str, ...]] = {
    kind: tuple(name for name, field in fields.items() if _may_hold_float(field.annotation))
    for kind, info in EVENT_TYPES.items()
    if not {"response", "item", "part"} & set(fields := info.model.model_fields)
    and all(field.alias in (None, name) for name, field in fields.items())
}

# The increments (text, summary and argument deltas), by type: the fields an increment to the
# same part shares with the one before it (its type, what names the part or item it adds to, and
# its fields that may hold a float, which must stay empty), and those float fields. Consecutive
# increments to one open part take `StreamChecker`'s run (see `feed`).
_INCREMENTS: dict[str, tuple[itemgetter, tuple[str, ...]]] = {
    kind: (
        itemgetter(
            "type",
            *(name for name in info.fields if name not in ("sequence_number", info.accumulates.field, *_FLAT[kind])),
            *_FLAT[kind],
        ),
        _FLAT[kind],
    )
    for kind, info in EVENT_TYPES.items()
    if info.accumulates and kind in _FLAT
}


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: its id, the `sequence_number` of the event (None if unknown) and what is wrong."""

    rule: str
    sequence_number: int | None
    message: str

    @property
    def is_warning(self) -> bool:
        """A finding worth knowing that leaves the stream valid (see `events.WARNING_RULES`)."""
        return self.rule in WARNING_RULES

    def __str__(self) -> str:
        seq = "?" if self.sequence_number is None else self.sequence_number
        level = "warning " if self.is_warning else ""
        return f"seq {seq}: {level}[{self.rule}] {self.message}"


class _Part:
    __slots__ = ("index", "state", "kind", "deltas", "text", "part")

    def __init__(self, index: int, part: Any):
        self.index = index
        self.state = "open"
        self.part = part if isinstance(part, dict) else {}
        self.kind = self.part.get("type")
        self.deltas: list[str] = []
        self.text: str | None = None  # the text of the part's own `.done` event


class _Item:
    __slots__ = ("id", "index", "type", "status", "parts", "summary", "args", "args_done", "done")

    def __init__(self, item_id: str, index: int, item: dict):
        self.id = item_id
        self.index = index
        self.type = item.get("type")
        self.status = _IN_PROGRESS
        self.parts: dict[int, _Part] = {}
        self.summary: dict[int, _Part] = {}
        self.args: list[str] = []
        self.args_done: str | None = None
        self.done: dict | None = None


class StreamChecker:
    """Collects every violation of the streaming rules in one stream.

    Feed it SSE messages in order, then call `finish()` (or use `check_sse` for a whole capture).
    With `schema=True` (the default) every core event is also validated against its model.
    """

    def __init__(self, *, schema: bool = True):
        self.schema = schema
        self.violations: list[Violation] = []
        self._counts: defaultdict[str, int] = defaultdict(int)  # a Counter's `+=` is slower
        self._untyped = 0  # events that are not JSON objects with a string `type`
        self.done = False
        self.state: str | None = None  # the response's state
        self.terminal: str | None = None
        self.response_id: Any = None
        self.error_seq: int | None = None
        self.items: dict[Any, _Item] = {}
        self.order: list[_Item] = []
        self.incomplete_item: _Item | None = None
        self._last_seq: int | None = None  # of the last known event
        self._prev_seq: int | None = None  # of the last event of any type
        self._seq: int | None = None
        self._finished = False
        self._early_state: str | None = "unset"
        self._next_index = 0
        # The run: (type, the part's key, its key getter, its float getter, its deltas, their count
        # at the start) while consecutive increments add to one open part.
        self._run: tuple | None = None
        self._handlers = {
            "response.created": self._on_created,
            "response.queued": self._on_queued,
            "response.in_progress": self._on_in_progress,
            "response.completed": self._on_terminal,
            "response.incomplete": self._on_terminal,
            "response.failed": self._on_terminal,
            "response.output_item.added": self._on_item_added,
            "response.output_item.done": self._on_item_done,
            "response.content_part.added": self._on_part_added,
            "response.content_part.done": self._on_part_done,
            "response.output_text.delta": self._on_text_delta,
            "response.refusal.delta": self._on_text_delta,
            "response.reasoning.delta": self._on_text_delta,
            "response.output_text.done": self._on_text_done,
            "response.refusal.done": self._on_text_done,
            "response.reasoning.done": self._on_text_done,
            "response.output_text.annotation.added": self._on_annotation,
            "response.reasoning_summary_part.added": self._on_summary_added,
            "response.reasoning_summary_part.done": self._on_summary_done,
            "response.reasoning_summary_text.delta": self._on_summary_delta,
            "response.reasoning_summary_text.done": self._on_summary_text_done,
            "response.function_call_arguments.delta": self._on_args_delta,
            "response.function_call_arguments.done": self._on_args_done,
            "error": self._on_error,
        }

    # -- feeding -----------------------------------------------------------------------------

    # Counted once per event type rather than per event: fewer attribute writes on the hot path.
    @property
    def counts(self) -> Counter[str]:
        """How many events of each type the stream carried, known or not."""
        self._end_run()
        return Counter(self._counts)

    @property
    def events(self) -> int:
        """Every event so far, known or not."""
        self._end_run()
        return sum(self._counts.values()) + self._untyped

    @property
    def known(self) -> int:
        """The events so far of a type the registry knows."""
        self._end_run()
        return sum(n for kind, n in self._counts.items() if kind in EVENT_TYPES)

    @property
    def errors(self) -> list[Violation]:
        """The violations that make the stream invalid: all but the warnings."""
        return [v for v in self.violations if not v.is_warning]

    @property
    def ok(self) -> bool:
        return not self.errors

    def _add(self, rule: str, message: str) -> None:
        self.violations.append(Violation(rule, self._seq, message))

    def check_sse(self, source: bytes | str | Iterable[bytes | str]) -> list[Violation]:
        """Check a whole SSE capture (see `events.iter_sse` for what `source` may be)."""
        feed = self.feed
        for event_name, data, _ in iter_sse(source):
            feed(event_name, data)
        return self.finish()

    def feed(self, event_name: str | None, data: str | bytes | Mapping[str, Any]) -> Any:
        """One SSE message: its `event:` header (None if absent) and its data.

        With `schema=True` it returns the event as its typed model (a `GenericEvent` for an unknown
        type), so a caller that wants typed events gets them without validating twice; None for
        `[DONE]`, data that is not a JSON object with a `type`, an event breaking its schema, or
        with `schema=False`.
        """
        if self.schema and (type(data) is bytes or type(data) is str):
            # The fast path: validate straight from the JSON. Whatever it rejects (`[DONE]`, not
            # JSON, an unknown type, a schema violation) takes the general path below, which says what.
            try:
                model = validate_event_json(data)
            except ValidationError:
                pass
            else:
                event = model.__dict__
                if (run := self._run) is not None:
                    # Most of a stream: the next delta to the part the last one added to. Nothing a
                    # rule reads has changed since the delta that started the run passed every check,
                    # so only what this event brings is left: its type, number, header and part, float
                    # fields still empty, and neither unknown fields nor NaN (as below). Anything else
                    # ends the run and takes the general path.
                    cls, shared, get_shared, deltas, _ = run
                    if (
                        type(model) is cls  # so its fields are the run's
                        and (seq := event["sequence_number"]) == self._prev_seq + 1
                        and get_shared(event) == shared
                        and (event_name is None or event_name == shared[0])
                        and not model.__pydantic_extra__
                        and (  # `_nan_or_infinity`'s first test inlined: most text has no N or I
                            (
                                78 not in data and 73 not in data
                                if type(data) is bytes
                                else "N" not in data and "I" not in data
                            )
                            or not _nan_or_infinity(data)
                        )
                    ):
                        self._prev_seq = seq
                        deltas.append(event["delta"])
                        return model
                    self._end_run()
                floaty = _FLAT.get(model.type)
                # pydantic's parser takes NaN and Infinity, which JSON has not, and reads numbers
                # beyond double range as inf, which orjson refuses. Without NaN or Infinity anywhere
                # and without a float or free-form value, the model's own fields will do; otherwise
                # orjson parses the data and has the last word.
                if floaty is not None and (model.__pydantic_extra__ or _nan_or_infinity(data)):
                    floaty = None
                for name in floaty or ():  # a loop: cheaper than any(map(...)) for one or two names
                    if event[name]:
                        floaty = None
                        break
                if floaty is None:
                    try:
                        event = _json_loads(data)
                    except ValueError:
                        event = None
                if event is not None:
                    return self._check(event, event_name, None, model)
        self._end_run()
        self._seq = None
        if data == DONE or data == b"[DONE]":
            self._on_done_marker()
            return None
        if not isinstance(data, str | bytes | bytearray | memoryview):
            return self.feed_event(data, event_name)
        try:
            event = _json_loads(data)  # orjson (when installed) decides what is valid JSON
        except ValueError as exc:
            self._untyped += 1
            self._add("sse-json", f"data is not valid JSON ({exc})")
            return None
        return self._check(event, event_name, data)

    def feed_event(self, event: Any, event_name: str | None = None) -> Any:
        """One event already parsed into a dict (or a pydantic model of one); returns what `feed` does."""
        if type(event) is not dict:  # plain dicts (what JSON gives) take the fast path
            if isinstance(event, BaseModel):
                event = event.model_dump(mode="json", by_alias=True)
            elif isinstance(event, Mapping):
                event = dict(event)
        self._end_run()
        self._seq = None
        return self._check(event, event_name)

    def _check(
        self,
        event: Any,
        event_name: str | None,
        raw: str | bytes | bytearray | memoryview | None = None,
        model: Any = None,
    ) -> Any:
        """Every check of one event given as a dict; returns its model.

        `raw` is its JSON text, if any; `model` the event already validated, if it was.
        """
        from_json = raw is not None or model is not None
        kind = event.get("type") if type(event) is dict else None
        if type(kind) is not str:
            self._untyped += 1
            self._add("sse-json", "data is not a JSON object with a string `type`")
            return None
        self._counts[kind] += 1
        seq = event.get("sequence_number")
        if type(seq) is not int:
            seq = None
        self._seq = seq
        if event_name is not None and event_name != kind:
            self._add("sse-header", f"SSE event header {event_name!r} differs from the body's type {kind!r}")
        if kind not in EVENT_TYPES:  # unknown event types are ignored...
            if seq is not None:  # ...but share the numbering, so a gap is measured across them
                if self._prev_seq is not None and seq > self._prev_seq + 1:
                    self._add("sequence-gap", f"sequence_number jumps from {self._prev_seq} to {seq}")
                self._prev_seq = seq
            if not self.schema:
                return None
            try:
                return GenericEvent.model_validate(event)
            except ValidationError as exc:  # ...but their `sequence_number` is still an integer
                self._add("schema", f"{kind} does not match what every event carries: {_summarize(exc)}")
                return None
        if seq is not None:
            prev = self._prev_seq
            if prev is not None and seq != prev + 1:  # one comparison in the common case
                if self._last_seq is not None and seq <= self._last_seq:  # only known events break the order
                    self._add("sequence", f"sequence_number {seq} does not increase (previous {self._last_seq})")
                elif seq > prev + 1:
                    self._add("sequence-gap", f"sequence_number jumps from {prev} to {seq}")
            self._last_seq = self._prev_seq = seq
        if self.schema and model is None:
            try:
                # From the JSON text when there is one: pydantic validates JSON faster than the dict.
                model = validate_event_python(event) if raw is None else validate_event_json(raw)
            except ValidationError as exc:
                self._add("schema", f"{kind} does not match its schema: {_summarize(exc)}")
            except (TypeError, ValueError) as exc:  # a validator tripping over odd input is still a finding
                self._add("schema", f"{kind} could not be validated: {type(exc).__name__}: {exc}")
        state = self.state
        # The steady middle of a stream (an in-progress response), where none of the ordering checks can fire.
        steady = state == _IN_PROGRESS and kind in _STEADY and self.terminal is None and not self.done
        if not steady:
            if self.known == 1 and kind != "response.created":
                self._add("created-first", f"the stream starts with {kind}, not response.created")
            if self.done:
                self._add("after-terminal", f"{kind} after `[DONE]`")
                return model
            if self.terminal is not None and kind not in TERMINAL_EVENT_TYPES:
                self._add("after-terminal", f"{kind} after the terminal event {self.terminal}")
                return model
            required = _RESPONSE_STATES.get(kind)
            # Reported once per state, not for every event that follows.
            if required and state not in required and self._early_state != state:
                self._early_state = state
                self._add(
                    "in-progress-first",
                    f"{kind} while the response is {state or 'not created'}; it needs response.in_progress first",
                )
        handler = self._handlers.get(kind)
        if handler is not None:
            deltas = handler(event)
            # A delta added in the steady state starts a run, for `feed`'s JSON (`feed_event` has none).
            if deltas is not None and steady and from_json and model is not None and self._seq is not None:
                self._start_run(kind, model, deltas)
        return model

    def _start_run(self, kind: str, model: Any, deltas: list[str]) -> None:
        """The deltas that follow `model` to the same part take the run (see `feed`)."""
        if kind in _INCREMENTS:
            get_shared, floats = _INCREMENTS[kind]
            if not any(getattr(model, name) for name in floats):
                self._run = (type(model), get_shared(model.__dict__), get_shared, deltas, len(deltas))

    def _end_run(self) -> None:
        """Count the run's events, as the general path would have."""
        if self._run is not None:
            _, shared, _, deltas, start = self._run
            self._counts[shared[0]] += len(deltas) - start
            self._last_seq = self._prev_seq
            self._run = None

    def finish(self) -> list[Violation]:
        """End of stream: report what never happened, and return every violation."""
        if self._finished:
            return self.violations
        self._end_run()
        self._finished = True
        self._seq = None
        if self.known == 0:
            self._add("created-first", "the stream has no Open Responses events")
        elif self.terminal is None:
            self._add(
                "one-terminal",
                "the stream has no terminal event (response.completed, response.incomplete or response.failed)",
            )
        if not self.done:
            self._add("done-marker", "the stream does not end with `data: [DONE]`")
        if self.error_seq is not None and self.terminal is None:
            self._seq = self.error_seq
            self._add("error-then-failed", "an error event is not followed by response.failed")
        return self.violations

    def without_missing_done(self, violations: list[Violation]) -> list[Violation]:
        """`violations` less the end-of-stream report of a missing `[DONE]` (OpenAI never sends one);
        a `[DONE]` sent twice or too early is still reported."""
        if self.done:
            return list(violations)
        return [v for v in violations if not (v.rule == "done-marker" and v.sequence_number is None)]

    def _on_done_marker(self) -> None:
        if self.done:
            self._add("done-marker", "`[DONE]` sent twice")
        elif self.terminal is None:
            self._add("done-marker", "`[DONE]` before any terminal event")
        self.done = True

    # -- the response -----------------------------------------------------------------------

    def _check_response(self, event: Mapping, kind: str) -> Mapping | None:
        response = event.get("response")
        if not isinstance(response, Mapping):
            return None
        status = response.get("status")
        if status not in RESPONSE_STATUSES[kind]:
            self._add(
                "response-status",
                f"{kind} carries response.status {status!r}, expected {' or '.join(map(repr, RESPONSE_STATUSES[kind]))}",
            )
        rid = response.get("id")
        if self.response_id is None:
            self.response_id = rid
        elif rid != self.response_id:
            self._add("response-status", f"{kind} is about response {rid!r}, not {self.response_id!r}")
        return response

    def _on_created(self, event: Mapping) -> None:
        if self.known != 1:
            self._add(
                "created-first",
                "response.created sent again" if self.state else "response.created is not the first event",
            )
        self._check_response(event, "response.created")
        if self.state is None:
            self.state = "created"

    def _on_queued(self, event: Mapping) -> None:
        if self.state != "created":
            self._add(
                "queued",
                f"response.queued while the response is {self.state or 'not created'}; "
                "it may only follow response.created",
            )
        self._check_response(event, "response.queued")
        if self.terminal is None:
            self.state = "queued"

    def _on_in_progress(self, event: Mapping) -> None:
        if self.state not in ("created", "queued") and self.terminal is None:
            self._add("in-progress-first", f"response.in_progress while the response is {self.state or 'not created'}")
        self._check_response(event, "response.in_progress")
        if self.terminal is None:
            self.state = _IN_PROGRESS

    def _on_terminal(self, event: Mapping) -> None:
        kind = event["type"]
        if self.terminal is not None:
            self._add("one-terminal", f"a second terminal event {kind} (first {self.terminal})")
            return
        if kind != "response.failed" and self.state != _IN_PROGRESS:
            self._add("in-progress-first", f"{kind} while the response is {self.state or 'not created'}")
        self.terminal = kind
        self.state = kind.removeprefix("response.")
        response = self._check_response(event, kind)
        if kind != "response.failed":
            for item in self.order:
                if item.status == _IN_PROGRESS:
                    self._add("item-closed", f"{kind} while item {item.id!r} is still in progress")
        if self.incomplete_item is not None and kind != "response.incomplete":
            self._add(
                "incomplete-item",
                f"item {self.incomplete_item.id!r} ended incomplete, but the response ends with {kind}",
            )
        if self.error_seq is not None and kind != "response.failed":
            self._add(
                "error-then-failed",
                f"the error event at seq {self.error_seq} is followed by {kind}, not response.failed",
            )
        if response is not None and kind != "response.failed":
            self._check_output(response.get("output"), kind)

    def _check_output(self, output: Any, kind: str) -> None:
        if not isinstance(output, list):
            return
        if len(output) != len(self.order):
            self._add(
                "terminal-output", f"{kind} lists {len(output)} output items, but {len(self.order)} were streamed"
            )
            return
        for i, (final, item) in enumerate(zip(output, self.order, strict=True)):
            if item.done is None:  # never finished: `item-closed` has said so
                continue
            final, built = _comparable(final), _comparable(item.done)
            if final != built:
                self._add(
                    "terminal-output",
                    f"{kind} output[{i}] differs from the item streamed at "
                    f"output_index {i} ({_difference(final, built)})",
                )

    def _on_error(self, event: Mapping) -> None:
        if self.error_seq is None:
            self.error_seq = self._seq

    # -- items --------------------------------------------------------------------------------

    def _on_item_added(self, event: Mapping) -> None:
        item = event.get("item")
        if not isinstance(item, Mapping):
            return
        item_id, index = _key(item.get("id")), event.get("output_index")
        if item_id in self.items:
            self._add("item-added-first", f"item {item_id!r} added a second time")
            return
        if index != self._next_index:
            self._add(
                "output-index", f"item {item_id!r} added at output_index {index}; the next index is {self._next_index}"
            )
        if not isinstance(index, int):
            index = self._next_index
        self._next_index = index + 1
        if item.get("status", _IN_PROGRESS) != _IN_PROGRESS:
            self._add(
                "item-in-progress", f"item {item_id!r} is added with status {item.get('status')!r}, not 'in_progress'"
            )
        if self.incomplete_item is not None:
            self._add(
                "incomplete-item",
                f"item {item_id!r} added after item {self.incomplete_item.id!r} "
                "ended incomplete; an incomplete item must be the last",
            )
        tracked = _Item(item_id, index, dict(item))
        self.items[item_id] = tracked
        self.order.append(tracked)

    def _item(self, event: Mapping, item_id: Any = None) -> _Item | None:
        """The open item an event refers to, reporting unknown, finished or mis-indexed items."""
        kind = event["type"]
        if item_id is None:
            item_id = event.get("item_id")
        item_id = _key(item_id)
        item = self.items.get(item_id)
        if item is None:
            self._add("item-added-first", f"{kind} for item {item_id!r}, which was never added")
            return None
        index = event.get("output_index")
        if index != item.index:
            self._add(
                "output-index",
                f"{kind} for item {item_id!r} has output_index {index}; the item was added at {item.index}",
            )
        if item.status != _IN_PROGRESS:
            self._add("item-in-progress", f"{kind} for item {item_id!r}, which is already {item.status}")
            return None
        return item

    def _on_item_done(self, event: Mapping) -> None:
        final = event.get("item")
        if not isinstance(final, Mapping):
            return
        item = self._item(event, final.get("id"))
        if item is None:
            return
        for part in item.parts.values():
            if part.state != "closed":
                self._add("part-bracket", f"item {item.id!r} done while content part {part.index} is still open")
        for part in item.summary.values():
            if part.state != "closed":
                self._add(
                    "summary-part-bracket", f"item {item.id!r} done while summary part {part.index} is still open"
                )
        status = final.get("status")
        # Items without a status in their schema (reasoning, unknown types) finish as completed.
        if status not in ("completed", "incomplete") and (status is not None or item.type in ITEM_STATUS_TYPES):
            self._add(
                "item-in-progress", f"item {item.id!r} done with status {status!r}, not 'completed' or 'incomplete'"
            )
        item.status = status if status in ("completed", "incomplete") else "completed"
        if status == "incomplete" and self.incomplete_item is None:
            self.incomplete_item = item
        item.done = dict(final)
        self._check_built(item, final)

    def _check_built(self, item: _Item, final: Mapping) -> None:
        """The finished item holds what its deltas built."""
        if item.args or item.args_done is not None:
            built = item.args_done if item.args_done is not None else "".join(item.args)
            if final.get("arguments") != built:
                self._add(
                    "item-equals-built",
                    f"item {item.id!r} arguments {_short(final.get('arguments'))} "
                    f"differ from the streamed {_short(built)}",
                )
        for name, parts in (("content", item.parts), ("summary", item.summary)):
            if not parts:
                continue
            listed = final.get(name)
            if not isinstance(listed, list):
                self._add(
                    "item-equals-built",
                    f"item {item.id!r} has no `{name}` list, but {len(parts)} {name} parts were streamed",
                )
                continue
            for index, part in parts.items():
                got = listed[index] if isinstance(index, int) and 0 <= index < len(listed) else None
                if not isinstance(got, Mapping):
                    self._add("item-equals-built", f"item {item.id!r} {name}[{index}] is missing, but it was streamed")
                    continue
                field = _TEXT_FIELD.get(_key(got.get("type") or part.kind), "text")
                built = part.text if part.text is not None else "".join(part.deltas)
                if (part.deltas or part.text is not None) and got.get(field) != built:
                    self._add(
                        "item-equals-built",
                        f"item {item.id!r} {name}[{index}].{field} "
                        f"{_short(got.get(field))} differs from the streamed {_short(built)}",
                    )

    # -- content parts ------------------------------------------------------------------------

    def _on_part_added(self, event: Mapping) -> None:
        self._open_part(event, "content_index", "parts", "part-bracket", "content part")

    def _on_summary_added(self, event: Mapping) -> None:
        self._open_part(event, "summary_index", "summary", "summary-part-bracket", "summary part")

    def _open_part(self, event: Mapping, key: str, where: str, rule: str, what: str) -> None:
        item = self._item(event)
        if item is None:
            return
        parts: dict[int, _Part] = getattr(item, where)
        index = _key(event.get(key))
        if index in parts:
            self._add(rule, f"{what} {index} of item {item.id!r} added a second time")
            return
        for other in parts.values():
            if other.state != "closed":
                self._add(rule, f"{what} {index} of item {item.id!r} added while {what} {other.index} is still open")
        if index != len(parts):
            self._add(rule, f"{what} of item {item.id!r} added at index {index}; the next index is {len(parts)}")
        parts[index] = _Part(index, event.get("part"))

    def _part(self, event: Mapping, key: str, where: str, rule: str, what: str, *, states=("open",)) -> _Part | None:
        item = self._item(event)
        if item is None:
            return None
        index = _key(event.get(key))
        part = getattr(item, where).get(index)
        kind = event["type"]
        if part is None:
            self._add(rule, f"{kind} for {what} {index} of item {item.id!r}, which was never added")
            if kind.endswith(".delta"):  # report once, then track the part as if it had been added
                part = getattr(item, where)[index] = _Part(index, None)
                return part
            return None
        if part.state not in states:
            self._add(
                rule,
                f"{kind} for {what} {index} of item {item.id!r} after its "
                f"{'done event' if part.state == 'text_done' else 'close'}",
            )
            return None
        return part

    def _on_text_delta(self, event: Mapping) -> list[str] | None:
        # Deltas are nearly the whole stream: when the item and part are open and the indexes agree,
        # append straight away; otherwise the general path below finds and reports what is wrong.
        item = self.items.get(item_id) if type(item_id := event.get("item_id")) is str else None
        if item is not None and item.status == _IN_PROGRESS and event.get("output_index") == item.index:
            part = item.parts.get(index) if type(index := event.get("content_index")) is int else None
            if part is not None and part.state == "open" and type(delta := event.get("delta")) is str:
                part.deltas.append(delta)
                return part.deltas  # the next deltas may take the run (see `feed`)
        part = self._part(event, "content_index", "parts", "part-bracket", "content part")
        if part is not None:
            delta = event.get("delta")
            if isinstance(delta, str):
                part.deltas.append(delta)

    def _on_summary_delta(self, event: Mapping) -> list[str] | None:
        item = self.items.get(item_id) if type(item_id := event.get("item_id")) is str else None
        if item is not None and item.status == _IN_PROGRESS and event.get("output_index") == item.index:  # as above
            part = item.summary.get(index) if type(index := event.get("summary_index")) is int else None
            if part is not None and part.state == "open" and type(delta := event.get("delta")) is str:
                part.deltas.append(delta)
                return part.deltas
        part = self._part(event, "summary_index", "summary", "summary-part-bracket", "summary part")
        if part is not None:
            delta = event.get("delta")
            if isinstance(delta, str):
                part.deltas.append(delta)

    def _on_annotation(self, event: Mapping) -> None:
        self._part(event, "content_index", "parts", "part-bracket", "content part")

    def _on_text_done(self, event: Mapping) -> None:
        part = self._part(event, "content_index", "parts", "part-bracket", "content part")
        if part is not None:
            self._close_text(part, event, _DONE_FIELD[event["type"]])

    def _on_summary_text_done(self, event: Mapping) -> None:
        part = self._part(event, "summary_index", "summary", "summary-part-bracket", "summary part")
        if part is not None:
            self._close_text(part, event, "text")

    def _close_text(self, part: _Part, event: Mapping, field: str) -> None:
        text = event.get(field)
        joined = "".join(part.deltas)
        if isinstance(text, str) and text != joined:
            self._add(
                "delta-equals-done",
                f"{event['type']} {field} {_short(text)} differs from the "
                f"{len(part.deltas)} deltas joined {_short(joined)}",
            )
        part.text = text if isinstance(text, str) else joined
        part.state = "text_done"

    def _on_part_done(self, event: Mapping) -> None:
        self._close_part(event, "content_index", "parts", "part-bracket", "content part")

    def _on_summary_done(self, event: Mapping) -> None:
        self._close_part(event, "summary_index", "summary", "summary-part-bracket", "summary part")

    def _close_part(self, event: Mapping, key: str, where: str, rule: str, what: str) -> None:
        part = self._part(event, key, where, rule, what, states=("open", "text_done"))
        if part is None:
            return
        if part.state != "text_done" and part.kind in TEXT_PARTS:
            self._add(
                "text-done",
                f"{event['type']} for {what} {part.index} of item {event.get('item_id')!r} "
                f"before its {TEXT_PARTS[part.kind][0]}",
            )
        final = event.get("part")
        if isinstance(final, Mapping) and (part.deltas or part.text is not None):
            field = _TEXT_FIELD.get(_key(final.get("type") or part.kind), "text")
            built = part.text if part.text is not None else "".join(part.deltas)
            if final.get(field) != built:
                self._add(
                    "delta-equals-done",
                    f"{event['type']} part.{field} {_short(final.get(field))} differs "
                    f"from the streamed {_short(built)}",
                )
        part.state = "closed"

    # -- function call arguments --------------------------------------------------------------

    def _on_args_delta(self, event: Mapping) -> list[str] | None:
        fast = self.items.get(item_id) if type(item_id := event.get("item_id")) is str else None
        if (  # the common case, as for text deltas
            fast is not None
            and fast.status == _IN_PROGRESS
            and fast.args_done is None
            and event.get("output_index") == fast.index
            and type(delta := event.get("delta")) is str
        ):
            fast.args.append(delta)
            return fast.args
        item = self._item(event)
        if item is None:
            return
        if item.args_done is not None:
            self._add("item-in-progress", f"arguments delta for item {item.id!r} after its arguments were done")
            return
        delta = event.get("delta")
        if isinstance(delta, str):
            item.args.append(delta)

    def _on_args_done(self, event: Mapping) -> None:
        item = self._item(event)
        if item is None:
            return
        arguments = event.get("arguments")
        joined = "".join(item.args)
        if isinstance(arguments, str) and arguments != joined:
            self._add(
                "delta-equals-done",
                f"response.function_call_arguments.done arguments {_short(arguments)} "
                f"differ from the {len(item.args)} deltas joined {_short(joined)}",
            )
        item.args_done = arguments if isinstance(arguments, str) else joined


def check_sse(source: bytes | str | Iterable[bytes | str], *, schema: bool = True) -> list[Violation]:
    """Every violation in a whole SSE capture."""
    return StreamChecker(schema=schema).check_sse(source)


def _summarize(exc: ValidationError, limit: int = 3) -> str:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    parts = [f"{'.'.join(map(str, e['loc'][1:] or e['loc'])) or '/'}: {e['msg']}" for e in errors[:limit]]
    more = f" (+{len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(parts) + more


def _key(value: Any) -> Any:
    """An id or index as a dict key; a malformed one (a list, say) by its repr."""
    return value if value is None or isinstance(value, str | int | float) else repr(value)


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _comparable(item: Any) -> Any:
    """An item without its opaque fields (which a server may re-encode) and its null fields."""
    if isinstance(item, Mapping):
        item = {k: v for k, v in item.items() if k not in OPAQUE_FIELDS}
    return _strip_none(item)


def _strip_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _strip_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_none(v) for v in value]
    return value


def _difference(a: Any, b: Any, path: str = "") -> str:
    """Where two JSON values first differ, for a readable message."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b), key=str):
            if _strip_none(a.get(key)) != _strip_none(b.get(key)):
                return _difference(a.get(key), b.get(key), f"{path}.{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if _strip_none(x) != _strip_none(y):
                return _difference(x, y, f"{path}[{i}]")
    return f"{path.lstrip('.') or 'value'}: {_short(a)} != {_short(b)}"


_DELTA_EVENTS = frozenset(
    {
        "response.output_text.delta",
        "response.refusal.delta",
        "response.reasoning.delta",
        "response.reasoning_summary_text.delta",
        "response.function_call_arguments.delta",
    }
)


class ResponseAccumulator:
    """Builds the response of a stream from its events.

    Feed events (typed models from `parse_event`, or dicts) with `feed`; `response` is the
    response as a dict at any point, and `result()` the final `ResponseResource`. The snapshot of
    the latest lifecycle event is the base; output items are assembled from item, part and delta
    events, and replaced by the finished item of `response.output_item.done`. A terminal event's
    own `output`, when it lists items, wins.
    """

    def __init__(self) -> None:
        self.response: dict[str, Any] = {}
        self.output: dict[int, dict[str, Any]] = {}
        self.finished = False

    def feed_sse(self, source: bytes | str | Iterable[bytes | str]) -> ResponseAccumulator:
        for message in iter_sse(source):
            if message.is_done:
                break
            self.feed(_json_loads(message.data))
        return self

    def feed(self, event: Any) -> None:
        if isinstance(event, BaseModel):
            # A delta's fields are plain values, so its attributes will do; dumping the model
            # would cost more than the rest of the work per event.
            if getattr(event, "type", None) in _DELTA_EVENTS:
                event = event.__dict__
            else:
                event = event.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if not isinstance(event, Mapping):
            return
        kind = event.get("type")
        if not isinstance(kind, str):
            return
        if kind in RESPONSE_STATUSES:
            snapshot = event.get("response")
            if isinstance(snapshot, Mapping):
                self.response = json.loads(json.dumps(snapshot))
            if kind in TERMINAL_EVENT_TYPES:
                self.finished = True
            return
        index = event.get("output_index")
        if kind == "response.output_item.added" or kind == "response.output_item.done":
            if isinstance(event.get("item"), Mapping) and isinstance(index, int):
                self.output[index] = json.loads(json.dumps(event["item"]))
            return
        item = self.output.get(index) if isinstance(index, int) else None
        if item is None:
            return
        if kind == "response.content_part.added" or kind == "response.content_part.done":
            _put(item.setdefault("content", []), event.get("content_index"), event.get("part"))
        elif kind == "response.reasoning_summary_part.added" or kind == "response.reasoning_summary_part.done":
            _put(item.setdefault("summary", []), event.get("summary_index"), event.get("part"))
        elif kind == "response.function_call_arguments.delta":
            item["arguments"] = _text(item.get("arguments")) + _text(event.get("delta"))
        elif kind == "response.function_call_arguments.done":
            item["arguments"] = event.get("arguments", item.get("arguments"))
        elif kind == "response.reasoning_summary_text.delta" or kind == "response.reasoning_summary_text.done":
            part = _at(item.get("summary"), event.get("summary_index"))
            if part is not None:
                _append(part, "text", event, kind)
        elif kind == "response.output_text.annotation.added":
            part = _at(item.get("content"), event.get("content_index"))
            if part is not None and event.get("annotation") is not None:
                part.setdefault("annotations", []).append(event["annotation"])
        elif kind in _PART_TEXT_EVENTS:
            part = _at(item.get("content"), event.get("content_index"))
            if part is not None:
                _append(part, "refusal" if kind.startswith("response.refusal") else "text", event, kind)

    def result(self) -> bindings.ResponseObject:
        """The response as a validated `ResponseResource`."""
        if bindings.ResponseObject is None:  # the spec defines no response object to check it with
            raise LookupError("; ".join(bindings.MISSING))
        return bindings.ResponseObject.model_validate(self.as_dict())

    def as_dict(self) -> dict[str, Any]:
        response = dict(self.response)
        if not response.get("output") and self.output:
            response["output"] = [self.output[i] for i in sorted(self.output)]
        return response


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _put(items: Any, index: Any, value: Any) -> None:
    if not isinstance(items, list) or not isinstance(index, int) or index < 0 or not isinstance(value, Mapping):
        return
    while len(items) <= index:
        items.append({})
    items[index] = json.loads(json.dumps(value))


def _at(items: Any, index: Any) -> dict | None:
    if isinstance(items, list) and isinstance(index, int) and 0 <= index < len(items):
        return items[index] if isinstance(items[index], dict) else None
    return None


def _append(part: dict, field: str, event: Mapping, kind: str) -> None:
    if kind.endswith(".delta"):
        part[field] = _text(part.get(field)) + _text(event.get("delta"))
    else:
        done = event.get(field) if field in event else event.get("text")
        if isinstance(done, str):
            part[field] = done
