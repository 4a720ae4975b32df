"""Continuing a long conversation: the cost of `previous_response_id` at turn 100 against turn 1.

`orspec serve` (demo model, no delay) runs in its own process on each store: PostgreSQL (the URL
`--postgres`, default `$ORSPEC_TEST_POSTGRES`; the row says NOT MET without one) and a SQLite
file. A chain of `--turns` responses is built first; then `bench/loadgen.py` (its own process,
`requests` mode, `--connections` at a time) continues the first turn, then the last, alternating
for `--repeat` rounds. Each continuation reads the whole chain before the model answers, and
stores its own turn, so the ratio of the medians of turn `--turns` to turn 1 (time per request,
1 / req/s) is the price of the history. Each row gives req/s, p50 and p99 under load, the loadgen's
CPU share and the load average before and after. Goal: on PostgreSQL, at most 1.5x.

    python bench/chain_bench.py [--postgres URL] [--turns 100] [--seconds 3] [--repeat 3] [--only postgres]
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
FIGURES = ("per_second", "p50_ms", "p99_ms", "server_cpu_ms", "database_cpu_ms")


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


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """CPU seconds (user + system) each of `pids` has used, from /proc; a process gone is left out."""
    used = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        used[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return used


def backends(store: str) -> list[int]:
    """The PostgreSQL server processes serving the store's database (none for a SQLite file)."""
    if not store.startswith("postgresql://"):
        return []
    import psycopg

    sql = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    with psycopg.connect(store, connect_timeout=5) as db:
        return [pid for (pid,) in db.execute(sql)]


def load(url: str, previous: str, args, server: int, store: str) -> dict:
    """One loadgen run continuing `previous`, with the CPU the server and its database spent per request."""
    body = json.dumps({"input": "and then?", "previous_response_id": previous})
    cmd = [sys.executable, str(LOADGEN), url, "--body", body, "--header", f"Authorization: Bearer {KEY}"]
    cmd += ["--connections", str(args.connections), "--seconds", str(args.seconds), "--warmup", "0.5"]
    before = cpu_seconds([server, *backends(store)])
    result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    after = cpu_seconds([server, *backends(store)])
    if result["errors"]:
        raise SystemExit(f"{url}: the server answered with errors: {result}")
    spent = {pid: used - before.get(pid, 0.0) for pid, used in after.items()}  # a backend opened meanwhile: all of it
    per_request = 1000 / max(result["all_requests"], 1)
    result["server_cpu_ms"] = spent.pop(server, 0.0) * per_request
    result["database_cpu_ms"] = sum(spent.values()) * per_request
    return result


def measure(store: str, args) -> dict:
    """Continuing turn 1 and the last turn: the medians of req/s, p50 and p99, and the loadgen's highest CPU share."""
    proc, url = _start(store)
    try:
        ids = chain(url, args.turns)
        runs: dict[str, list[dict]] = {"first": [], "last": []}
        for _ in range(args.repeat):
            for previous, into in ((ids[0], runs["first"]), (ids[-1], runs["last"])):
                into.append(load(url, previous, args, proc.pid, store))
    finally:
        proc.terminate()
        proc.wait(10)
    figures: dict = {
        turn: {key: statistics.median(result[key] for result in results) for key in FIGURES}
        for turn, results in runs.items()
    }
    figures["loadgen_cpu_share"] = max(result["cpu_share"] for results in runs.values() for result in results)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", default=os.environ.get("ORSPEC_TEST_POSTGRES"))
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=["sqlite", "postgres"], help="measure one store")
    args = parser.parse_args()
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as folder:
        stores = {"sqlite": str(Path(folder) / "chain.sqlite3")}
        if args.postgres:
            stores["postgres"] = args.postgres
        stores = {name: store for name, store in stores.items() if args.only in (None, name)}
        print(f"continuing turn 1 and turn {args.turns}, {args.connections} connections, median of {args.repeat}:")
        print(
            f"  {'':8} {'turn':>5} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'server CPU ms/req':>17} {'database':>8}"
        )
        figures, ratios = {}, {}
        for name, store in stores.items():
            figures[name] = measured = measure(store, args)
            ratios[name] = measured["first"]["per_second"] / measured["last"]["per_second"]  # time per request
            for turn, label in (("first", 1), ("last", args.turns)):
                f = measured[turn]
                print(
                    f"  {name:8} {label:5} {f['per_second']:7.0f} {f['p50_ms']:7.2f} {f['p99_ms']:7.2f}"
                    f" {f['server_cpu_ms']:17.3f} {f['database_cpu_ms']:8.3f}"
                )
            print(f"  {'':8} loadgen CPU {measured['loadgen_cpu_share']:.0%}")
    loads.append(os.getloadavg()[0])
    print(f"load average {loads[0]:.1f} before, {loads[1]:.1f} after (2 cores: above 2, other work shares them)")
    command = ["orspec", "serve", "--api-key", KEY, "--delay", "0", "--store", "URL"]
    print("results: " + json.dumps({"command": " ".join(command), "settings": vars(args) | {"postgres": None},
                                    "stores": figures, "ratios": ratios, "load_average": loads}))  # fmt: skip
    if "sqlite" in ratios:
        print(f"  sqlite: turn {args.turns} / turn 1 continuation time {ratios['sqlite']:.2f}x")
    if "postgres" in ratios:
        p50 = figures["postgres"]["last"]["p50_ms"] / figures["postgres"]["first"]["p50_ms"]
        first, last = figures["postgres"]["first"], figures["postgres"]["last"]
        cpu = (last["server_cpu_ms"] + last["database_cpu_ms"]) / (first["server_cpu_ms"] + first["database_cpu_ms"])
        print(f"  postgres: turn {args.turns} / turn 1 p50 {p50:.2f}x, CPU per request (server + database) {cpu:.2f}x")
        verdict = "MET" if ratios["postgres"] <= GOAL else "NOT MET"
        print(
            f"goal: postgres turn {args.turns} / turn 1 continuation time {ratios['postgres']:.2f}x  (goal <= {GOAL}x)  {verdict}"
        )
    elif args.only != "sqlite":
        print("goal: postgres turn 100 / turn 1 continuation (no --postgres or $ORSPEC_TEST_POSTGRES) NOT MET")
    return 0


if __name__ == "__main__":
    sys.exit(main())
