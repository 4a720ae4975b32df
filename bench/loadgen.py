"""A raw HTTP/1.1 keep-alive load generator, run as its own process by the benchmarks.

It sends one fixed POST over and over and prints one JSON line with what it saw and its own CPU
share (CPU seconds / wall seconds of the measured window), so a reader can tell that the figure
measures the server, not the client. Five modes:

- `requests`: `--connections` keep-alive connections, each sending the request again as soon as the
  response is read, for `--seconds` after `--warmup`; requests/s and latency percentiles;
- `stream`: one request on one blocking socket; the SSE events counted in the raw body, events/s;
- `first-byte`: `--count` requests one after another on one connection; the time from sending
  to the first byte of the response body (percentiles), each body then read to its end;
- `latency`: the same, one request at a time, timed to the end of each response: what one client
  waits when the server is idle (a write the server holds back shows here, not in requests/s);
- `streams`: `--connections` streamed requests at once (started over `--ramp` seconds), each
  connection sending the next as soon as one ends, for `--seconds` after `--warmup`; the time to
  each stream's first event, requests/s, and the gaps between events arriving on one stream (see
  `StreamClient`). With `--once`, one stream a connection, however long it lasts, its gaps counted
  from `--ramp` + `--warmup` until the first stream ends: while all of them are open.

    python bench/loadgen.py URL --body '{"input":"hi"}' --header 'Authorization: Bearer k' [--mode requests]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit


def request_bytes(url: str, body: bytes, headers: list[str]) -> tuple[str, int, bytes]:
    parts = urlsplit(url)
    head = [
        f"POST {parts.path or '/'} HTTP/1.1",
        f"Host: {parts.netloc}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *headers,
    ]
    return parts.hostname or "127.0.0.1", parts.port or 80, ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def read_response(reader: asyncio.StreamReader, on_first_body_byte=None) -> tuple[int, bytes]:
    """Status and body of one response (Content-Length or chunked)."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    lower = head.lower()
    if b"transfer-encoding: chunked" in lower:
        chunks = []
        while True:
            size = int((await reader.readline()).split(b";", 1)[0], 16)
            if on_first_body_byte is not None:
                on_first_body_byte()
                on_first_body_byte = None
            if size == 0:
                await reader.readline()
                return status, b"".join(chunks)
            chunks.append((await reader.readexactly(size + 2))[:-2])
    start = lower.index(b"content-length:") + 15
    length = int(lower[start : lower.index(b"\r\n", start)])
    body = await reader.readexactly(length)
    if on_first_body_byte is not None:
        on_first_body_byte()
    return status, body


def percentiles(latencies: list[float]) -> dict[str, float]:
    if not latencies:
        return {"p50_ms": float("nan"), "p99_ms": float("nan")}
    ordered = sorted(latencies)
    return {
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
    }


async def run_requests(host, port, request, connections, seconds, warmup) -> dict:
    latencies: list[float] = []
    errors = 0
    first_error = None
    total = 0  # warm-up and drain included, to divide the server's CPU time by
    measuring = False
    stop = False

    async def worker():
        nonlocal errors, total, first_error
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while not stop:
                sent = time.perf_counter()
                writer.write(request)
                status, body = await read_response(reader)
                total += 1
                if status != 200 and first_error is None:
                    first_error = f"{status} {body[:300].decode(errors='replace')}"
                if measuring:
                    latencies.append(time.perf_counter() - sent)
                    errors += status != 200
        finally:
            writer.close()

    tasks = [asyncio.create_task(worker()) for _ in range(connections)]
    await asyncio.sleep(warmup)
    measuring = True
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(seconds)
    measuring = False
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    count = len(latencies)
    stop = True
    await asyncio.gather(*tasks)
    return {"requests": count, "all_requests": total, "errors": errors, "per_second": count / wall, "cpu_share": cpu / wall,
            **percentiles(latencies), "first_error": first_error}  # fmt: skip


def run_stream(host, port, request) -> dict:
    """One long streamed response read with a blocking socket, framing kept, in large blocks.

    Servers write a chunk per event; reading each as it lands cost the client a wake-up per two or
    three events, as much CPU as the server spent sending them (the client at ~95 % of a core was
    the bottleneck, whatever it did in Python). So it lets the data gather in a large receive
    buffer for a millisecond between reads: the server never waits on it (the buffer holds far
    more than a millisecond of stream), and its CPU share shows how far it is from being the limit.
    A chunk's size line is hex digits and never holds an SSE field; the last chunk (`0`, then the
    empty trailer) ends the body."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)  # before connecting: the window follows it
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with sock:
        sock.connect((host, port))
        cpu0, wall0 = time.process_time(), time.perf_counter()
        sock.sendall(request)
        blocks, tail = [], b""
        while not tail.endswith(b"\r\n0\r\n\r\n"):
            block = sock.recv(8 << 20)
            if not block:
                raise SystemExit("the stream ended before its last chunk")
            blocks.append(block)
            tail = (tail + block[-16:])[-16:]
            time.sleep(0.001)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    raw = b"".join(blocks)
    head, _, body = raw.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" not in head.lower():
        raise SystemExit(f"expected a chunked event stream, got: {head[:300]!r}")
    events = body.count(b"\nevent: ")  # every frame starts a line: after its chunk's size line, or the frame before
    return {"status": int(head[9:12]), "events": events, "bytes": len(body), "per_second": events / wall,
            "cpu_share": cpu / wall, "blocks": len(blocks), "body_tail": body[-200:].decode(errors="replace")}  # fmt: skip


async def run_one_at_a_time(host, port, request, count, to_first_byte: bool) -> dict:
    """`count` requests one after another on one connection, each timed to the first byte of its
    body, or to the end of the response."""
    reader, writer = await asyncio.open_connection(host, port)
    latencies: list[float] = []
    errors = 0
    for _ in range(3):  # the connection's first requests (imports, caches) are not what is measured
        writer.write(request)
        await read_response(reader)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(count):
        sent = time.perf_counter()
        first: list[float] = []
        writer.write(request)
        status, _ = await read_response(reader, lambda first=first: first.append(time.perf_counter()))
        latencies.append((first[0] if to_first_byte else time.perf_counter()) - sent)
        errors += status != 200
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    writer.close()
    return {"requests": count, "errors": errors, "per_second": count / wall, "cpu_share": cpu / wall,
            **percentiles(latencies)}  # fmt: skip


class StreamClient(asyncio.Protocol):
    """One keep-alive connection reading streamed responses, with a callback per read, not a task.

    Each read's SSE events are counted (`data: ` lines, across read boundaries); a read that brings
    events after an earlier one on the same stream records the gap between the two arrivals. Events
    that arrive in one read count once: a stream whose events bunch up shows its long gaps, not a
    run of zero gaps that would hide them. The response ends at its last chunk (`0`, empty trailer)
    or its Content-Length."""

    def __init__(self, run: StreamRun):
        self.run = run
        self.done: asyncio.Future | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def send(self, request: bytes) -> asyncio.Future:
        self.done = asyncio.get_running_loop().create_future()
        self.head, self.body, self.tail = b"", None, b""
        self.length = None  # of a Content-Length body; None for a chunked one
        self.events, self.last = 0, None
        self.kept = [] if len(self.run.kept) < self.run.keep else None
        self.sent = time.perf_counter()
        self.transport.write(request)
        return self.done

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        if self.body is None:  # still in the head
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            data, self.head = self.head[end + 4 :], self.head[: end + 4]
            self.body = 0
            self.status = int(self.head[9:12])
            lower = self.head.lower()
            if b"transfer-encoding: chunked" not in lower:
                start = lower.index(b"content-length:") + 15
                self.length = int(lower[start : lower.index(b"\r\n", start)])
        self.body += len(data)
        if self.kept is not None:
            self.kept.append(data)
        seen = self.tail + data
        found = seen.count(b"data: ") - self.tail.count(b"data: ")
        self.tail = seen[-8:]
        if found:
            if self.last is None:
                self.run.first_event(now - self.sent)
            elif self.run.measuring:
                self.run.gaps.append(now - self.last)
            self.last = now
            self.events += found
        if self.finished():
            self.run.ended(self)
            self.done.set_result(None)

    def finished(self) -> bool:
        if self.length is not None:
            return self.body >= self.length
        return self.tail.endswith(b"\r\n0\r\n\r\n") or self.body == 5  # the last chunk, or an empty body's only one

    def connection_lost(self, exc) -> None:
        if self.done is not None and not self.done.done():
            self.run.broken += 1
            self.done.set_result(None)


class StreamRun:
    """What the `streams` mode saw, shared by its connections."""

    def __init__(self, keep: int, once: bool):
        self.keep = keep
        self.once = once  # one stream a connection: every first event counts, gaps until a stream ends
        self.kept: list[bytes] = []  # the first `keep` responses, raw (head, chunk framing and all)
        self.measuring = False
        self.first_events: list[float] = []
        self.gaps: list[float] = []
        self.completed = self.all_completed = self.errors = self.events = self.broken = 0
        self.first_error: str | None = None

    def first_event(self, seconds: float) -> None:
        if self.measuring or self.once:
            self.first_events.append(seconds)

    def ended(self, stream: StreamClient) -> None:
        self.all_completed += 1
        self.events += stream.events
        if stream.kept is not None and len(self.kept) < self.keep:
            self.kept.append(stream.head + b"".join(stream.kept))
        if stream.status != 200 or not stream.events:
            self.errors += 1
            if self.first_error is None:
                self.first_error = f"{stream.status} {b''.join(stream.kept or [])[:300].decode(errors='replace')}"
        elif self.measuring or self.once:
            self.completed += 1
            if self.once:  # the streams are no longer all open: the gaps measured so far are the ones
                self.measuring = False


async def run_streams(host, port, request, connections, seconds, warmup, ramp, once, keep) -> dict:
    run = StreamRun(keep, once)
    loop = asyncio.get_running_loop()
    stop = False

    async def worker(delay: float) -> None:
        await asyncio.sleep(delay)
        try:
            _, client = await loop.create_connection(lambda: StreamClient(run), host, port)
        except OSError as exc:
            run.broken += 1
            run.first_error = run.first_error or f"connect: {exc}"
            return
        try:
            while not stop:
                await client.send(request)
                if once or client.transport.is_closing():
                    return
        finally:
            client.transport.close()

    tasks = [asyncio.create_task(worker(ramp * i / connections)) for i in range(connections)]
    await asyncio.sleep(ramp + warmup)
    run.measuring = not (once and run.all_completed)  # once: while every stream is open
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if once:
        await asyncio.gather(*tasks)
    else:
        await asyncio.sleep(seconds)
    run.measuring = False
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    stop = True
    await asyncio.gather(*tasks)  # each connection's last stream is read to its end
    gaps = sorted(run.gaps)
    result = {"streams": run.completed, "all_streams": run.all_completed, "events": run.events, "errors": run.errors,
              "broken": run.broken, "per_second": run.completed / wall, "cpu_share": cpu / wall,
              "first_event": percentiles(run.first_events), "gaps": len(gaps),
              "gap_p50_ms": statistics.median(gaps) * 1000 if gaps else float("nan"),
              "gap_p99_ms": gaps[min(len(gaps) - 1, int(len(gaps) * 0.99))] * 1000 if gaps else float("nan"),
              "gap_max_ms": gaps[-1] * 1000 if gaps else float("nan"), "first_error": run.first_error}  # fmt: skip
    return result, run.kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--body", required=True, help="the JSON request body, or @FILE to read it from FILE")
    parser.add_argument("--header", action="append", default=[], help="an extra request header, `Name: value`")
    parser.add_argument(
        "--mode", choices=("requests", "stream", "first-byte", "latency", "streams"), default="requests"
    )
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--ramp", type=float, default=0.0, help="streams: seconds over which the connections start")
    parser.add_argument("--once", action="store_true", help="streams: one request a connection")
    parser.add_argument("--keep", type=Path, help="streams: write the first responses here, raw, one file each")
    parser.add_argument("--keep-count", type=int, default=3)
    args = parser.parse_args()
    body = Path(args.body[1:]).read_bytes() if args.body.startswith("@") else args.body.encode()
    host, port, request = request_bytes(args.url, body, args.header)
    if args.mode == "requests":
        result = asyncio.run(run_requests(host, port, request, args.connections, args.seconds, args.warmup))
    elif args.mode == "streams":
        keep = args.keep_count if args.keep else 0
        result, kept = asyncio.run(run_streams(host, port, request, args.connections, args.seconds, args.warmup,
                                               args.ramp, args.once, keep))  # fmt: skip
        args.keep and args.keep.mkdir(parents=True, exist_ok=True)
        for i, raw in enumerate(kept):
            (args.keep / f"stream-{i}.http").write_bytes(raw)
    elif args.mode == "stream":
        result = run_stream(host, port, request)
    else:
        first = args.mode == "first-byte"
        result = asyncio.run(run_one_at_a_time(host, port, request, args.count, to_first_byte=first))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
