"""Run a command to completion and measure its wall time and the peak RSS of its whole process tree.

`ru_maxrss` sees one process; a build that runs ruff or a formatter in a subprocess would hide that
memory. This polls the process and all its descendants (psutil) every few milliseconds and keeps
the largest sum of their resident sets.

A child caught between its fork and its exec runs its parent's command line in its parent's
memory (vfork shares it; fork shares it until written): its resident set is the parent's, counted
twice. On a busy machine such a child can wait for a core long enough to be seen (a 250 MiB build
read as 500 MiB). So a child with its parent's command line is left out: neither orspec nor its
peers fork workers that keep running the parent's program.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
import time

import psutil

POLL_SECONDS = 0.01


def tree_rss(proc: psutil.Process) -> int:
    total = 0
    commands: dict[int, list[str]] = {}
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # it ended between listing and reading
            commands[p.pid] = command = p.cmdline()
            if p.pid != proc.pid and commands.get(p.ppid()) == command:
                continue  # not exec'd yet: its parent's memory, counted with the parent
            total += p.memory_info().rss
    return total


def tree_cpu(proc: psutil.Process) -> float:
    """CPU seconds (user + system) of a running process and of its live descendants."""
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # it ended between listing and reading
            times = p.cpu_times()
            total += times.user + times.system
    return total


def measure(cmd: list[str], env: dict | None = None) -> tuple[float, float]:
    """Wall seconds and whole-tree peak RSS in MiB of `cmd`; SystemExit if it fails."""
    with tempfile.TemporaryFile() as stderr:  # a file, not a pipe: a full pipe would stall the command
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        watched = psutil.Process(proc.pid)
        peak = 0
        while proc.poll() is None:
            with contextlib.suppress(psutil.Error):
                peak = max(peak, tree_rss(watched))
            time.sleep(POLL_SECONDS)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            stderr.seek(0)
            raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{stderr.read().decode()[-2000:]}")
    return elapsed, peak / 2**20
