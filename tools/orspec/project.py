"""Where things are: the project root, found like git finds its repository."""

from __future__ import annotations

from pathlib import Path

MARKER = Path("spec") / "openapi.yaml"


def find_root(start: Path | None = None) -> Path | None:
    """The nearest directory at or above `start` holding `spec/openapi.yaml`."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / MARKER).is_file():
            return candidate
    return None
