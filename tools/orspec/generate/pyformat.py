"""Format generated Python with ruff, so output is stable and reads like hand-written code."""

from __future__ import annotations

import subprocess
import sys

RUFF_CONFIG = [
    "--config", "line-length = 120",
    "--config", "target-version = 'py311'",
]


def format_python(code: str, *, filename: str = "generated.py") -> str:
    """Sort imports, drop unused ones, then format; raises ValueError if ruff rejects the code."""
    fixed = _ruff(["check", "--fix", "--select", "I,F401", "--exit-zero", "--quiet", *RUFF_CONFIG,
                   "--stdin-filename", filename, "-"], code)
    return _ruff(["format", *RUFF_CONFIG, "--stdin-filename", filename, "-"], fixed)


def _ruff(args: list[str], code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        input=code.encode(),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise ValueError(f"ruff {args[0]} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode()
