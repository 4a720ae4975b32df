"""A raw HTTP/1.1 keep-alive load generator, run as its own process by the benchmarks.

It sends one fixed POST over and over and prints one JSON line with what it saw and its own CPU
share (CPU seconds / wall seconds of the measured window), so a reader can tell that the figure
measures the server, not the client. Four modes:

- `requests`: `--connections` keep-alive connections, each sending the request again as soon as the
  response is read, for `--seconds` after `--warmup`; requests/s and latency percentiles;
- `stream`: one request on one blocking socket; the SSE events counted in the raw body, events/s;
- `first-byte`: `--count` requests one after another on one connection; the time from sending
  to the first byte of the response body (percentiles), each body then read to its end;
- `latency`: the same, one request at a time, timed to the end of each response: what one client
  waits when the server is idle (a write the server holds back shows here, not in requests/s).

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--body", required=True, help="the JSON request body, or @FILE to read it from FILE")
    parser.add_argument("--header", action="append", default=[], help="an extra request header, `Name: value`")
    parser.add_argument("--mode", choices=("requests", "stream", "first-byte", "latency"), default="requests")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--count", type=int, default=500)
    args = parser.parse_args()
    body = Path(args.body[1:]).read_bytes() if args.body.startswith("@") else args.body.encode()
    host, port, request = request_bytes(args.url, body, args.header)
    if args.mode == "requests":
        result = asyncio.run(run_requests(host, port, request, args.connections, args.seconds, args.warmup))
    elif args.mode == "stream":
        result = run_stream(host, port, request)
    else:
        first = args.mode == "first-byte"
        result = asyncio.run(run_one_at_a_time(host, port, request, args.count, to_first_byte=first))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
