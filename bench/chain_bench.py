"""Continuing a long conversation: the cost of `previous_response_id` at turn 100 against turn 1.

`orspec serve` (demo model, no delay) runs in its own process on each store: PostgreSQL (the URL
`--postgres`, default `$ORSPEC_TEST_POSTGRES`; the row says NOT MET without one) and a SQLite
file. A chain of `--turns` responses is built first; then `bench/loadgen.py` (its own process,
`requests` mode, `--connections` at a time) continues the first turn, then the last, alternating
for `--repeat` rounds. Each continuation reads the whole chain before the model answers, and
stores its own turn, so the ratio of the medians of turn `--turns` to turn 1 is the price of the
history. The loadgen's CPU share is printed with each row. Goal: on PostgreSQL, at most 1.5x.

    python bench/chain_bench.py [--postgres URL] [--turns 100] [--seconds 3] [--repeat 3]
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

ROOT = Path(__file__).resolve().parents[1]
LOADGEN = Path(__file__).with_name("loadgen.py")
KEY = "bench-key"
HEADERS = {"Authorization": f"Bearer {KEY}"}
GOAL = 1.5


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(store: str) -> tuple[subprocess.Popen, str]:
    port = _port()
    cmd = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", KEY, "--delay", "0"]
    proc = subprocess.Popen([*cmd, "--store", store], cwd=ROOT, stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1/responses"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(base, timeout=1)
            return proc, base
        except httpx.TransportError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError(f"orspec serve --store {store} did not start") from None
            time.sleep(0.05)


def chain(url: str, turns: int) -> list[str]:
    """The ids of a fresh chain of `turns` responses, first to last."""
    ids: list[str] = []
    for n in range(turns):
        body = {"input": f"turn {n}", **({"previous_response_id": ids[-1]} if ids else {})}
        answer = httpx.post(url, json=body, headers=HEADERS, timeout=30)
        answer.raise_for_status()
        ids.append(answer.json()["id"])
    return ids


def load(url: str, previous: str, args) -> dict:
    body = json.dumps({"input": "and then?", "previous_response_id": previous})
    cmd = [sys.executable, str(LOADGEN), url, "--body", body, "--header", f"Authorization: Bearer {KEY}"]
    cmd += ["--connections", str(args.connections), "--seconds", str(args.seconds), "--warmup", "0.5"]
    result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    if result["errors"]:
        raise SystemExit(f"{url}: the server answered with errors: {result}")
    return result


def measure(store: str, args) -> tuple[float, float, float]:
    """Median requests/s continuing turn 1 and the last turn, and the loadgen's highest CPU share."""
    proc, url = _start(store)
    try:
        ids = chain(url, args.turns)
        first, last, shares = [], [], []
        for _ in range(args.repeat):
            for previous, into in ((ids[0], first), (ids[-1], last)):
                result = load(url, previous, args)
                into.append(result["per_second"])
                shares.append(result["cpu_share"])
    finally:
        proc.terminate()
        proc.wait(10)
    return statistics.median(first), statistics.median(last), max(shares)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", default=os.environ.get("ORSPEC_TEST_POSTGRES"))
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        stores = {"sqlite": str(Path(folder) / "chain.sqlite3")}
        if args.postgres:
            stores["postgres"] = args.postgres
        print(f"continuing turn 1 and turn {args.turns}, {args.connections} connections, median of {args.repeat}:")
        ratios = {}
        for name, store in stores.items():
            first, last, share = measure(store, args)
            ratios[name] = first / last  # time per request is 1 / rate
            print(
                f"  {name:8} turn 1 {first:7.0f} req/s  turn {args.turns} {last:7.0f} req/s  (loadgen CPU {share:.0%})"
            )
    print(f"  sqlite: turn {args.turns} / turn 1 continuation time {ratios['sqlite']:.2f}x")
    if "postgres" in ratios:
        verdict = "MET" if ratios["postgres"] <= GOAL else "NOT MET"
        print(
            f"goal: postgres turn {args.turns} / turn 1 continuation time {ratios['postgres']:.2f}x  (goal <= {GOAL}x)  {verdict}"
        )
    else:
        print("goal: postgres turn 100 / turn 1 continuation (no --postgres or $ORSPEC_TEST_POSTGRES) NOT MET")
    return 0


if __name__ == "__main__":
    sys.exit(main())
