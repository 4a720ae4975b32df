"""The suite's own machinery under load: a helper that waits never waits for ever, whatever the
processes it started leave behind, and the time guard charges a test its own CPU time, not the
wall time a busy machine stretches."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from .. import cpu_time
from ..conftest import ROOT
from ..server_helpers import free_port, stop, wait_answering

pytestmark = pytest.mark.process


def test_wait_answering_gives_up_in_time_when_an_orphan_holds_the_log_open(tmp_path):
    """A supervisor that dies without answering, leaving a worker that holds its stderr: the wait
    kills the whole group and reads the log with a deadline, instead of reading a pipe that never ends."""
    orphan = tmp_path / "orphan.pid"
    script = textwrap.dedent(f"""
        import subprocess, sys
        worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open({str(orphan)!r}, "w").write(str(worker.pid))
        print("the app failed to load", file=sys.stderr, flush=True)
        sys.exit(3)
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    said: list[str] = []

    def wait() -> None:
        try:
            wait_answering(proc, f"http://127.0.0.1:{free_port()}/v1", seconds=5)
        except RuntimeError as exc:
            said.append(str(exc))

    waiting = threading.Thread(target=wait, daemon=True)
    waiting.start()
    waiting.join(cpu_time.scaled(30))
    hung = waiting.is_alive()
    stop(proc, signal_number=9)  # whatever the wait left: the orphan too, which lets a hung read end
    waiting.join(10)
    assert not hung, "wait_answering still waited after 30 s"
    assert len(said) == 1 and "the app failed to load" in said[0]
    assert not Path(f"/proc/{orphan.read_text()}").exists() or "Z" in _state(int(orphan.read_text()))


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_the_time_guard_charges_cpu_time_not_the_wall_time_spent_waiting(tmp_path):
    """A test that waits 2.5 s on a slow process (as on a loaded machine) passes the 2-s guard; one
    that spends 2.5 s of CPU fails it, naming the markers."""
    inner = tmp_path / "test_inner.py"
    inner.write_text(
        textwrap.dedent("""
            import subprocess, sys, time

            def test_waits_on_a_slow_process():
                subprocess.run([sys.executable, "-c", "import time; time.sleep(2.5)"], check=True)

            def test_spends_cpu():
                started = time.thread_time()
                while time.thread_time() - started < 2.5:
                    pass
        """)
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "0", "-p", "tests.conftest", "-q", "-p", "no:cacheprovider", str(inner)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=cpu_time.scaled(120),
    )
    outcome = run.stdout + run.stderr
    assert "test_inner.py::test_spends_cpu" in outcome and "of CPU, over the 2 s" in outcome, outcome[-3000:]
    assert "1 failed, 1 passed" in outcome, outcome[-3000:]
