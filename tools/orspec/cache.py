"""Incremental builds: a content hash of every input, and a stamp of what the last build wrote.

The stamp lives in the output directory as `.orspec-build.json` (never committed, never compared).
A build whose inputs hash the same as the stamp's, into an output directory still holding exactly
what the stamp recorded, has nothing to do. Otherwise each stage is re-run only when one of its own
inputs changed: a docs template edit re-renders the docs and nothing else.

This module imports only the standard library, so the no-op check costs no more than hashing.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__
from .project import CORE_STATE_MACHINES, RUNTIME, TS_RUNTIME
from .write import STAMP, hand_written

TOOLS = Path(__file__).resolve().parent
MAX_HASHED_BYTES = 64 * 1024 * 1024
# Libraries whose version can change what the build writes.
GENERATOR_LIBRARIES = ("datamodel-code-generator", "pydantic", "ruff", "jinja2", "openapi-spec-validator")


def _hash_files(paths: list[Path], root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        try:
            info = path.stat()
            if not path.is_file():  # a FIFO or device would block; the build itself reports it
                digest.update(b"\0not a regular file")
            elif info.st_size > MAX_HASHED_BYTES:  # over the loader's limit: the build refuses it anyway
                digest.update(f"\0{info.st_size}:{info.st_mtime_ns}".encode())
            else:
                digest.update(path.read_bytes())
        except OSError:
            digest.update(b"\0missing")
        digest.update(b"\0")
    return digest.hexdigest()


def _tree(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [p for p in folder.rglob("*") if not p.is_dir() and not {"__pycache__", "node_modules"} & set(p.parts)]


def fingerprint(spec: Path, templates: Path, *, lenient: bool, loaded: tuple[str, ...] = ()) -> dict[str, str]:
    """One hash per input: the spec, each templates folder, the toolchain, and the flags.

    For a spec directory every file in it counts; for a single file, the file and whatever the last
    build loaded through its `$ref`s (`loaded`), since those are only known after bundling.
    """
    spec = spec.resolve()
    if spec.is_dir():
        spec_files, spec_root = _tree(spec), spec
    else:
        spec_root = spec.parent
        spec_files = sorted({spec, *(Path(p) for p in loaded if Path(p).is_relative_to(spec_root))})
    parts = {"spec": _hash_files(spec_files, spec_root)}
    for folder in sorted(p for p in templates.iterdir() if p.is_dir()) if templates.is_dir() else ():
        parts[f"templates/{folder.name}"] = _hash_files(_tree(folder), folder)
    versions = _library_versions()
    tool = hashlib.sha256(_hash_files([p for p in _tree(TOOLS) if p.suffix == ".py"], TOOLS).encode())
    tool.update("\n".join([__version__, *versions]).encode())
    tool.update(CORE_STATE_MACHINES.read_bytes())  # what the registry uses for a spec without its own
    parts["tool"] = tool.hexdigest()
    # The runtime's hand-written modules: the server stage reads the app's handlers, and a build into
    # another folder copies them. What a build generated there is its output, not its input.
    for name, folder, prefix in (("runtime", RUNTIME, "python/"), ("runtime-typescript", TS_RUNTIME, "typescript/")):
        written = [p for p in _tree(folder) if hand_written(prefix + p.relative_to(folder).as_posix(), p)]
        parts[name] = _hash_files(written, folder)
    parts["flags"] = f"lenient={lenient}"
    return parts


def _library_versions() -> list[str]:
    """`name==version` of each generator library, read from the `*.dist-info` folder names.

    Scanning the folders directly keeps `importlib.metadata` (and its import time) off the
    no-op path.
    """
    wanted = {name.replace("-", "_"): name for name in GENERATOR_LIBRARIES}
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for folder in names:
            if folder.endswith(".dist-info") and "-" in folder:
                dist, version = folder[: -len(".dist-info")].rsplit("-", 1)
                key = dist.lower().replace("-", "_").replace(".", "_")
                if key in wanted and wanted[key] not in found:
                    found[wanted[key]] = version
    return [f"{name}=={found.get(name, 'missing')}" for name in GENERATOR_LIBRARIES]


def stage_key(inputs: dict[str, str], names: tuple[str, ...]) -> str:
    """The hash of the inputs one stage reads; a name like `templates/*` matches every folder."""
    picked = []
    for name in names:
        if name.endswith("/*"):
            picked += sorted((k, v) for k, v in inputs.items() if k.startswith(name[:-1]))
        else:
            picked.append((name, inputs.get(name, "")))
    return hashlib.sha256(json.dumps(picked).encode()).hexdigest()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Stamp:
    """What one build read and wrote."""

    inputs: dict[str, str] = field(default_factory=dict)
    stages: dict[str, dict] = field(default_factory=dict)  # name -> {"key": str, "files": {path: digest}}
    problems: list[list] = field(default_factory=list)  # [file, line, pointer, message, level]
    loaded: list[str] = field(default_factory=list)  # spec files the bundle read

    @classmethod
    def read(cls, out: Path) -> Stamp | None:
        try:
            raw = json.loads((out / STAMP).read_text())
            return cls(raw["inputs"], raw["stages"], raw["problems"], raw["loaded"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, out: Path) -> None:
        data = {"inputs": self.inputs, "stages": self.stages, "problems": self.problems, "loaded": self.loaded}
        (out / STAMP).write_text(json.dumps(data, indent=1, sort_keys=True))

    def files(self) -> dict[str, str]:
        return {path: sha for stage in self.stages.values() for path, sha in stage["files"].items()}

    def matches_disk(self, out: Path) -> bool:
        """The output directory holds exactly the files this stamp recorded, byte for byte, beside
        hand-written source in its distributions."""
        expected = self.files()
        on_disk = {p.relative_to(out).as_posix(): p for p in _tree(out) if p.name != STAMP}
        theirs = {rel for rel, path in on_disk.items() if rel not in expected and hand_written(rel, path)}
        if set(on_disk) - theirs != set(expected):
            return False
        return all(digest((out / path).read_bytes()) == sha for path, sha in expected.items())

    def reusable(self, name: str, key: str, out: Path) -> dict[str, bytes] | None:
        """The outputs of stage `name` as they are on disk, if its inputs and files are unchanged."""
        stage = self.stages.get(name)
        if not stage or stage["key"] != key:
            return None
        reused = {}
        for path, sha in stage["files"].items():
            try:
                data = (out / path).read_bytes()
            except OSError:
                return None
            if digest(data) != sha:
                return None
            reused[path] = data
        return reused
