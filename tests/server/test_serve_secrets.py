"""`orspec serve` as a real process, on what it writes and where its keys go: with `--log-format
json` every line it writes is JSON, and `--workers` processes get the API key and the reasoning key
with neither in their environment nor on their command line."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from ..server_helpers import free_port, stop, wait_answering

pytestmark = [pytest.mark.slow, pytest.mark.process]


@contextmanager
def serve(tmp_path: Path, *options: str, env: dict[str, str] | None = None):
    """`orspec serve` on a free port, its stdout and stderr in files; yields (process, base URL, out, err)."""
    port = free_port()
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    environment = {k: v for k, v in os.environ.items() if k not in ("ORSPEC_API_KEY", "ORSPEC_REASONING_KEY")}
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--delay", "0", *options],
            stdout=stdout,
            stderr=stderr,
            env={**environment, **(env or {})},
            start_new_session=True,  # a group of its own, which `stop` ends whole
        )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        wait_answering(proc, base, seconds=60, log=err.read_text)
        yield proc, base, out, err
    finally:
        stop(proc, grace=30)


def _json_lines(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            pytest.fail(f"not a JSON line in {path.name}: {line!r}\n{path.read_text()}")
    return records


def test_every_line_of_log_format_json_is_json(tmp_path):
    with serve(tmp_path, "--store", "memory:", "--log-format", "json") as (proc, base, out, err):
        (said,) = _json_lines(out)  # the random key, said on stdout as before, as a JSON record
        key = said["message"].rsplit("Bearer ", 1)[1]
        assert said["logger"] == "orspec.serve" and key.startswith("sk-orspec-")
        answer = httpx.post(base + "/responses", json={"input": "hi"}, headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == 200
        with socket.create_connection(("127.0.0.1", int(base.split(":")[2].split("/")[0]))) as sock:
            sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")  # uvicorn's own warning: invalid HTTP
            sock.settimeout(5)
            sock.recv(1024)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    records = _json_lines(err)
    loggers = [r["logger"] for r in records]
    assert records[0]["message"].startswith("serving Open Responses on http://127.0.0.1:")
    assert records[0]["logger"] == "orspec.serve" and records[0]["level"] == "info"
    assert "openresponses_runtime.server.access" in loggers
    assert any(r["logger"].startswith("uvicorn") and r["level"] == "warning" for r in records), records
    assert all({"time", "level", "logger", "message"} <= set(r) for r in records)


def test_a_refusal_before_serving_is_a_json_line_too(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    command = [sys.executable, "-m", "orspec", "serve", "--store", str(blocked / "x.sqlite3"), "--log-format", "json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    (record,) = [json.loads(line) for line in done.stderr.splitlines()]
    assert record["level"] == "error" and "--store" in record["message"]
    assert done.stdout == ""


API_KEY = "sk-worker-api-key-0f3c1d2e"
REASONING_KEY = "worker-reasoning-key-9a8b7c6d5e4f"
TENANT_SECRET = "worker-tenant-secret-5d4c3b2a1f"
METRICS_KEY = "worker-metrics-key-7e6d5c4b3a"


def _children(pid: int) -> list[int]:
    found = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True, timeout=10)
    return [int(p) for p in found.stdout.split()]


@pytest.mark.parametrize("given", ["environment", "options"])
def test_workers_get_their_keys_without_the_environment(tmp_path, given):
    store = str(tmp_path / "workers.sqlite3")
    env = {"ORSPEC_TENANT_SECRET": TENANT_SECRET}  # only ever from the environment
    if given == "environment":
        env |= {"ORSPEC_API_KEY": API_KEY, "ORSPEC_REASONING_KEY": REASONING_KEY, "ORSPEC_METRICS_KEY": METRICS_KEY}
        options: tuple[str, ...] = ()
    else:
        options = ("--api-key", API_KEY, "--reasoning-key", REASONING_KEY, "--metrics-key", METRICS_KEY)
    with serve(tmp_path, "--workers", "2", "--store", store, *options, env=env) as (proc, base, _, _):
        headers = {"Authorization": f"Bearer {API_KEY}"}
        sealed = httpx.post(
            base + "/responses",
            json={"input": "think", "reasoning": {"summary": "auto"}, "include": ["reasoning.encrypted_content"]},
            headers=headers,
            timeout=30,
        )
        assert sealed.status_code == 200, sealed.text
        (reasoning,) = [item for item in sealed.json()["output"] if item["type"] == "reasoning"]
        for _ in range(8):  # a new connection each: either worker opens what the other sealed
            again = httpx.post(
                base + "/responses", json={"input": [reasoning], "store": False}, headers=headers, timeout=30
            )
            assert again.status_code == 200, again.text
        root = base.removesuffix("/v1")
        for _ in range(4):  # the workers got the metrics key too, with their factory
            assert httpx.get(root + "/metrics", headers={"Authorization": f"Bearer {METRICS_KEY}"}).status_code == 200
        workers = _children(proc.pid)
        assert len(workers) >= 2
        for pid in workers:
            for part in ("environ", "cmdline"):
                text = Path(f"/proc/{pid}/{part}").read_bytes()
                for secret in (API_KEY, REASONING_KEY, TENANT_SECRET, METRICS_KEY):
                    assert secret.encode() not in text, (pid, part, secret)
                assert b"ORSPEC_SERVE_WORKER" not in text
