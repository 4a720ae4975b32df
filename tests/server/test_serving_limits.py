"""`orspec serve` on the way in and on the way out, as a real process: silent connections, header
trickle and slowloris bodies are closed within their timeouts while normal requests go on; SIGTERM
lets streams run until `--graceful-timeout`, then ends each the spec's way and exits 0."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from openresponses_runtime.streaming import StreamChecker

from .. import cpu_time
from ..server_helpers import API_KEY, free_port, log_of, stop, wait_answering
from ..server_helpers import start as start_process

HEADERS = {"Authorization": f"Bearer {API_KEY}"}
pytestmark = [pytest.mark.slow, pytest.mark.process]


def start(*options: str, command: tuple[str, ...] = ("serve", "--api-key", API_KEY, "--store", "memory:")):
    """`orspec <command> --port P <options>`, once it answers; returns (process, base URL, port)."""
    port = free_port()
    proc = start_process([sys.executable, "-m", "orspec", *command, "--port", str(port), *options])
    base = f"http://127.0.0.1:{port}/v1"
    wait_answering(proc, base)
    return proc, base, port


def closed_after(port: int, trickle: list[bytes], every: float = 0.25, limit: float = 5.0) -> float:
    """Seconds until the server closes a connection that sends `trickle` one piece every `every` s."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(every)
        pieces = iter(trickle)
        while time.monotonic() - started < limit:
            try:
                if sock.recv(1024) == b"":
                    return time.monotonic() - started
            except TimeoutError:
                piece = next(pieces, None)
                if piece is not None:
                    try:
                        sock.sendall(piece)
                    except OSError:
                        return time.monotonic() - started
            except ConnectionResetError:
                return time.monotonic() - started
    raise AssertionError(f"the connection was still open after {limit} s")


def test_silent_trickling_and_slow_connections_are_closed_in_time_while_others_are_served():
    proc, base, port = start("--idle-timeout", "1", "--header-timeout", "1.5", "--body-timeout", "1")
    head = (
        f"POST /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {API_KEY}\r\n"
        "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n"
    ).encode()
    try:
        fast = []

        def normal_requests():
            while len(fast) < 20:
                started = time.monotonic()
                answer = httpx.post(base + "/responses", json={"input": "hi"}, headers=HEADERS, timeout=5)
                fast.append((answer.status_code, time.monotonic() - started))
                time.sleep(0.1)

        meanwhile = threading.Thread(target=normal_requests)
        meanwhile.start()
        silent = closed_after(port, [])
        trickle = closed_after(port, [bytes([b]) for b in head])  # one header byte every 0.25 s
        slow_body = closed_after(port, [head] + [b"{"] * 40)  # the headers at once, then a body byte every 0.25 s
        meanwhile.join(cpu_time.scaled(30))
    finally:
        stop(proc)
    slack = 1 / cpu_time.share()  # a loaded machine stretches the upper bounds, never the timeouts themselves
    assert 0.9 <= silent < 2.0 * slack
    assert 1.4 <= trickle < 2.5 * slack
    assert 1.2 <= slow_body < 2.5 * slack  # the headers' quarter second, then the body's one
    assert [status for status, _ in fast] == [200] * 20
    assert max(seconds for _, seconds in fast) < 1.0 * slack


def test_the_proxy_closes_silent_and_trickling_connections_as_serve_does():
    upstream, upstream_base, _ = start()
    proc, base, port = start(
        "--idle-timeout", "1", "--header-timeout", "1.5", command=("proxy", "--upstream", upstream_base, "--quiet")
    )
    head = f"POST /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {API_KEY}\r\n".encode()
    try:
        silent = closed_after(port, [])
        trickle = closed_after(port, [bytes([b]) for b in head])  # one header byte every 0.25 s
        answer = httpx.post(base + "/responses", json={"input": "hi"}, headers=HEADERS, timeout=5)
    finally:
        for process in (proc, upstream):
            stop(process)
    slack = 1 / cpu_time.share()
    assert 0.9 <= silent < 2.0 * slack
    assert 1.4 <= trickle < 2.5 * slack
    assert answer.status_code == 200 and answer.json()["status"] == "completed"


def test_sigterm_lets_streams_run_to_the_deadline_then_ends_each_failed_and_exits_0():
    proc, base, _ = start("--delay", "0.2", "--graceful-timeout", "1.5")
    captures: list[str] = []
    begun = threading.Barrier(4)

    def stream(n: int) -> None:
        body = {"input": f"stream {n} " + "word " * 60, "stream": True}  # 12 s of words at 0.2 s each
        with httpx.stream("POST", base + "/responses", json=body, headers=HEADERS, timeout=30) as response:
            lines = response.iter_lines()
            head = [next(lines)]
            begun.wait(10)
            captures.append("\n".join(head + list(lines)) + "\n")

    threads = [threading.Thread(target=stream, args=(n,)) for n in range(3)]
    try:
        for thread in threads:
            thread.start()
        begun.wait(cpu_time.scaled(10))
        time.sleep(0.3)
        signalled = time.monotonic()
        code = stop(proc, grace=10)
        took = time.monotonic() - signalled
        for thread in threads:
            thread.join(cpu_time.scaled(10))
    finally:
        stop(proc)
    assert code == 0, log_of(proc)
    assert 1.5 <= took < 4.0 / cpu_time.share()
    assert len(captures) == 3
    for text in captures:
        checker = StreamChecker()
        assert checker.check_sse(text) == [], checker.violations
        assert checker.terminal == "response.failed" and text.endswith("data: [DONE]\n\n")
        blocks = [block for block in text.split("\n\n") if block]
        error = json.loads(blocks[-3].split("data: ", 1)[1])["error"]
        assert (error["type"], error["code"]) == ("server_error", "server_shutting_down")
        assert "delta" in text  # it ran until the deadline, not cut at the signal


def test_the_proxy_on_sigterm_lets_a_stream_run_to_its_deadline_then_ends_it_the_spec_s_way(tmp_path):
    upstream, upstream_base, _ = start("--delay", "0.2")
    proc, base, _ = start(
        "--graceful-timeout",
        "1.5",
        command=("proxy", "--upstream", upstream_base, "--quiet", "--record", str(tmp_path)),
    )
    captured: list[str] = []
    begun = threading.Event()

    def stream() -> None:
        body = {"input": "word " * 60, "stream": True}  # 12 s of words at 0.2 s each
        with httpx.stream("POST", base + "/responses", json=body, headers=HEADERS, timeout=30) as response:
            lines = response.iter_lines()
            head = [next(lines)]
            begun.set()
            captured.append("\n".join(head + list(lines)) + "\n")

    thread = threading.Thread(target=stream)
    thread.start()
    try:
        assert begun.wait(cpu_time.scaled(10))
        signalled = time.monotonic()
        code = stop(proc, grace=10)
        took = time.monotonic() - signalled
        thread.join(cpu_time.scaled(10))
    finally:
        for process in (proc, upstream):
            stop(process)
    assert code == 0, log_of(proc)
    assert 1.5 <= took < 4.0 / cpu_time.share()
    (text,) = captured
    checker = StreamChecker()
    assert checker.check_sse(text) == [], checker.violations
    assert checker.terminal == "response.failed" and text.endswith("data: [DONE]\n\n")
    error = json.loads([block for block in text.split("\n\n") if block][-3].split("data: ", 1)[1])["error"]
    assert error["code"] == "server_shutting_down"
    records = [json.loads(line) for path in tmp_path.glob("*.jsonl") for line in path.read_text().splitlines()]
    (record,) = [r for r in records if r["transport"] == "sse"]  # the others: `start`'s GETs until it answered
    assert [d["kind"] for d in record["diagnoses"]] == ["proxy-shutdown"]


def test_a_second_signal_ends_the_streams_at_once():
    proc, base, _ = start("--delay", "0.2", "--graceful-timeout", "60")
    captured: list[str] = []
    begun = threading.Event()

    def stream() -> None:
        body = {"input": "word " * 60, "stream": True}
        with httpx.stream("POST", base + "/responses", json=body, headers=HEADERS, timeout=30) as response:
            lines = response.iter_lines()
            head = [next(lines)]
            begun.set()
            captured.append("\n".join(head + list(lines)) + "\n")

    thread = threading.Thread(target=stream)
    thread.start()
    try:
        assert begun.wait(cpu_time.scaled(10))
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        signalled = time.monotonic()
        code = stop(proc, grace=10)
        took = time.monotonic() - signalled
        thread.join(cpu_time.scaled(10))
    finally:
        stop(proc)
    assert code == 0
    assert took < 2.0 / cpu_time.share()  # the graceful timeout is 60 s
    checker = StreamChecker()
    assert checker.check_sse(captured[0]) == [], checker.violations
    assert checker.terminal == "response.failed" and captured[0].endswith("data: [DONE]\n\n")


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_workers_share_one_store_and_stop_together(store, tmp_path):
    url = str(tmp_path / "workers.sqlite3")
    if store == "postgres":
        url = os.environ.get("ORSPEC_TEST_POSTGRES") or pytest.skip("set ORSPEC_TEST_POSTGRES to a PostgreSQL URL")
    proc, base, _ = start("--workers", "2", "--store", url, "--delay", "0.1", "--graceful-timeout", "1")
    captured: list[str] = []
    try:
        workers = subprocess.run(["ps", "-o", "pid=", "--ppid", str(proc.pid)], capture_output=True, text=True)
        assert len(workers.stdout.split()) >= 2  # two workers (and multiprocessing's resource tracker, maybe)
        previous = None
        for n in range(20):  # a connection each: the kernel hands them to either worker
            body = {"input": f"turn {n}", **({"previous_response_id": previous} if previous else {})}
            answer = httpx.post(base + "/responses", json=body, headers=HEADERS, timeout=10)
            assert answer.status_code == 200, answer.text
            previous = answer.json()["id"]
        with httpx.stream(
            "POST", base + "/responses", json={"input": "word " * 100, "stream": True}, headers=HEADERS, timeout=30
        ) as response:
            lines = response.iter_lines()
            head = [next(lines)]
            proc.send_signal(signal.SIGTERM)  # a worker's stream under way: ended at the deadline
            captured.append("\n".join(head + list(lines)) + "\n")
    finally:
        code = stop(proc, grace=20)
    assert code == 0
    checker = StreamChecker()
    assert checker.check_sse(captured[0]) == [], checker.violations
    assert checker.terminal == "response.failed" and "server_shutting_down" in captured[0]


def children(pid: int) -> list[int]:
    """The processes `pid` started (Linux's /proc)."""
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def alive(pid: int) -> bool:
    """Whether `pid` still runs: it exists, and is not a zombie waiting for its parent."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def workers_of(pid: int) -> list[int]:
    return [child for child in children(pid) if "spawn_main" in Path(f"/proc/{child}/cmdline").read_text()]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads processes' children from Linux's /proc")
@pytest.mark.parametrize("replaced", [False, True], ids=["first workers", "a replacement"])
def test_workers_exit_and_free_the_port_when_their_supervisor_is_killed(tmp_path, replaced):
    store = str(tmp_path / "workers.sqlite3")
    proc, base, port = start("--workers", "2", "--store", store, "--delay", "0.05", "--graceful-timeout", "1")
    streams: list[threading.Thread] = []
    try:
        workers = workers_of(proc.pid)
        assert len(workers) == 2
        if replaced:  # the supervisor starts a new worker for one that died: it must follow its parent too
            os.kill(workers[0], signal.SIGKILL)
            deadline = time.monotonic() + cpu_time.scaled(20)
            while set(workers_of(proc.pid)) in (set(workers), {workers[1]}) and time.monotonic() < deadline:
                time.sleep(0.1)
            workers = workers_of(proc.pid)
            assert len(workers) == 2, workers
            wait_answering(proc, base)
        begun = threading.Semaphore(0)

        def stream() -> None:  # the workers are busy when their parent dies
            body = {"input": "word " * 200, "stream": True}
            with (
                contextlib.suppress(httpx.HTTPError),
                httpx.stream("POST", base + "/responses", json=body, headers=HEADERS, timeout=30) as answer,
            ):
                for n, _ in enumerate(answer.iter_lines()):
                    if n == 0:
                        begun.release()

        streams = [threading.Thread(target=stream) for _ in range(6)]
        for thread in streams:
            thread.start()
        for _ in streams:
            assert begun.acquire(timeout=cpu_time.scaled(10))
        proc.kill()  # SIGKILL: the supervisor cannot pass anything on
        proc.wait(10)
        deadline = time.monotonic() + cpu_time.scaled(10)  # the graceful second, and a start-up's worth of slack
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [pid for pid in workers if alive(pid)]
        with pytest.raises(ConnectionRefusedError):  # nobody holds the listening socket any more
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
    finally:
        stop(proc)  # and its whole process group, orphans included
        for thread in streams:
            thread.join(cpu_time.scaled(10))
    assert left == []


def test_workers_refuse_the_memory_store():
    command = [sys.executable, "-m", "orspec", "serve", "--workers", "2", "--store", "memory:", "--api-key", "k"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "orspec: --store memory: lives in one process; with --workers use a SQLite file or a postgresql:// URL"
    )


def test_running_out_of_file_descriptors_is_logged_once(tmp_path):
    import resource

    port = free_port()
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY, "--store", "memory:"]
    command += ["--graceful-timeout", "3"]  # a connection caught between accept() retries still ends in time

    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (80, 80))

    log_file = (tmp_path / "server.log").open("wb")
    proc = start_process(command, stderr=log_file, preexec_fn=few_descriptors)
    held = []
    try:
        wait_answering(proc, f"http://127.0.0.1:{port}/v1", log=(tmp_path / "server.log").read_text)
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(120)]  # past the limit
        time.sleep(3)  # asyncio retries accept() every second, and would log each time
    finally:
        for sock in held:
            sock.close()
        try:
            code = stop(proc, grace=20)  # the deadline (3 s) and uvicorn's 5 s after it
        finally:
            log_file.close()
    log = (tmp_path / "server.log").read_text()
    assert code == 0
    assert log.count("out of file descriptors") == 1, log[-2000:]
    assert "socket.accept() out of system resource" not in log


def test_max_streams_refuses_a_stream_beyond_it_until_one_ends():
    proc, base, _ = start("--max-streams", "1", "--delay", "0.1")
    body = {"input": "word " * 100, "stream": True}  # 10 s of words
    try:
        with httpx.stream("POST", base + "/responses", json=body, headers=HEADERS, timeout=30) as held:
            assert held.status_code == 200
            lines = held.iter_lines()  # kept: a dropped iterator closes the connection
            next(lines)
            refused = httpx.post(base + "/responses", json={"input": "hi", "stream": True}, headers=HEADERS, timeout=10)
            plain = httpx.post(base + "/responses", json={"input": "hi"}, headers=HEADERS, timeout=10)
        # The client left: the server notices at its next event, and gives the slot back.
        deadline = time.monotonic() + cpu_time.scaled(5)
        while True:
            served = httpx.post(base + "/responses", json={"input": "hi", "stream": True}, headers=HEADERS, timeout=10)
            if served.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        stop(proc)
    assert refused.status_code == 503 and refused.headers["retry-after"] == "2"
    assert refused.json() == {
        "error": {
            "type": "server_error",
            "code": "too_many_streams",
            "param": None,
            "message": "The server is generating its maximum of 1 streams at once; retry shortly.",
        }
    }
    assert plain.status_code == 200 and plain.json()["status"] == "completed"
    assert served.status_code == 200 and served.text.endswith("data: [DONE]\n\n")


@pytest.mark.parametrize("value", ["-1", "many"])
def test_max_streams_must_be_a_whole_number(value):
    command = [sys.executable, "-m", "orspec", "serve", "--max-streams", value, "--api-key", "k"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        f"orspec serve: error: argument --max-streams: '{value}' is not a whole number (0: no cap)"
    )
