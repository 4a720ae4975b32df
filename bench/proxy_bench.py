"""What `orspec proxy` adds: time to first byte and streamed events/s, through the proxy against direct.

Processes, all on loopback, started through their command lines as users start them:
- upstream: `orspec serve --store memory: --delay 0`, the demo model, which echoes the input in
  word-sized deltas (a long stream is the answer to `--events` words);
- proxy: `orspec proxy --upstream ... --record DIR --quiet`, recording as it would in use;
- load generator: its own process (httpx); it reports its CPU share, so a saturated client shows.

Measures, direct and through the proxy alternating in one run:
- time to first byte: p50 over `--requests` short streamed requests, one at a time, on a kept-alive
  connection; the proxy's added time is the difference of the p50s. Goal: <= 1 ms.
- streamed events/s: one stream of `--events` events, median of `--repeat` rounds. Goal: the proxy
  >= 0.8x direct.

    python bench/proxy_bench.py [--events 20000] [--requests 300] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEY = "bench-key"
HEADERS = {"Authorization": f"Bearer {KEY}"}
TTFB_GOAL_MS = 1.0
THROUGHPUT_GOAL = 0.8
SHORT = {"input": "short", "stream": True}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"a server exited early: {proc.args}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def _load(urls: dict[str, str], events: int, requests: int, repeat: int) -> dict:
    """The load generator's work (run in its own process): alternate between the URLs."""
    import httpx

    ttfb: dict[str, list[float]] = {name: [] for name in urls}
    rates: dict[str, list[float]] = {name: [] for name in urls}
    events_sent = 0  # through each path: the same on both
    long = {"input": " ".join(["token"] * events), "stream": True}
    wall, cpu = time.perf_counter(), time.process_time()
    with httpx.Client(timeout=120) as client:
        for url in urls.values():  # warm up each path (connections, first-request imports)
            for _ in range(5):
                client.post(url, json=SHORT, headers=HEADERS).read()
        for _ in range(requests):
            for name, url in urls.items():
                start = time.perf_counter()
                with client.stream("POST", url, json=SHORT, headers=HEADERS) as r:
                    chunks = r.iter_raw()
                    first = next(chunks)
                    ttfb[name].append((time.perf_counter() - start) * 1000)
                    events_sent += first.count(b"\ndata: {") + first.startswith(b"data: {")
                    for chunk in chunks:
                        events_sent += chunk.count(b"\ndata: {") + chunk.startswith(b"data: {")
        for _ in range(repeat):
            for name, url in urls.items():
                start = time.perf_counter()
                n = 0
                with client.stream("POST", url, json=long, headers=HEADERS) as r:
                    for line in r.iter_lines():
                        n += line.startswith("data: {")
                rates[name].append(n / (time.perf_counter() - start))
                events_sent += n
                assert n >= events, f"{name}: {n} events, expected {events}+"
    share = (time.process_time() - cpu) / (time.perf_counter() - wall)
    return {"ttfb": ttfb, "rates": rates, "cpu_share": share, "events_per_path": events_sent / len(urls)}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--load", help=argparse.SUPPRESS)  # run the load generator against these URLs (JSON)
    args = parser.parse_args()
    if args.load:
        print(json.dumps(_load(json.loads(args.load), args.events, args.requests, args.repeat)))
        return 0

    upstream_port, proxy_port = _port(), _port()
    records = Path(tempfile.mkdtemp(prefix="orspec-proxy-bench-"))
    serve_cmd = [sys.executable, "-m", "orspec", "serve", "--api-key", KEY, "--store", "memory:", "--delay", "0"]
    procs = [subprocess.Popen([*serve_cmd, "--port", str(upstream_port)], stderr=subprocess.DEVNULL, cwd=ROOT)]
    try:
        _wait(upstream_port, procs[0])
        proxy_cmd = [sys.executable, "-m", "orspec", "proxy", "--upstream", f"http://127.0.0.1:{upstream_port}"]
        proxy_cmd += ["--port", str(proxy_port), "--record", str(records), "--quiet"]
        procs.append(subprocess.Popen(proxy_cmd, stderr=subprocess.DEVNULL, cwd=ROOT))
        _wait(proxy_port, procs[1])
        urls = {
            "direct": f"http://127.0.0.1:{upstream_port}/v1/responses",
            "proxy": f"http://127.0.0.1:{proxy_port}/v1/responses",
        }
        load_cmd = [sys.executable, __file__, "--load", json.dumps(urls), "--events", str(args.events)]
        load_cmd += ["--requests", str(args.requests), "--repeat", str(args.repeat)]
        result = json.loads(subprocess.run(load_cmd, check=True, stdout=subprocess.PIPE, text=True).stdout)
        cpu = {"upstream": _cpu_seconds(procs[0].pid), "proxy": _cpu_seconds(procs[1].pid)}
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)
    lines = [json.loads(line) for path in records.glob("*.jsonl") for line in path.read_text().splitlines()]
    recorded = len(lines)
    # The proxy's own share of its time to first byte, from its records: what it adds beyond waiting
    # for the upstream (the rest of the added time is the extra hop between processes).
    own = [r["ttfb_ms"] - r["upstream_ttfb_ms"] for r in lines if r.get("upstream_ttfb_ms") is not None]

    p50 = {name: statistics.median(values) for name, values in result["ttfb"].items()}
    p99 = {name: statistics.quantiles(values, n=100)[98] for name, values in result["ttfb"].items()}
    rate = {name: statistics.median(values) for name, values in result["rates"].items()}
    added = p50["proxy"] - p50["direct"]
    ratio = rate["proxy"] / rate["direct"]
    print(
        f"command: python bench/proxy_bench.py --events {args.events} --requests {args.requests} --repeat {args.repeat}"
    )
    print(f"{'':28}{'direct':>12}{'proxy':>12}")
    print(f"{'time to first byte, p50':28}{p50['direct']:>10.2f}ms{p50['proxy']:>10.2f}ms")
    print(f"{'time to first byte, p99':28}{p99['direct']:>10.2f}ms{p99['proxy']:>10.2f}ms")
    print(f"{'streamed events/s, median':28}{rate['direct']:>12,.0f}{rate['proxy']:>12,.0f}")
    print(
        f"the proxy's own time before the first byte (its records: ttfb - upstream ttfb), p50 {statistics.median(own):.2f} ms"
    )
    print(
        f"load generator CPU share {result['cpu_share']:.0%} of one core"
        + (" (near a full core: the figures measure the client)" if result["cpu_share"] > 0.85 else "")
    )
    # Every event is produced once by the upstream (for both paths) and relayed once by the proxy (half).
    proxied = result["events_per_path"]
    print(
        f"CPU per streamed event: upstream {cpu['upstream'] / (2 * proxied) * 1e6:.0f} us, "
        f"proxy {cpu['proxy'] / proxied * 1e6:.0f} us (whole run, from /proc)"
    )
    print(f"exchanges recorded by the proxy: {recorded}; peak RSS of a child process {_peak_rss_mb():.0f} MB")
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
    ttfb_verdict = "MET" if added <= TTFB_GOAL_MS else "NOT MET"
    rate_verdict = "MET" if ratio >= THROUGHPUT_GOAL else "NOT MET"
    print("\ngoals:")
    print(
        f"  time to first byte p50, added by the proxy  {added:.2f} ms  (goal <= {TTFB_GOAL_MS:g} ms)  {ttfb_verdict}"
    )
    print(f"  streamed events/s, proxy / direct  {ratio:.2f}x  (goal >= {THROUGHPUT_GOAL:g}x)  {rate_verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
