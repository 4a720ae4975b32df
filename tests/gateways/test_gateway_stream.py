"""The plain text fast path of an upstream's event stream (`openresponses_runtime.gateways.stream`):
whatever the bytes and however the network splits them, the events a gateway reads are those of
the stream read whole, one object at a time."""

from __future__ import annotations

import asyncio
import random
import re
from pathlib import Path

import pytest
from openresponses_runtime.gateways import anthropic_messages, chat_completions, gemini
from openresponses_runtime.gateways.stream import PlainText, SSEData, json_events
from openresponses_runtime.server.wire import loads

RECORDINGS = Path(__file__).resolve().parents[2].parent / "shared" / "recordings" / "upstream"
SHAPES = {"chat": chat_completions._PLAIN, "anthropic": anthropic_messages._PLAIN, "gemini": gemini._PLAIN}


class _Pieces:
    def __init__(self, pieces: list[bytes]):
        self.pieces = pieces

    async def iter_any(self):
        for piece in self.pieces:
            yield piece


def _read(pieces: list[bytes], shape=None) -> list:
    async def collect():
        return [event async for event in json_events(_Pieces(pieces), shape)]

    return asyncio.run(asyncio.wait_for(collect(), 10))


def _expanded(events: list) -> list:
    return [one for event in events for one in (event.events() if type(event) is PlainText else [event])]


def _by_the_spec(body: bytes) -> list:
    """The JSON objects of an SSE body read line by line, as the SSE spec reads it (a line ends at
    CRLF, LF or CR; a blank line ends a message): what the module's reading, which splits bytes
    its own way, must give."""
    events, data = [], []
    for line in [*re.split(rb"\r\n|\r|\n", body), b""]:  # the stream's end closes its last message
        if line == b"data" or line.startswith(b"data:"):
            data.append(line[6:] if line[5:6] == b" " else line[5:])
        elif not line and data:
            if b"\n".join(data) == b"[DONE]":
                break
            try:
                event = loads(b"\n".join(data))
            except ValueError:
                event = None
            if type(event) is dict:
                events.append(event)
            data = []
    return events


def _line_ends(body: bytes, newline: bytes) -> bytes:
    return body.replace(b"\r\n", b"\n").replace(b"\n", newline)


def _split(body: bytes, rng: random.Random) -> list[bytes]:
    cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.choice([1, 3, 20]))))
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


def _text_stream(shape: str, texts: list[str], *, crlf: bool = False) -> bytes:
    import json

    def message(event: dict, name: str | None = None) -> bytes:
        lead = f"event: {name}\n" if name else ""
        return (lead + "data: " + json.dumps(event) + "\n\n").encode()

    if shape == "chat":
        text = [{"id": "c", "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]} for t in texts]
        body = b"".join(message(event) for event in text)
        body = message({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}) + body
    elif shape == "anthropic":
        deltas = [
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in texts
        ]
        body = b"".join(message(event, "content_block_delta") for event in deltas)
    else:
        chunks = [{"candidates": [{"content": {"parts": [{"text": t}], "role": "model"}, "index": 0}]} for t in texts]
        body = b"".join(message(event) for event in chunks)
    return body.replace(b"\n", b"\r\n") if crlf else body


TEXTS = ["a", "", 'é \\ "q" \u2028', "line\nbreak", "\ud83d\ude00", "x" * 300, "b", "c", "d"]


@pytest.mark.parametrize("shape", SHAPES)
def test_plain_text_runs_are_the_events_read_one_by_one(shape: str):
    rng = random.Random(42)
    for crlf in (False, True):
        body = _text_stream(shape, TEXTS * 3, crlf=crlf)
        whole = _read([body])
        assert whole == _by_the_spec(body)
        runs = _read([body], SHAPES[shape])
        assert any(type(event) is PlainText for event in runs)  # the fast path was taken
        assert _expanded(runs) == whole
        for _ in range(30):
            assert _expanded(_read(_split(body, rng), SHAPES[shape])) == whole


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("shape", SHAPES)
def test_messages_that_only_look_like_plain_text_are_read_whole(shape: str, newline: bytes):
    """Bytes of a plain text message inside a comment, a message over two data lines, a value that is
    not a string, an escape JSON has not, other messages between: each read as it is."""
    plain = _text_stream(shape, ["p", "q"]).split(b"\n\n")[-3]  # one plain message
    lead, _, data = plain.rpartition(b"data: ")
    tricky = [
        b": " + plain + b"\n\n",  # a comment holding one
        lead + b"data: " + data.replace(b'"q"', b'"q",\ndata: "r"') + b"\n\n",  # over two data lines
        lead + b"data: " + data.replace(b'"q"', b"5") + b"\n\n",  # not a string
        lead + b"data: " + data.replace(b'"q"', b'"\\x"') + b"\n\n",  # not JSON
        b'data: {"other": 1}\n\n',
        b"data: not json\n\n",
    ]
    rng = random.Random(7)
    for _ in range(40):
        messages = [_text_stream(shape, ["s", "t", "u"])] + [rng.choice(tricky) for _ in range(4)]
        rng.shuffle(messages)
        body = _line_ends(b"".join(messages + [_text_stream(shape, ["v", "w", "x"])]), newline)
        whole = _read([body])
        assert whole == _by_the_spec(body)
        assert _expanded(_read([body], SHAPES[shape])) == whole
        assert _expanded(_read(_split(body, rng), SHAPES[shape])) == whole


@pytest.mark.parametrize("shape", SHAPES)
def test_a_crlf_stream_with_other_line_ends_is_read_as_the_spec_reads_it(shape: str):
    """A CR or an LF alone ends a line in a stream of CRLF too: where one stands in a plain text
    message (before its text, in it, after it) or ends a message, the messages are those the
    SSE spec reads, however the network splits them."""
    texts = ["s", "t", "u", "v", "w", "x", "y", "z"]
    body = _text_stream(shape, texts, crlf=True)
    oddities = [b"\r", b"\n", b"\r\r", b"\n\n", b"\r\n\n", b"\n\r\n", b"\r\r\n"]
    rng = random.Random(11)
    for _ in range(80):
        mixed = bytearray(body)
        for _ in range(
            rng.choice([1, 2, 4])
        ):  # put in before a text, a blank line or a data line; or a blank line for one
            found = rng.choice(list(re.finditer(rb'"[stuvwxyz]"|\r\n\r\n|data: ', bytes(mixed))))
            end = found.end() if found[0] == b"\r\n\r\n" and rng.random() < 0.5 else found.start()
            mixed[found.start() : end] = rng.choice(oddities)
        mixed = bytes(mixed)
        whole = _read([mixed])
        assert whole == _by_the_spec(mixed), mixed
        assert _expanded(_read([mixed], SHAPES[shape])) == whole, mixed
        assert _expanded(_read(_split(mixed, rng), SHAPES[shape])) == whole, mixed


@pytest.mark.parametrize("shape", SHAPES)
def test_a_crlf_stream_is_read_in_place_split_anywhere(shape: str):
    """CRLF messages are read as they came (no rewriting to LF), with their plain text runs: byte
    by byte, and cut in two at every point (a CRLF's CR in one read, its LF in the next)."""
    body = _text_stream(shape, ["a", "b", "c", "d"], crlf=True)
    assert SSEData().feed(body) == (body, b"\r\n")
    whole = _by_the_spec(body)
    assert len(whole) == 4 + (shape == "chat")
    assert _expanded(_read([body[at : at + 1] for at in range(len(body))], SHAPES[shape])) == whole
    for cut in range(1, len(body)):
        runs = _read([body[:cut], body[cut:]], SHAPES[shape])
        assert _expanded(runs) == whole, cut
    assert any(type(event) is PlainText for event in _read([body], SHAPES[shape]))


@pytest.mark.skipif(not RECORDINGS.is_dir(), reason="the upstream recordings are in ../shared")
@pytest.mark.parametrize("shape", SHAPES)
def test_recorded_streams_read_the_same(shape: str):
    rng = random.Random(1)
    streams = sorted((RECORDINGS / shape).glob("*.sse"))
    assert streams
    for path in streams:
        recorded = path.read_bytes()
        for body in (recorded, _line_ends(recorded, b"\r\n"), _line_ends(recorded, b"\n")):  # as recorded, CRLF, LF
            whole = _read([body])
            assert whole == _by_the_spec(body), path.name
            assert _expanded(_read([body], SHAPES[shape])) == whole, path.name
            for _ in range(5):
                assert _expanded(_read(_split(body, rng), SHAPES[shape])) == whole, path.name


def test_a_plain_message_with_two_values_where_its_text_goes_is_not_two_texts():
    body = _text_stream("chat", ["a", "b", "c", "d"])
    bad = body.replace(b'"b"', b'"b", "x"')  # invalid JSON where one text was: skipped, never a text "x"
    whole = _read([bad])
    assert _expanded(_read([bad], SHAPES["chat"])) == whole
    assert [e["choices"][0]["delta"]["content"] for e in whole[1:]] == ["a", "c", "d"]
