"""Every listener the project opens sends each write at once (TCP_NODELAY) on the connections it
accepts: `orspec serve` (one process and `--workers`), `orspec proxy`, `orspec docs serve` and a
scaffolded provider's `python -m`. Without it, Nagle's algorithm holds the second write of each
response (its body after its headers) until the client's delayed ACK: about 40 ms a response.

Each test starts the command as users run it, opens a keep-alive connection, reads the option
from the server's own end of that connection (taken from the serving process with
`pidfd_getfd`), and times a few requests on it: a stall shows in the fastest of them.

With TCP_NODELAY each write is a segment of its own, so the runtime's server sends the writes of
one turn of its event loop together, a response's head with its body (`serving.TurnWrites`): the
kernel's count of the data segments the server's end sent says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openresponses_runtime.server.serving import TurnWrites

from ..conftest import ROOT, run_orspec
from ..server_helpers import API_KEY, free_port

pytestmark = [pytest.mark.slow, pytest.mark.process]

_SYS_PIDFD_OPEN, _SYS_PIDFD_GETFD = 434, 438  # the same numbers on x86_64 and aarch64
_libc = ctypes.CDLL(None, use_errno=True)
# Nagle's wait is the client's delayed ACK, about 40 ms on Linux, on every response: even the fastest
# of a few answers takes that long. Without it the fastest is a millisecond or two, on a loaded machine too.
STALL = 0.03
CREATE = {"model": "demo", "input": "hi"}


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo += [int(child) for child in (task / "children").read_text().split()]
    return found


def _socket_inode(server_port: int, client_port: int) -> str:
    """The inode of the server's end of the loopback connection between the two ports."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote = (int(address.rsplit(":", 1)[1], 16) for address in fields[1:3])
            if (local, remote) == (server_port, client_port):
                return fields[9]
    raise LookupError(f"no connection from port {client_port} to port {server_port}")


def server_no_delay(pid: int, server_port: int, client: socket.socket, wait: float = 10) -> bool:
    """TCP_NODELAY as set on the serving process's (or a child's) end of `client`'s connection,
    once that process has accepted it (within `wait` seconds)."""
    with server_end(pid, server_port, client, wait) as theirs:
        return bool(theirs.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))


def server_end(pid: int, server_port: int, client: socket.socket, wait: float = 10) -> socket.socket:
    """A copy of the serving process's (or a child's) end of `client`'s connection, once that
    process has accepted it (within `wait` seconds)."""
    deadline = time.monotonic() + wait
    while True:
        with contextlib.suppress(LookupError):
            link = f"socket:[{_socket_inode(server_port, client.getsockname()[1])}]"
            for process in _descendants(pid):
                for fd in _fds(process):
                    with contextlib.suppress(OSError):
                        if os.readlink(fd) == link:
                            return _socket_of(process, int(fd.name))
        if time.monotonic() > deadline:
            raise AssertionError(f"no process under {pid} accepted the connection from {client.getsockname()}")
        time.sleep(0.02)


def _fds(pid: int) -> list[Path]:
    try:
        return list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # the process has gone
        return []


def _socket_of(pid: int, fd: int) -> socket.socket:
    pidfd = _libc.syscall(_SYS_PIDFD_OPEN, pid, 0)
    assert pidfd >= 0, os.strerror(ctypes.get_errno())
    try:
        copy = _libc.syscall(_SYS_PIDFD_GETFD, pidfd, fd, 0)
        assert copy >= 0, os.strerror(ctypes.get_errno())
    finally:
        os.close(pidfd)
    return socket.socket(fileno=copy)


def data_segments_sent(sock: socket.socket) -> int:
    """`tcpi_data_segs_out` of Linux's `struct tcp_info` (since 4.6): the segments with data sent."""
    return struct.unpack_from("I", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256), 156)[0]


def _request(method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _read_response(sock: socket.socket) -> int:
    """Reads one whole response with a Content-Length; returns its status."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        body += chunk
    return int(head.split(b" ", 2)[1])


def check_listener(pid: int, port: int, request: bytes, *, keep_alive: bool = True, times: int = 15) -> None:
    """The server's end of a new connection has TCP_NODELAY as soon as it is accepted, and answers
    come without a stall: on one keep-alive connection, or a connection each (`keep_alive=False`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        assert server_no_delay(pid, port, sock), "the accepted connection has Nagle's algorithm on"
        sock.sendall(request)
        assert _read_response(sock) == 200
        waits = []
        for _ in range(times):
            started = time.perf_counter()
            with contextlib.nullcontext(sock) if keep_alive else socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(request)
                assert _read_response(s) == 200
            waits.append(time.perf_counter() - started)
    assert min(waits) < STALL, f"the fastest of {times} answers took {min(waits) * 1000:.1f} ms"


@contextlib.contextmanager
def running(command: list[str], port: int, ready: str = "/", **popen) -> Iterator[subprocess.Popen]:
    """`command` in its own session until it answers on `port`; SIGTERM (then SIGKILL) after."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, **popen)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}{ready}", timeout=2)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    pytest.fail(f"{command[:4]} did not start: {proc.stderr.read().decode()[-2000:]}")
                time.sleep(0.1)
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        proc.stderr.close()


def _create(path: str = "/v1/responses") -> bytes:
    headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
    return _request("POST", path, json.dumps(CREATE).encode(), headers)


def _serve(port: int, *options: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "orspec",
        "serve",
        "--port",
        str(port),
        "--api-key",
        API_KEY,
        "--delay",
        "0",
        *options,
    ]


def test_orspec_serve(tmp_path):
    port = free_port()
    with running(_serve(port, "--store", "memory:"), port) as proc:
        check_listener(proc.pid, port, _create())


def test_orspec_serve_workers(tmp_path):
    port = free_port()
    with running(_serve(port, "--workers", "2", "--store", str(tmp_path / "r.sqlite3")), port) as proc:
        check_listener(proc.pid, port, _create())


def test_orspec_proxy(tmp_path):
    upstream, port = free_port(), free_port()
    with (
        running(_serve(upstream, "--store", "memory:"), upstream),
        running(
            [
                sys.executable,
                "-m",
                "orspec",
                "proxy",
                "--upstream",
                f"http://127.0.0.1:{upstream}",
                "--port",
                str(port),
            ],
            port,
        ) as proc,
    ):
        check_listener(proc.pid, port, _create())


def test_orspec_docs_serve(tmp_path):
    if not (ROOT / "generated" / "docs" / "index.md").is_file():
        pytest.fail("generated/docs is missing: run `orspec build`")
    port = free_port()
    command = [sys.executable, "-m", "orspec", "docs", "serve", "--dev-addr", f"127.0.0.1:{port}"]
    with running(command, port, cwd=ROOT) as proc:
        check_listener(proc.pid, port, _request("GET", "/"), keep_alive=False)


def test_scaffolded_provider_main(tmp_path):
    out = tmp_path / "proj"
    done = run_orspec("scaffold", "provider", "Quick Demo", "--out", str(out))
    assert done.returncode == 0, done.stderr
    port = free_port()
    command = [sys.executable, "-m", "quick_demo", "--port", str(port), "--api-key", API_KEY, "--store", "memory:"]
    env = os.environ | {"PYTHONPATH": str(out / "src")}
    with running(command, port, env=env, cwd=out) as proc:
        check_listener(proc.pid, port, _create())


def test_a_json_answer_leaves_in_one_segment(tmp_path):
    """uvicorn writes a response's head and body apart: with TCP_NODELAY, two segments and two
    system calls each. `orspec serve` sends them in one."""
    port = free_port()
    with (
        running(_serve(port, "--store", "memory:"), port) as proc,
        socket.create_connection(("127.0.0.1", port), timeout=30) as sock,
    ):
        sock.sendall(_create())
        assert _read_response(sock) == 200
        with server_end(proc.pid, port, sock) as theirs:
            before = data_segments_sent(theirs)
            for _ in range(20):
                sock.sendall(_create())
                assert _read_response(sock) == 200
            assert data_segments_sent(theirs) - before == 20


class _Recorded:
    def __init__(self):
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"


def test_writes_wait_for_the_end_of_their_turn_of_the_loop_at_most():
    async def scenario() -> list[list[bytes]]:
        seen = []
        recorded = _Recorded()
        writes = TurnWrites(recorded, asyncio.get_running_loop())
        writes.write(b"head")
        seen.append(list(recorded.writes))  # held for the next write...
        writes.write(b"")
        writes.write(b"body")
        seen.append(list(recorded.writes))  # ...the turn's first two leave at once, together
        writes.write(b"e1")
        writes.write(b"e2")
        seen.append(list(recorded.writes[1:]))  # the turn's later writes wait for its end...
        await asyncio.sleep(0)
        seen.append(list(recorded.writes[1:]))  # ...then leave in one send
        writes.write(b"alone")
        await asyncio.sleep(0)
        seen.append(list(recorded.writes[2:]))  # one write in a turn leaves when the turn ends
        writes.write(b"a")
        writes.write(b"b")
        writes.write(b"x" * TurnWrites.limit)  # the limit reached: sent at once (after the pair a, b)
        seen.append([len(data) for data in recorded.writes[3:]])
        writes.write(b"last")
        writes.close()  # closing sends what is held first
        seen.append(list(recorded.writes[5:]))
        await asyncio.sleep(0)  # the end of the turn finds nothing left to send
        assert len(recorded.writes) == 6
        assert writes.get_extra_info("socket") == "info socket"  # the rest is the transport's
        other = TurnWrites(_Recorded(), asyncio.get_running_loop())
        other.write(b"lost")
        other.transport.closed = True  # the client left during the turn
        await asyncio.sleep(0)
        assert other.transport.writes == []
        return seen

    assert asyncio.run(scenario()) == [
        [],
        [b"headbody"],
        [],
        [b"e1e2"],
        [b"alone"],
        [2, TurnWrites.limit],
        [b"last"],
    ]


def test_the_reader_sees_a_connection_without_no_delay():
    """The probe itself: a plain socket server's accepted connection reads as Nagle on."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = listener.accept()
            with accepted:
                assert server_no_delay(os.getpid(), port, client) is False
                accepted.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                assert server_no_delay(os.getpid(), port, client) is True
