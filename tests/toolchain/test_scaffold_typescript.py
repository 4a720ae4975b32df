"""`orspec scaffold provider NAME --lang typescript`: the project installs as its README says, type-checks
with `tsc --strict`, and its own test (the server on loopback under `orspec compliance`) passes every case.

Node, npm and the npm tools (`.cache/typescript`, installed by `.ci/services`, whose npm cache holds zod,
TypeScript and @types/node) are needed: a missing one skips with its reason, and fails under CI (CI=true).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from orspec.scaffold import ScaffoldError, scaffold

from ..conftest import ROOT

TOOLS = ROOT / ".cache" / "typescript" / "node_modules"
SET_UP = "npm install && npm run build && ORSPEC_API_KEY=sk-local npm start"
TEST = "npm install && npm test"


def needed(what: str, path: str | Path | None) -> Path:
    """`path`, or skip (fail under CI) saying what is missing and how to get it."""
    if path and Path(path).exists():
        return Path(path)
    message = f"{what} is missing (bash .ci/run installs it: Node and npm from Debian, the npm tools in {TOOLS})"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def run(command: list[str], cwd: Path, *, env: dict | None = None, timeout: float) -> subprocess.CompletedProcess:
    """`command` in its own process group, which is ended however it ends (the server it starts included)."""
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    return subprocess.CompletedProcess(command, proc.returncode, out, "")


def project(tmp_path: Path) -> Path:
    """A TypeScript provider beside an orspec checkout, so it installs the package from its folder."""
    (tmp_path / "orspec").symlink_to(ROOT, target_is_directory=True)
    out = tmp_path / "acme-llm"
    scaffold("Acme LLM", out, lang="typescript", orspec_path=tmp_path / "orspec")
    return out


def test_writes_a_typescript_project_on_the_package_and_no_path_of_this_machine(tmp_path):
    out = project(tmp_path)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == [
        ".gitignore",
        ".npmrc",
        "README.md",
        "package.json",
        "src/main.ts",
        "src/provider.ts",
        "src/server.ts",
        "src/websocket.ts",
        "test/compliance.test.mjs",
        "tsconfig.json",
    ]
    package = json.loads((out / "package.json").read_text())
    assert package["dependencies"] == {"openresponses-runtime": "file:../orspec/generated/typescript"}
    assert (out / ".npmrc").read_text() == "install-links=true\n"  # a copy, so that zod is installed with it
    assert json.loads((out / "tsconfig.json").read_text())["compilerOptions"]["strict"] is True
    assert "export class AcmeLlmProvider implements Provider" in (out / "src" / "provider.ts").read_text()
    for path in out.rglob("*"):
        if path.is_file():
            assert str(tmp_path) not in path.read_text() and str(ROOT) not in path.read_text(), path


def test_only_the_demo_template_and_known_languages(tmp_path):
    with pytest.raises(ScaffoldError, match="demo template only"):
        scaffold("x", tmp_path / "a", lang="typescript", template="gemini")
    with pytest.raises(ScaffoldError, match="unknown language"):
        scaffold("x", tmp_path / "b", lang="go")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.process
@pytest.mark.slow
def test_scaffolded_project_installs_type_checks_and_passes_compliance(tmp_path):
    needed("node", shutil.which("node"))
    npm = needed("npm", shutil.which("npm"))
    needed("TypeScript", TOOLS / "typescript")
    out = project(tmp_path)
    readme = (out / "README.md").read_text()
    assert SET_UP in readme and TEST in readme  # the README's two commands, run below as it says
    # From npm's cache where it can (CI's services filled it), so that the test needs no network.
    install = run([str(npm), "install", "--prefer-offline", "--no-audit", "--no-fund"], out, timeout=300)
    assert install.returncode == 0, install.stdout[-3000:]
    assert (out / "node_modules" / "zod" / "package.json").is_file()  # the package came with its dependency
    assert not (out / "node_modules" / "openresponses-runtime").is_symlink()
    strict = run([str(npm), "exec", "--", "tsc", "--strict", "--noEmit", "-p", "."], out, timeout=300)
    assert strict.returncode == 0, strict.stdout[-3000:]
    env = os.environ | {"ORSPEC": str(Path(sys.executable).parent / "orspec")}  # the README's .venv stands in
    tested = run([str(npm), "test"], out, env=env, timeout=600)
    assert tested.returncode == 0, tested.stdout[-6000:]
    assert re.search(r"^# pass 1$", tested.stdout, re.M) and re.search(r"^# fail 0$", tested.stdout, re.M)
