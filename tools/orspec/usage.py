"""What the command line says to a user who asked for something it cannot do: `UsageError`, a
one-line message and exit status 2, never a traceback; and where a project's folders are."""

from __future__ import annotations

from pathlib import Path

from .project import find_root

__all__ = ["UsageError", "project_path"]


class UsageError(Exception):
    """A command the user cannot run as given; its message says what to pass instead."""


def project_path(given: Path | None, folder: str, flag: str) -> Path:
    """`given` if the user passed it, else `folder` of the project found above the working directory."""
    if given:
        return given
    root = find_root()
    if root is None:
        raise UsageError(f"not inside an orspec project (no spec/openapi.yaml above here); pass {flag}")
    return root / folder
