"""Format generated Python with ruff, so output is stable and reads like hand-written code."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys

# `--isolated`: no ruff configuration found near the working directory may change the output.
RUFF_CONFIG = [
    "--isolated",
    "--config",
    "line-length = 120",
    "--config",
    "target-version = 'py311'",
    "--config",
    "lint.isort.known-first-party = ['openresponses_runtime']",
]


def docstring_text(text: str) -> str:
    """`text` made safe to place inside a triple-quoted docstring, reading the same once parsed.

    Backslashes are doubled (so `\\d` stays `\\d` and a trailing backslash cannot escape the
    closing quotes), quotes that could close the docstring are escaped, and control characters
    that Python source cannot hold are written as escapes.
    """
    # With every backslash doubled, escaping each quote that another quote or the end follows
    # leaves no run of three quotes and no quote just before the closing ones.
    out = re.sub(r'"(?="|$)', r'\\"', text.replace("\\", "\\\\"))
    return "".join(ch if ch in "\n\t" or (ord(ch) >= 32 and ord(ch) != 127) else f"\\x{ord(ch):02x}" for ch in out)


def format_python(code: str, *, filename: str = "generated.py") -> str:
    """Sort imports, drop unused ones, then format; raises ValueError if ruff rejects the code."""
    fixed = _ruff(
        [
            "check",
            "--fix",
            "--select",
            "I,F401",
            "--exit-zero",
            "--quiet",
            *RUFF_CONFIG,
            "--stdin-filename",
            filename,
            "-",
        ],
        code,
    )
    return ruff_format(fixed, filename=filename)


def ruff_format(code: str, *, filename: str = "generated.py") -> str:
    """`code` as `ruff format` writes it (line length 120); raises ValueError if ruff rejects it."""
    return _ruff(["format", *RUFF_CONFIG, "--stdin-filename", filename, "-"], code)


@functools.cache
def _ruff_command() -> list[str]:
    """The ruff binary itself: `python -m ruff` would start an interpreter just to exec it (~0.1 s a call)."""
    try:
        from ruff.__main__ import find_ruff_bin

        return [os.fsdecode(find_ruff_bin())]
    except (ImportError, FileNotFoundError):
        return [sys.executable, "-m", "ruff"]


def _ruff(args: list[str], code: str) -> str:
    proc = subprocess.run(
        [*_ruff_command(), *args],
        input=code.encode(),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise ValueError(f"ruff {args[0]} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode()
