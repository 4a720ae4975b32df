"""The stream checker and the response accumulator of `openresponses_runtime.streaming`."""

from __future__ import annotations

import collections
import copy
import json

import pytest
from openresponses_runtime.events import RULES, iter_sse
from openresponses_runtime.streaming import ResponseAccumulator, StreamChecker, Violation, check_sse

from ..conftest import RELEASES, ROOT, run_orspec, run_python
from ..streams import Stream, bench_stream, to_sse


def full() -> Stream:
    """Text, two parallel function calls and a reasoning summary, completed."""
    return (
        Stream()
        .reasoning(["Think", "ing"], ["More"])
        .message("Hel", "lo", " wörld")
        .function_calls(("get_weather", ['{"city"', ':"Paris"}']), ("get_time", ["{}"]))
        .finish()
    )


def rules(violations: list[Violation]) -> set[str]:
    return {v.rule for v in violations}


# -- valid streams -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 50, 2000])
def test_bench_streams_are_valid(n):
    checker = StreamChecker()
    assert checker.check_sse(bench_stream(n)) == []
    assert checker.counts["response.output_text.delta"] == n


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(Stream().message("Hello", ", world").finish(), id="text"),
        pytest.param(Stream(queued=True).message("x").finish(), id="queued"),
        pytest.param(
            Stream().function_calls(("a", ['{"x":', "1}"]), ("b", ["{", "}"]), ("c", ["{}"])).finish(),
            id="parallel-function-calls",
        ),
        pytest.param(Stream().reasoning(["Sum", "mary"], ["two"]).message("ok").finish(), id="reasoning-summary"),
        pytest.param(Stream().message("I can", "not help", kind="refusal").finish(), id="refusal"),
        pytest.param(Stream().message("cut", status="incomplete").finish("incomplete"), id="incomplete"),
        pytest.param(Stream().finish(), id="empty-output"),
        pytest.param(full(), id="mixed"),
    ],
)
def test_valid_streams(stream):
    assert check_sse(stream.sse()) == []


def test_failed_after_error_is_valid():
    stream = Stream().message("partial")
    stream.add(
        {"type": "error", "error": {"type": "server_error", "code": "boom", "message": "it broke", "param": None}}
    )
    stream.finish("failed")
    assert check_sse(stream.sse()) == []


def test_unknown_events_are_ignored():
    stream = full()
    events = copy.deepcopy(stream.events)
    events.insert(0, {"type": "some.future.event", "whatever": [1, 2]})  # no sequence_number at all
    events.insert(7, {"type": "acme:trace", "sequence_number": 10**9, "detail": "x"})
    events.append({"type": "another.unknown"})
    checker = StreamChecker()
    # The jump to 10**9 is only a gap warning: unknown events never break the strict order.
    assert [(v.rule, v.is_warning) for v in checker.check_sse(to_sse(events))] == [("sequence-gap", True)]
    assert checker.ok
    assert checker.counts["some.future.event"] == 1


# Values no integer can be read from, even as leniently as the models read a known event's ("7", 7.0).
@pytest.mark.parametrize("number", ['"abc"', "1.5", "-9.223372036854776e+18", "[1]", "{}"])
def test_an_unknown_event_with_a_bad_sequence_number_is_a_violation_not_a_crash(number):
    checker = StreamChecker()
    assert checker.feed(None, f'{{"type": "acme:trace", "sequence_number": {number}}}') is None
    (violation,) = checker.violations
    assert violation.rule == "schema" and "acme:trace" in str(violation) and "sequence_number" in str(violation)


def test_headers_are_optional_and_chunking_does_not_matter():
    data = full().sse(headers=False).replace(b"\n", b"\r\n")
    chunks = [data[i : i + 7] for i in range(0, len(data), 7)]
    assert check_sse(chunks) == []


def test_feed_one_event_at_a_time():
    checker = StreamChecker()
    for event in full().events:
        checker.feed(event["type"], json.dumps(event))
    checker.feed(None, "[DONE]")
    assert checker.finish() == [] and checker.ok


def test_every_rule_the_checker_reports_is_documented():
    assert set(CORRUPTIONS_RULES) <= set(RULES)


# -- corrupted streams ---------------------------------------------------------------------------


def find(events, kind, n=0):
    """Index of the n-th event of `kind`."""
    return [i for i, e in enumerate(events) if e["type"] == kind][n]


def renumber(events):
    for i, event in enumerate(events):
        event["sequence_number"] = i
    return events


def drop(kind, n=0):
    def corrupt(events):
        del events[find(events, kind, n)]
        return renumber(events)

    return corrupt


def edit(kind, n=0, **changes):
    def corrupt(events):
        events[find(events, kind, n)].update(changes)
        return events

    return corrupt


def move(kind, to, n=0):
    def corrupt(events):
        events.insert(to, events.pop(find(events, kind, n)))
        return renumber(events)

    return corrupt


def swap_sequence(events):
    i = find(events, "response.output_text.delta")
    events[i]["sequence_number"], events[i + 1]["sequence_number"] = (
        events[i + 1]["sequence_number"],
        events[i]["sequence_number"],
    )
    return events


def duplicate_sequence(events):
    i = find(events, "response.output_text.delta", 1)
    events[i]["sequence_number"] = events[i - 1]["sequence_number"]
    return events


def queued_late(events):
    events.insert(
        find(events, "response.output_item.added"),
        {"type": "response.queued", "response": events[0]["response"] | {"status": "queued"}},
    )
    return renumber(events)


def second_terminal(events):
    events.append(copy.deepcopy(events[-1]))
    return renumber(events)


def event_after_terminal(events):
    events.append(copy.deepcopy(events[find(events, "response.output_text.delta")]))
    return renumber(events)


def delta_for_unknown_item(events):
    events[find(events, "response.output_text.delta")]["item_id"] = "msg_nope"
    return events


def delta_after_item_done(events):
    delta = copy.deepcopy(events[find(events, "response.output_text.delta")])
    events.insert(find(events, "response.output_item.done", 1) + 1, delta)
    return renumber(events)


def delta_after_text_done(events):
    delta = copy.deepcopy(events[find(events, "response.output_text.delta")])
    events.insert(find(events, "response.output_text.done") + 1, delta)
    return renumber(events)


def items_skip_an_index(events):
    for event in events[find(events, "response.output_item.added", 2) :]:
        if "output_index" in event and event["output_index"] >= 2:
            event["output_index"] += 1
            if "item" in event and event["type"] == "response.output_item.done":
                pass
    events[-1]["response"]["output"] = events[-1]["response"]["output"]
    return events


def item_done_text_differs(events):
    events[find(events, "response.output_item.done", 1)]["item"]["content"][0]["text"] = "Hello world?"
    return events


def incomplete_item_completed_response(events):
    i = find(events, "response.output_item.done", 1)
    events[i]["item"]["status"] = "incomplete"
    return events


def item_after_incomplete_item(events):
    i = find(events, "response.output_item.done", 1)
    events[i]["item"]["status"] = "incomplete"
    events[-1]["type"] = "response.incomplete"
    events[-1]["response"]["status"] = "incomplete"
    events[-1]["response"]["output"][1]["status"] = "incomplete"
    return events


def error_then_completed(events):
    events.insert(
        len(events) - 1,
        {"type": "error", "error": {"type": "server_error", "code": "x", "message": "m", "param": None}},
    )
    return renumber(events)


def terminal_output_differs(events):
    events[-1]["response"]["output"][2]["arguments"] = '{"city":"Rome"}'
    return events


def terminal_output_missing_item(events):
    del events[-1]["response"]["output"][0]
    return events


def item_never_closed(events):
    return drop("response.output_item.done", 3)(events)


def summary_delta_without_part(events):
    return drop("response.reasoning_summary_part.added", 1)(events)


def summary_index_mismatch(events):
    events[find(events, "response.reasoning_summary_part.done", 0)]["summary_index"] = 5
    return events


def part_done_wrong_index(events):
    events[find(events, "response.content_part.done")]["content_index"] = 1
    return events


def second_part_while_open(events):
    i = find(events, "response.content_part.added")
    events.insert(i + 1, copy.deepcopy(events[i]) | {"content_index": 1})
    return renumber(events)


def second_part_skipping_an_index(events):
    """A second summary part added at index 2 (and streamed there) instead of 1."""
    for event in events:
        if event.get("summary_index") == 1:
            event["summary_index"] = 2
    events[find(events, "response.output_item.done")]["item"]["summary"].insert(1, {"type": "summary_text", "text": ""})
    return events


def item_added_completed(events):
    events[find(events, "response.output_item.added", 1)]["item"]["status"] = "completed"
    return events


CORRUPTIONS = {
    "no-created": (drop("response.created"), "created-first"),
    "created-twice": (lambda ev: renumber([ev[0], *ev]), "created-first"),
    "queued-after-in-progress": (queued_late, "queued"),
    "no-in-progress": (drop("response.in_progress"), "in-progress-first"),
    "sequence-swapped": (swap_sequence, "sequence"),
    "sequence-repeated": (duplicate_sequence, "sequence"),
    "two-terminals": (second_terminal, "one-terminal"),
    "no-terminal": (drop("response.completed"), "one-terminal"),
    "event-after-terminal": (event_after_terminal, "after-terminal"),
    "delta-unknown-item": (delta_for_unknown_item, "item-added-first"),
    "delta-before-item-added": (move("response.output_text.delta", 2), "item-added-first"),
    "delta-after-item-done": (delta_after_item_done, "item-in-progress"),
    "delta-after-text-done": (delta_after_text_done, "part-bracket"),
    "delta-without-part": (drop("response.content_part.added"), "part-bracket"),
    "part-done-wrong-index": (part_done_wrong_index, "part-bracket"),
    "second-part-while-open": (second_part_while_open, "part-bracket"),
    "summary-index-skipped": (second_part_skipping_an_index, "summary-part-bracket"),
    "summary-delta-without-part": (summary_delta_without_part, "summary-part-bracket"),
    "summary-index-mismatch": (summary_index_mismatch, "summary-part-bracket"),
    "delta-wrong-output-index": (edit("response.output_text.delta", 1, output_index=3), "output-index"),
    "items-skip-an-index": (items_skip_an_index, "output-index"),
    "text-done-differs": (edit("response.output_text.done", text="Hello world"), "delta-equals-done"),
    "arguments-done-differs": (edit("response.function_call_arguments.done", arguments="{}"), "delta-equals-done"),
    "summary-done-differs": (edit("response.reasoning_summary_text.done", text="nope"), "delta-equals-done"),
    "item-done-differs": (item_done_text_differs, "item-equals-built"),
    "incomplete-item-completed-response": (incomplete_item_completed_response, "incomplete-item"),
    "item-after-incomplete-item": (item_after_incomplete_item, "incomplete-item"),
    "error-then-completed": (error_then_completed, "error-then-failed"),
    "terminal-output-differs": (terminal_output_differs, "terminal-output"),
    "terminal-output-missing-item": (terminal_output_missing_item, "terminal-output"),
    "item-never-closed": (item_never_closed, "item-closed"),
    "wrong-response-status": (
        edit("response.in_progress", response={**Stream().events[0]["response"], "status": "completed"}),
        "response-status",
    ),
    "delta-not-a-string": (edit("response.output_text.delta", 2, delta=5), "schema"),
    "item-added-not-in-progress": (item_added_completed, "item-in-progress"),
}
CORRUPTIONS_RULES = {rule for _, rule in CORRUPTIONS.values()} | {"sse-json", "sse-header", "done-marker"}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corrupted_stream_is_caught(name):
    corrupt, rule = CORRUPTIONS[name]
    events = corrupt(copy.deepcopy(full().events))
    violations = check_sse(to_sse(events))
    assert rule in rules(violations), "\n".join(map(str, violations))


def test_header_must_match_type():
    data = full().sse().replace(b"event: response.output_text.done\n", b"event: response.output_text.delta\n")
    violations = check_sse(data)
    assert rules(violations) == {"sse-header"}
    assert "differs from the body's type" in violations[0].message


def test_bad_json_is_a_violation_not_an_exception():
    data = full().sse().replace(b'"delta":"lo"', b'"delta":lo"')
    assert "sse-json" in rules(check_sse(data))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (full().sse(done=False), "does not end with"),
        (full().sse() + b"data: [DONE]\n\n", "twice"),
        (b"data: [DONE]\n\n" + full().sse(), "before any terminal event"),
    ],
)
def test_done_marker(data, message):
    violations = check_sse(data)
    assert [v.rule for v in violations if v.rule == "done-marker"], violations
    assert any(message in v.message for v in violations)


def test_event_after_done_marker():
    stream = Stream().message("x").finish()
    extra = {
        "type": "response.output_text.delta",
        "sequence_number": stream.events[-1]["sequence_number"] + 1,
        "item_id": "msg_0",
        "output_index": 0,
        "content_index": 0,
        "delta": "late",
    }
    violations = check_sse(stream.sse() + to_sse([extra], done=False))
    assert [(v.rule, v.sequence_number) for v in violations] == [("after-terminal", extra["sequence_number"])]
    assert "after `[DONE]`" in violations[0].message


def test_every_violation_is_collected():
    events = full().events
    events[find(events, "response.output_text.done")]["text"] = "wrong"
    events[find(events, "response.function_call_arguments.delta")]["output_index"] = 9
    events[-1]["response"]["status"] = "failed"
    violations = check_sse(to_sse(events, done=False))
    assert {"delta-equals-done", "output-index", "response-status", "done-marker"} <= rules(violations)


def test_violation_names_the_sequence_number():
    events = full().events
    i = find(events, "response.output_text.done")
    events[i]["text"] = "wrong"
    violation = [v for v in check_sse(to_sse(events)) if v.rule == "delta-equals-done"][0]
    assert violation.sequence_number == events[i]["sequence_number"]
    assert str(violation).startswith(f"seq {events[i]['sequence_number']}: [delta-equals-done] ")


# -- the accumulator -----------------------------------------------------------------------------


def test_accumulator_rebuilds_the_response():
    stream = full()
    response = ResponseAccumulator().feed_sse(stream.sse()).result()
    assert response.status.value == "completed" if hasattr(response.status, "value") else response.status
    assert json.loads(response.model_dump_json(exclude_unset=True))["output"] == stream.output


def test_accumulator_builds_items_from_deltas_alone():
    stream = full()
    skip = {
        "response.output_item.done",
        "response.content_part.done",
        "response.reasoning_summary_part.done",
        "response.completed",
    }
    accumulator = ResponseAccumulator()
    for message in iter_sse(stream.sse()):
        if not message.is_done and json.loads(message.data)["type"] not in skip:
            accumulator.feed(json.loads(message.data))
    built = accumulator.as_dict()["output"]
    assert [item["id"] for item in built] == [item["id"] for item in stream.output]
    assert built[1]["content"][0]["text"] == "Hello wörld"
    assert built[0]["summary"][0]["text"] == "Thinking"
    assert built[2]["arguments"] == '{"city":"Paris"}'


def test_accumulator_takes_typed_events():
    from openresponses_runtime.events import parse_event

    stream = Stream().message("a", "b").finish()
    accumulator = ResponseAccumulator()
    for event in stream.events:
        accumulator.feed(parse_event(json.dumps(event)))
    assert accumulator.finished
    assert accumulator.result().output[0].content[0].text == "ab"


# -- the CLI -------------------------------------------------------------------------------------


def test_cli_ok(tmp_path):
    path = tmp_path / "ok.sse"
    path.write_bytes(bench_stream(30))
    proc = run_orspec("check-stream", str(path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("OK: 58 events (")
    assert "response.output_text.delta 30" in proc.stdout


def test_cli_violations(tmp_path):
    events = full().events
    events[find(events, "response.output_text.done")]["text"] = "wrong"
    path = tmp_path / "bad.sse"
    path.write_bytes(to_sse(events, done=False))
    proc = run_orspec("check-stream", str(path))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert any(
        line.endswith("differs from the 3 deltas joined 'Hello wörld'") and "[delta-equals-done]" in line
        for line in lines
    ), lines
    assert any("[done-marker]" in line for line in lines)
    assert "Traceback" not in proc.stderr


@pytest.mark.process
def test_cli_garbage_and_stdin():
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "orspec", "check-stream", "-"],
        input=b"data: {nope\n\n\xff\xfe",
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 1
    assert b"[sse-json]" in proc.stdout and b"Traceback" not in proc.stderr


def test_cli_missing_file(tmp_path):
    proc = run_orspec("check-stream", str(tmp_path / "missing.sse"))
    assert proc.returncode == 2
    assert "cannot read" in proc.stderr and "Traceback" not in proc.stderr


def test_malformed_fields_are_violations_not_exceptions():
    events = full().events
    events[find(events, "response.output_text.delta")]["item_id"] = ["not", "an", "id"]
    events[find(events, "response.content_part.added")]["content_index"] = {"x": 1}
    events[find(events, "response.content_part.done")]["part"]["type"] = {"x": 1}
    events[find(events, "response.function_call_arguments.delta")]["delta"] = 7
    violations = check_sse(to_sse(events))
    assert {"schema", "item-added-first", "part-bracket"} <= rules(violations)
    accumulator = ResponseAccumulator()
    for event in events:
        accumulator.feed(event)
    assert len(accumulator.as_dict()["output"]) == 4


@pytest.mark.process
def test_checker_on_a_runtime_built_without_state_machines(tmp_path, shared):
    """A single upstream OpenAPI file has no state-machines.yaml; the checker falls back to the core rules."""
    out = tmp_path / "out"
    proc = run_orspec("build", "--lenient", "--spec", str(RELEASES["2026-04-24"]), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "ok.sse").write_bytes(full().sse())
    events = full().events
    events[find(events, "response.output_text.done")]["text"] = "wrong"
    (tmp_path / "bad.sse").write_bytes(to_sse(events[:-1]))
    code = (
        "import sys; from pathlib import Path; from openresponses_runtime.streaming import check_sse\n"
        f"print(check_sse(Path({str(tmp_path / 'ok.sse')!r}).read_bytes()))\n"
        f"print(sorted({{v.rule for v in check_sse(Path({str(tmp_path / 'bad.sse')!r}).read_bytes())}}))\n"
    )
    result = run_python(code, path=out / "python")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "[]",
        "['delta-equals-done', 'done-marker', 'item-equals-built', 'one-terminal']",
    ]


# -- the fast path -------------------------------------------------------------------------------
# `feed` validates JSON text (str or bytes) straight into its model and, for events whose rules
# read only scalars, reads the rules' fields from the model. Data of any other type (a bytearray)
# takes the general path: orjson first, then validation. Both must report exactly the same.


def both_paths(sse: bytes) -> list[Violation]:
    fast, general = StreamChecker(), StreamChecker()
    for message in iter_sse(sse):
        fast.feed(message.event, message.data.encode())
        general.feed(message.event, bytearray(message.data.encode()))
    assert fast.finish() == general.finish()
    assert (fast.events, fast.known, fast.counts) == (general.events, general.known, general.counts)
    text = StreamChecker()
    for message in iter_sse(sse):
        text.feed(message.event, message.data)
    assert text.finish() == fast.violations
    return fast.violations


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_fast_path_reports_what_the_general_path_does(name):
    corrupt, rule = CORRUPTIONS[name]
    assert rule in rules(both_paths(to_sse(corrupt(copy.deepcopy(full().events)))))


def test_fast_path_on_valid_and_odd_streams():
    assert both_paths(full().sse()) == []
    assert both_paths(bench_stream(30)) == []
    events = full().events
    events.insert(3, {"type": "acme:unknown", "sequence_number": 2, "x": float("nan")})  # json.dumps writes NaN
    assert "sse-json" in rules(both_paths(to_sse(events)))


def delta_text(stream: Stream, n: int = 0) -> tuple[int, str]:
    i = find(stream.events, "response.output_text.delta", n)
    return i, json.dumps(stream.events[i])


LOGPROB = '{"token": "lo", "logprob": %s, "bytes": [], "top_logprobs": []}'


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda t: t.replace('"logprobs": []', f'"logprobs": [{LOGPROB % "NaN"}]'), id="nan-in-a-float"),
        pytest.param(lambda t: t.replace('"logprobs": []', f'"logprobs": [{LOGPROB % "1e999"}]'), id="beyond-double"),
        pytest.param(lambda t: t.replace('"delta": "lo"', '"delta": "lo", "acme:x": Infinity'), id="infinity-extra"),
        pytest.param(lambda t: t.replace('"delta": "lo"', '"delta": "lo", "acme:x": -Infinity'), id="minus-infinity"),
        pytest.param(lambda t: t.replace('"delta": "lo"', '"delta": NaN'), id="nan-in-a-string-field"),
        # pydantic keeps the last of duplicate keys, so these NaNs never reach the model
        pytest.param(lambda t: t.replace('"delta": "lo"', '"delta": NaN, "delta": "lo"'), id="nan-overridden"),
        pytest.param(
            lambda t: t.replace('"logprobs": []', f'"logprobs": [{LOGPROB % "NaN"}], "logprobs": []'),
            id="nan-in-an-overridden-float",
        ),
        pytest.param(lambda t: t + " x", id="trailing-garbage"),
        pytest.param(lambda t: t[:-1], id="truncated"),
    ],
)
def test_fast_path_leaves_json_judgement_to_orjson(change):
    stream = full()
    i, text = delta_text(stream, 1)
    assert '"delta": "lo"' in text and '"logprobs": []' in text
    lines = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in stream.events]
    lines[i] = f"event: response.output_text.delta\ndata: {change(text)}\n\n"
    violations = both_paths(("".join(lines) + "data: [DONE]\n\n").encode())
    assert "sse-json" in rules(violations), violations


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"delta": "lo"', '"delta": "NaN Infinity"'),  # the words inside a string are fine
        ('"delta": "lo"', '"delta": "l\\u006f"'),  # escapes
        ('{"type": "response.output_text.delta"', '{ "type" :"response.output_text\\u002edelta" '),
        ('"delta": "lo"', '"delta": "x", "delta": "lo"'),  # duplicate keys: the last one counts, as in orjson
        ('"delta": "lo"', '"delta": "lo", "acme:extra": {"a": [1, 2.5]}'),
    ],
)
def test_fast_path_reads_json_as_json(old, new):
    stream = full()
    i, text = delta_text(stream, 1)
    lines = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in stream.events]
    lines[i] = f"event: response.output_text.delta\ndata: {text.replace(old, new)}\n\n"
    sse = ("".join(lines) + "data: [DONE]\n\n").encode()
    violations = both_paths(sse)
    assert rules(violations) == ({"delta-equals-done"} if "NaN Infinity" in new else set())


def test_fast_path_known_gap_a_number_beyond_double_in_an_overridden_key():
    # The one difference left: orjson refuses numbers beyond double range (JSON's grammar allows
    # them; `json.loads` reads them as inf) even in a value a later duplicate key overrides, where
    # the fast path cannot see it. Only the general path (orjson) calls that `sse-json`.
    stream = full()
    i, text = delta_text(stream, 1)
    text = text.replace('"logprobs": []', f'"logprobs": [{LOGPROB % "1e999"}], "logprobs": []')
    fast, general = StreamChecker(), StreamChecker()
    fast.feed(None, text.encode())
    general.feed(None, bytearray(text.encode()))
    assert "sse-json" not in rules(fast.violations)
    assert "sse-json" in rules(general.violations)


def test_feed_returns_the_typed_event():
    from openresponses_runtime.events import EVENT_TYPES, GenericEvent

    checker = StreamChecker()
    for event in full().events:
        for data in (json.dumps(event), json.dumps(event).encode()):
            typed = StreamChecker().feed(event["type"], data)
            assert type(typed) is EVENT_TYPES[event["type"]].model
        typed = checker.feed(event["type"], json.dumps(event).encode())
        assert typed.model_dump(mode="json", exclude_unset=True) == event
    assert checker.feed(None, b"[DONE]") is None
    assert checker.finish() == []
    unknown = StreamChecker().feed(None, '{"type": "acme:x", "n": 1}')
    assert isinstance(unknown, GenericEvent) and unknown.n == 1
    broken = StreamChecker()
    assert broken.feed(None, '{"type": "response.output_text.delta", "delta": 5}') is None
    assert "schema" in rules(broken.violations)
    assert StreamChecker().feed(None, b"{not json") is None
    assert StreamChecker(schema=False).feed(None, json.dumps(full().events[0])) is None


def test_counts():
    checker = StreamChecker()
    checker.check_sse(to_sse([*full().events, {"type": "acme:x"}]) + b"data: {oops\n\ndata: []\n\n")
    assert checker.counts["response.output_text.delta"] == 3
    assert checker.counts["acme:x"] == 1
    assert checker.known == len(full().events)
    assert checker.events == len(full().events) + 3


RECORDED = ROOT.parent / "shared" / "recordings" / "streams" / "openai_responses_stream.0.sse"


@pytest.mark.parametrize(
    ("tail", "kept"),
    [(b"", []), (b"data: [DONE]\n\n", []), (b"data: [DONE]\n\ndata: [DONE]\n\n", ["done-marker"])],
    ids=["missing", "present", "twice"],
)
def test_only_a_missing_done_marker_is_tolerated(tail, kept):
    """OpenAI never sends `[DONE]`: that alone may be forgiven, a doubled one never."""
    checker = StreamChecker(schema=False)
    checker.check_sse(RECORDED.read_bytes() + tail)
    assert [v.rule for v in checker.without_missing_done(checker.errors) if v.rule == "done-marker"] == kept


# -- the run -------------------------------------------------------------------------------------
# Consecutive deltas to one open part skip the general path's per-event work (see `feed`). A
# change to any one delta in the middle of a run must be judged as the general path judges it.


def long_runs() -> Stream:
    return (
        Stream()
        .reasoning(["Th", "in", "k", "ing"], ["a", "b", "c"])
        .message("a", "b", "c", "d", "e", "f")
        .message("no", "pe", "!", kind="refusal")
        .function_calls(("f", ["{", '"x"', ":", "1}"]), ("g", ["{", "", "}"]))
        .function_calls(("h", ["{", '"y"', ":", "2}"]))
        .finish()
    )


RUN_TYPES = [
    "response.reasoning_summary_text.delta",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.function_call_arguments.delta",
]
# Each change to the third delta of a run, and whether it must be reported.
RUN_CHANGES = {
    "gap": (lambda e: e.update(sequence_number=e["sequence_number"] + 5), True),
    "repeat": (lambda e: e.update(sequence_number=e["sequence_number"] - 1), True),
    "no-number": (lambda e: e.pop("sequence_number"), True),
    "other-item": (lambda e: e.update(item_id="msg_9"), True),
    "other-index": (lambda e: e.update(output_index=e["output_index"] + 1), True),
    "other-part": (lambda e: e.update({k: 1 for k in ("content_index", "summary_index") if k in e}), False),
    "not-a-string": (lambda e: e.update(delta=7), True),
    "other-type": (lambda e: e.update(type="response.reasoning.delta"), False),
    "extra-field": (lambda e: e.update({"acme:x": 1}), False),
    "float": (lambda e: e.update(logprobs=[{"token": "x", "logprob": -0.5, "bytes": [], "top_logprobs": []}]), False),
    "capital-i": (lambda e: e.update(delta="I"), True),  # the done event's text no longer matches
}


@pytest.mark.parametrize("kind", RUN_TYPES)
@pytest.mark.parametrize("change", sorted(RUN_CHANGES))
def test_a_change_inside_a_run_is_judged_as_the_general_path_judges_it(kind, change):
    events = copy.deepcopy(long_runs().events)
    apply, reported = RUN_CHANGES[change]
    apply(events[find(events, kind, 2)])
    violations = both_paths(to_sse(events))
    if reported:
        assert violations


@pytest.mark.parametrize("kind", RUN_TYPES)
def test_a_header_changed_inside_a_run_is_reported(kind):
    events = long_runs().events
    i = find(events, kind, 2)
    message = f"event: {kind}\ndata: {json.dumps(events[i], separators=(',', ':'))}\n".encode()
    sse = to_sse(events)
    assert message in sse
    violations = both_paths(sse.replace(message, message.replace(b"event: ", b"event: x", 1)))
    assert [(v.rule, v.sequence_number) for v in violations] == [("sse-header", events[i]["sequence_number"])]


def test_runs_count_their_events_when_read_mid_run():
    events = long_runs().events
    checker = StreamChecker()
    for n, event in enumerate(events, 1):
        checker.feed(event["type"], json.dumps(event).encode())
        assert checker.events == checker.known == n  # a read ends the run; the next delta starts another
    checker.feed(None, b"[DONE]")
    assert checker.finish() == []
    assert checker.counts == collections.Counter(e["type"] for e in events)
    assert both_paths(long_runs().sse()) == []


@pytest.mark.parametrize("kind", RUN_TYPES)
def test_a_number_beyond_double_in_an_unknown_field_inside_a_run_is_bad_json(kind):
    events = long_runs().events
    i = find(events, kind, 2)
    text = json.dumps(events[i], separators=(",", ":")).encode()
    sse = to_sse(events)
    assert text in sse
    violations = both_paths(sse.replace(text, text[:-1] + b',"acme:x":1e999}'))
    assert violations[0].rule == "sse-json"  # then the gap it leaves, and the text it lacks
