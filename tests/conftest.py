from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
UPSTREAM = SHARED / "upstream" / "openresponses"
RELEASES = {
    "2026-01-15": UPSTREAM / "2026-01-15" / "openapi.json",
    "2026-04-24": UPSTREAM / "2026-04-24" / "openapi.json",
}


def run_orspec(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the CLI as a user would, in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "orspec", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def run_python(code: str, *, path: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Run `code` with only `path` put in front of sys.path, to import a freshly built package."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(path)},
        timeout=300,
    )


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside the project; upstream fixtures are unavailable")
    return SHARED
