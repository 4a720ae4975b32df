"""Helpers for the server tests: a live uvicorn server on loopback, and small test providers."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import contextmanager

import uvicorn
from openresponses_runtime.server import (
    DemoProvider,
    MessageStart,
    ProviderRequest,
    Step,
    TextDelta,
)

from . import cpu_time

API_KEY = "sk-test-key"
METRICS_KEY = "sk-metrics-test-key"  # what `/metrics` asks for: `observed()`, `metrics_text`


def observed(**settings):
    """The app's observability (`create_app(observability=...)`) with `/metrics` behind `METRICS_KEY`."""
    from openresponses_runtime.server import Observability

    return Observability(**{"metrics_key": METRICS_KEY, **settings})


def metrics_text(root: str) -> str:
    """`/metrics` of the server at `root` (no `/v1`), fetched with `METRICS_KEY`."""
    import httpx

    answer = httpx.get(root + "/metrics", headers={"Authorization": f"Bearer {METRICS_KEY}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.text


def _ephemeral_low() -> int:
    try:
        return int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# Each test worker takes ports from a block of its own below the kernel's ephemeral range. A port from
# `bind(0)` is one the kernel hands out again, to another worker's server or an outgoing connection,
# before ours binds it; a readiness probe then finds the wrong server, which later goes away.
_BLOCKS = 32
_BLOCK = (_ephemeral_low() - 10000) // _BLOCKS
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0) % _BLOCKS
_next_port = itertools.count(random.randrange(_BLOCK))  # another run on the machine starts elsewhere


def free_port() -> int:
    """A loopback port nothing listens on, from this worker's block."""
    for _ in range(_BLOCK):
        port = 10000 + _WORKER * _BLOCK + next(_next_port) % _BLOCK
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in 127.0.0.1:{10000 + _WORKER * _BLOCK}+{_BLOCK}")


@contextmanager
def live_server(app, **options):
    """Serve `app` with uvicorn in a thread on 127.0.0.1; yields the base URL (`.../v1`).

    `options` go to `uvicorn.Config` (`server_header=False`, say)."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **{"lifespan": "off", **options})
    server = uvicorn.Server(config)

    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + cpu_time.scaled(10)
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(10)


class RecordingProvider:
    """The demo model, recording every request it is handed."""

    def __init__(self, inner=None):
        self.inner = inner or DemoProvider()
        self.requests: list[ProviderRequest] = []

    def respond(self, request: ProviderRequest) -> AsyncIterator[Step]:
        self.requests.append(request)
        return self.inner.respond(request)

    async def compact(self, items, *, model, instructions):
        from openresponses_runtime.server.compaction import default_compaction

        if not hasattr(self.inner, "compact"):  # as the server does for a provider without its own
            return default_compaction(items)
        return await self.inner.compact(items, model=model, instructions=instructions)


class StepsProvider:
    """Yields fixed steps (or raises `error` first, or after the steps)."""

    def __init__(self, steps=(), *, error: BaseException | None = None, raise_after: bool = False):
        self.steps = list(steps)
        self.error = error
        self.raise_after = raise_after

    async def respond(self, request: ProviderRequest) -> AsyncIterator[Step]:
        if self.error is not None and not self.raise_after:
            raise self.error
        for step in self.steps:
            yield step
        if self.error is not None:
            raise self.error


class EndlessProvider:
    """Streams text forever (slowly) and records whether it was closed."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.closed = threading.Event()
        self.running = 0

    async def respond(self, request: ProviderRequest) -> AsyncIterator[Step]:
        self.running += 1
        try:
            yield MessageStart()
            self.started.set()
            while True:
                await asyncio.sleep(0.01)
                yield TextDelta("tick ")
        finally:
            self.running -= 1
            self.closed.set()


def start(
    command: list[str], *, env: dict | None = None, cwd=None, stdout=None, stderr=None, **popen
) -> subprocess.Popen:
    """`command` in a session, so a process group, of its own (`stop` ends the group: workers, and the
    processes they started, with their leader), stdout discarded unless `stdout` is a file, stderr piped
    unless `stderr` is one. On Linux it is killed when the test process dies (a run interrupted), as
    its own session would otherwise outlive it."""
    given = popen.pop("preexec_fn", None)

    def prepare() -> None:
        _die_with_parent()
        if given is not None:
            given()

    return subprocess.Popen(
        command,
        stdout=stdout or subprocess.DEVNULL,
        stderr=stderr or subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        start_new_session=True,
        preexec_fn=prepare,
        **popen,
    )


def _die_with_parent() -> None:
    """In a child before it runs its command: SIGKILL when the parent dies (Linux's parent-death signal)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def stop(proc: subprocess.Popen, *, signal_number: int = signal.SIGTERM, grace: float = 10) -> int:
    """End `proc` (started by `start`): `signal_number` to it, SIGKILL to its whole group if it has not
    exited `grace` seconds (scaled by the machine's load) later, and SIGKILL to whatever it left in
    its group (orphaned workers) in any case. Its exit code."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal_number)
    try:
        code = proc.wait(cpu_time.scaled(grace))
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        code = proc.wait(10)  # SIGKILL cannot be caught: this wait is short
    _kill_group(proc.pid)
    return code


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def log_of(proc: subprocess.Popen, *, seconds: float = 2) -> str:
    """What `proc` wrote to its piped stderr, read for at most `seconds`: a pipe that an orphan of `proc`
    holds open never ends, and a plain `read()` would wait on it for ever."""
    if proc.stderr is None:
        return "(see its log)"
    fd = proc.stderr.fileno()
    os.set_blocking(fd, False)
    chunks: list[bytes] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            continue
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def wait_answering(proc: subprocess.Popen, base: str, *, seconds: float = 30, log=None) -> None:
    """Wait until the server `proc` (started by `start`) answers HTTP at `base`, each probe bounded by a
    second. If it exits first, or `seconds` pass (scaled by the machine's load): kill its whole process
    group and raise, with its log (`log()`, else its piped stderr, read with a deadline)."""
    import httpx

    deadline = time.monotonic() + cpu_time.scaled(seconds)
    while True:
        try:
            httpx.get(base + "/responses", timeout=1)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline or proc.poll() is not None:
                stop(proc, signal_number=signal.SIGKILL)
                said = log() if log else log_of(proc)
                raise RuntimeError(f"{proc.args[:4]} did not start: {said}") from None
            time.sleep(0.1)


@contextmanager
def served_process(command: list[str], *, port: int, env: dict | None = None, cwd=None, stderr=None):
    """Run a server command on loopback `port` until it answers HTTP; yields its base URL (`.../v1`).
    Afterwards its whole process group is ended (`stop`).

    `stderr`: a file to keep the server's log in (by default it is read only when it fails to start)."""
    proc = start(command, env=env, cwd=cwd, stderr=stderr)
    base = f"http://127.0.0.1:{port}/v1"
    wait_answering(proc, base)
    try:
        yield base
    finally:
        exited = proc.poll()  # before the test was done with it: say so, with its log
        stop(proc)
        if exited is not None:
            log = log_of(proc)[-3000:] if proc.stderr else "(see its log)"
            raise RuntimeError(f"{command[:4]} exited ({exited}) while in use: {log}")


def ws_turn(ws, **body) -> list[dict]:
    """Send one response.create and collect its messages up to a terminal event or an error envelope."""
    ws.send(json.dumps({"type": "response.create", "model": "demo", **body}))
    out = []
    while True:
        message = json.loads(ws.recv(timeout=10))
        out.append(message)
        if message["type"] in ("response.completed", "response.incomplete", "response.failed"):
            return out
        if message["type"] == "error" and "status" in message:
            return out
