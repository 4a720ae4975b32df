"""The runtime client resumes a background response's stream by itself when its connection breaks.

Against a real `orspec serve` process, through a TCP proxy that drops chosen connections after a
number of bytes of the answer: the consumer must see every event once, in order, up to the
terminal one, for `Client` and `AsyncClient`; a foreground stream cut the same way still raises.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from contextlib import contextmanager, suppress

import pytest
from openresponses_runtime.client import APIConnectionError, AsyncClient, Client

from ..server.test_background import LONG, serving
from ..server_helpers import API_KEY

pytestmark = pytest.mark.process

BACKGROUND = {"model": "demo", "input": LONG, "background": True}
CUTS = (4000, 9000)  # the first connection breaks after 4000 bytes, the first resume after 9000


class CuttingProxy:
    """Forwards 127.0.0.1:`port` to `upstream`; the Nth connection is dropped after `cuts[N]` bytes of the
    answer's body, or (a bytes cut) just before those bytes."""

    def __init__(self, upstream: int, cuts: tuple[int | bytes, ...]):
        self.upstream, self.cuts, self.connections = upstream, cuts, 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            limit = self.cuts[self.connections] if self.connections < len(self.cuts) else None
            self.connections += 1
            upstream = socket.create_connection(("127.0.0.1", self.upstream))
            threading.Thread(target=_pipe, args=(client, upstream, None), daemon=True).start()
            threading.Thread(target=_pipe, args=(upstream, client, limit), daemon=True).start()


def _pipe(source: socket.socket, target: socket.socket, limit: int | bytes | None) -> None:
    """Copy `source` to `target`; once the headers and `limit` bytes of the body are through, close both, as a
    dropped connection does (`limit` None: copy to the end)."""
    sent, head, header = 0, b"", None  # bytes sent, what came before the headers' end, the headers' length
    try:
        while data := source.recv(65536):
            if header is None:
                head += data
                end = head.find(b"\r\n\r\n")
                header = end + 4 if end >= 0 else None
            if isinstance(limit, bytes) and limit in data:
                target.sendall(data[: data.index(limit)])
                break
            if isinstance(limit, int) and header is not None and sent + len(data) >= header + limit:
                target.sendall(data[: header + limit - sent])
                break
            target.sendall(data)
            sent += len(data)
    except OSError:
        pass
    finally:
        for sock in (source, target):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


@contextmanager
def cut_server(tmp_path, cuts=CUTS):
    """(base URL through the cutting proxy, direct base URL, the proxy) of an `orspec serve` on SQLite."""
    with serving(str(tmp_path / "responses.sqlite3")) as (_, direct):
        proxy = CuttingProxy(int(direct.rsplit(":", 1)[1].split("/")[0]), cuts)
        try:
            yield f"http://127.0.0.1:{proxy.port}/v1", direct, proxy
        finally:
            proxy.close()


def _dumps(events) -> list[dict]:
    return [event.model_dump(mode="json") for event in events]


def _assert_whole(events: list[dict], direct: str) -> None:
    """`events` are the response's whole stream: 0, 1, 2, ... to its terminal event, as the server kept them."""
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[-1]["type"] == "response.completed"
    with Client(base_url=direct, api_key=API_KEY) as client:
        kept = _dumps(client.responses.retrieve(events[0]["response"]["id"], stream=True))
    assert events == kept


def test_a_background_stream_resumes_after_its_connection_breaks(tmp_path):
    with cut_server(tmp_path) as (base, direct, proxy), Client(base_url=base, api_key=API_KEY) as client:
        with client.responses.create(**BACKGROUND, stream=True) as stream:
            events = _dumps(stream)
            final = stream.reader.final_response()
        assert proxy.connections == 3  # the create, then two resumes, each cut short but the last
        _assert_whole(events, direct)
        text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
        assert (final.status, text) == ("completed", "You said: " + LONG)


def test_a_retrieve_stream_resumes_too(tmp_path):
    with cut_server(tmp_path, cuts=(3000,)) as (base, direct, proxy), Client(base_url=base, api_key=API_KEY) as client:
        with (
            Client(base_url=direct, api_key=API_KEY) as straight,
            straight.responses.create(**BACKGROUND, stream=True) as started,
        ):
            response_id = next(iter(started)).response.id  # one event read, then the stream is closed
        events = _dumps(client.responses.retrieve(response_id, stream=True, starting_after=2))
        assert proxy.connections == 2
        assert [e["sequence_number"] for e in events] == list(range(3, 3 + len(events)))
        assert events[-1]["type"] == "response.completed"


def test_the_async_client_resumes_a_background_stream(tmp_path):
    async def main(base: str) -> list[dict]:
        async with AsyncClient(base_url=base, api_key=API_KEY) as client:
            stream = await client.responses.create(**BACKGROUND, stream=True)
            async with stream:
                return [event.model_dump(mode="json") async for event in stream]

    with cut_server(tmp_path) as (base, direct, proxy):
        events = asyncio.run(main(base))
        assert proxy.connections == 3
        _assert_whole(events, direct)


def test_a_stream_cut_after_its_terminal_event_ends_without_resuming(tmp_path):
    """Only `[DONE]` is lost: there is nothing after the terminal event to ask for."""
    with cut_server(tmp_path, cuts=(b"data: [DONE]",)) as (base, direct, proxy):
        with Client(base_url=base, api_key=API_KEY) as client:
            events = _dumps(client.responses.create(**BACKGROUND, stream=True))
        assert proxy.connections == 1
        _assert_whole(events, direct)


def test_resuming_gives_up_after_the_retries(tmp_path):
    """Every connection breaks before any new event: the stream stops after `max_retries` resumes."""
    with cut_server(tmp_path, cuts=(4000,) + (0,) * 10) as (base, _, proxy):
        with Client(base_url=base, api_key=API_KEY, max_retries=2) as client:
            stream = client.responses.create(**BACKGROUND, stream=True)
            with pytest.raises(APIConnectionError, match="broke mid-stream"):
                list(stream)
        assert proxy.connections == 1 + 3  # the resumes answer their headers, then break: 3 in all


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_foreground_stream_cut_short_still_raises(tmp_path, is_async):
    async def read_async(base: str) -> None:
        async with AsyncClient(base_url=base, api_key=API_KEY) as client:
            async for _ in await client.responses.create(model="demo", input=LONG, stream=True):
                pass

    with cut_server(tmp_path) as (base, _, proxy):
        with pytest.raises(APIConnectionError, match="broke mid-stream"):
            if is_async:
                asyncio.run(read_async(base))
            else:
                with Client(base_url=base, api_key=API_KEY) as client:
                    list(client.responses.create(model="demo", input=LONG, stream=True))
        assert proxy.connections == 1  # nothing to resume from: no second request
