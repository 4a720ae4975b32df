"""How much one request raises the server's memory: `orspec serve` on a memory store, one request
each of several shapes, the server's peak RSS (VmHWM) read from /proc before and after.

    python bench/request_memory.py

Each line: the body's size, the peak's rise, and their ratio; the goal is about 10x at most.
A fresh server per shape, so that one shape's peak does not hide the next's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx

KEY = "sk-bench-memory"
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


def peak_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def measure(name: str, body: dict) -> None:
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
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        raw = json.dumps({"model": "demo", "stream": False, **body}).encode()
        before = peak_kb(proc.pid)
        answer = httpx.post(
            base + "/responses",
            content=raw,
            headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
            timeout=120,
        )
        rise = (peak_kb(proc.pid) - before) * 1024
        print(
            f"{name}: body {len(raw) / 1e6:.1f} MB, answer {answer.status_code}"
            f" {answer.json().get('error', {}).get('code', '') if answer.status_code != 200 else ''},"
            f" peak RSS +{rise / 1e6:.1f} MB, {rise / len(raw):.1f}x the body"
        )
    finally:
        proc.kill()
        proc.wait(10)


if __name__ == "__main__":
    for shape, request in SHAPES.items():
        measure(shape, request)
