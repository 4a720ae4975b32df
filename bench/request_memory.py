"""How much one request raises the server's memory: `orspec serve` on a memory store, one request
each of several shapes, the server's peak RSS (VmHWM) read from /proc before and after.

    python bench/request_memory.py
    python bench/request_memory.py --profile   # where it goes: each stage's rise, in this process

Each line: the body's size, the peak's rise, and their ratio; the goal is 10x at most, for the
first three shapes. A fresh server per shape, so that one shape's peak does not hide the next's.
The fourth (512 tools, a 0.1 MB body) is shown, not a goal: its rise is the heap's first growth to
hold small objects, which a second such request reuses.

`--profile` runs the same requests through the app in this process, resetting the peak
(`/proc/self/clear_refs`) at each stage: reading the body, decoding and validating it, preparing
the turn, the provider's first step, and running the rest (the provider, the events, the response
encoded, the record saved).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import re
import subprocess
import sys
import time

import httpx

KEY = "sk-bench-memory"
GOAL = 10.0  # the peak's rise, at most, as a multiple of the body
SHAPES = {
    "170k tiny items (the probe's)": {"input": [{"role": "user", "content": "hi"}] * 170_000},
    "10k items of 800 bytes": {"input": [{"role": "user", "content": "x" * 800}] * 10_000},
    "one 8 MB message": {"input": "x" * 8_000_000},
    "512 tools": {
        "input": "hi",
        "tools": [
            {
                "type": "function",
                "name": f"f{i}",
                "parameters": {"type": "object", "properties": {"a": {"type": "string"}}},
            }
            for i in range(512)
        ],
    },
}
NOT_GOALS = {"512 tools"}


def body_of(shape: dict) -> bytes:
    return json.dumps({"model": "demo", "stream": False, **shape}).encode()


def status_kb(pid: int | str, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def measure(name: str, raw: bytes) -> float:
    """The rise of a fresh server's peak RSS over one request, as a multiple of the body."""
    port = 8700 + os.getpid() % 200
    proc = subprocess.Popen(
        [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", KEY, "--store", "memory:"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.post(base + "/responses", json={"input": "warm"}, headers={"Authorization": f"Bearer {KEY}"})
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        before = status_kb(proc.pid, "VmHWM")
        answer = httpx.post(
            base + "/responses",
            content=raw,
            headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
            timeout=120,
        )
        rise = (status_kb(proc.pid, "VmHWM") - before) * 1024
        code = answer.json().get("error", {}).get("code", "") if answer.status_code != 200 else ""
        again = ""
        if name in NOT_GOALS:  # the same request once more, its peak over the RSS it starts from
            before = status_kb(proc.pid, "VmRSS")
            with open(f"/proc/{proc.pid}/clear_refs", "w") as clear:
                clear.write("5")  # VmHWM back to the RSS of now
            httpx.post(base + "/responses", content=raw, headers=answer.request.headers, timeout=120)
            again = f"; once more: +{(status_kb(proc.pid, 'VmHWM') - before) * 1024 / 1e6:.1f} MB"
        print(
            f"{name}: body {len(raw) / 1e6:.1f} MB, answer {answer.status_code} {code},"
            f" peak RSS +{rise / 1e6:.1f} MB, {rise / len(raw):.1f}x the body{again}"
        )
        return rise / len(raw)
    finally:
        proc.kill()
        proc.wait(10)


def profile(name: str, raw: bytes) -> None:
    """Each stage's rise of this process's peak RSS over the RSS at its start, for one request."""
    from openresponses_runtime.server import DemoProvider, bodies, create_app, open_store, turns

    def rss() -> int:
        return status_kb("self", "VmRSS") * 1024

    def reset_peak() -> None:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")

    found: list[list] = []  # [label, RSS at its start, its peak], in the order the stages start
    peak = [0]  # the request's own, across the stages' resets

    running: list[list] = []  # the stages under way, outermost first: a stage's peak is theirs too

    def seen() -> None:
        top = status_kb("self", "VmHWM") * 1024
        peak[0] = max(peak[0], top)
        for stage in running:
            stage[2] = max(stage[2], top)

    def begin(label: str) -> list:
        seen()
        found.append([label, rss(), 0])
        running.append(found[-1])
        reset_peak()
        return found[-1]

    def end(stage: list) -> None:
        seen()
        running.remove(stage)

    def staged(label: str, function):
        @functools.wraps(function)
        async def run(*args, **kwargs):
            stage = begin(label)
            try:
                return await function(*args, **kwargs)
            finally:
                end(stage)

        return run

    def sync_staged(label: str, function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            stage = begin(label)
            try:
                return function(*args, **kwargs)
            finally:
                end(stage)

        return run

    # Wherever the request path imported them from `bodies`.
    stages = {bodies.read_body: staged("read the body", bodies.read_body)}
    stages[bodies.parse_body] = sync_staged("decode and validate", bodies.parse_body)
    for module in [m for key, m in sys.modules.items() if key.startswith("openresponses_runtime.server")]:
        for attribute, value in list(vars(module).items()):
            if callable(value) and value in stages:
                setattr(module, attribute, stages[value])
    turns.Turns.prepare = staged("prepare the turn", turns.Turns.prepare)
    turns.Turns.first_step = staged("the provider's first step", turns.Turns.first_step)
    turns.Turns.run = staged("run it (provider, events, encode, save)", turns.Turns.run)
    turns.Turns.save = staged("  of which: save the record", turns.Turns.save)

    app = create_app(DemoProvider(), store=open_store("memory:"), api_keys=KEY)

    async def post(body: bytes) -> int:
        at = 0
        statuses = []

        async def receive():
            nonlocal at
            if at <= len(body):
                chunk, at = body[at : at + 65536], at + 65536
                return {"type": "http.request", "body": chunk, "more_body": at < len(body)}
            await asyncio.sleep(3600)

        async def send(message):
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        headers = [(b"authorization", f"Bearer {KEY}".encode()), (b"content-type", b"application/json")]
        headers.append((b"content-length", str(len(body)).encode()))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/v1/responses",
            "raw_path": b"/v1/responses",
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 2),
        }
        await app(scope, receive, send)
        return statuses[0]

    async def main() -> None:
        await post(b'{"model": "demo", "input": "warm"}')
        found.clear()
        start = rss()
        peak[0] = 0
        reset_peak()
        status = await post(raw)
        peak[0] = max(peak[0], status_kb("self", "VmHWM") * 1024)
        print(f"{name}: body {len(raw) / 1e6:.1f} MB, answer {status}, RSS at the start {start / 1e6:.0f} MB")
        for label, at, top in found:
            print(f"  {label:42} from +{(at - start) / 1e6:5.1f} MB, peak +{(top - start) / 1e6:5.1f} MB")
        print(
            f"  {'the whole request':42} peak +{(peak[0] - start) / 1e6:5.1f} MB, {(peak[0] - start) / len(raw):.1f}x"
        )

    asyncio.run(main())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", action="store_true", help="each stage's rise, in this process")
    parser.add_argument("--shape", choices=SHAPES, action="append", help="only these shapes (repeatable)")
    args = parser.parse_args()
    shapes = {name: SHAPES[name] for name in args.shape or SHAPES}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.profile:
        for name in shapes:  # one process a shape: one shape's heap does not serve the next
            code = f"import request_memory as bench; bench.profile({name!r}, bench.body_of(bench.SHAPES[{name!r}]))"
            here = os.path.dirname(os.path.abspath(__file__))
            subprocess.run([sys.executable, "-c", code], cwd=here, check=True, timeout=300)
        return 0
    ratios = {name: measure(name, body_of(shape)) for name, shape in shapes.items()}
    print("\ngoals (peak RSS rise over one request, as a multiple of its body):")
    for name, ratio in ratios.items():
        if name in NOT_GOALS:
            print(f"  {name}: {ratio:.1f}x, not a goal (a 0.1 MB body: the heap's first growth, reused once more)")
            continue
        label = re.sub(r"\s*\(.*\)", "", name)
        print(f"  peak RSS / body, {label}: {ratio:.1f}x  (goal <= {GOAL:g}x)  {'MET' if ratio <= GOAL else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
