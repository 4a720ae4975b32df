"""`orspec` commands in processes of their own, forked from one that has imported the CLI already.

A fresh interpreter spends about 0.45 s of CPU importing orspec and its validators before a command
does any work, and the suite runs some 150 commands. Here each command still runs in a new process,
with its own arguments, working folder, environment, exit code, stdout and stderr, and (when asked)
a cap on its address space, but that process is forked from a multiprocessing forkserver (one per
test worker) that imported those modules once. An environment that changes how Python starts
(`PYTHONPATH` to a copied toolchain, say) gets a real interpreter instead. Python's own start of the
CLI (`python -m orspec`, the console script) is tested with real processes in test_cli_manners.py
and test_distribution.py.

Only the standard library (and cpu_time.py, which needs nothing else) is imported at the top: the
forkserver imports this module to find `_child`.
"""

from __future__ import annotations

import contextlib
import locale
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

from . import cpu_time

# What a command imports before its own work; nothing that a build writes (the runtime) is among them.
PRELOAD = [
    "tests.cli_process",
    "orspec.cli",
    "orspec.pipeline",
    "orspec.validate",
    "openapi_spec_validator",
    "jsonschema",
]

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(PRELOAD)


def start() -> None:
    """Start the forkserver now; it imports PRELOAD in the background instead of within the first command."""
    from multiprocessing import forkserver

    forkserver.ensure_running()


def _child(args: list[str], cwd: str, env: dict[str, str], streams: tuple[str, str], memory: int | None) -> None:
    """In the forked process: become the command, run it, and exit with its code."""
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, path in zip((1, 2), streams, strict=True):
        opened = os.open(path, os.O_WRONLY)
        os.dup2(opened, fd)
        os.close(opened)
    sys.argv = ["orspec", *args]
    try:
        from orspec.cli import main

        code = main(args)
    except SystemExit as stop:  # as the interpreter exits on an uncaught SystemExit (argparse's, say)
        code = stop.code
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
    except BaseException:  # as the interpreter reports an uncaught exception
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a closed pipe: the command has dealt with it
            stream.flush()
    with contextlib.suppress(OSError):  # for the suite's time guard
        Path(streams[0]).with_name("cpu").write_text(str(cpu_time.of_this_process()))
    os._exit(code or 0)


def _starts_differently(env: dict[str, str]) -> bool:
    """`PYTHON*` variables decide how an interpreter starts (its path, its flags); a fork keeps the worker's."""
    return any(
        os.environ.get(name) != env.get(name) for name in set(env) | set(os.environ) if name.startswith("PYTHON")
    )


def _text(data: bytes) -> str:
    """Bytes as `subprocess.run(..., text=True)` gives them: locale encoding, universal newlines."""
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


def run(
    args: list[str], *, cwd: Path, env: dict[str, str], timeout: float, memory: int | None = None
) -> subprocess.CompletedProcess:
    """`orspec ARGS` in `cwd` with exactly `env`, as `subprocess.run(..., capture_output=True, text=True)`."""
    command = [sys.executable, "-m", "orspec", *args]
    if _starts_differently(env):
        limit = (lambda: resource.setrlimit(resource.RLIMIT_AS, (memory, memory))) if memory else None
        return subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, preexec_fn=limit
        )
    with tempfile.TemporaryDirectory(prefix="orspec-cli-") as folder:
        streams = (os.path.join(folder, "stdout"), os.path.join(folder, "stderr"))
        for path in streams:
            Path(path).touch()
        process = _context.Process(target=_child, args=(list(args), str(cwd), dict(env), streams, memory))
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(command, timeout)
        out, err = (_text(Path(path).read_bytes()) for path in streams)
        with contextlib.suppress(OSError, ValueError):
            cpu_time.commands += float(Path(folder, "cpu").read_text())
    # A process killed by signal N has exit code -N here, as subprocess reports it.
    return subprocess.CompletedProcess(command, process.exitcode, out, err)
