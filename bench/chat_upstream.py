"""A fake Chat Completions upstream for the gateway benchmarks, run as its own process.

Every `POST .../chat/completions` is answered with the same streamed completion: a role chunk,
`--events` text deltas, a finish chunk, a usage chunk and `data: [DONE]`. Two paces:

- at once (any model but `paced`): the whole pre-made body in one write, so that what is measured
  is the gateway's work, not waiting;
- paced (model `paced-N`): N text deltas, one chunk every `--interval` seconds per stream, as a
  model generating tokens, from one ticker for all open streams, so that a thousand streams cost
  a thousand writes a tick and no task each.

It is a bare asyncio HTTP/1.1 server (keep-alive, Content-Length request bodies), because an ASGI
stack here would spend more CPU per event than the gateway being measured, on the same cores.

    python bench/chat_upstream.py --port 9000 [--events 200] [--interval 0.02] [--tls-cert PEM --tls-key PEM]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import ssl
import time

PACED_MODEL = re.compile(rb'"model":\s*"paced-(\d+)"')


def chat_chunks(events: int) -> list[bytes]:
    """The SSE frames of one streamed completion of `events` text deltas, `[DONE]` last.

    Each delta's text differs: litellm ends a stream that repeats one chunk many times ("the
    model is repeating the same chunk")."""

    def chunk(choices: list, **extra) -> bytes:
        body = {"id": "c", "object": "chat.completion.chunk", "choices": choices, **extra}
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    def delta(content: dict, finish: str | None = None) -> bytes:
        return chunk([{"index": 0, "delta": content, "finish_reason": finish}])

    usage = {"prompt_tokens": 5, "completion_tokens": events, "total_tokens": events + 5}
    return [
        delta({"role": "assistant", "content": ""}),
        *(delta({"content": f"token{i} "}) for i in range(events)),  # litellm refuses a chunk repeated many times
        delta({}, "stop"),
        chunk([], usage=usage),
        b"data: [DONE]\n\n",
    ]


def content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return int(line[15:])
    return 0


class Upstream:
    def __init__(self, events: int, interval: float):
        self.frames = chat_chunks(events)
        body = b"".join(self.frames)
        self.whole = (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        self.interval = interval
        self.paced_frames: dict[int, list[bytes]] = {}  # chunk-framed, by number of deltas
        self.paced: dict[Connection, tuple[list[bytes], int]] = {}  # an open paced stream: its frames, the next

    def paced_answer(self, deltas: int) -> list[bytes]:
        if deltas not in self.paced_frames:
            self.paced_frames[deltas] = [f"{len(f):x}\r\n".encode() + f + b"\r\n" for f in chat_chunks(deltas)]
        return self.paced_frames[deltas]

    async def tick(self) -> None:
        """Every `interval`, the next frame of each paced stream; on a fixed clock, so that a late
        tick is followed by an early one, as a model's tokens keep their rate."""
        start = time.monotonic()
        ticks = 0
        while True:
            ticks += 1
            await asyncio.sleep(max(0.0, start + ticks * self.interval - time.monotonic()))
            for connection, (frames, index) in list(self.paced.items()):
                if connection.transport.is_closing():
                    del self.paced[connection]
                    continue
                connection.transport.write(frames[index])
                if index + 1 == len(frames):
                    connection.transport.write(b"0\r\n\r\n")
                    del self.paced[connection]
                    connection.answered()
                else:
                    self.paced[connection] = frames, index + 1


class Connection(asyncio.Protocol):
    """One client connection: requests read one after another, each answered in turn."""

    def __init__(self, upstream: Upstream):
        self.upstream = upstream
        self.buffer = b""
        self.busy = False  # a paced answer is still being written

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self.serve()

    def answered(self) -> None:
        self.busy = False
        self.serve()

    def serve(self) -> None:
        while not self.busy:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].lower()
            length = content_length(head)
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4 : end + 4 + length]
            self.buffer = self.buffer[end + 4 + length :]
            if not head.startswith(b"post ") or b"/chat/completions" not in head.split(b"\r\n", 1)[0]:
                self.transport.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
            elif paced := PACED_MODEL.search(body):
                frames = self.upstream.paced_answer(int(paced.group(1)))
                head_bytes = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                self.transport.write(head_bytes + frames[0])  # the role chunk at once, the deltas paced
                self.upstream.paced[self] = frames, 1
                self.busy = True
            else:
                self.transport.write(self.upstream.whole)


async def serve(port: int, events: int, interval: float, tls: ssl.SSLContext | None = None) -> None:
    upstream = Upstream(events, interval)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(upstream), "127.0.0.1", port, backlog=4096, ssl=tls)
    async with server:
        await upstream.tick()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--events", type=int, default=200, help="text deltas in each answer")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between a paced stream's chunks")
    parser.add_argument("--tls-cert", help="serve https: this certificate chain (PEM), with --tls-key")
    parser.add_argument("--tls-key", help="the certificate's private key (PEM)")
    args = parser.parse_args()
    tls = None
    if args.tls_cert:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(args.tls_cert, args.tls_key)
    asyncio.run(serve(args.port, args.events, args.interval, tls))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
