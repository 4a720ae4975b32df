"""Client-side CPU per streamed event: `openresponses_runtime.client.Client` against the openai SDK.

`orspec serve` (the demo model, no delay) runs in its own process and streams one response of
`--deltas` text deltas (it echoes an input of that many words). Each client reads the whole stream
in this process, rounds alternating; the figure is events per CPU-second of this process
(`time.process_time`), so the server's work is not counted. The server's CPU share of each round
is printed too: near a full core, the server and not the client would set the pace.

- `Client (typed, validated)`: `responses.create(stream=True)`: every event validated into its
  model, fed to the response accumulator;
- `Client, check=True`: the same, with the stream checker's state machines on every event;
- `openai SDK`: `responses.create(stream=True)` of the official client (it builds its models
  without validating them).

Goal: the typed, validated Client reads at least 1.5x the SDK's events per CPU-second.

    python bench/client_bench.py [--deltas 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
KEY = "bench-key"
GOAL = 1.5


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start() -> tuple[subprocess.Popen, str]:
    port = _port()
    orspec = [sys.executable, "-m", "orspec"]
    proc = subprocess.Popen(
        [*orspec, "serve", "--port", str(port), "--api-key", KEY, "--store", "memory:", "--delay", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(base + "/responses", timeout=1)
            return proc, base
        except httpx.TransportError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit("orspec serve did not start") from None
            time.sleep(0.1)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of process `pid` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ours(base: str, text: str, *, check: bool):
    from openresponses_runtime.client import Client

    client = Client(base_url=base, api_key=KEY, timeout=300)

    def run() -> tuple[int, str]:
        with client.responses.create(model="bench", input=text, stream=True, check=check) as stream:
            n = sum(1 for _ in stream)
            final = stream.final_response()
        return n, final.status

    return run


def sdk(base: str, text: str):
    from openai import OpenAI

    client = OpenAI(base_url=base, api_key=KEY, timeout=300)

    def run() -> tuple[int, str]:
        n, status = 0, ""
        for event in client.responses.create(model="bench", input=text, stream=True):
            n += 1
            if event.type == "response.completed":
                status = event.response.status
        return n, status

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    text = " ".join(f"w{i % 1000}" for i in range(args.deltas))
    proc, base = _start()
    try:
        runners = {
            "Client (typed, validated)": ours(base, text, check=False),
            "Client, check=True": ours(base, text, check=True),
            "openai SDK": sdk(base, text),
        }
        rates: dict[str, list[float]] = {name: [] for name in runners}
        shares: dict[str, list[float]] = {name: [] for name in runners}
        for run in runners.values():
            run()  # warm up: connections, imports, first-call caches
        for _ in range(args.repeat):
            for name, run in runners.items():
                server_before, wall_before, cpu_before = (
                    _cpu_seconds(proc.pid),
                    time.perf_counter(),
                    time.process_time(),
                )
                events, status = run()
                cpu = time.process_time() - cpu_before
                wall = time.perf_counter() - wall_before
                if status != "completed" or events < args.deltas:
                    raise SystemExit(f"{name}: read {events} events, status {status!r}")
                rates[name].append(events / cpu)
                shares[name].append((_cpu_seconds(proc.pid) - server_before) / wall)
    finally:
        proc.terminate()
        proc.wait(10)

    print(f"{args.deltas} text deltas from orspec serve, median of {args.repeat} rounds (client CPU of this process)")
    print(f"{'client':28} {'events/CPU-s':>13} {'us/event':>9} {'server CPU share':>17}")
    medians = {name: statistics.median(r) for name, r in rates.items()}
    for name, rate in medians.items():
        print(f"{name:28} {rate:13,.0f} {1e6 / rate:9.1f} {statistics.median(shares[name]):16.0%}")
    ratio = medians["Client (typed, validated)"] / medians["openai SDK"]
    checked = medians["Client, check=True"] / medians["openai SDK"]
    verdict = "MET" if ratio >= GOAL else "NOT MET"
    print(f"Client / openai SDK events per CPU-second: {ratio:.2f}x (with check=True: {checked:.2f}x)")
    print(f"goal >= {GOAL}x: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
