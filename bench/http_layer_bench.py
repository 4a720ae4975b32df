"""Which HTTP layer: the same two apps under each candidate server, side by side in one run.

The apps: `orspec`, the app `orspec serve` builds (`create_app` with the demo model, no delay, an
in-memory store, observability as installed), and `minimal`, the minimal Starlette app of
`server_bench.py` answering the bytes `orspec` produced. The layers, each app in its own process
on loopback with one worker:

- `serving`: the runtime's `serving.serve`, what `orspec serve` runs: uvicorn on httptools, the
  timeouts on the way in and a response's head sent with its body;
- `uvicorn-h11`: uvicorn with its own h11 protocol (what `serving.serve` ran before), the same
  settings otherwise;
- `uvicorn-httptools`: the same with uvicorn's own httptools protocol;
- `granian`: granian's ASGI server, asyncio loop, one worker (needs `granian`).

The asyncio loop everywhere (uvloop would speed every row alike). The load generator is
`bench/loadgen.py` in its own process: non-streaming requests/s on `--connections` keep-alive
connections, and the p50 latency of one request at a time. Medians of `--repeat` rounds; a layer
that is not installed is a row that says so. No goal: the figures choose the layer.

    python bench/http_layer_bench.py [--seconds 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil
import server_bench as bench

LAYERS = ("serving", "uvicorn-h11", "uvicorn-httptools", "granian")
APPS = ("orspec", "minimal")
NEEDS = {"uvicorn-httptools": "httptools", "granian": "granian"}


def make_app(kind: str, fixtures: Path):
    if kind == "minimal":
        return bench.make_starlette_app(fixtures)
    from openresponses_runtime.server import DemoProvider, MemoryStore, create_app
    from openresponses_runtime.server.observability import installed

    return create_app(DemoProvider(), store=MemoryStore(), api_keys=bench.KEY, observability=installed())


def app_from_environment():
    """The app a granian worker serves (granian imports it by name): as the parent said."""
    return make_app(os.environ["HTTP_LAYER_APP"], Path(os.environ["HTTP_LAYER_FIXTURES"]))


def _serve(layer: str, kind: str, port: int, fixtures: Path) -> None:
    if layer == "granian":
        from granian import Granian

        os.environ.update(HTTP_LAYER_APP=kind, HTTP_LAYER_FIXTURES=str(fixtures))
        sys.path.insert(0, str(Path(__file__).parent))
        Granian(
            "http_layer_bench:app_from_environment", address="127.0.0.1", port=port, interface="asgi",
            workers=1, loop="asyncio", http="1", factory=True, log_level="warning",
        ).serve()  # fmt: skip
        return
    app = make_app(kind, fixtures)
    if layer == "serving":
        from openresponses_runtime.server import serving

        serving.serve(app, port=port)
        return
    import uvicorn

    settings = {**bench.uvicorn_settings(), "http": layer.removeprefix("uvicorn-")}
    uvicorn.run(app, host="127.0.0.1", port=port, **settings)


def _start(layer: str, kind: str, fixtures: Path, log: Path) -> tuple[subprocess.Popen, str]:
    port = bench._port()
    cmd = [sys.executable, __file__, "--serve", layer, "--app", kind, "--port", str(port), "--fixtures", str(fixtures)]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1/responses"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.post(url, json=bench.SMALL, headers=bench.HEADERS, timeout=5).raise_for_status()
            return proc, url
        except httpx.TransportError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit(f"{layer} {kind} did not start:\n{log.read_text()[-2000:]}") from None
            time.sleep(0.1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serve", choices=LAYERS, help=argparse.SUPPRESS)
    parser.add_argument("--app", choices=APPS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--fixtures", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve, args.app, args.port, args.fixtures)
        return 0

    missing = {layer: module for layer, module in NEEDS.items() if importlib.util.find_spec(module) is None}
    layers = [layer for layer in LAYERS if layer not in missing]
    work = Path(tempfile.mkdtemp(prefix="orspec-http-layer-"))
    fixtures = work / "fixtures"
    fixtures.mkdir()
    procs: dict[tuple[str, str], subprocess.Popen] = {}
    urls: dict[tuple[str, str], str] = {}
    runs: dict[tuple[str, str], dict[str, list[dict]]] = {}
    try:
        first = ("serving", "orspec")
        procs[first], urls[first] = _start(*first, fixtures, work / "first.log")
        bench.record(urls[first], fixtures, 2000)
        for layer in layers:
            for kind in APPS:
                if (layer, kind) not in procs:
                    procs[layer, kind], urls[layer, kind] = _start(layer, kind, fixtures, work / f"{layer}-{kind}.log")
        for _ in range(args.repeat):
            for key, url in urls.items():
                watched = [psutil.Process(procs[key].pid)]
                runs.setdefault(key, {"requests": [], "latency": []})
                for mode in ("requests", "latency"):
                    runs[key][mode].append(bench.load(url, watched, bench.SMALL, mode, args))
    finally:
        bench.stop(procs.values())

    def med(key, mode, field):
        return statistics.median(run[field] for run in runs[key][mode])

    print(f"http_layer_bench: {args.repeat} rounds; {args.connections} connections for {args.seconds:g} s; "
          f"latency: {args.count} requests one at a time; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"{'layer':18} {'app':8} {'req/s':>7} {'srv µs/req':>10} {'client':>6} {'alone p50 ms':>12} {'p99':>6}")
    figures = {}
    for (layer, kind), measured in runs.items():
        cpu = statistics.median(run["server_cpu"] / run["all_requests"] for run in measured["requests"]) * 1e6
        row = {"requests_per_second": med((layer, kind), "requests", "per_second"), "server_us_per_request": cpu,
               "client_cpu": med((layer, kind), "requests", "cpu_share"),
               "latency_p50_ms": med((layer, kind), "latency", "p50_ms"),
               "latency_p99_ms": med((layer, kind), "latency", "p99_ms")}  # fmt: skip
        figures[f"{layer} {kind}"] = row
        print(
            f"{layer:18} {kind:8} {row['requests_per_second']:7,.0f} {cpu:10.0f} {row['client_cpu']:6.0%} "
            f"{row['latency_p50_ms']:12.2f} {row['latency_p99_ms']:6.2f}"
        )
    for layer, module in missing.items():
        print(f"{layer:18} not measured: `{module}` is not installed")
    print("results: " + json.dumps({"servers": figures, "missing": missing}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
