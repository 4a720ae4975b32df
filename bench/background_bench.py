"""What keeping a background stream's events costs: streamed events/s of a background stream (its events
written to the store as it goes) against a foreground one, and the time a resume takes to its first byte.

Processes, on loopback: the generated server (`create_app`, one uvicorn worker) with a provider that
streams text deltas as fast as it can, on a SQLite file, then on PostgreSQL when `--postgres URL` (or
`$ORSPEC_TEST_POSTGRES`) names one; the load generator in its own process (httpx), which reports its
CPU share, so a saturated client shows.

- streamed events/s: one stream of `--events` events, foreground (`stream`) and background
  (`stream` + `background`) alternating, median of `--repeat` rounds. Goal: background >= 0.8x.
- resume to first byte: `GET /responses/{id}?stream=true&starting_after=<half>` of a finished
  background stream, p50 of 20.

    python bench/background_bench.py [--events 20000] [--repeat 3] [--postgres URL]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from proxy_bench import KEY, _port, _wait

HEADERS = {"Authorization": f"Bearer {KEY}"}
GOAL = 0.8


class _Deltas:
    """A provider that streams `n` text deltas as fast as it can (8 for a short request)."""

    def __init__(self, n: int):
        self.n = n

    async def respond(self, request):
        from openresponses_runtime.server import MessageStart, TextDelta

        n = self.n if request.input and "long" in str(request.input[-1].get("content")) else 8
        yield MessageStart()
        for _ in range(n):
            yield TextDelta("token ")


def _serve(port: int, events: int, store: str) -> None:
    import uvicorn
    from openresponses_runtime.server import create_app

    app = create_app(_Deltas(events), store=store, api_keys=KEY)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", access_log=False)


def _load(url: str, events: int, repeat: int) -> dict:
    """The load generator's work (run in its own process)."""
    import httpx

    rates: dict[str, list[float]] = {"foreground": [], "background": []}
    bodies = {
        "foreground": {"input": "long", "stream": True},
        "background": {"input": "long", "stream": True, "background": True},
    }
    wall, cpu = time.perf_counter(), time.process_time()
    finished = ""
    with httpx.Client(timeout=300) as client:
        for body in bodies.values():  # warm up each path
            client.post(url, json={**body, "input": "short"}, headers=HEADERS).read()
        for _ in range(repeat):
            for name, body in bodies.items():
                start = time.perf_counter()
                n = 0
                with client.stream("POST", url, json=body, headers=HEADERS) as r:
                    for line in r.iter_lines():
                        if line.startswith("data: {"):
                            n += 1
                            if n == 1:
                                finished = json.loads(line[6:])["response"]["id"]
                rates[name].append(n / (time.perf_counter() - start))
                assert n >= events, f"{name}: {n} events, expected {events}+"
        ttfb = []
        for _ in range(20):
            start = time.perf_counter()
            resume = f"{url}/{finished}?stream=true&starting_after={events // 2}"
            with client.stream("GET", resume, headers=HEADERS) as r:
                next(r.iter_raw())
                ttfb.append((time.perf_counter() - start) * 1000)
    share = (time.process_time() - cpu) / (time.perf_counter() - wall)
    return {"rates": rates, "ttfb": ttfb, "cpu_share": share}


def _measure(store: str, events: int, repeat: int) -> dict:
    port = _port()
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port), "--store", store, "--events", str(events)]
    )
    try:
        _wait(port, server)
        load = [sys.executable, __file__, "--load", f"http://127.0.0.1:{port}/v1/responses", "--events", str(events)]
        done = subprocess.run([*load, "--repeat", str(repeat)], check=True, stdout=subprocess.PIPE, text=True)
        return json.loads(done.stdout)
    finally:
        server.terminate()
        server.wait(10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", default=os.environ.get("ORSPEC_TEST_POSTGRES"))
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # run the server on this port
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--load", help=argparse.SUPPRESS)  # run the load generator against this URL
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve, args.events, args.store)
        return 0
    if args.load:
        print(json.dumps(_load(args.load, args.events, args.repeat)))
        return 0

    stores = {"sqlite": str(Path(tempfile.mkdtemp(prefix="orspec-background-bench-")) / "responses.sqlite3")}
    if args.postgres:
        stores["postgres"] = args.postgres
    print(f"command: python bench/background_bench.py --events {args.events} --repeat {args.repeat}")
    for name, store in stores.items():
        result = _measure(store, args.events, args.repeat)
        rate = {path: statistics.median(values) for path, values in result["rates"].items()}
        ratio = rate["background"] / rate["foreground"]
        print(
            f"{name}: streamed events/s, median: foreground {rate['foreground']:,.0f}, background {rate['background']:,.0f};"
            f" resume to first byte p50 {statistics.median(result['ttfb']):.1f} ms;"
            f" load generator CPU share {result['cpu_share']:.0%}"
        )
        verdict = "MET" if ratio >= GOAL else "NOT MET"
        print(f"  background stream with its events kept, {name}: {ratio:.2f}x  (goal >= {GOAL:g}x)  {verdict}")
    if not args.postgres:
        print("  background stream with its events kept, postgres: not measured (pass --postgres URL) NOT MET")
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
