"""The emitter, the tool policy and error paths of the server, without a network."""

from __future__ import annotations

import copy

import pytest
from openresponses_runtime.server import (
    Accepted,
    ArgumentsDelta,
    Emitter,
    FunctionCallEnd,
    FunctionCallStart,
    Incomplete,
    MessageEnd,
    ProviderError,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningSummary,
    Refusal,
    StoreUnavailable,
    StreamViolation,
    TextDelta,
    ToolPolicy,
    UsageReport,
    response_skeleton,
    sse_frame,
)
from openresponses_runtime.server.app import json_path
from openresponses_runtime.streaming import ResponseAccumulator, check_sse

TOOLS = [{"type": "function", "name": "a"}, {"type": "function", "name": "b"}]


def emitter(policy=None, check=True):
    return Emitter(response_skeleton({"tools": TOOLS}, "resp_1", "m"), policy, check=check)


def run(steps, policy=None):
    e = emitter(policy)
    events = e.start()
    for step in steps:
        events += e.step(step)
    events += e.finish()
    e.verify()
    return e, events


def test_a_full_response_passes_the_checker_and_accumulates():
    steps = [
        ReasoningSummary("thinking"),
        TextDelta("Hel"),
        TextDelta("lo"),
        Refusal("no"),
        FunctionCallStart("a", call_id="call_1"),
        ArgumentsDelta('{"x":'),
        ArgumentsDelta("1}"),
        FunctionCallEnd(),
        TextDelta("bye"),
    ]
    e, events = run(steps, ToolPolicy(frozenset({"a"}), False))
    capture = b"".join(sse_frame(event) for event in events) + b"data: [DONE]\n\n"
    assert check_sse(capture) == []
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    built = ResponseAccumulator().feed_sse(capture).as_dict()
    assert built == e.response
    message, call = e.response["output"][1], e.response["output"][2]
    assert [part["type"] for part in message["content"]] == ["output_text", "refusal"]
    assert message["content"][0]["text"] == "Hello" and call["arguments"] == '{"x":1}'
    assert [item["id"][:3] for item in e.response["output"]] == ["rs_", "msg", "fc_", "msg"]


def test_reasoning_streams_as_it_arrives_and_keeps_its_encrypted_content():
    e, events = run([ReasoningDelta("Let me "), ReasoningDelta("think."), ReasoningEnd("sig"), ReasoningDelta("More.")])
    capture = b"".join(sse_frame(event) for event in events) + b"data: [DONE]\n\n"
    assert check_sse(capture) == []
    deltas = [event["delta"] for event in events if event["type"] == "response.reasoning.delta"]
    assert deltas == ["Let me ", "think.", "More."]
    first, second = e.response["output"]
    assert first["type"] == second["type"] == "reasoning" and first["summary"] == []
    assert first["content"] == [{"type": "reasoning_text", "text": "Let me think."}]
    assert first["encrypted_content"] == "sig" and "encrypted_content" not in second
    assert ResponseAccumulator().feed_sse(capture).as_dict() == e.response


def test_what_reasoning_end_seals_holds_the_whole_reasoning_text():
    sealed = []

    def seal(item_id, fields, state):  # as the server's sealer does: the fields as they are now
        sealed.append((item_id, copy.deepcopy(fields), state))
        return "blob"

    e = Emitter(response_skeleton({}, "resp_1", "m"), seal=seal)
    e.start()
    for step in [ReasoningDelta("Let me "), ReasoningDelta("think."), ReasoningEnd("sig")]:
        e.step(step)
    e.finish()
    ((item_id, fields, state),) = sealed
    assert item_id == e.response["output"][0]["id"] and state == "sig"
    assert fields == {"content": [{"type": "reasoning_text", "text": "Let me think."}]}  # the next turn needs it
    assert e.response["output"][0]["encrypted_content"] == "blob"


def test_reasoning_end_with_nothing_streamed_is_a_reasoning_item_without_text():
    # Anthropic's redacted thinking: only opaque state, kept for the next turn
    e, events = run([TextDelta("x"), ReasoningEnd("data"), TextDelta("y")])
    capture = b"".join(sse_frame(event) for event in events) + b"data: [DONE]\n\n"
    assert check_sse(capture) == []
    message, reasoning, after = e.response["output"]
    assert (message["type"], reasoning["type"], after["type"]) == ("message", "reasoning", "message")
    assert reasoning["content"] == [] and reasoning["encrypted_content"] == "data"
    assert reasoning["status"] == "completed"
    assert ResponseAccumulator().feed_sse(capture).as_dict() == e.response


def test_accepted_adds_no_event():
    _, events = run([Accepted(), TextDelta("hi")])
    _, plain = run([TextDelta("hi")])
    assert [e["type"] for e in events] == [e["type"] for e in plain]


def test_usage_is_null_unless_the_provider_reports_it():
    e, _ = run([TextDelta("hi")])
    assert e.response["usage"] is None
    e, _ = run([TextDelta("hi"), UsageReport(3, 2, reasoning_tokens=1, cached_tokens=1)])
    assert e.response["usage"]["total_tokens"] == 5
    assert e.response["usage"]["output_tokens_details"] == {"reasoning_tokens": 1}


def test_the_checker_fails_loudly_on_an_invalid_sequence():
    e = emitter()
    e.start()
    e.seq = 0  # sabotage: the next event repeats a sequence number
    with pytest.raises(StreamViolation, match="sequence"):
        e.step(TextDelta("x"))


@pytest.mark.parametrize(
    "steps",
    [[MessageEnd()], [ArgumentsDelta("{}")], [TextDelta("x"), FunctionCallEnd()], [Incomplete(), TextDelta("x")]],
)
def test_misordered_steps_raise_provider_error(steps):
    e = emitter()
    e.start()
    with pytest.raises(ProviderError):
        for step in steps:
            e.step(step)


def test_incomplete_marks_the_open_item_and_the_response():
    e, events = run([TextDelta("partial"), Incomplete("max_output_tokens")])
    assert e.response["status"] == "incomplete" and e.response["output"][0]["status"] == "incomplete"
    assert events[-1]["type"] == "response.incomplete"


@pytest.mark.parametrize(
    ("choice", "allowed", "required"),
    [
        (None, {"a", "b"}, False),
        ("auto", {"a", "b"}, False),
        ("none", set(), False),
        ("required", {"a", "b"}, True),
        ({"type": "function", "name": "b"}, {"b"}, True),
        ({"type": "allowed_tools", "tools": [{"type": "function", "name": "a"}]}, {"a"}, False),
        ({"type": "allowed_tools", "tools": [{"type": "function", "name": "a"}], "mode": "required"}, {"a"}, True),
        ({"type": "allowed_tools", "tools": [{"type": "function", "name": "a"}], "mode": "none"}, set(), False),
    ],
)
def test_tool_policy(choice, allowed, required):
    policy = ToolPolicy.from_request(TOOLS, choice)
    assert (policy.allowed, policy.required) == (allowed, required)


def test_suppressed_call_leaves_no_trace():
    e, events = run(
        [FunctionCallStart("b"), ArgumentsDelta("{}"), FunctionCallEnd(), TextDelta("ok")],
        ToolPolicy(frozenset({"a"}), False),
    )
    assert [item["type"] for item in e.response["output"]] == ["message"] and e.suppressed == ["b"]


def test_json_path_skips_union_tags():
    data = {"input": [{"type": "message", "role": "user", "content": [{"type": "input_text"}]}]}
    loc = ("input", "list[ItemParam]", 0, "message|user", "content", "list[...]", 0, "input_text", "text")
    assert json_path(loc, data, missing=True) == "input[0].content[0].text"
    assert json_path(("temperature",), {"temperature": "x"}) == "temperature"
    assert json_path(("model",), {}, missing=True) == "model"


def test_the_emitter_takes_event_names_from_the_registry():
    """No event type is spelt out in the emitter's code; each comes from `EVENT_TYPES` by its model."""
    import ast
    import inspect

    from openresponses_runtime.events import EVENT_TYPES
    from openresponses_runtime.server import emitter as module

    tree = ast.parse(inspect.getsource(module))
    literals = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not literals & (set(EVENT_TYPES) - {"error"})  # `error` is also the name of a response field
    assert "error" in EVENT_TYPES and module._ERROR == "error"
    assert module._FINISHED == {"completed": "response.completed", "incomplete": "response.incomplete"}


def test_response_states_the_defaults_the_spec_declares():
    """An omitted setting is echoed with the `default` spec/ declares for it on the create request."""
    import json

    from openresponses_runtime import models

    from ..conftest import ROOT

    body = json.loads((ROOT / "generated" / "openapi.json").read_text())["components"]["schemas"]["CreateResponseBody"]
    declared = {k: v["default"] for k, v in body["properties"].items() if "default" in v}
    assert declared == {"tool_choice": "auto"}  # the one default the protocol states
    response = response_skeleton({}, "resp_1", "m")
    for name, value in declared.items():
        assert response[name] == value, name
    models.ResponseResource.model_validate(response)  # and the whole skeleton is a valid response
    assert response_skeleton({"tool_choice": "none", "presence_penalty": 0.5}, "r", "m")["tool_choice"] == "none"


# -- the fast paths: the same bytes and the same response as the event dicts ---------------------

FAST_STEPS = [
    ReasoningSummary("thinking"),
    TextDelta("Hel"),
    TextDelta('lo "wörld" \\ 100% \n'),
    Refusal("no ✋"),
    FunctionCallStart("a", call_id="call_1"),
    ArgumentsDelta('{"x":'),
    ArgumentsDelta("1}"),
    FunctionCallEnd(),
    TextDelta("bye \u2028"),
    Incomplete("max_output_tokens"),
]


def _drive(e: Emitter) -> list:
    out = e.start()
    for step in FAST_STEPS:
        out += e.step(step)
    return out + e.finish()


@pytest.fixture
def pinned(monkeypatch):
    """A maker of emitters whose ids and clock repeat, so two outputs compare byte for byte."""
    import itertools
    import time

    from openresponses_runtime.server import emitter as module

    monkeypatch.setattr(time, "time", lambda: 1_700_000_000)

    def make(**options) -> Emitter:
        counter = itertools.count()
        monkeypatch.setattr(module, "new_id", lambda prefix: f"{prefix}_{next(counter)}")
        return Emitter(
            response_skeleton({"tools": TOOLS}, "resp_1", "m"), ToolPolicy(frozenset({"a"}), False), **options
        )

    return make


def test_framed_deltas_are_the_bytes_sse_frame_writes(pinned):
    """`frames=True` writes text, refusal and arguments deltas straight into frames: byte for byte
    what `sse_frame` makes of the events the dict path builds."""
    dict_path = b"".join(sse_frame(event) for event in _drive(pinned()))
    framed = b"".join(_drive(pinned(frames=True)))
    assert framed == dict_path
    assert framed.count(b"event: response.output_text.delta\n") == 3
    assert b'"delta":"lo \\"w\xc3\xb6rld\\" \\\\ 100% \\n"' in framed
    assert check_sse(framed + b"data: [DONE]\n\n") == []
    lone = [TextDelta("a"), TextDelta("\ud800")]  # orjson will not write a lone surrogate; `dumps` falls back
    e = pinned(frames=True)
    framed = [e.step(step)[-1] for step in lone]
    e = pinned()
    assert framed == [sse_frame(e.step(step)[-1]) for step in lone]
    assert framed[1].endswith(b'"delta":"\\ud800","logprobs":[],"sequence_number":3}\n\n')


def test_a_response_without_events_ends_the_same(pinned):
    """`events=False` (a non-streamed response) makes no event at all, and the same response."""
    finals = []
    for events in (True, False):
        e = pinned(events=events)
        assert bool(_drive(e)) is events
        finals.append(e.response)
    assert finals[0] == finals[1]
    assert finals[1]["status"] == "incomplete"
    assert [item["type"] for item in finals[1]["output"]] == ["reasoning", "message", "function_call", "message"]


def test_ids_are_fresh_hex():
    from openresponses_runtime.server.emitter import new_id

    ids = [new_id("msg") for _ in range(2000)]  # more than one page of random bytes
    assert len(set(ids)) == 2000
    assert all(len(i) == len("msg_") + 32 and int(i[4:], 16) >= 0 for i in ids)


def test_preview_is_the_finished_response_and_the_stream_can_still_fail():
    # What the server saves first; when the save fails, the response ends failed, not incomplete.
    def cut_short():
        e = emitter()
        events = (
            e.start() + e.step(TextDelta("kept ")) + e.step(TextDelta("text")) + e.step(Incomplete("max_output_tokens"))
        )
        return e, events

    e, _ = cut_short()
    preview = e.preview()
    assert preview["status"] == "incomplete" and preview["output"][0]["content"][0]["text"] == "kept text"
    assert e.response["status"] == "in_progress" and e.output[0]["status"] == "in_progress"  # untouched
    e.finish()
    e.verify()
    assert e.response == preview

    e, events = cut_short()
    e.preview()
    events += e.fail(StoreUnavailable())
    assert e.finish() == [] and e.fail(StoreUnavailable()) == []  # one terminal event, whatever comes after
    e.verify()
    assert [event["type"] for event in events[-2:]] == ["error", "response.failed"]
    assert events[-2]["error"] == {
        "type": "server_error",
        "code": "store_unavailable",
        "param": None,
        "message": StoreUnavailable().message,
        "headers": {"Retry-After": "5"},
    }
    failed = events[-1]["response"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "store_unavailable"
    assert failed["output"][0]["status"] == "in_progress"  # never closed, but holding what was sent
    assert failed["output"][0]["content"][0]["text"] == "kept text"


def test_preview_of_a_broken_tool_choice_is_the_failure_finish_sends():
    e = emitter(ToolPolicy(frozenset({"a"}), True))
    e.start()
    e.step(TextDelta("no call"))
    preview = e.preview()
    assert preview["status"] == "failed" and preview["error"]["code"] == "tool_choice_violation"
    events = e.finish()
    assert [event["type"] for event in events] == ["error", "response.failed"]
    assert e.response == preview
