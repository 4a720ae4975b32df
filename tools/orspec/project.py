"""Where things are: the project root, found like git finds its repository."""

from __future__ import annotations

from pathlib import Path

MARKER = Path("spec") / "openapi.yaml"
# Jinja templates and hand-written runtime modules, beside the toolchain in this checkout.
TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
# The core streaming protocol, for specs that come without their own state machines.
CORE_STATE_MACHINES = Path(__file__).resolve().parents[2] / "spec" / "state-machines.yaml"


def find_root(start: Path | None = None) -> Path | None:
    """The nearest directory at or above `start` holding `spec/openapi.yaml`."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / MARKER).is_file():
            return candidate
    return None
