"""Where things are: the project root, found like git finds its repository, and the shipped templates."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory

MARKER = Path("spec") / "openapi.yaml"


def _shipped(name: str, checkout: str) -> Path:
    """What orspec ships beside its code: inside the installed package (the wheel puts it at
    `orspec/<name>`), else at `checkout` in the repository this package runs from."""
    package = Path(__file__).resolve().parent
    installed = package / name
    return installed if installed.exists() else package.parents[1] / checkout


# Jinja templates.
TEMPLATES = _shipped("templates", "templates")
# The runtime's hand-written modules: ordinary source in the distribution folder of a checkout, shipped
# in orspec's wheel so that a build for another spec or output folder has them (`pipeline.runtime_source`).
RUNTIME = _shipped("runtime", "generated/python/openresponses_runtime")
# The same for the npm package's hand-written modules (the client, the SSE reader, the union and keyword helpers).
TS_RUNTIME = _shipped("runtime-typescript", "generated/typescript")
# The core streaming protocol, for specs that come without their own state machines.
CORE_STATE_MACHINES = _shipped("state-machines.yaml", "spec/state-machines.yaml")


class TemplatesError(Exception):
    """A `--templates` directory that cannot be layered over the shipped templates."""


def find_root(start: Path | None = None) -> Path | None:
    """The nearest directory at or above `start` holding `spec/openapi.yaml`."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / MARKER).is_file():
            return candidate
    return None


@contextmanager
def layered_templates(overrides: Path | None) -> Iterator[Path]:
    """The shipped templates with `overrides` laid over them file by file (a file of the same
    relative path replaces the shipped one).

    Without overrides this is the shipped folder itself; with them, a temporary merged copy that
    lives as long as the `with` block.
    """
    if overrides is None:
        yield TEMPLATES
        return
    if not overrides.is_dir():
        raise TemplatesError(
            f"--templates {overrides}: not a directory; pass a folder laid out like the shipped templates"
        )
    known = {p.name for p in TEMPLATES.iterdir() if p.is_dir()}
    files = sorted(p for p in overrides.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        relative = path.relative_to(overrides)
        if len(relative.parts) < 2 or relative.parts[0] not in known:
            raise TemplatesError(
                f"{path}: not under one of the template folders ({', '.join(sorted(known))}); "
                "mirror the layout of the shipped templates"
            )
    with TemporaryDirectory(prefix="orspec-templates-") as tmp:
        merged = Path(tmp) / "templates"
        shutil.copytree(TEMPLATES, merged, ignore=shutil.ignore_patterns("__pycache__"))
        for path in files:
            target = merged / path.relative_to(overrides)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        yield merged
