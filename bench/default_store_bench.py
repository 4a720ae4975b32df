"""`orspec serve` as a user starts it, with no store flag (its default SQLite file), against the
memory store, side by side in one run.

Every server is its own process on loopback, started through its command line, each in a folder of
its own (the default store is `orspec-responses.sqlite3` in the working directory):

- `default`: `orspec serve --delay 0` (the SQLite file in WAL mode, `synchronous=NORMAL`);
- `memory`: `orspec serve --store memory: --delay 0`, the reference;
- `workers-2`: `orspec serve --workers 2 --delay 0`, both workers on the default SQLite file (the
  memory store lives in one process, so its reference is `memory`, one process);
- `full-sync`: `orspec serve --store-sync full --delay 0`, every commit synced to the disk: shown
  for the production guide's figures, no goal.

Two loads, each from `bench/loadgen.py` in its own process (its CPU share printed): one request at a
time on one keep-alive connection (`--count` of them: p50 and p99), and `--connections` keep-alive
connections for `--seconds` (req/s, p50, p99). The request is `POST /v1/responses {"input": "hello"}`,
stored. Medians of `--repeat` rounds, servers alternating in each round; each goal's ratio is the
median of the rounds' own ratios.

    python bench/default_store_bench.py [--repeat 3] [--seconds 4] [--connections 32] [--count 300]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import psutil
from server_bench import KEY, SMALL, _port, _shown, _start, load, stop

SERVERS = ("default", "memory", "workers-2", "full-sync")


def commands(work: Path, ports: dict[str, int]) -> dict[str, list[str]]:
    serve = [sys.executable, "-m", "orspec", "serve", "--api-key", KEY, "--delay", "0"]
    return {
        "default": [*serve, "--port", str(ports["default"])],
        "memory": [*serve, "--store", "memory:", "--port", str(ports["memory"])],
        "workers-2": [*serve, "--workers", "2", "--port", str(ports["workers-2"])],
        "full-sync": [*serve, "--store-sync", "full", "--port", str(ports["full-sync"])],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="measured seconds of each requests run")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--count", type=int, default=300, help="requests one at a time per latency run")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="orspec-default-bench-"))
    ports = {name: _port() for name in SERVERS}
    cmds = commands(work, ports)
    env = {key: value for key, value in os.environ.items() if key != "ORSPEC_STORE"}  # the default, as typed
    procs = {}
    runs: dict[str, dict[str, list[dict]]] = {name: {"requests": [], "latency": []} for name in SERVERS}
    try:
        for name in SERVERS:
            folder = work / name
            folder.mkdir()
            procs[name] = _start(name, cmds[name], env, ports[name], work / f"{name}.log", cwd=folder)
        watched = {name: [psutil.Process(proc.pid)] for name, proc in procs.items()}
        for _ in range(args.repeat):
            for name in SERVERS:
                url = f"http://127.0.0.1:{ports[name]}/v1/responses"
                for mode in ("latency", "requests"):
                    runs[name][mode].append(load(url, watched[name], SMALL, mode, args))
        stored = {name: (work / name / "orspec-responses.sqlite3").exists() for name in SERVERS}
    finally:
        stop(procs.values())
        shutil.rmtree(work, ignore_errors=True)
    assert stored == {"default": True, "memory": False, "workers-2": True, "full-sync": True}, stored

    def med(name: str, mode: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[name][mode])

    figures = {
        name: {
            "command": _shown(cmds[name], work).replace(f"--port {ports[name]}", "--port PORT"),
            "latency_p50_ms": med(name, "latency", "p50_ms"),
            "latency_p99_ms": med(name, "latency", "p99_ms"),
            "requests_per_second": med(name, "requests", "per_second"),
            "loaded_p50_ms": med(name, "requests", "p50_ms"),
            "loaded_p99_ms": med(name, "requests", "p99_ms"),
            "server_us_per_request": statistics.median(
                run["server_cpu"] / run["all_requests"] for run in runs[name]["requests"]
            )
            * 1e6,
            "client_cpu": med(name, "requests", "cpu_share"),
        }
        for name in SERVERS
    }
    print(
        f"default_store_bench: {args.repeat} rounds, servers alternating; one at a time: {args.count} requests on one"
        f" connection; loaded: {args.connections} connections for {args.seconds:g} s; {os.cpu_count()} cores,"
        f" load average {os.getloadavg()[0]:.2f}"
    )
    for name in SERVERS:
        print(f"  {name:9} {figures[name]['command']}")
    print(
        f"\n{'':9} {'alone p50':>9} {'p99':>6} | {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'srv µs':>7} {'client':>6}"
    )
    for name in SERVERS:
        f = figures[name]
        print(
            f"{name:9} {f['latency_p50_ms']:9.2f} {f['latency_p99_ms']:6.2f} | {f['requests_per_second']:7,.0f}"
            f" {f['loaded_p50_ms']:7.2f} {f['loaded_p99_ms']:7.2f} {f['server_us_per_request']:7.0f}"
            f" {f['client_cpu']:6.0%}"
        )

    goals = [
        ("one at a time p50, orspec serve (default SQLite file) / the memory store", "default", "latency", "p50_ms", "<=", 1.5),
        ("req/s under 32 connections, orspec serve (default SQLite file) / the memory store", "default", "requests", "per_second", ">=", 0.8),
        ("one at a time p50, orspec serve --workers 2 (SQLite file) / one process, memory store", "workers-2", "latency", "p50_ms", "<=", 1.5),
        ("req/s under 32 connections, orspec serve --workers 2 (SQLite file) / one process, memory store", "workers-2", "requests", "per_second", ">=", 0.8),
    ]  # fmt: skip
    print("\ngoals (each the median of the rounds' ratios):")
    ratios = {}
    for label, name, mode, key, op, target in goals:
        ratio = statistics.median(
            mine[key] / theirs[key] for mine, theirs in zip(runs[name][mode], runs["memory"][mode], strict=True)
        )
        ratios[label] = ratio
        met = ratio >= target if op == ">=" else ratio <= target
        print(f"  {label:88} {ratio:5.2f}x  (goal {op} {target}x)  {'MET' if met else 'NOT MET'}")
    settings = {"seconds": args.seconds, "connections": args.connections, "count": args.count, "repeat": args.repeat}
    print("results: " + json.dumps({"settings": settings, "servers": figures, "ratios": ratios}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
