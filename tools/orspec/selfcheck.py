"""The build's look at what it is about to write: every Python module of the runtime package imported
in a fresh interpreter, and the npm package type-checked with `tsc --strict` where Node and
TypeScript are at hand.

Both run on a staged copy of the distributions (the outputs and the hand-written modules beside
them) before the writer swaps anything in, so a failure leaves `generated/` as it was. Each failure
names the module and the cause, one line each.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .generate.package import DISTRIBUTION, PACKAGE
from .write import Outputs

TS_FOLDER = "typescript"
TIMEOUT = 600  # seconds for either check; OpenAI's whole spec takes a tenth of it
# Where the pinned TypeScript tools are (`.ci/services` installs them there).
TOOLS_ENV = "ORSPEC_TYPESCRIPT_TOOLS"
_MAX_SHOWN = 10

# Run in a fresh interpreter: import each module, and report each failure once, as [the module of
# the package where it was raised, the cause] (a broken module breaks every module importing it).
# A dependency the package lists as optional and this interpreter lacks is not the package's fault.
_IMPORT_ALL = r"""
import importlib, json, os, sys, traceback
root = sys.argv[1]
sys.path.insert(0, root)
failed = []
for name in json.loads(sys.stdin.read()):
    try:
        importlib.import_module(name)
    except BaseException as exc:
        if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] != "openresponses_runtime":
            continue
        files = [f.filename for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(root + os.sep)]
        where = os.path.relpath(files[-1], root)[:-3].replace(os.sep, ".").removesuffix(".__init__") if files else name
        found = [where, f"{type(exc).__name__}: {exc}"]
        if found not in failed:
            failed.append(found)
print(json.dumps(failed))
"""
_TSC_LINE = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+),\d+\): error (?P<code>TS\d+): (?P<message>.*)$")


class CheckFailed(Exception):
    """The output does not load: one line per module that fails, `module: cause`."""

    def __init__(self, failures: list[str]):
        self.failures = failures
        super().__init__("\n".join(failures))


@dataclass(frozen=True)
class TypeScriptTools:
    node: str
    tools: Path  # a node_modules folder with typescript, zod and @types/node


def typescript_tools(root: Path | None) -> TypeScriptTools | None:
    """Node and the pinned TypeScript tools, or None where either is missing."""
    node = shutil.which("node")
    given = os.environ.get(TOOLS_ENV)
    folder = Path(given) if given else (root / ".cache" / "typescript" if root else None)
    tools = folder / "node_modules" if folder else None
    if node is None or tools is None:
        return None
    if not all((tools / name).is_dir() for name in ("typescript", "zod", "@types/node")):
        return None
    return TypeScriptTools(node, tools)


def stage(outputs: Outputs, hand_written: Outputs, into: Path) -> None:
    """Lay the distributions out under `into` as the writer would: the hand-written modules, then
    the outputs over them."""
    for rel, data in (hand_written | outputs).items():
        if rel.startswith((f"{DISTRIBUTION}/", f"{TS_FOLDER}/")):
            target = into / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)


def python_modules(folder: Path) -> list[str]:
    """The dotted names of every module of the package under `folder` (the distribution folder)."""
    package = folder / PACKAGE.split("/", 1)[1]
    names = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(folder).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def import_failures(folder: Path) -> list[str]:
    """Each module of the staged Python distribution `folder` that fails to import, with why."""
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL, str(folder)],
        input=json.dumps(python_modules(folder)),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    if result.returncode != 0 or not result.stdout.strip():
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return [f"{PACKAGE}: the import check did not run: {last}"]
    return [f"{name}: {cause}" for name, cause in json.loads(result.stdout.splitlines()[-1])]


def type_failures(folder: Path, tools: TypeScriptTools) -> list[str]:
    """Each error `tsc --strict` finds in the staged npm package `folder`, as `file:line: code: message`."""
    modules = folder / "node_modules"
    modules.mkdir(exist_ok=True)
    for name in ("zod", "@types"):
        (modules / name).symlink_to(tools.tools / name, target_is_directory=True)
    config = {
        "compilerOptions": {
            "strict": True,
            "noEmit": True,
            "module": "nodenext",
            "moduleResolution": "nodenext",
            "target": "es2022",
            "lib": ["es2022", "dom", "dom.asynciterable"],
            "types": ["node"],
        },
        "include": ["**/*.d.ts"],
        "exclude": ["node_modules"],
    }
    (folder / "tsconfig.json").write_text(json.dumps(config))
    tsc = tools.tools / "typescript" / "bin" / "tsc"
    result = subprocess.run(
        [tools.node, str(tsc), "-p", "."], cwd=folder, capture_output=True, text=True, timeout=TIMEOUT
    )
    if result.returncode == 0:
        return []
    found = [m for line in result.stdout.splitlines() if (m := _TSC_LINE.match(line))]
    failures = [f"{TS_FOLDER}/{m['file']}:{m['line']}: {m['code']}: {m['message']}" for m in found]
    return failures or [f"{TS_FOLDER}: tsc failed: {(result.stdout + result.stderr).strip()[-400:]}"]


def check_outputs(outputs: Outputs, hand_written: Outputs, tools: TypeScriptTools | None) -> None:
    """Raise `CheckFailed` unless every staged Python module imports and (with `tools`) the npm
    package type-checks."""
    with tempfile.TemporaryDirectory(prefix="orspec-check-") as temporary:
        staged = Path(temporary)
        stage(outputs, hand_written, staged)
        failures: list[str] = []
        if (staged / PACKAGE).is_dir():
            failures += import_failures(staged / DISTRIBUTION)
        if tools is not None and (staged / TS_FOLDER / "package.json").is_file():
            failures += type_failures(staged / TS_FOLDER, tools)
    if failures:
        more = [f"... and {len(failures) - _MAX_SHOWN} more"] if len(failures) > _MAX_SHOWN else []
        raise CheckFailed(failures[:_MAX_SHOWN] + more)
