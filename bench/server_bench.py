"""The Open Responses server against two peers serving the same bytes, side by side in one run.

Servers, each in its own process on loopback under the same uvicorn settings (one worker, no
access log), all with the same bench provider output:

- `orspec`: `create_app` with an in-memory store (`MemoryStore`, no artificial delay) and a
  provider that streams text deltas: `--events` of them when the input is "long", else 8;
- `starlette`: a minimal Starlette endpoint that reads the body and returns the bytes orspec
  produced (the JSON response, or the pre-rendered SSE frames, one chunk per event);
- `fastapi`: a FastAPI endpoint that validates the body with openresponses-types'
  `CreateResponseBody` (what a team would write by hand with that library) and returns the same bytes.

The load generator is `bench/loadgen.py`, a raw HTTP/1.1 keep-alive client in its own process
(asyncio; a blocking socket with a large receive buffer for the long stream); every row prints its
CPU share, so a client near a full core is seen. Server CPU is
read from the server process (psutil) around each run. Figures:

- non-streaming requests/s: `POST /v1/responses` `{"input": "hello"}`, `--connections` at a time;
- streamed events/s: one long streamed response (`--events` deltas);
- first SSE byte: p50 time to the first body byte of short streamed responses, one at a time.

Medians of `--repeat` rounds, servers alternating in each round; ratios to the peers and every
goal printed MET or NOT MET.

    python bench/server_bench.py [--events 100000] [--seconds 5] [--connections 32] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil
from openresponses_types import CreateResponseBody  # a module global, so FastAPI resolves the annotation

ROOT = Path(__file__).resolve().parents[1]
LOADGEN = Path(__file__).with_name("loadgen.py")
KEY = "bench-key"
HEADERS = {"Authorization": f"Bearer {KEY}"}
SMALL = {"input": "hello"}
LONG_STREAM = {"input": "long", "stream": True}
SHORT_STREAM = {"input": "hello", "stream": True}
SERVERS = ("orspec", "starlette", "fastapi")


class _Deltas:
    """A provider that streams text deltas as fast as it can: `n` for the input "long", else 8."""

    def __init__(self, n: int):
        self.n = n

    async def respond(self, request):
        from openresponses_runtime.server import MessageStart, TextDelta

        text = request.input[-1]["content"][0]["text"] if request.input else ""
        yield MessageStart()
        for _ in range(self.n if text == "long" else 8):
            yield TextDelta("token ")


def make_orspec_app(events: int):
    from openresponses_runtime.server import MemoryStore, create_app

    return create_app(_Deltas(events), store=MemoryStore(), api_keys=KEY)


def _frames(body: bytes) -> list[bytes]:
    return [frame + b"\n\n" for frame in body.split(b"\n\n") if frame]


def _pick(fixtures: Path):
    """The recorded bytes for a request body: the JSON response, or the frames of a stream."""
    json_body = (fixtures / "response.json").read_bytes()
    long_frames = _frames((fixtures / "long.sse").read_bytes())
    short_frames = _frames((fixtures / "short.sse").read_bytes())

    def pick(data: dict) -> tuple[bytes | None, list[bytes] | None]:
        if not data.get("stream"):
            return json_body, None
        return None, long_frames if data.get("input") == "long" else short_frames

    return pick


def _stream(frames: list[bytes]):
    from starlette.responses import StreamingResponse

    async def gen():
        for frame in frames:
            yield frame

    return StreamingResponse(gen(), media_type="text/event-stream")


def make_starlette_app(fixtures: Path):
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    pick = _pick(fixtures)

    async def endpoint(request):
        json_body, frames = pick(json.loads(await request.body()))
        return _stream(frames) if frames is not None else Response(json_body, media_type="application/json")

    return Starlette(routes=[Route("/v1/responses", endpoint, methods=["POST"])])


def make_fastapi_app(fixtures: Path):
    from fastapi import FastAPI
    from starlette.responses import Response

    pick = _pick(fixtures)
    app = FastAPI()

    @app.post("/v1/responses")
    async def create_response(body: CreateResponseBody):
        json_body, frames = pick({"stream": body.stream, "input": body.input.root if body.input else None})
        return _stream(frames) if frames is not None else Response(json_body, media_type="application/json")

    return app


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(kind: str, port: int, events: int, fixtures: Path | None) -> None:
    import uvicorn

    if kind == "orspec":
        app = make_orspec_app(events)
    elif kind == "starlette":
        app = make_starlette_app(fixtures)
    else:
        app = make_fastapi_app(fixtures)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", access_log=False)


def _start(kind: str, events: int, fixtures: Path | None) -> tuple[subprocess.Popen, str]:
    port = _port()
    cmd = [sys.executable, __file__, "--serve", kind, "--port", str(port), "--events", str(events)]
    if fixtures is not None:
        cmd += ["--fixtures", str(fixtures)]
    proc = subprocess.Popen(cmd, cwd=ROOT)
    base = f"http://127.0.0.1:{port}/v1/responses"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(base, timeout=1)
            return proc, base
        except httpx.TransportError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError(f"{kind} server did not start") from None
            time.sleep(0.05)


def _cpu(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


def load(url: str, server: psutil.Process, body: dict, mode: str, args) -> dict:
    """One loadgen run against `url`; its JSON result plus the server's CPU seconds over the run."""
    cmd = [sys.executable, str(LOADGEN), url, "--body", json.dumps(body), "--header", f"Authorization: Bearer {KEY}"]
    cmd += ["--mode", mode, "--connections", str(args.connections), "--seconds", str(args.seconds)]
    cmd += ["--count", str(args.count)]
    before = _cpu(server)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    result["server_cpu"] = _cpu(server) - before
    if result.get("errors") or result.get("status", 200) != 200:
        raise SystemExit(f"{url}: the server answered with errors: {result}")
    return result


def record(url: str, fixtures: Path, events: int) -> None:
    """orspec's own bytes for the three requests, for the peers to send back."""
    (fixtures / "response.json").write_bytes(httpx.post(url, json=SMALL, headers=HEADERS).content)
    for name, body in (("long.sse", LONG_STREAM), ("short.sse", SHORT_STREAM)):
        content = httpx.post(url, json=body, headers=HEADERS, timeout=120).content
        (fixtures / name).write_bytes(content)
    count = (fixtures / "long.sse").read_bytes().count(b"event: response.output_text.delta\n")
    assert count == events, f"recorded {count} deltas, expected {events}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100000)
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds of each requests run")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--count", type=int, default=300, help="short streams per first-byte run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serve", choices=SERVERS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--fixtures", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve, args.port, args.events, args.fixtures)
        return 0

    fixtures = Path(tempfile.mkdtemp(prefix="orspec-server-bench-"))
    procs: dict[str, subprocess.Popen] = {}
    urls: dict[str, str] = {}
    runs: dict[str, dict[str, list[dict]]] = {
        name: {"requests": [], "stream": [], "first-byte": []} for name in SERVERS
    }
    try:
        procs["orspec"], urls["orspec"] = _start("orspec", args.events, None)
        record(urls["orspec"], fixtures, args.events)
        for name in SERVERS[1:]:
            procs[name], urls[name] = _start(name, args.events, fixtures)
        watched = {name: psutil.Process(proc.pid) for name, proc in procs.items()}
        for _ in range(args.repeat):
            for name in SERVERS:
                runs[name]["requests"].append(load(urls[name], watched[name], SMALL, "requests", args))
                runs[name]["stream"].append(load(urls[name], watched[name], LONG_STREAM, "stream", args))
                runs[name]["first-byte"].append(load(urls[name], watched[name], SHORT_STREAM, "first-byte", args))
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()

    def med(name: str, mode: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[name][mode])

    def cpu_per(name: str, mode: str, unit: str) -> float:  # server CPU µs per request or per event
        return statistics.median(run["server_cpu"] / run[unit] for run in runs[name][mode]) * 1e6

    print(
        f"server_bench: {args.repeat} rounds, servers alternating; requests: {args.connections} connections for "
        f"{args.seconds:g} s; stream: {args.events} deltas; first byte: {args.count} short streams one at a time"
    )
    print(f"{'server':10} {'req/s':>8} {'p50 ms':>7} {'srv µs/req':>10} {'client cpu':>10}   "
          f"{'events/s':>9} {'srv µs/ev':>9} {'client cpu':>10}   {'1st byte p50 ms':>15} {'client cpu':>10}")  # fmt: skip
    for name in SERVERS:
        print(
            f"{name:10} {med(name, 'requests', 'per_second'):8,.0f} {med(name, 'requests', 'p50_ms'):7.2f} "
            f"{cpu_per(name, 'requests', 'all_requests'):10.0f} {med(name, 'requests', 'cpu_share'):10.0%}   "
            f"{med(name, 'stream', 'per_second'):9,.0f} {cpu_per(name, 'stream', 'events'):9.1f} "
            f"{med(name, 'stream', 'cpu_share'):10.0%}   "
            f"{med(name, 'first-byte', 'p50_ms'):15.2f} {med(name, 'first-byte', 'cpu_share'):10.0%}"
        )
    goals = [
        ("non-streaming req/s, orspec / starlette", "requests", "per_second", "starlette", ">=", 0.7),
        ("non-streaming req/s, orspec / fastapi + openresponses-types", "requests", "per_second", "fastapi", ">=", 1.2),
        ("streamed events/s (long response), orspec / starlette", "stream", "per_second", "starlette", ">=", 0.9),
        ("first SSE byte p50, orspec / starlette", "first-byte", "p50_ms", "starlette", "<=", 1.5),
    ]
    print("\ngoals:")
    for label, mode, key, peer, op, target in goals:
        ratio = med("orspec", mode, key) / med(peer, mode, key)
        met = ratio >= target if op == ">=" else ratio <= target
        print(f"  {label:62} {ratio:5.2f}x  (goal {op} {target}x)  {'MET' if met else 'NOT MET'}")
    print(json.dumps({"events": args.events, "seconds": args.seconds, "connections": args.connections,
                      "count": args.count, "repeat": args.repeat, "pid": os.getpid()}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
