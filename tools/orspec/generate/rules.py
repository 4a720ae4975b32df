"""The stream rules page: every rule of `spec/state-machines.yaml` with what it requires and a
minimal stream that breaks it.

The streams start from one valid stream (a response that answers "Hi" in one message), whose
response objects are built from the spec's `ResponseResource` schema, so they are complete; each
rule's stream is that one with a single change, said in a sentence. `tests/toolchain/test_docs_rules.py`
checks every stream against the stream checkers: each breaks its rule, the valid one none.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections.abc import Callable
from typing import Any

from .docs import example_for

ITEM = "msg_1"
_NUMBERS = re.compile(r'"(sequence_number|output_index)":\s*-?\d+')  # renumbered after a change
Frames = list[tuple[str | None, str]]  # (SSE `event:` header, data), `[DONE]` last
Change = Callable[[list[dict], dict], Frames]  # the valid events and the spec -> a broken stream


def valid_events(document: dict) -> list[dict]:
    """The valid stream's events, `sequence_number`s from 0."""
    response = example_for(document, "ResponseResource")
    response = response if isinstance(response, dict) else {}
    response.update(id="resp_1", status="in_progress", output=[])
    item = {"type": "message", "id": ITEM, "status": "in_progress", "role": "assistant", "content": []}
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    at = {"item_id": ITEM, "output_index": 0, "content_index": 0}
    done_part = {**part, "text": "Hi"}
    done_item = {**item, "status": "completed", "content": [done_part]}
    events = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.content_part.added", **at, "part": part},
        {"type": "response.output_text.delta", **at, "delta": "Hi", "logprobs": []},
        {"type": "response.output_text.done", **at, "text": "Hi", "logprobs": []},
        {"type": "response.content_part.done", **at, "part": done_part},
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {"type": "response.completed", "response": {**response, "status": "completed", "output": [done_item]}},
    ]
    return copy.deepcopy(events)


def _index(events: list[dict], kind: str) -> int:
    return next(i for i, e in enumerate(events) if e.get("type") == kind)


def _renumber(events: list[dict]) -> list[dict]:
    for i, event in enumerate(events):
        event["sequence_number"] = i
    return events


def frames(events: list[dict], *, numbered: bool = True, done: bool = True) -> Frames:
    if numbered:
        _renumber(events)
    out: Frames = [(e.get("type"), json.dumps(e, separators=(",", ":"))) for e in events]
    return out + [(None, "[DONE]")] if done else out


def sse(stream: Frames) -> str:
    return "".join((f"event: {name}\n" if name else "") + f"data: {data}\n\n" for name, data in stream)


def _drop(kind: str) -> Change:
    def change(events: list[dict], document: dict) -> Frames:
        del events[_index(events, kind)]
        return frames(events)

    return change


def _edit(kind: str, edit: Callable[[dict], Any]) -> Change:
    def change(events: list[dict], document: dict) -> Frames:
        edit(events[_index(events, kind)])
        return frames(events)

    return change


def _move(kind: str, before: str) -> Change:
    def change(events: list[dict], document: dict) -> Frames:
        event = events.pop(_index(events, kind))
        events.insert(_index(events, before), event)
        return frames(events)

    return change


def _not_json(events: list[dict], document: dict) -> Frames:
    stream = frames(events)
    at = _index(events, "response.output_text.delta")
    stream[at] = (None, '{"delta": "Hi"}')
    return stream


def _wrong_header(events: list[dict], document: dict) -> Frames:
    stream = frames(events)
    at = _index(events, "response.output_text.delta")
    stream[at] = ("response.output_text.done", stream[at][1])
    return stream


def _repeat_number(events: list[dict], document: dict) -> Frames:
    _renumber(events)
    at = _index(events, "response.output_text.delta")
    events[at]["sequence_number"] = at - 1
    return frames(events, numbered=False)


def _skip_number(events: list[dict], document: dict) -> Frames:
    _renumber(events)
    for event in events[_index(events, "response.output_text.delta") :]:
        event["sequence_number"] += 1
    return frames(events, numbered=False)


def _after_terminal(events: list[dict], document: dict) -> Frames:
    events.append(copy.deepcopy(events[_index(events, "response.in_progress")]))
    return frames(events)


def _queued_late(events: list[dict], document: dict) -> Frames:
    queued = copy.deepcopy(events[_index(events, "response.in_progress")])
    queued["type"], queued["response"]["status"] = "response.queued", "queued"
    events.insert(_index(events, "response.output_item.added"), queued)
    return frames(events)


def _summary_outside_part(events: list[dict], document: dict) -> Frames:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    at = {"item_id": "rs_1", "output_index": 0}
    start = _index(events, "response.output_item.added")
    events[start:start] = [
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        {"type": "response.reasoning_summary_text.delta", **at, "summary_index": 0, "delta": "Thinking"},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
    ]
    for event in events[start + 3 :]:
        if "output_index" in event:
            event["output_index"] = 1
    completed = events[_index(events, "response.completed")]
    completed["response"]["output"].insert(0, reasoning)
    return frames(events)


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict], None]:
    def edit(event: dict) -> None:
        node = event
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


def _error_before(events: list[dict], document: dict) -> Frames:
    payload = example_for(document, "ErrorPayload")
    payload = {**(payload if isinstance(payload, dict) else {}), "message": "The model failed."}
    events.insert(_index(events, "response.completed"), {"type": "error", "error": payload})
    return frames(events)


def _incomplete_item(events: list[dict], document: dict) -> Frames:
    done = events[_index(events, "response.output_item.done")]
    done["item"]["status"] = "incomplete"
    events[_index(events, "response.completed")]["response"]["output"][0]["status"] = "incomplete"
    return frames(events)


# rule id -> (what the stream changes, the change). The valid stream, changed in one place.
BREAKS: dict[str, tuple[str, Change]] = {
    "sse-json": ("The delta's data is JSON without a `type`.", _not_json),
    "sse-header": ("The delta's `event:` header names another type.", _wrong_header),
    "schema": (
        "The delta's `delta` is a number.",
        _edit("response.output_text.delta", _set(("delta",), 42)),
    ),
    "sequence": ("The delta repeats the `sequence_number` of the event before it.", _repeat_number),
    "sequence-gap": ("The numbers skip one before the delta.", _skip_number),
    "created-first": ("No `response.created`.", _drop("response.created")),
    "queued": ("`response.queued` comes after `response.in_progress`.", _queued_late),
    "in-progress-first": ("No `response.in_progress`.", _drop("response.in_progress")),
    "one-terminal": ("No `response.completed`.", _drop("response.completed")),
    "after-terminal": ("A `response.in_progress` follows `response.completed`.", _after_terminal),
    "done-marker": ("No `data: [DONE]` at the end.", lambda events, _: frames(events, done=False)),
    "item-added-first": ("No `response.output_item.added`.", _drop("response.output_item.added")),
    "item-in-progress": (
        "The delta comes after the item's `response.output_item.done`.",
        _move("response.output_item.done", "response.output_text.delta"),
    ),
    "item-closed": ("No `response.output_item.done`.", _drop("response.output_item.done")),
    "text-done": (
        "`response.content_part.done` comes before `response.output_text.done`.",
        _move("response.content_part.done", "response.output_text.done"),
    ),
    "part-bracket": ("No `response.content_part.added`.", _drop("response.content_part.added")),
    "summary-part-bracket": (
        "A reasoning item's summary delta comes without `response.reasoning_summary_part.added`.",
        _summary_outside_part,
    ),
    "output-index": (
        "The delta says `output_index` 1.",
        _edit("response.output_text.delta", _set(("output_index",), 1)),
    ),
    "delta-equals-done": (
        "`response.output_text.done` says `Hi!`; the deltas built `Hi`.",
        _edit("response.output_text.done", _set(("text",), "Hi!")),
    ),
    "item-equals-built": (
        "The item in `response.output_item.done` says `Bye`; its deltas built `Hi`.",
        _edit("response.output_item.done", _set(("item", "content", 0, "text"), "Bye")),
    ),
    "incomplete-item": ("The item ends `incomplete`, the response `completed`.", _incomplete_item),
    "error-then-failed": ("An `error` event, then `response.completed`.", _error_before),
    "response-status": (
        "The response in `response.in_progress` says `completed`.",
        _edit("response.in_progress", _set(("response", "status"), "completed")),
    ),
    "terminal-output": (
        "The response in `response.completed` lists no output.",
        _edit("response.completed", _set(("response", "output"), [])),
    ),
}


def breaking_streams(document: dict, rules: dict[str, str]) -> dict[str, tuple[str, str]]:
    """rule id -> (what changed, the SSE stream), for every rule `BREAKS` knows."""
    return {
        rule: (BREAKS[rule][0], sse(BREAKS[rule][1](valid_events(document), document)))
        for rule in rules
        if rule in BREAKS
    }


def changed_lines(valid: str, broken: str) -> list[int]:
    """The lines (from 1) of `broken` that make it differ from `valid`: the events changed or
    added, and for an event taken out, the one that now follows the gap (the last, at the end).
    Numbers renumbered after the change are not differences, unless they are the whole change."""
    old, new = _events_of(valid), _events_of(broken)
    changed = _differing(_unnumbered(old), _unnumbered(new)) or sorted(_differing(old, new))[:1]
    lines, at = [], 1
    for i, event in enumerate(new):
        count = event.count("\n") + 1
        if i in changed:
            lines.extend(range(at, at + count))
        at += count + 1  # and the blank line after it
    return lines


def _events_of(stream: str) -> list[str]:
    return [event for event in stream.split("\n\n") if event.strip()]


def _unnumbered(events: list[str]) -> list[str]:
    return [_NUMBERS.sub(r'"\1":0', event) for event in events]


def _differing(old: list[str], new: list[str]) -> set[int]:
    """The indexes in `new` of the events changed or added, and of each that follows a removal."""
    marked: set[int] = set()
    for op, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op in ("replace", "insert"):
            marked.update(range(j1, j2))
        elif op == "delete" and new:
            marked.add(min(j1, len(new) - 1))
    return marked


def generate_rules_page(document: dict, machines: Any, templates_env: Any) -> dict[str, bytes]:
    """`docs/stream-rules.md`, when the spec has state machines that name rules."""
    rules = dict(getattr(machines, "rules", None) or {})
    if not rules:
        return {}
    warnings = set(getattr(machines, "warnings", ()) or ())
    streams = breaking_streams(document, rules)
    valid = sse(frames(valid_events(document)))
    text = templates_env.get_template("docs/stream-rules.md.jinja").render(
        rules=[
            (rule, rules[rule], rule in warnings, what, stream, " ".join(map(str, changed_lines(valid, stream))))
            for rule in rules
            for what, stream in [streams.get(rule, ("", ""))]
        ],
        valid=valid,
    )
    return {"docs/stream-rules.md": text.encode()}
