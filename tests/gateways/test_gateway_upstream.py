"""What both gateways read of an upstream's event stream (`openresponses_runtime.gateways.base`):
its JSON objects, however the network splits the bytes, read the way `json` reads them."""

from __future__ import annotations

import asyncio
import logging

import httpx
from openresponses_runtime.gateways.base import UpstreamClient, json_events

from .. import cpu_time


class _Pieces(httpx.AsyncByteStream):
    """A body arriving in these pieces, then breaking off with `error` if one is given."""

    def __init__(self, pieces: list[bytes], error: Exception | None = None):
        self.pieces, self.error = pieces, error

    async def __aiter__(self):
        for piece in self.pieces:
            yield piece
        if self.error is not None:
            raise self.error


def read(pieces: list[bytes], error: Exception | None = None) -> list[dict]:
    async def collect():
        reply = httpx.Response(200, stream=_Pieces(pieces, error))
        return [event async for event in json_events(reply)]

    return asyncio.run(asyncio.wait_for(collect(), 10))


def test_objects_split_anywhere_arrive_whole_and_in_order():
    body = b'event: a\ndata: {"n": 1}\n\ndata: {"n":\ndata:  2}\r\n\r\n: keep-alive\n\ndata: {"n": "\xc3\xa9"}\n\n'
    whole = read([body])
    assert whole == [{"n": 1}, {"n": 2}, {"n": "é"}]
    assert read([body[i : i + 1] for i in range(len(body))]) == whole  # byte by byte, mid-line and mid-character


def test_done_ends_the_objects_and_a_last_frame_without_its_blank_line_counts():
    assert read([b'data: {"n": 1}\n\ndata: [DONE]\n\ndata: {"n": 2}\n\n']) == [{"n": 1}]
    assert read([b'data: {"n": 1}\n\ndata: {"n": 2}']) == [{"n": 1}, {"n": 2}]


def test_what_json_reads_and_orjson_refuses_still_comes_through():
    body = b'data: {"t": NaN}\n\ndata: {"t": 1e400}\n\ndata: {"s": "\\ud800"}\n\n'
    nan, huge, surrogate = read([body])
    assert nan["t"] != nan["t"]  # NaN, the one value unequal to itself
    assert huge == {"t": float("inf")}
    assert surrogate == {"s": "\ud800"}


def test_frames_that_are_not_objects_are_skipped_and_logged(caplog):
    body = b'data: [1, 2]\n\ndata: {"n": 1}\n\ndata: not json\n\ndata: {"n": 2}\n\n'
    with caplog.at_level(logging.WARNING, "openresponses_runtime.gateways"):
        assert read([body]) == [{"n": 1}, {"n": 2}]
    skipped = [r.getMessage() for r in caplog.records if "not a JSON object" in r.getMessage()]
    assert skipped == [
        "skipped an upstream frame that is not a JSON object: [1, 2]",
        "skipped an upstream frame that is not a JSON object: not json",
    ]


def test_a_stream_that_breaks_off_ends_its_objects_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, "openresponses_runtime.gateways"):
        got = read([b'data: {"n": 1}\n\ndata: {"n"'], httpx.ReadError("connection reset"))
    assert got == [{"n": 1}]
    assert "the upstream's stream broke off: connection reset" in caplog.text


def test_each_object_is_read_only_when_asked_for(caplog):
    """Not a whole network read ahead: hundreds of objects alive at once cost more in garbage
    collection than their parsing."""

    async def first():
        events = json_events(httpx.Response(200, stream=_Pieces([b'data: {"n": 1}\n\ndata: not json\n\n'])))
        try:
            return await anext(events)
        finally:
            await events.aclose()

    with caplog.at_level(logging.WARNING, "openresponses_runtime.gateways"):
        assert asyncio.run(asyncio.wait_for(first(), 10)) == {"n": 1}
    assert "not a JSON object" not in caplog.text  # the second frame was never parsed


def test_the_upstream_pool_holds_more_streams_at_once_than_httpx_allows_by_default():
    """150 upstream streams open at once: the upstream answers none until all 150 requests have
    arrived, so a pool capped at httpx's default (100 connections) would wait for ever."""
    streams = 150

    async def run() -> int:
        arrived = 0
        everyone = asyncio.Event()

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal arrived
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            arrived += 1
            if arrived == streams:
                everyone.set()
            await everyone.wait()
            body = b'data: {"n": 1}\n\n'
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n%s"
                % (len(body), body)
            )
            await writer.drain()
            writer.close()

        # A backlog for every stream: asyncio's default (100) drops connections made at once beyond it.
        server = await asyncio.start_server(answer, "127.0.0.1", 0, backlog=streams)
        port = server.sockets[0].getsockname()[1]
        client = UpstreamClient(timeout=10).get()

        async def one() -> list[dict]:
            async with client.stream("POST", f"http://127.0.0.1:{port}/v1/chat/completions", json={}) as reply:
                return [event async for event in json_events(reply)]

        async with server:
            answers = await asyncio.wait_for(asyncio.gather(*(one() for _ in range(streams))), bound)
        await client.aclose()
        return sum(answer == [{"n": 1}] for answer in answers)

    bound = cpu_time.scaled(15)
    assert asyncio.run(run()) == streams
