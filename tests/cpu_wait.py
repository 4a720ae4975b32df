"""Time spent ready to run but waiting for a CPU (Linux's schedstat; 0 elsewhere), which the suite's time
guard (conftest.py) leaves out of a test's time, so that a busy machine fails no fast test.

The kernel keeps the figure per thread, and it goes with the thread: threads and forked commands that end
within a test add theirs to `ended` first (server_helpers.live_server, cli_process)."""

from __future__ import annotations

import contextlib
from pathlib import Path

ended = 0.0  # seconds, of threads and commands that have ended


def _waited(pattern: str) -> float:
    waited = 0
    for stat in Path("/proc").glob(pattern):
        with contextlib.suppress(OSError, IndexError, ValueError):
            waited += int(stat.read_text().split()[1])
    return waited / 1e9


def of_this_process() -> float:
    """Seconds this process's live threads have waited for a CPU."""
    return _waited("self/task/*/schedstat")


def of_this_thread() -> float:
    return _waited("thread-self/schedstat")


def total() -> float:
    """Seconds waited so far by this process's threads, and by the threads and commands that have ended."""
    return of_this_process() + ended


def add_this_thread() -> None:
    """Called as a thread ends: keep what it waited."""
    global ended
    ended += of_this_thread()
