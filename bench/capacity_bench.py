"""Capacity of a Responses gateway in front of a Chat Completions model: `orspec serve --gateway
chat-completions` against litellm's proxy, side by side in one run.

Processes, all on loopback, each its own:
- the upstream: `bench/chat_upstream.py`, a fake Chat Completions API answering every request with
  the same stream of `--events` text deltas (sent at once), or, for model `paced-N`, N deltas one
  every `--interval` seconds;
- orspec: `orspec serve --gateway chat-completions --upstream URL`, the command users run, one
  worker, the upstream key in $ORSPEC_UPSTREAM_API_KEY; its stream and connection caps raised
  (`--max-streams 0 --max-connections 4000`), since the concurrency step asks for thousands;
- litellm: `litellm --config FILE --num_workers 1`, installed by this script into its own venv
  (`.cache/bench/litellm-VERSION`, `litellm[proxy]==VERSION`), configured as its docs say for an
  OpenAI-compatible provider that has no Responses API (a `custom_openai/` model with `api_base`),
  so its /v1/responses goes through its Responses-to-Chat-Completions bridge; no database, no
  callbacks, message logging and telemetry off, the cost map read from the package (no fetch);
- load generators: `bench/loadgen.py --mode streams`, each in its own process, reporting its
  own CPU share.

Every client request is `{"model": ..., "input": ..., "stream": true, "store": false}`: neither
gateway stores the response, as litellm has no store without a database.

Side by side (`--rounds` rounds, the two gateways in turn, medians): `--connections` streams at a
time for `--seconds`; per gateway
- CPU per streamed event: CPU of the gateway's process tree (psutil, children included) over the
  load generator's run, divided by the upstream deltas it translated (responses x `--events`): the
  same work for both, whatever number of SSE events each makes of it;
- requests/s, and the time to a stream's first event, p50 and p99, under that load;
- peak RSS of the gateway's process tree (polled);
- schema violations in its streams: the first streams of the first round, each checked with the
  project's stream checker (`check_sse`, what `orspec check-stream` runs).

Concurrency (orspec alone): for each count in `--streams`, that many streams open at once (started
over a ramp of at most 250 a second, from `--loadgens` processes), each paced by the upstream at one
delta per `--interval` (50 events/s by default); it holds when every stream completes and the p99
gap between events arriving on a stream, while all are open, is under 100 ms. The largest count
that holds is reported; the steps stop at the first that does not. Beside each step, the CPU share
of the gateway, the upstream and the busiest load generator, and the share of time the gateway was
ready to run but waited for a core (the machine is shared: other jobs' load shows there).

With `--tls`, the upstream answers over https with a certificate of a test authority made for the
run (as `tests/tls_authority.py` makes it), which orspec trusts by `--upstream-ca-file` and
litellm by `$SSL_CERT_FILE`: every upstream stream is then read through TLS.

Goals, each MET or NOT MET, with a cProfile summary of the gateway for each NOT MET:
- orspec's CPU per streamed event <= 0.1x litellm's;
- >= 1,000 concurrent streams at 50 events/s on one process.

    python bench/capacity_bench.py [--events 200] [--rounds 3] [--streams 100,250,500,1000,1500]
    python bench/capacity_bench.py --no-peer --rounds 1 --seconds 1 --streams 20   # orspec only, quick
    python bench/capacity_bench.py --tls [...]   # the upstream over https
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pstats
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import psutil
from proctree import tree_cpu, tree_rss

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LITELLM_VERSION = "1.108.7"
KEY = "bench-client-key"
UPSTREAM_KEY = "bench-upstream-key"
CPU_GOAL = 0.10
STREAMS_GOAL = 1000
GAP_GOAL_MS = 100.0
NEW_STREAMS_PER_SECOND = 250  # the ramp: starting a stream costs the gateway more than an event
START_TIMEOUT = 180  # seconds: litellm takes tens of seconds to import on a busy machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, what: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited ({proc.returncode}) before listening:\n{log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise SystemExit(f"{what} did not listen on {port} within {START_TIMEOUT} s:\n{log.read_text()[-2000:]}")


def litellm_venv(version: str) -> Path:
    """The litellm proxy's own venv, made and filled on first use; its `litellm` command."""
    # Resolved: its scripts name their python by this path, which must outlive a checkout reaching `.cache` by a link.
    venv = (ROOT / ".cache").resolve() / "bench" / f"litellm-{version}"
    command = venv / "bin" / "litellm"
    marker = venv / "installed"
    made = f"{version} {venv}"  # a venv made elsewhere and moved, or left half made, is made again
    if not (marker.is_file() and marker.read_text() == made and command.is_file()):
        print(f"installing litellm[proxy]=={version} into {venv} (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=300)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"litellm[proxy]=={version}"]
        done = subprocess.run(pip, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise SystemExit(f"could not install litellm[proxy]=={version}:\n{done.stderr[-2000:]}")
        marker.write_text(made)
    return command


def litellm_config(upstream: str) -> str:
    """litellm's proxy config for a Chat Completions-only provider, with everything optional off."""
    return f"""\
model_list:
  - model_name: bench
    litellm_params:
      model: custom_openai/bench
      api_base: {upstream}/v1
      api_key: os.environ/ORSPEC_UPSTREAM_API_KEY
litellm_settings:
  telemetry: false
  turn_off_message_logging: true
  callbacks: []
  success_callback: []
  failure_callback: []
general_settings:
  master_key: {KEY}
  disable_spend_logs: true
  disable_error_logs: true
"""


class Gateway:
    """One gateway process: started from its command line, its CPU and peak RSS watched."""

    def __init__(self, name: str, command: list[str], port: int, env: dict[str, str], work: Path):
        self.name, self.command, self.port = name, command, port
        # as a user types it: the program by its name, this run's files by theirs
        self.shown = " ".join(
            [Path(command[0]).name, *(Path(a).name if a.startswith(str(work)) else a for a in command[1:])]
        )
        self.log = work / f"{name}.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work)
        self.ps = psutil.Process(self.proc.pid)
        self.peak_rss = 0
        self._watching = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/responses"

    def wait(self) -> None:
        wait_listening(self.port, self.proc, self.name, self.log)

    def cpu(self) -> float:
        return tree_cpu(self.ps)

    def waited(self) -> float:
        """Seconds its main process has spent ready to run but waiting for a core (Linux schedstat):
        on a shared machine, what other jobs took from it."""
        try:
            return int(Path(f"/proc/{self.proc.pid}/schedstat").read_text().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return float("nan")

    @contextlib.contextmanager
    def watched(self):
        """Its whole tree's RSS polled every 50 ms while the block runs; the peak kept."""
        self._watching = True

        def poll() -> None:
            while self._watching:
                with contextlib.suppress(psutil.Error):
                    self.peak_rss = max(self.peak_rss, tree_rss(self.ps))
                time.sleep(0.05)

        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        try:
            yield
        finally:
            self._watching = False
            thread.join(5)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def orspec_command(upstream: str, port: int, ca_file: Path | None = None) -> list[str]:
    installed = Path(sys.executable).with_name("orspec")
    orspec = [str(installed)] if installed.is_file() else [sys.executable, "-m", "orspec"]
    return [*orspec, *orspec_arguments(upstream, port, ca_file)]


def orspec_arguments(upstream: str, port: int, ca_file: Path | None = None) -> list[str]:
    trust = ["--upstream-ca-file", str(ca_file)] if ca_file is not None else []
    return ["serve", "--gateway", "chat-completions", "--upstream", f"{upstream}/v1", "--port", str(port),
            "--api-key", KEY, "--store", "memory:", "--max-streams", "0", "--max-connections", "4000", *trust]  # fmt: skip


def test_authority(work: Path) -> tuple[Path, Path, Path]:
    """A certificate authority made for this run, and a certificate it signed for localhost: the CA's
    file, the certificate's and its key's."""
    sys.path.insert(0, str(ROOT))
    from tests.tls_authority import authority, key_files

    authority(work)
    return key_files(work)


def body(model: str) -> str:
    return json.dumps({"model": model, "input": "Say something.", "stream": True, "store": False})


def loadgen(url: str, model: str, *options: str) -> subprocess.Popen:
    command = [sys.executable, str(HERE / "loadgen.py"), url, "--body", body(model), "--mode", "streams",
               "--header", f"Authorization: Bearer {KEY}", *options]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def result_of(proc: subprocess.Popen, timeout: float) -> dict:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise SystemExit(f"the load generator did not finish within {timeout:.0f} s: {err[-1000:]}") from None
    if proc.returncode != 0:
        raise SystemExit(f"the load generator failed ({proc.returncode}): {err[-2000:]}")
    return json.loads(out)


def http_body(raw: bytes) -> bytes:
    """The body of a raw HTTP/1.1 response, chunk framing removed."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" not in head.lower():
        return rest
    chunks = []
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";", 1)[0], 16)
        if size == 0:
            break
        chunks.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(chunks)


def violations(kept: Path) -> list[dict]:
    """Each kept stream's violations of the streaming rules and schemas (warnings left out)."""
    from openresponses_runtime.streaming import check_sse

    found = []
    for path in sorted(kept.glob("stream-*.http")):
        problems = [v for v in check_sse(http_body(path.read_bytes())) if not v.is_warning]
        found.append({"count": len(problems), "rules": sorted({v.rule for v in problems}),
                      "first": [str(v) for v in problems[:3]]})  # fmt: skip
    return found


def side_by_side(gateways: list[Gateway], args, work: Path) -> dict[str, dict]:
    """The gateways in turn, `args.rounds` rounds of the same load; per gateway, its figures."""
    runs: dict[str, list[dict]] = defaultdict(list)
    for round_ in range(args.rounds):
        for gateway in gateways:
            kept = work / f"kept-{gateway.name}"
            options = ["--connections", str(args.connections), "--seconds", str(args.seconds),
                       "--warmup", str(args.warmup)]  # fmt: skip
            if round_ == 0:
                options += ["--keep", str(kept), "--keep-count", str(args.check)]
            with gateway.watched():
                before = gateway.cpu()
                result = result_of(loadgen(gateway.url, "bench", *options), timeout=args.seconds + args.warmup + 300)
                used = gateway.cpu() - before
            if result["errors"] or result["broken"] or not result["streams"]:
                raise SystemExit(f"{gateway.name}: failed streams: {result}")
            result["cpu_per_event_us"] = used / (result["all_streams"] * args.events) * 1e6
            result["sse_events_per_response"] = result["events"] / result["all_streams"]
            runs[gateway.name].append(result)
    figures = {}
    for gateway in gateways:
        rounds = runs[gateway.name]
        checked = violations(work / f"kept-{gateway.name}")

        def median(key, rounds=rounds):
            return statistics.median(r[key] if not isinstance(key, tuple) else r[key[0]][key[1]] for r in rounds)

        figures[gateway.name] = {
            "command": gateway.shown,
            "cpu_per_event_us": median("cpu_per_event_us"),
            "requests_per_second": median("per_second"),
            "first_event_p50_ms": median(("first_event", "p50_ms")),
            "first_event_p99_ms": median(("first_event", "p99_ms")),
            "peak_rss_mib": gateway.peak_rss / 2**20,
            "sse_events_per_response": median("sse_events_per_response"),
            "violations_per_stream": [stream["count"] for stream in checked],
            "violated_rules": sorted({rule for stream in checked for rule in stream["rules"]}),
            "first_violations": checked[0]["first"] if checked else [],
            "loadgen_cpu_share": max(r["cpu_share"] for r in rounds),
        }
    return figures


def concurrency(gateway: Gateway, upstream: psutil.Process, args) -> list[dict]:
    """Streams held at once by `gateway`, step after step, until a step does not hold."""
    steps = []
    for count in args.streams:
        ramp = max(1.0, count / NEW_STREAMS_PER_SECOND)
        window = args.window
        deltas = round((ramp + 1.0 + window) / args.interval)  # each stream outlasts the ramp and the window
        processes = min(args.loadgens, count)
        shares = [count // processes + (i < count % processes) for i in range(processes)]
        before = gateway.cpu(), upstream.cpu_times(), time.perf_counter(), gateway.waited()
        with gateway.watched():
            procs = [
                loadgen(
                    gateway.url,
                    f"paced-{deltas}",
                    "--connections",
                    str(n),
                    "--once",
                    "--ramp",
                    str(ramp),
                    "--warmup",
                    "0.5",
                )  # fmt: skip
                for n in shares
            ]
            results = [result_of(proc, timeout=deltas * args.interval * 10 + 120) for proc in procs]
        wall = time.perf_counter() - before[2]
        up = upstream.cpu_times()
        step = {
            "streams": count,
            "completed": sum(r["streams"] for r in results),
            "errors": sum(r["errors"] + r["broken"] for r in results),
            "gap_p50_ms": max(r["gap_p50_ms"] for r in results),
            "gap_p99_ms": max(r["gap_p99_ms"] for r in results),  # the worst load generator's
            "gap_max_ms": max(r["gap_max_ms"] for r in results),
            "first_event_p99_ms": max(r["first_event"]["p99_ms"] for r in results),
            "gateway_cpu_share": (gateway.cpu() - before[0]) / wall,
            "gateway_wait_share": (gateway.waited() - before[3]) / wall,
            "upstream_cpu_share": (up.user + up.system - before[1].user - before[1].system) / wall,
            "loadgen_cpu_share": max(r["cpu_share"] for r in results),
            "peak_rss_mib": gateway.peak_rss / 2**20,
            "first_error": next((r["first_error"] for r in results if r["first_error"]), None),
        }
        step["holds"] = step["completed"] == count and not step["errors"] and step["gap_p99_ms"] < GAP_GOAL_MS
        steps.append(step)
        print(
            f"  {count:5} streams: {step['completed']:5} completed, gap p50 {step['gap_p50_ms']:6.1f} ms "
            f"p99 {step['gap_p99_ms']:7.1f} ms max {step['gap_max_ms']:7.1f} ms, first event p99 "
            f"{step['first_event_p99_ms']:7.0f} ms; CPU share: gateway {step['gateway_cpu_share']:.0%} (waited for a "
            f"core {step['gateway_wait_share']:.0%}), upstream "
            f"{step['upstream_cpu_share']:.0%}, load generator (busiest of {processes}) {step['loadgen_cpu_share']:.0%}"
            f"  {'holds' if step['holds'] else 'does not hold'}"
            + (f" ({step['first_error'][:120]})" if step["first_error"] else ""),
            flush=True,
        )
        if not step["holds"]:
            break
    return steps


def profile(
    upstream: str, work: Path, env: dict[str, str], load: list[str], model: str, label: str, ca_file: Path | None
) -> None:
    """The gateway under cProfile with `load`; where its CPU went, by module and by function."""
    port = free_port()
    out = work / f"profile-{label}.prof"
    arguments = orspec_arguments(upstream, port, ca_file)
    command = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "orspec", *arguments]
    gateway = Gateway(f"profiled-{label}", command, port, env, work)
    try:
        gateway.wait()
        result_of(loadgen(gateway.url, model, *load), timeout=600)
    finally:
        gateway.stop(signal.SIGINT)  # a clean exit, so that cProfile writes its file
    if not out.is_file():
        print(f"  (no profile written: {gateway.log.read_text()[-500:]})")
        return
    stats = pstats.Stats(str(out))
    busy = {key: row for key, row in stats.stats.items() if "poll" not in key[2]}  # the loop's idle wait left out
    total = sum(row[2] for row in busy.values()) or 1.0  # own time of every function
    by_module: dict[str, float] = defaultdict(float)
    for (filename, _, name), row in busy.items():
        by_module[module_of(filename) if filename != "~" else name] += row[2]
    print(f"  profile of the gateway ({label}), own CPU time by module:")
    for module, seconds in sorted(by_module.items(), key=lambda kv: -kv[1])[:10]:
        print(f"    {seconds / total:6.1%}  {module}")
    print("  by function (own time, then with callees):")
    rows = sorted(busy.items(), key=lambda kv: -kv[1][2])[:15]
    for (filename, line, name), row in rows:
        print(f"    {row[2] / total:6.1%} {row[3] / total:6.1%}  {module_of(filename)}:{line} {name}")


def module_of(filename: str) -> str:
    """A short name for a profiled file: its package path from site-packages or the checkout."""
    for marker in ("site-packages/", "generated/python/", "tools/", "lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


def report(figures: dict[str, dict], steps: list[dict], args) -> int:
    """The side-by-side table and the concurrency found; the most streams that held."""
    print(f"\ncapacity_bench: {os.cpu_count()} cores (shared: load average {os.getloadavg()[0]:.2f}); "
          f"litellm[proxy] {'not run' if args.no_peer else args.litellm}; "
          f"upstream over {'TLS (https, a test authority)' if args.tls else 'plain http'}")  # fmt: skip
    print(f"{'':34}" + "".join(f"{name:>14}" for name in figures))
    rows = [
        ("CPU per upstream delta, µs", "cpu_per_event_us", "{:.1f}"),
        ("requests/s", "requests_per_second", "{:.1f}"),
        ("first event p50, ms", "first_event_p50_ms", "{:.1f}"),
        ("first event p99, ms", "first_event_p99_ms", "{:.1f}"),
        ("peak RSS (process tree), MiB", "peak_rss_mib", "{:.0f}"),
        ("SSE events per response", "sse_events_per_response", "{:.0f}"),
        ("load generator CPU share", "loadgen_cpu_share", "{:.0%}"),
    ]
    for label, key, shown in rows:
        print(f"{label:34}" + "".join(f"{shown.format(row[key]):>14}" for row in figures.values()))
    print(f"{'violations per stream checked':34}"
          + "".join(f"{','.join(map(str, row['violations_per_stream'])):>14}" for row in figures.values()))  # fmt: skip
    for name, row in figures.items():
        print(f"  {name}: {row['command']}")
        for line in row["first_violations"]:
            print(f"    {line[:200]}")
    held = max((step["streams"] for step in steps if step["holds"]), default=0)
    print(f"concurrent streams held (gap p99 < {GAP_GOAL_MS:g} ms, all completed): {held}")
    return held


def goals(figures: dict[str, dict], held: int, args) -> list[tuple[str, bool]]:
    """Each goal's kind, after its line is printed MET or NOT MET."""
    found = []
    if not args.no_peer:
        ratio = figures["orspec"]["cpu_per_event_us"] / figures["litellm"]["cpu_per_event_us"]
        found.append(("cpu", f"orspec CPU per streamed event / litellm proxy's: {ratio:.3f}x  (goal <= {CPU_GOAL:.2f}x)",
                      ratio <= CPU_GOAL))  # fmt: skip
    found.append(("streams", f"concurrent streams at {1 / args.interval:g} events/s held by one orspec process: "
                  f"{held} streams  (goal >= {STREAMS_GOAL} streams)", held >= STREAMS_GOAL))  # fmt: skip
    print("\ngoals:")
    for _, line, met in found:
        print(f"  {line}  {'MET' if met else 'NOT MET'}")
    return [(kind, met) for kind, _, met in found]


def profile_not_met(verdicts: list[tuple[str, bool]], steps: list[dict], upstream: str, work: Path, env, args) -> None:
    """A cProfile summary of the gateway under the load of each goal NOT MET."""
    for kind, met in verdicts:
        if met:
            continue
        if kind == "cpu":
            load = ["--connections", str(args.connections), "--seconds", "5", "--warmup", "1"]
            profile(upstream, work, env, load, "bench", "side-by-side load", args.ca_file)
        else:
            failed = next((s["streams"] for s in steps if not s["holds"]), args.streams[-1])
            deltas = round(8 / args.interval)
            load = [
                "--connections",
                str(failed),
                "--once",
                "--ramp",
                str(max(1.0, failed / NEW_STREAMS_PER_SECOND)),
            ]
            profile(upstream, work, env, load, f"paced-{deltas}", f"{failed} paced streams", args.ca_file)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200, help="text deltas in each upstream answer (side by side)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8, help="streams at a time, side by side")
    parser.add_argument("--seconds", type=float, default=8.0, help="of each gateway's load, each round")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--check", type=int, default=3, help="streams of each gateway checked for violations")
    parser.add_argument("--streams", type=lambda s: [int(n) for n in s.split(",")], default=[100, 250, 500, 1000, 1500])
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between a paced stream's deltas")
    parser.add_argument("--window", type=float, default=5.0, help="seconds every paced stream is open at once")
    parser.add_argument("--loadgens", type=int, default=2, help="load generator processes in the concurrency steps")
    parser.add_argument("--litellm", default=LITELLM_VERSION, help="litellm[proxy] version, installed on first use")
    parser.add_argument("--no-peer", action="store_true", help="orspec alone: no litellm, no ratio (a quick check)")
    parser.add_argument("--no-profile", action="store_true", help="no cProfile run for a goal NOT MET")
    parser.add_argument("--tls", action="store_true", help="the upstream over https, a test authority's certificate")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="orspec-capacity-"))
    env = {**os.environ, "ORSPEC_UPSTREAM_API_KEY": UPSTREAM_KEY}
    args.ca_file, tls = None, []
    if args.tls:
        args.ca_file, certificate, key = test_authority(work)
        tls = ["--tls-cert", str(certificate), "--tls-key", str(key)]
    litellm = None if args.no_peer else litellm_venv(args.litellm)
    upstream_port = free_port()
    upstream_log = work / "upstream.log"
    with upstream_log.open("wb") as log:
        upstream_proc = subprocess.Popen(
            [sys.executable, str(HERE / "chat_upstream.py"), "--port", str(upstream_port), "--events",
             str(args.events), "--interval", str(args.interval), *tls], stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    upstream = f"https://localhost:{upstream_port}" if args.tls else f"http://127.0.0.1:{upstream_port}"
    gateways: list[Gateway] = []
    try:
        wait_listening(upstream_port, upstream_proc, "the upstream", upstream_log)
        port = free_port()
        gateways.append(Gateway("orspec", orspec_command(upstream, port, args.ca_file), port, env, work))
        if litellm is not None:
            (work / "litellm.yaml").write_text(litellm_config(upstream))
            print(f"litellm.yaml:\n{litellm_config(upstream)}", end="")
            port = free_port()
            command = [str(litellm), "--config", str(work / "litellm.yaml"), "--host", "127.0.0.1", "--port",
                       str(port), "--num_workers", "1"]  # fmt: skip
            quiet = {"LITELLM_LOG": "ERROR", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
            if args.ca_file is not None:  # the bundle Python's TLS clients take from the environment
                quiet |= {"SSL_CERT_FILE": str(args.ca_file), "REQUESTS_CA_BUNDLE": str(args.ca_file)}
            gateways.append(Gateway("litellm", command, port, env | quiet, work))
        for gateway in gateways:
            gateway.wait()
        print(f"side by side: {args.rounds} rounds, {args.connections} streams at a time for {args.seconds:g} s "
              f"(after {args.warmup:g} s warm-up), {args.events} upstream deltas a response", flush=True)  # fmt: skip
        figures = side_by_side(gateways, args, work)
        print(f"concurrency of one `orspec serve --gateway chat-completions` process, a delta every "
              f"{args.interval * 1000:g} ms per stream ({1 / args.interval:g} events/s):", flush=True)  # fmt: skip
        steps = concurrency(gateways[0], psutil.Process(upstream_proc.pid), args)
        for gateway in gateways:
            gateway.stop()
        held = report(figures, steps, args)
        verdicts = goals(figures, held, args)
        if not args.no_profile:
            profile_not_met(verdicts, steps, upstream, work, env, args)
        print("results: " + json.dumps({"settings": vars(args) | {"cores": os.cpu_count()}, "gateways": figures,
                                        "concurrency": steps, "held": held}, default=str))  # fmt: skip
    finally:
        for gateway in gateways:
            gateway.stop()
        upstream_proc.terminate()
        upstream_proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
