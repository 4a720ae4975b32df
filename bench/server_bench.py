"""The Open Responses server against bare Starlette endpoints doing the least possible work.

- streaming: events/s of one long streamed response (`--events` text deltas) through
  `create_app`, against a bare endpoint that writes the same pre-rendered SSE frames, one chunk
  per event as the server does;
- non-streaming: requests/s of small `POST /v1/responses` calls (`--concurrency` at a time),
  against a bare endpoint returning the same JSON bytes.

Each server runs in its own process on loopback (uvicorn, one worker); the client is httpx.
Servers alternate in one run; medians of `--repeat` rounds and the ratios are printed.

    python bench/server_bench.py [--events 20000] [--requests 2000] [--concurrency 16] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
KEY = "bench-key"


class _Deltas:
    """A provider that streams `n` text deltas as fast as it can."""

    def __init__(self, n: int):
        self.n = n

    async def respond(self, request):
        from openresponses_runtime.server import MessageStart, TextDelta

        n = self.n if request.body is not None and request.body.stream else 8
        yield MessageStart()
        for _ in range(n):
            yield TextDelta("token ")


def make_server_app(events: int):
    from openresponses_runtime.server import MemoryStore, create_app

    return create_app(_Deltas(events), store=MemoryStore(), api_keys=KEY)


def make_bare_app(stream_body: bytes, json_body: bytes):
    from starlette.applications import Starlette
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    frames = [frame + b"\n\n" for frame in stream_body.split(b"\n\n") if frame]

    async def endpoint(request):
        body = await request.body()
        if b'"stream":true' in body.replace(b" ", b""):

            async def gen():
                for frame in frames:
                    yield frame

            return StreamingResponse(gen(), media_type="text/event-stream")
        return Response(json_body, media_type="application/json")

    return Starlette(routes=[Route("/v1/responses", endpoint, methods=["POST"])])


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(kind: str, port: int, events: int, fixtures: Path | None) -> None:
    import uvicorn

    if kind == "server":
        app = make_server_app(events)
    else:
        assert fixtures is not None
        app = make_bare_app((fixtures / "stream.txt").read_bytes(), (fixtures / "response.json").read_bytes())
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", access_log=False)


def _start(kind: str, events: int, fixtures: Path | None) -> tuple[subprocess.Popen, str]:
    port = _port()
    cmd = [sys.executable, __file__, "--serve", kind, "--port", str(port), "--events", str(events)]
    if fixtures is not None:
        cmd += ["--fixtures", str(fixtures)]
    proc = subprocess.Popen(cmd, cwd=ROOT)
    base = f"http://127.0.0.1:{port}/v1/responses"
    deadline = time.monotonic() + 20
    while True:
        try:
            httpx.get(base, timeout=1)
            return proc, base
        except httpx.TransportError:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"{kind} server did not start") from None
            time.sleep(0.05)


HEADERS = {"Authorization": f"Bearer {KEY}"}


def stream_round(base: str) -> tuple[float, int, bytes]:
    start = time.perf_counter()
    with httpx.stream("POST", base, json={"input": "x", "stream": True}, headers=HEADERS, timeout=120) as r:
        body = r.read()
    elapsed = time.perf_counter() - start
    return elapsed, body.count(b"\nevent: ") + body.startswith(b"event: "), body


async def _requests(base: str, total: int, concurrency: int) -> float:
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=concurrency), timeout=60) as client:
        queue = iter(range(total))

        async def worker():
            for _ in queue:
                r = await client.post(base, json={"input": "hello"}, headers=HEADERS)
                assert r.status_code == 200, r.text

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serve", choices=("server", "bare"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--fixtures", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve, args.port, args.events, args.fixtures)
        return 0

    import tempfile

    fixtures = Path(tempfile.mkdtemp(prefix="orspec-server-bench-"))
    server, server_url = _start("server", args.events, None)
    try:
        _, _, stream_body = stream_round(server_url)
        response = httpx.post(server_url, json={"input": "hello"}, headers=HEADERS).content
        (fixtures / "stream.txt").write_bytes(stream_body)
        (fixtures / "response.json").write_bytes(response)
        bare, bare_url = _start("bare", args.events, fixtures)
        try:
            results: dict[str, dict[str, list[float]]] = {"server": {"s": [], "r": []}, "bare": {"s": [], "r": []}}
            for _ in range(args.repeat):
                for name, url in (("server", server_url), ("bare", bare_url)):
                    elapsed, events, _ = stream_round(url)
                    results[name]["s"].append(events / elapsed)
                    elapsed = asyncio.run(_requests(url, args.requests, args.concurrency))
                    results[name]["r"].append(args.requests / elapsed)
        finally:
            bare.kill()
    finally:
        server.kill()
    s = {k: statistics.median(v["s"]) for k, v in results.items()}
    r = {k: statistics.median(v["r"]) for k, v in results.items()}
    print(
        f"streamed events/s   server {s['server']:>10,.0f}   bare {s['bare']:>10,.0f}   ratio {s['server'] / s['bare']:.2f}"
    )
    print(
        f"non-streaming req/s server {r['server']:>10,.0f}   bare {r['bare']:>10,.0f}   ratio {r['server'] / r['bare']:.2f}"
    )
    print(json.dumps({"events": args.events, "requests": args.requests, "concurrency": args.concurrency}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
