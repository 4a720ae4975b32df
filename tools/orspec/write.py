"""The one writer of `generated/`: all outputs or nothing, and a drift check for CI."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

Outputs = dict[str, bytes]  # relative POSIX path -> content
STAMP = ".orspec-build.json"  # the incremental-build stamp (see cache.py); not an output


class NotOurs(Exception):
    """The output path holds something no build wrote, which replacing it would destroy."""


def read_tree(root: Path) -> Outputs:
    if not root.is_dir():
        return {}
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.name != STAMP
    }


def stale_files(root: Path, outputs: Outputs) -> list[str]:
    """Paths whose content on disk differs from `outputs` (changed, missing or extra), sorted."""
    on_disk = read_tree(root)
    changed = [path for path, data in outputs.items() if on_disk.get(path) != data]
    extra = [path for path in on_disk if path not in outputs]
    return sorted(changed + extra)


def write_tree(root: Path, outputs: Outputs) -> list[str]:
    """Replace `root` with exactly `outputs`, atomically; returns the paths that changed.

    The new tree is written to a temporary directory beside `root` and swapped in with two
    renames, so a failure at any point leaves the old tree untouched.
    """
    _check_ours(root, outputs)
    changed = stale_files(root, outputs)
    if not changed:
        return []
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.new-", dir=root.parent))
    try:
        for rel, data in outputs.items():
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        if root.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{root.name}.old-", dir=root.parent))
            os.rename(root, retired / root.name)
            os.rename(staging, root)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.rename(staging, root)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return changed


def _check_ours(root: Path, outputs: Outputs) -> None:
    """Refuse to replace a file, or a folder holding what neither this build nor an earlier one wrote."""
    if root.exists() and not root.is_dir():
        raise NotOurs(f"{root} is a file, not a folder")
    if not root.is_dir() or (root / STAMP).is_file():  # new, or written by a build before
        return
    ours = {path.split("/", 1)[0] for path in outputs}
    foreign = sorted(p.name for p in root.iterdir() if p.name not in ours)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise NotOurs(f"{root} holds {shown}, which no build wrote")
