"""One request's memory: the bounded arrays of a body (`input`, `tools`) are counted as it is
decoded, so a body past a bound is refused without becoming one Python object per item; the
counting decoder reads every body as `json.loads` does, or fails where it fails; a declared body is
read into one buffer; the model shares the decoded object's long strings."""

from __future__ import annotations

import asyncio
import json
import sys
import tracemalloc

import httpx
import pytest
from openresponses_runtime import bindings
from openresponses_runtime.server import Bounds, bodies
from openresponses_runtime.server.errors import InvalidRequest

from ..conftest import ROOT
from ..server_helpers import API_KEY, free_port, start, stop, wait_answering

sys.path.insert(0, str(ROOT / "bench"))  # the benchmarks are scripts, not a package
import request_memory  # noqa: E402

COUNTED = {"input": 2, "tools": 1}  # small bounds: every body below with a comma is decoded counting


def _outcome(text: str, counted: dict[str, int] | None):
    try:
        return bodies._loads(text, counted)
    except ValueError as exc:  # the message too: the client reads it
        return f"error: {exc}"


@pytest.mark.parametrize(
    "text",
    [
        '{"input": [1, 2], "x": [1, 2, 3]}',
        ' \n{ "input" : [ {"a": 1.0} , "b" ] ,\t"tools":[ ] , "n": 2.5 } \r\n',
        '{"input": [1, 2, 3], "input": [1]}',  # a repeated name: the last value counts
        '{"input": "a, b, c", "tools": {"a": [1, 2, 3]}}',
        '{"nested": {"input": [1, 2, 3, 4]}, "input": [[1, 2, 3], [4]]}',
        '{"input": [1, 2,], "a": 1}',
        '{"input": [1 2], "a": 1}',
        '{"input": [1, 2], "a": 1,}',
        '{"input": [1, 2] "a": 1}',
        '{"input": [1, 2], a: 1}',
        '{"input": [1, 2], "a" 1}',
        '{"input": [1, 2], "a": 1}, {}',
        '{"input": [1, 2], "a": NaN}',
        '{"input": [1, 2], "a": 1e400}',
        '{"input": [1, 2], "a": "\x01"}',
        '[{"input": 1}, 2, 3]',
        '{"input": [1, 2]',
        '{"input": [1, 2',
        '{"input": [1, 2], "a": 1}  ',
    ],
)
def test_the_counting_decoder_reads_as_json_loads(text):
    """As the whole-text decoder reads it (`test_bodies_decode_as_json_loads_reads_them` pins that
    one to `json.loads`), with the same error where it fails."""
    counting = _outcome(text, COUNTED)
    assert counting == _outcome(text, None)


def test_an_array_past_its_bound_is_counted_whole_and_kept_only_to_its_bound():
    with pytest.raises(bodies._Overflow) as over:
        bodies._loads('{"input": [1, 2, 3, 4, 5], "tools": [{}], "input_x": [1, 2, 3]}', COUNTED)
    assert over.value.counts == {"input": 5, "tools": 1}
    # Bad JSON after the array is still refused as bad JSON, not as too many items.
    with pytest.raises(ValueError, match="Expecting"):
        bodies._loads('{"input": [1, 2, 3, 4, 5], "tools": }', COUNTED)


def test_a_body_past_a_bound_is_refused_with_its_count_and_little_memory():
    item = {"role": "user", "content": "hi"}
    raw = json.dumps({"model": "m", "input": [item] * 20_000}).encode()
    tracemalloc.start()
    try:
        with pytest.raises(InvalidRequest) as refused:
            bodies.parse_body(raw, bindings.CreateBody, Bounds(max_input_items=500))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    error = refused.value
    assert (error.code, error.param, error.status) == ("too_many_items", "input", 400)
    assert "has 20000 input items" in error.message and "at most 500" in error.message
    # The text (one copy of the body) and the 500 items kept; decoded whole, the items alone
    # took some nine times the body.
    assert peak < 2 * len(raw), peak / len(raw)


def test_tools_past_their_bound_are_refused_before_validation():
    tools = [{"type": "function", "name": f"f{i}", "parameters": {"type": "object"}} for i in range(3)]
    raw = json.dumps({"model": "m", "input": "hi", "tools": tools}).encode()
    with pytest.raises(InvalidRequest) as refused:
        bodies.parse_body(raw, bindings.CreateBody, Bounds(max_tools=2))
    assert (refused.value.code, refused.value.param) == ("too_many_tools", "tools")
    assert "offers 3 tools" in refused.value.message
    data, body = bodies.parse_body(raw, bindings.CreateBody, Bounds(max_tools=3))
    assert data["tools"] == tools and len(body.tools) == 3


def _receive(*chunks: bytes):
    messages = iter(
        [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    )

    async def receive():
        return next(messages)

    return receive


@pytest.mark.parametrize("declared", [100_000, 99_990, 100_010])
def test_a_declared_body_is_read_whole_into_one_buffer(declared):
    """Read into a buffer of the declared size; should the HTTP parser pass more or fewer bytes,
    what came is what is read, within the limit."""
    chunks = [b"a" * 65_536, b"b" * (100_000 - 65_536)]
    body = asyncio.run(bodies.read_body(_receive(*chunks), str(declared), 200_000))
    assert body == b"".join(chunks)
    with pytest.raises(InvalidRequest) as refused:
        asyncio.run(bodies.read_body(_receive(*chunks), str(declared), 99_999))
    assert (refused.value.status, refused.value.code) == (413, "request_too_large")


def test_the_model_shares_the_long_strings_of_the_object_it_was_validated_from():
    """One copy of a long text for the request's life, not one in the object and one in the model."""
    items = [{"role": "user", "content": f"{i} " + "x" * 1_000} for i in range(300)]
    raw = json.dumps({"model": "m", "input": items, "instructions": "y" * 300_000, "metadata": {"k": "z" * 300}})
    data, body = bodies.parse_body(raw.encode(), bindings.CreateBody, Bounds())
    assert body.instructions is data["instructions"]
    assert all(body.input[i].content is data["input"][i]["content"] for i in (0, 7, 299))
    assert body.metadata["k"] is data["metadata"]["k"]
    assert body.model == "m" and body.input[7].content.startswith("7 x")


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("shape", ["170k tiny items (the probe's)", "10k items of 800 bytes", "one 8 MB message"])
def test_one_request_raises_the_servers_peak_by_at_most_ten_times_its_body(shape):
    """The goal of `bench/request_memory.py`, held in CI: `orspec serve`'s peak RSS over one request
    of each shape, warmed up by one small request first."""
    raw = request_memory.body_of(request_memory.SHAPES[shape])
    port = free_port()
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY]
    proc = start([*command, "--store", "memory:", "--delay", "0"])
    try:
        base = f"http://127.0.0.1:{port}/v1"
        wait_answering(proc, base)
        headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
        assert httpx.post(base + "/responses", json={"input": "warm"}, headers=headers, timeout=30).status_code == 200
        before = request_memory.status_kb(proc.pid, "VmHWM")
        answer = httpx.post(base + "/responses", content=raw, headers=headers, timeout=120)
        rise = (request_memory.status_kb(proc.pid, "VmHWM") - before) * 1024
    finally:
        stop(proc)
    assert answer.status_code == (400 if "tiny" in shape else 200), answer.text[:300]
    assert rise <= 10 * len(raw), f"{rise / len(raw):.1f}x the body"
