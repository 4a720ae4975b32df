"""Every item the server emits comes back as input, whole, as clients that keep the whole history
send it (Codex: `store: false` and every item of every turn; the agent SDKs in stateless mode).

The item types are the members of the spec's output item union (`ItemField` in the bundled
document, vendor fragments included), so a type added to the spec is covered or fails here: a
vendor type is drawn from its own schema and emitted as a `VendorItem`, a core type by the steps
that make it (`EMITTED_BY`). Each drawn response goes through the real emitter, and its output
(with the listed input items and a compaction of the turn) is sent back as the next turn's input.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from openresponses_runtime.server import MemoryStore, create_app
from openresponses_runtime.server.steps import (
    ArgumentsDelta,
    FunctionCallEnd,
    FunctionCallStart,
    MessageStart,
    ProviderRequest,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningSummary,
    Refusal,
    Step,
    TextDelta,
    VendorItem,
)
from starlette.testclient import TestClient

from ..server_helpers import API_KEY, live_server
from ..streaming.test_properties import DOCUMENT, component

AUTH = {"Authorization": f"Bearer {API_KEY}"}
_PREFIX = "#/components/schemas/"


def _output_types() -> dict[str, str]:
    """Each member of the output item union: its `type` -> its schema's name."""
    schemas = DOCUMENT["components"]["schemas"]
    members = {}
    for member in schemas["ItemField"]["oneOf"]:
        name = member["$ref"].removeprefix(_PREFIX)
        (tag,) = schemas[name]["properties"]["type"]["enum"]
        members[tag] = name
    return members


OUTPUT_TYPES = _output_types()
VENDOR_TYPES = sorted(tag for tag in OUTPUT_TYPES if ":" in tag)

# How the runtime makes each core item. `function_call_output` is the client's, which the server
# lists back (`GET /responses/{id}/input_items`); `compaction` is made by `POST /responses/compact`.
_TEXT = st.text(max_size=24)
_NAME = st.from_regex(r"[a-zA-Z0-9_-]{1,64}", fullmatch=True)  # a function tool's name, as the request gives it
_ARGUMENTS = st.dictionaries(st.text(max_size=6), st.integers() | st.text(max_size=6), max_size=3).map(json.dumps)
_STATE = st.none() | st.text(min_size=1, max_size=40)  # a provider's opaque state (a thinking signature)


def _message() -> st.SearchStrategy[list[Step]]:
    text = st.lists(_TEXT.map(TextDelta), min_size=1, max_size=3)
    phase = st.sampled_from([None, "commentary", "final_answer"])
    return st.tuples(phase, text, st.lists(_TEXT.map(Refusal), max_size=1)).map(
        lambda p: [MessageStart(phase=p[0]), *p[1], *p[2]]
    )


def _function_call() -> st.SearchStrategy[list[Step]]:
    call_id = st.none() | st.from_regex(r"call_[a-zA-Z0-9]{1,20}", fullmatch=True)
    return st.tuples(_NAME, call_id, _ARGUMENTS).map(
        lambda p: [FunctionCallStart(p[0], call_id=p[1]), ArgumentsDelta(p[2]), FunctionCallEnd()]
    )


def _reasoning() -> st.SearchStrategy[list[Step]]:
    summaries = st.lists(st.tuples(_TEXT, _STATE), max_size=2)
    deltas = st.lists(_TEXT, max_size=3)
    return st.tuples(summaries, deltas, _STATE).map(
        lambda p: [
            *(ReasoningSummary(text, encrypted_content=state) for text, state in p[0]),
            *(ReasoningDelta(text) for text in p[1]),
            ReasoningEnd(encrypted_content=p[2]),
        ]
    )


EMITTED_BY = {
    "message": _message(),
    "function_call": _function_call(),
    "reasoning": _reasoning(),
    "function_call_output": None,
    "compaction": None,
}


def _vendor(tag: str) -> st.SearchStrategy[list[Step]]:
    return component(OUTPUT_TYPES[tag]).map(lambda item: [VendorItem(item)])


def _maker(tag: str) -> st.SearchStrategy[list[Step]]:
    return _vendor(tag) if tag in VENDOR_TYPES else EMITTED_BY[tag]


# Made by a provider's steps (the rest are always in the history sent back).
STEPPED = sorted(tag for tag in OUTPUT_TYPES if tag in VENDOR_TYPES or EMITTED_BY[tag] is not None)


def _turn(tag: str) -> st.SearchStrategy[list[Step]]:
    """Steps that make at least one `tag` item, among others of any type."""
    others = st.lists(st.one_of([_maker(other) for other in STEPPED]), max_size=4)
    return st.tuples(_maker(tag), others, st.integers(0, 4)).map(
        lambda p: [s for part in [*p[1][: p[2]], p[0], *p[1][p[2] :]] for s in part]
    )


class Script:
    """Yields the drawn steps on the first turn of each example, and records every request."""

    def __init__(self):
        self.steps: list[Step] = []
        self.requests: list[ProviderRequest] = []

    async def respond(self, request: ProviderRequest) -> AsyncIterator[Step]:
        self.requests.append(request)
        steps, self.steps = self.steps, [TextDelta("ok")]
        for step in steps:
            yield step


def test_every_output_item_type_is_made_here():
    """A type added to the spec's output union needs a way to be made here (vendor types have one)."""
    assert set(OUTPUT_TYPES) == set(EMITTED_BY) | set(VENDOR_TYPES)


@pytest.fixture(scope="module")
def served():
    script = Script()
    app = create_app(script, store=MemoryStore(), api_keys=API_KEY, reasoning_key="round-trip-key")
    with TestClient(app) as client:
        yield client, script


CALL = {"type": "function_call", "call_id": "call_given", "name": "lookup", "arguments": "{}"}
ANSWER = {"type": "function_call_output", "call_id": "call_given", "output": "42"}


# How a client may keep an item it got: with or without the fields the server gave it, and a reasoning
# item's summary only, its content only (an empty summary), or both, its blob kept or dropped.
_SHAPE = st.fixed_dictionaries(
    {
        "id": st.booleans(),
        "status": st.booleans(),
        "reasoning": st.sampled_from(["both", "summary", "content"]),
        "blob": st.booleans(),
    }
)


def as_kept(item: dict, shape: dict) -> dict:
    """`item` as a client that keeps history in `shape` sends it back."""
    dropped = {key for key in ("id", "status") if not shape[key]}
    if item["type"] == "reasoning":
        dropped |= {"summary": {"content"}, "content": set(), "both": set()}[shape["reasoning"]]
        dropped |= set() if shape["blob"] else {"encrypted_content"}
    kept = {k: v for k, v in item.items() if k not in dropped}
    if item["type"] == "reasoning" and shape["reasoning"] == "content":
        kept["summary"] = []  # the input form requires a summary: an empty one is none
    return kept


@pytest.mark.parametrize("tag", STEPPED)
@settings(max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), carry=st.booleans())
def test_every_shape_of_an_emitted_item_comes_back(served, tag, data, carry):
    """Each item of a turn's output sent back in a shape drawn for it (its id, status, content, summary
    or blob left out or kept), whole in the input or after `previous_response_id`: accepted with
    nothing ignored; a sealed reasoning item reaches the provider as it was made, whatever the client
    left out, and an unsealed one as the client sent it."""
    client, script = served
    steps = data.draw(_turn(tag), label="steps")
    script.steps = steps
    names = sorted({step.name for step in steps if isinstance(step, FunctionCallStart)})
    tools = [{"type": "function", "name": name, "parameters": {"type": "object"}} for name in names]
    first = {"model": "m", "input": [{"role": "user", "content": "hi"}], "store": True, "tools": tools}
    if carry:
        first["include"] = ["reasoning.encrypted_content"]
    reply = client.post("/v1/responses", json=first, headers=AUTH)
    assert reply.status_code == 200, reply.text
    response = reply.json()
    kept = [as_kept(item, data.draw(_SHAPE, label=f"shape of {item['type']}")) for item in response["output"]]
    answers = [
        {"type": "function_call_output", "call_id": item["call_id"], "output": "1"}
        for item in kept
        if item["type"] == "function_call"
    ]
    follow = [*answers, {"type": "message", "role": "user", "content": "and then?"}]
    by_id = data.draw(st.booleans(), label="by previous_response_id")
    if by_id:  # the items sent again after the stored ones, as a client that repeats itself does
        body = {"model": "m", "previous_response_id": response["id"], "input": kept + follow, "tools": tools}
    else:
        body = {"model": "m", "input": first["input"] + kept + follow, "store": False, "tools": tools}
    second = client.post("/v1/responses", json=body, headers=AUTH)
    assert second.status_code == 200, second.text
    assert "OpenResponses-Ignored" not in second.headers
    handed = script.requests[-1].input[-len(kept + follow) :][: len(kept)]
    for sent, got, original in zip(kept, handed, response["output"], strict=True):
        assert got.get("type", "message") == sent["type"]
        if sent["type"] == "reasoning" and sent.get("encrypted_content"):
            # from the seal: the id, summary and content the item was made with, whatever was left out
            made = (original["id"], original["summary"], original.get("content"))
            assert (got["id"], got.get("summary", []), got.get("content")) == made  # a seal keeps no empty summary
        elif sent["type"] == "reasoning":
            assert (got.get("content"), got["summary"]) == (sent.get("content"), sent["summary"])


@pytest.mark.parametrize("tag", STEPPED)
@settings(max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), carry=st.booleans())
def test_what_the_server_emits_comes_back_whole(served, tag, data, carry):
    client, script = served
    steps = data.draw(_turn(tag), label="steps")
    script.steps = steps
    names = sorted({step.name for step in steps if isinstance(step, FunctionCallStart)})
    tools = [{"type": "function", "name": name, "parameters": {"type": "object"}} for name in names]
    first = {"model": "m", "input": [{"role": "user", "content": "hi"}, CALL, ANSWER], "store": True, "tools": tools}
    if carry:
        first["include"] = ["reasoning.encrypted_content"]
    reply = client.post("/v1/responses", json=first, headers=AUTH)
    assert reply.status_code == 200, reply.text
    response = reply.json()
    listed = client.get(f"/v1/responses/{response['id']}/input_items?order=asc", headers=AUTH)
    assert listed.status_code == 200, listed.text
    history = listed.json()["data"] + response["output"]
    compacted = client.post("/v1/responses/compact", json={"model": "m", "input": history}, headers=AUTH)
    assert compacted.status_code == 200, compacted.text
    compaction = [item for item in compacted.json()["output"] if item["type"] == "compaction"]
    assert compaction

    items = [*compaction, *history, {"type": "message", "role": "user", "content": "and then?"}]
    assert tag in {item["type"] for item in response["output"]}
    assert {item["type"] for item in items} >= _made(steps) | {"function_call_output"}
    second = client.post("/v1/responses", json={"model": "m", "input": items, "store": False}, headers=AUTH)
    assert second.status_code == 200, second.text
    handed = script.requests[-1].input
    assert [item.get("type", "message") for item in handed] == [item["type"] for item in items]
    ignored = second.headers.get("OpenResponses-Ignored", "")
    event(f"ignored: {ignored or None}")
    for sent, got in zip(items, handed, strict=True):
        if sent["type"] == "reasoning" and sent.get("encrypted_content"):
            for field in ("content", "summary"):  # from the seal: what the item was made with, as sent
                assert got.get(field, sent.get(field)) == sent.get(field)
        elif sent["type"] == "reasoning":  # its content is input too: it reaches the provider as sent
            assert got.get("content") == sent.get("content")
    assert not ignored


_MAKES = {MessageStart: "message", FunctionCallStart: "function_call", ReasoningEnd: "reasoning"}


def _made(steps: list[Step]) -> set[str]:
    """The core item types the steps make (each drawn part begins, or ends, with one of these)."""
    return {_MAKES[type(step)] for step in steps if type(step) in _MAKES}


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("server_fields", [{"id": "rs_1", "status": "completed"}, {}])
def test_reasoning_content_is_input_with_or_without_the_servers_fields(strict, server_fields):
    """A reasoning item's `content` is part of its input form: taken as given, even by a strict server,
    whether or not the client kept the item's `id` and `status`."""
    script = Script()
    app = create_app(script, store=MemoryStore(), api_keys=API_KEY, strict=strict)
    content = [{"type": "reasoning_text", "text": "x"}]
    reasoning = {"type": "reasoning", **server_fields, "summary": [], "content": content}
    with TestClient(app) as client:
        reply = client.post("/v1/responses", json={"model": "m", "input": [reasoning]}, headers=AUTH)
    assert reply.status_code == 200, reply.text
    assert "OpenResponses-Ignored" not in reply.headers
    assert script.requests[-1].input[0]["content"] == content


def test_strict_mode_refuses_reasoning_content_of_another_type():
    app = create_app(Script(), store=MemoryStore(), api_keys=API_KEY, strict=True)
    reasoning = {"type": "reasoning", "summary": [], "content": [{"type": "summary_text", "text": "x"}]}
    with TestClient(app) as client:
        reply = client.post("/v1/responses", json={"model": "m", "input": [reasoning]}, headers=AUTH)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert (error["code"], error["param"]) == ("invalid_value", "input[0].content[0].type")


# -- as a real client carries it --------------------------------------------------------------

THOUGHT = [
    ReasoningDelta("The user wants "),
    ReasoningDelta("the weather."),
    ReasoningEnd(encrypted_content="sig-abc"),  # a provider's own state: sealed even unasked
    ReasoningDelta("No state this time."),
    ReasoningEnd(),
    *[TextDelta("Checking."), FunctionCallStart("lookup", call_id="call_1"), ArgumentsDelta("{}")],
]


@pytest.mark.parametrize("include", [True, False])
@pytest.mark.parametrize("transport", ["http", "websocket"])
def test_the_openai_client_carries_the_whole_history(transport, include):
    """The history as the `openai` package hands it over (the agent SDKs' stateless mode dumps its
    output items so): turn 2 is accepted, the sealed reasoning reaches the provider as it was made,
    and an unsealed one with the content the client sent."""
    openai = pytest.importorskip("openai")
    script = Script()
    app = create_app(script, store=MemoryStore(), api_keys=API_KEY, reasoning_key="round-trip-key")
    with live_server(app) as base:
        client = openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0, timeout=30)
        lookup = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}
        asked = {"tools": [lookup], **({"include": ["reasoning.encrypted_content"]} if include else {})}
        history: list = [{"role": "user", "content": "Weather in Paris?"}]
        script.steps = list(THOUGHT)
        first = client.responses.create(model="m", input=history, store=False, **asked)
        reasoning = [item for item in first.output if item.type == "reasoning"]
        assert [bool(item.content) for item in reasoning] == [True, True]
        history += [item.model_dump(exclude_unset=True) for item in first.output]
        history.append({"type": "function_call_output", "call_id": "call_1", "output": "sunny"})
        if transport == "http":
            raw = client.responses.with_raw_response.create(model="m", input=history, store=False, **asked)
            ignored = raw.headers.get("OpenResponses-Ignored")
            assert raw.parse().status == "completed"
        else:
            with client.responses.connect() as connection:
                connection.response.create(model="m", input=history, store=False, **asked)
                events = list(_until_done(connection))
            assert events[-1].type == "response.completed"
            ignored = ", ".join((events[0].model_extra or {}).get("openresponses:ignored") or ()) or None
    handed = [item for item in script.requests[-1].input if item["type"] == "reasoning"]
    assert handed[0]["encrypted_content"] == "sig-abc"  # the provider's state, as it gave it
    assert handed[0]["content"] == [{"type": "reasoning_text", "text": "The user wants the weather."}]
    # sealed, or (the second, with nothing to seal and no blob asked for) as the client sent it
    assert handed[1]["content"] == [{"type": "reasoning_text", "text": "No state this time."}]
    assert ignored is None
    assert "encrypted_content" not in handed[1]  # no provider state: sealed or not, none reaches it


def _until_done(connection):
    for message in connection:
        yield message
        if message.type in ("response.completed", "response.failed", "response.incomplete", "error"):
            return
