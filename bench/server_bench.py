"""What users run, against a minimal app and a peer serving the same bytes, side by side in one run.

Every server is its own process on loopback, started through its command line as a user starts it:

- `serve`: `orspec serve --store memory: --delay 0` (the demo model, which echoes the input in
  word-sized deltas; metrics, request ids and traces on, as they are when the extra is installed);
- `serve-w2`: `orspec serve --workers 2` on a SQLite file (`memory:` lives in one process, so
  this row also writes every response to SQLite: it is not comparable with the others' store);
- `proxy`: `orspec proxy --record DIR --quiet` in front of `serve` (its CPU is both processes');
- `scaffold`: `python -m bench_provider --store memory:`, a project from `orspec scaffold provider`
  as generated (the demo model, no delay);
- `starlette`: a minimal Starlette endpoint that reads the body and returns the bytes `serve`
  produced (the JSON response, or the recorded SSE frames, one chunk per event);
- `fastapi`: a FastAPI endpoint that validates the body with openresponses-types'
  `CreateResponseBody` (what a team would write by hand with that library), the same bytes back.

The last two run under uvicorn with the settings `orspec serve` gives it (`serving.serve`:
httptools, its keep-alive timeout and connection limit, the asyncio loop), with uvicorn's own
protocol (without the runtime's deadlines on the way in, and its head and body written apart).
The load generator is `bench/loadgen.py`, in its own process; every figure prints its CPU share, so
a client near a full core is seen. Server CPU is read from the server's process tree (psutil).

- requests: `POST /v1/responses` `{"input": "hello"}` on `--connections` keep-alive connections:
  requests/s, with p50 and p99 latency under that load;
- latency: the same request one at a time on one keep-alive connection, p50 and p99 of the time to
  the whole response: a stall that throughput hides (a write held back) shows here;
- stream: one streamed response of `--events` deltas (the input is that many words), events/s;
- first byte: `--count` short streamed responses one at a time, p50 and p99 time to the first body byte.

Medians of `--repeat` rounds, servers alternating in each round. Each goal's ratio (`serve` to the
minimal app or the peer) is the median of the rounds' own ratios, each taken from two runs a few
seconds apart (a shared machine's speed drifts over minutes); each is printed MET or NOT MET, then
one `results:` JSON line.

    python bench/server_bench.py [--events 50000] [--seconds 4] [--connections 32] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
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
SHORT_STREAM = {"input": "hello", "stream": True}
SERVERS = ("serve", "serve-w2", "proxy", "scaffold", "starlette", "fastapi")
PACKAGE = "bench_provider"
START_SECONDS = 60  # a server that does not answer by then has failed to start
RUN_SECONDS = 600  # one load generator run, at most


def long_stream(events: int) -> dict:
    """A streamed request the demo model answers with `events` deltas ("You ", "said: ", then one per word)."""
    return {"input": " ".join(["token"] * (events - 2)), "stream": True}


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
        return None, short_frames if data.get("input") == "hello" else long_frames

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
        text = body.input.root if body.input else None
        json_body, frames = pick({"stream": body.stream, "input": text})
        return _stream(frames) if frames is not None else Response(json_body, media_type="application/json")

    return app


def uvicorn_settings() -> dict:
    """The uvicorn settings `orspec serve` runs with (`serving.serve` and its default `Limits`),
    but uvicorn's own httptools protocol: what the minimal app and the peer run under."""
    from openresponses_runtime.server.serving import Limits

    limits = Limits()
    return {
        "http": "httptools",
        "loop": "asyncio",
        "timeout_keep_alive": limits.keep_alive_timeout,
        "limit_concurrency": limits.max_connections,
        "log_level": "warning",
    }


def _serve_peer(kind: str, port: int, fixtures: Path) -> None:
    import uvicorn

    app = make_starlette_app(fixtures) if kind == "starlette" else make_fastapi_app(fixtures)
    uvicorn.run(app, host="127.0.0.1", port=port, **uvicorn_settings())


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def commands(work: Path, fixtures: Path, ports: dict[str, int]) -> dict[str, tuple[list[str], dict]]:
    """Each server's command line and environment."""
    python, env = sys.executable, dict(os.environ)
    orspec = [python, "-m", "orspec"]
    serve = [*orspec, "serve", "--api-key", KEY, "--delay", "0"]
    scaffold_env = {**env, "PYTHONPATH": str(work / "provider" / "src")}
    peer = [python, __file__, "--fixtures", str(fixtures), "--port"]
    return {
        "serve": ([*serve, "--store", "memory:", "--port", str(ports["serve"])], env),
        "serve-w2": ([*serve, "--workers", "2", "--store", str(work / "w2.sqlite3"), "--port", str(ports["serve-w2"])], env),
        "proxy": ([*orspec, "proxy", "--upstream", f"http://127.0.0.1:{ports['serve']}", "--record", str(work / "records"),
                   "--quiet", "--port", str(ports["proxy"])], env),
        "scaffold": ([python, "-m", PACKAGE, "--api-key", KEY, "--store", "memory:", "--port", str(ports["scaffold"])],
                     scaffold_env),
        "starlette": ([*peer, str(ports["starlette"]), "--serve", "starlette"], env),
        "fastapi": ([*peer, str(ports["fastapi"]), "--serve", "fastapi"], env),
    }  # fmt: skip


def _shown(cmd: list[str], work: Path) -> str:
    """`cmd` as a reader would type it: `python`, this file's path from the checkout, `$TMP` for the run's folder."""
    parts = ["python" if part == sys.executable else part for part in cmd]
    return " ".join(parts).replace(str(Path(__file__)), "bench/server_bench.py").replace(str(work), "$TMP")


def _start(name: str, cmd: list[str], env: dict, port: int, log: Path, *, cwd: Path = ROOT) -> subprocess.Popen:
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1/responses"
    deadline = time.monotonic() + START_SECONDS
    answered = 0
    while answered < 4:  # a few answers: with workers, more than one of them is up
        try:
            httpx.post(url, json=SMALL, headers=HEADERS, timeout=5).raise_for_status()
            answered += 1
        except httpx.TransportError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit(f"{name} did not start: {' '.join(cmd)}\n{log.read_text()[-2000:]}") from None
            time.sleep(0.1)
    return proc


def _tree_cpu(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        for p in [proc, *proc.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                times = p.cpu_times()
                total += times.user + times.system
    return total


def load(url: str, watched: list[psutil.Process], body: dict, mode: str, args) -> dict:
    """One loadgen run against `url`; its JSON result plus the server's CPU seconds over the run."""
    with tempfile.NamedTemporaryFile(suffix=".json") as file:  # a long stream's request is too long for a command line
        file.write(json.dumps(body).encode())
        file.flush()
        cmd = [sys.executable, str(LOADGEN), url, "--body", f"@{file.name}", "--header", f"Authorization: Bearer {KEY}"]
        cmd += ["--mode", mode, "--connections", str(args.connections), "--seconds", str(args.seconds)]
        cmd += ["--count", str(args.count)]
        before = _tree_cpu(watched)
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=RUN_SECONDS).stdout
    result = json.loads(out)
    result["server_cpu"] = _tree_cpu(watched) - before
    if result.get("errors") or result.get("status", 200) != 200:
        raise SystemExit(f"{url}: the server answered with errors: {result}")
    return result


def record(url: str, fixtures: Path, events: int) -> None:
    """`orspec serve`'s own bytes for the three requests, for the minimal app and the peer to send back."""
    (fixtures / "response.json").write_bytes(httpx.post(url, json=SMALL, headers=HEADERS, timeout=30).content)
    for name, body in (("long.sse", long_stream(events)), ("short.sse", SHORT_STREAM)):
        content = httpx.post(url, json=body, headers=HEADERS, timeout=300).content
        (fixtures / name).write_bytes(content)
    count = (fixtures / "long.sse").read_bytes().count(b"event: response.output_text.delta\n")
    assert count == events, f"recorded {count} deltas, expected {events}"


def stop(procs) -> None:
    """End every server: all asked at once, then each given 30 s before it is killed."""
    procs = list(procs)
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50000, help="deltas in the long stream")
    parser.add_argument("--seconds", type=float, default=4.0, help="measured seconds of each requests run")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--count", type=int, default=300, help="requests one at a time per latency or first-byte run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=SERVERS, default=list(SERVERS), help="servers to measure")
    parser.add_argument("--serve", choices=("starlette", "fastapi"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--fixtures", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve_peer(args.serve, args.port, args.fixtures)
        return 0

    names = [name for name in SERVERS if name in args.only or name == "serve"]  # serve records the bytes
    work = Path(tempfile.mkdtemp(prefix="orspec-server-bench-"))
    fixtures = work / "fixtures"
    fixtures.mkdir()
    ports = {name: _port() for name in SERVERS}
    cmds = commands(work, fixtures, ports)
    procs: dict[str, subprocess.Popen] = {}
    urls = {name: f"http://127.0.0.1:{ports[name]}/v1/responses" for name in SERVERS}
    runs: dict[str, dict[str, list[dict]]] = {
        name: {mode: [] for mode in ("requests", "latency", "stream", "first-byte")} for name in names
    }
    try:
        if "scaffold" in names:
            scaffold = [sys.executable, "-m", "orspec", "scaffold", "provider", "bench-provider"]
            subprocess.run([*scaffold, "--out", str(work / "provider")], check=True, capture_output=True, timeout=120)
        procs["serve"] = _start("serve", *cmds["serve"], ports["serve"], work / "serve.log")
        record(urls["serve"], fixtures, args.events)
        for name in names[1:]:
            procs[name] = _start(name, *cmds[name], ports[name], work / f"{name}.log")
        watched = {name: [psutil.Process(proc.pid)] for name, proc in procs.items()}
        if "proxy" in watched:
            watched["proxy"].append(psutil.Process(procs["serve"].pid))
        bodies = {"requests": SMALL, "latency": SMALL, "stream": long_stream(args.events), "first-byte": SHORT_STREAM}
        for _ in range(args.repeat):
            for name in names:
                for mode, body in bodies.items():
                    runs[name][mode].append(load(urls[name], watched[name], body, mode, args))
    finally:
        stop(procs.values())
        shutil.rmtree(work, ignore_errors=True)

    def med(name: str, mode: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[name][mode])

    def cpu_per(name: str, mode: str, unit: str) -> float:  # server CPU µs per request or per event
        return statistics.median(run["server_cpu"] / run[unit] for run in runs[name][mode]) * 1e6

    figures = {
        name: {
            "command": _shown(cmds[name][0], work),
            "requests_per_second": med(name, "requests", "per_second"),
            "loaded_p50_ms": med(name, "requests", "p50_ms"),
            "loaded_p99_ms": med(name, "requests", "p99_ms"),
            "server_us_per_request": cpu_per(name, "requests", "all_requests"),
            "requests_client_cpu": med(name, "requests", "cpu_share"),
            "latency_p50_ms": med(name, "latency", "p50_ms"),
            "latency_p99_ms": med(name, "latency", "p99_ms"),
            "latency_client_cpu": med(name, "latency", "cpu_share"),
            "events_per_second": med(name, "stream", "per_second"),
            "server_us_per_event": cpu_per(name, "stream", "events"),
            "stream_client_cpu": med(name, "stream", "cpu_share"),
            "first_byte_p50_ms": med(name, "first-byte", "p50_ms"),
            "first_byte_p99_ms": med(name, "first-byte", "p99_ms"),
            "first_byte_client_cpu": med(name, "first-byte", "cpu_share"),
        }
        for name in names
    }
    print(
        f"server_bench: {args.repeat} rounds, servers alternating; requests: {args.connections} connections for "
        f"{args.seconds:g} s; latency and first byte: {args.count} requests one at a time on one connection; "
        f"stream: {args.events} deltas; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}"
    )
    for name in names:
        print(f"  {name:9} {figures[name]['command']}")
    print(f"\n{'':9} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'srv µs':>7} {'client':>6} | "
          f"{'1-at-a-time p50':>15} {'p99':>6} | {'events/s':>8} {'srv µs':>6} {'client':>6} | "
          f"{'1st byte p50':>12} {'p99':>6}")  # fmt: skip
    for name in names:
        f = figures[name]
        print(
            f"{name:9} {f['requests_per_second']:7,.0f} {f['loaded_p50_ms']:7.2f} {f['loaded_p99_ms']:7.2f} "
            f"{f['server_us_per_request']:7.0f} {f['requests_client_cpu']:6.0%} | {f['latency_p50_ms']:15.2f} "
            f"{f['latency_p99_ms']:6.2f} | {f['events_per_second']:8,.0f} {f['server_us_per_event']:6.1f} "
            f"{f['stream_client_cpu']:6.0%} | {f['first_byte_p50_ms']:12.2f} {f['first_byte_p99_ms']:6.2f}"
        )
    print("(srv µs: the server's CPU per request or per event; client: the load generator's CPU share of one core)")

    # Throughput twice: wall-clock (what a client sees) and per server CPU second (what it is when the
    # server has a core of its own; steadier on a shared machine). A goal is met only when both are.
    def wall(run: dict) -> float:
        return run["per_second"]

    def per_cpu(unit: str):
        return lambda run: run[unit] / run["server_cpu"]

    def p50(run: dict) -> float:
        return run["p50_ms"]

    peer = "FastAPI + openresponses-types"
    goals = [
        ("non-streaming req/s, orspec serve / minimal Starlette app", "requests", wall, "starlette", ">=", 0.8),
        ("non-streaming req per server CPU s, orspec serve / minimal Starlette app", "requests", per_cpu("all_requests"), "starlette", ">=", 0.8),
        (f"non-streaming req/s, orspec serve / {peer}", "requests", wall, "fastapi", ">=", 1.5),
        (f"non-streaming req per server CPU s, orspec serve / {peer}", "requests", per_cpu("all_requests"), "fastapi", ">=", 1.5),
        ("p50 latency one at a time, orspec serve / minimal Starlette app", "latency", p50, "starlette", "<=", 1.2),
        ("streamed events/s, orspec serve / minimal Starlette app", "stream", wall, "starlette", ">=", 1.0),
        ("streamed events per server CPU s, orspec serve / minimal Starlette app", "stream", per_cpu("events"), "starlette", ">=", 1.0),
        ("first SSE byte p50, orspec serve / minimal Starlette app", "first-byte", p50, "starlette", "<=", 1.5),
    ]  # fmt: skip
    print("\ngoals (each the median of the rounds' ratios: servers measured minutes apart drift apart):")
    ratios = {}
    for label, mode, value, other, op, target in goals:
        if other not in figures:
            continue
        ratio = statistics.median(
            value(mine) / value(theirs) for mine, theirs in zip(runs["serve"][mode], runs[other][mode], strict=True)
        )
        ratios[label] = ratio
        met = ratio >= target if op == ">=" else ratio <= target
        print(f"  {label:84} {ratio:5.2f}x  (goal {op} {target}x)  {'MET' if met else 'NOT MET'}")
    settings = {"events": args.events, "seconds": args.seconds, "connections": args.connections,
                "count": args.count, "repeat": args.repeat}  # fmt: skip
    print("results: " + json.dumps({"settings": settings, "servers": figures, "ratios": ratios}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
