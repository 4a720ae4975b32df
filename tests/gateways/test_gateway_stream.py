"""The plain text fast path of an upstream's event stream (`openresponses_runtime.gateways.stream`):
whatever the bytes and however the network splits them, the events a gateway reads are those of
the stream read whole, one object at a time."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from openresponses_runtime.gateways import anthropic_messages, chat_completions, gemini
from openresponses_runtime.gateways.stream import PlainText, json_events

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
        runs = _read([body], SHAPES[shape])
        assert any(type(event) is PlainText for event in runs)  # the fast path was taken
        assert _expanded(runs) == whole
        for _ in range(30):
            assert _expanded(_read(_split(body, rng), SHAPES[shape])) == whole


@pytest.mark.parametrize("shape", SHAPES)
def test_messages_that_only_look_like_plain_text_are_read_whole(shape: str):
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
        body = b"".join(messages + [_text_stream(shape, ["v", "w", "x"])])
        whole = _read([body])
        assert _expanded(_read([body], SHAPES[shape])) == whole
        assert _expanded(_read(_split(body, rng), SHAPES[shape])) == whole


@pytest.mark.skipif(not RECORDINGS.is_dir(), reason="the upstream recordings are in ../shared")
@pytest.mark.parametrize("shape", SHAPES)
def test_recorded_streams_read_the_same(shape: str):
    rng = random.Random(1)
    streams = sorted((RECORDINGS / shape).glob("*.sse"))
    assert streams
    for path in streams:
        body = path.read_bytes()
        whole = _read([body])
        assert _expanded(_read([body], SHAPES[shape])) == whole, path.name
        for _ in range(5):
            assert _expanded(_read(_split(body, rng), SHAPES[shape])) == whole, path.name


def test_a_plain_message_with_two_values_where_its_text_goes_is_not_two_texts():
    body = _text_stream("chat", ["a", "b", "c", "d"])
    bad = body.replace(b'"b"', b'"b", "x"')  # invalid JSON where one text was: skipped, never a text "x"
    whole = _read([bad])
    assert _expanded(_read([bad], SHAPES["chat"])) == whole
    assert [e["choices"][0]["delta"]["content"] for e in whole[1:]] == ["a", "c", "d"]
