"""What watching the server costs: non-streaming requests/s with observability on against off.

Two servers, each in its own process on loopback under the same uvicorn settings (one worker, no
access log), both `create_app` with an in-memory store and a provider that streams 8 text deltas:

- `off`: `create_app(...)` as it comes;
- `on`: `create_app(..., observability=True)` with `configure_logging("json")`: Prometheus
  metrics, a request id, one JSON access line per request (written to a file, as a log collector
  would read it) and a span per request (to the no-op tracer: no exporter configured).

The load generator is `bench/loadgen.py` in its own process, `--connections` keep-alive
connections posting `{"input": "hello"}`; its CPU share is printed, so a client near a full core is
seen. Server CPU is read from each server process (psutil) around each run. Medians of `--repeat`
rounds, the two servers alternating in each round. Two figures: wall-clock requests/s, and
requests per second of server CPU, which is what requests/s is when the server has a core of its
own; on a shared machine the first swings with other load, so the goal (on ≥ 0.9× off) is judged
on the second, and both are printed. The machine's own speed drifts too (the same server differs
by a third from one round to the next on a shared VM), so the goal's ratio is the median of each
round's on/off, two runs back to back, rather than a ratio of medians taken minutes apart.

    python bench/observability_bench.py [--seconds 4] [--connections 32] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
LOADGEN = Path(__file__).with_name("loadgen.py")
KEY = "bench-key"
GOAL = 0.9


class _Deltas:
    """A provider that streams 8 text deltas as fast as it can."""

    async def respond(self, request):
        from openresponses_runtime.server import MessageStart, TextDelta

        yield MessageStart()
        for _ in range(8):
            yield TextDelta("token ")


def _serve(kind: str, port: int) -> None:
    import uvicorn
    from openresponses_runtime.server import MemoryStore, create_app
    from openresponses_runtime.server.observability import configure_logging

    observed = kind == "on"
    if observed:
        configure_logging("json")
    app = create_app(_Deltas(), store=MemoryStore(), api_keys=KEY, observability=observed)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", access_log=False)


def _start(kind: str, log: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", kind, "--port", str(port)], cwd=ROOT, stderr=stderr
        )
    base = f"http://127.0.0.1:{port}/v1/responses"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(base, timeout=1)
            return proc, base
        except httpx.TransportError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError(f"the {kind} server did not start (see {log})") from None
            time.sleep(0.05)


def load(url: str, server: psutil.Process, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, str(LOADGEN), url, "--body", json.dumps({"input": "hello"})]
    cmd += ["--header", f"Authorization: Bearer {KEY}", "--mode", "requests"]
    cmd += ["--connections", str(args.connections), "--seconds", str(args.seconds)]
    before = server.cpu_times()
    result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    after = server.cpu_times()
    cpu = after.user + after.system - before.user - before.system
    result["per_cpu_second"] = result["all_requests"] / cpu  # the server's CPU spans the warmup too
    if result.get("errors") or result.get("status", 200) != 200:
        raise SystemExit(f"{url}: the server answered with errors: {result}")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serve", choices=("off", "on"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve, args.port)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        logs = {kind: Path(tmp) / f"{kind}.log" for kind in ("off", "on")}
        servers = {kind: _start(kind, logs[kind]) for kind in ("off", "on")}
        try:
            rates: dict[str, list[float]] = {"off": [], "on": []}
            efficiency: dict[str, list[float]] = {"off": [], "on": []}
            paired: list[float] = []  # each round's on/off, per server CPU second
            for round_ in range(args.repeat):
                for kind in ("off", "on") if round_ % 2 == 0 else ("on", "off"):
                    proc, url = servers[kind]
                    result = load(url, psutil.Process(proc.pid), args)
                    rates[kind].append(result["per_second"])
                    efficiency[kind].append(result["per_cpu_second"])
                    print(
                        f"  round {round_ + 1} {kind:3}  {result['per_second']:8.0f} req/s  {result['per_cpu_second']:6.0f} req per server CPU s  loadgen CPU {result['cpu_share']:.0%}"
                    )
                paired.append(efficiency["on"][-1] / efficiency["off"][-1])
        finally:
            for proc, _ in servers.values():
                proc.terminate()
                proc.wait(10)
        lines = logs["on"].read_text().splitlines()
        assert lines and all(json.loads(line)["logger"] for line in lines), "the observed server logged no JSON line"
    off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
    cpu_off, cpu_on = statistics.median(efficiency["off"]), statistics.median(efficiency["on"])
    print(f"\nmedians of {args.repeat} rounds; the observed server logged {len(lines)} JSON lines")
    print(f"  wall-clock req/s:        off {off:6.0f}  on {on:6.0f}  on/off {on / off:.2f}x")
    print(f"  req per server CPU s:    off {cpu_off:6.0f}  on {cpu_on:6.0f}  on/off {cpu_on / cpu_off:.2f}x")
    ratio = statistics.median(paired)
    print(f"  each round's on/off (req per server CPU s): {' '.join(f'{r:.2f}' for r in paired)}  median {ratio:.2f}x")
    verdict = "MET" if ratio >= GOAL else "NOT MET"
    print("\ngoals:")
    print(
        f"  non-streaming req/s (per server CPU s, median of rounds), metrics + JSON logs on / off  {ratio:5.2f}x  (goal >= {GOAL}x)  {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
