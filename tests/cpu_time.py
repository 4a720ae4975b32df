"""CPU time, which a busy machine does not stretch as it stretches wall time.

`spent()` is what the suite's time guard (conftest.py) charges a test: the CPU time of this process
(every thread, ended ones too), of the child processes it has waited for, and of the `orspec`
commands it ran through cli_process's forkserver (children of that server, not of this process:
each adds its own to `commands` as it ends). Waiting (for a server's answer, a timeout, a sleep)
costs nothing, so a test is charged what it does, however many other jobs share the cores.

`share()` and `scaled()` are for a test's own wall-clock bounds: `scaled(2.0)` is 2 s on an idle
core, and as much longer as the share of a core this process gets right now is smaller.

Only the standard library is imported: the forkserver imports this module with cli_process.
"""

from __future__ import annotations

import resource
import time

commands = 0.0  # seconds of CPU of the forkserver's commands that have ended

_FLOOR = 0.05  # a share measured below this (a stalled sample) is taken as this: bounds stay finite


def of_this_process() -> float:
    """Seconds of CPU this process and the children it waited for have used."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def spent() -> float:
    """Seconds of CPU so far: this process's, its waited-for children's, and its forkserver commands'."""
    return of_this_process() + commands


def share(sample: float = 0.1) -> float:
    """The share of one core this thread gets now (1.0 on an idle machine, 0.25 with four runnable
    jobs a core): the CPU time a busy loop of `sample` wall seconds is given, over those seconds."""
    started, cpu = time.perf_counter(), time.thread_time()
    while time.perf_counter() - started < sample:
        pass
    return max(_FLOOR, min(1.0, (time.thread_time() - cpu) / (time.perf_counter() - started)))


def scaled(seconds: float) -> float:
    """`seconds` of wall time on an idle core, stretched by the share of a core this process gets now."""
    return seconds / share()
