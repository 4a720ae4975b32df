"""Incremental builds: a no-op build does nothing, and a change re-runs only the stages that read it."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from orspec.pipeline import STAGES
from orspec.write import read_tree

from ..conftest import ROOT, run_orspec


@pytest.fixture
def project(tmp_path) -> Path:
    """A copy of the toolchain, templates, runtime source and spec, so they can change without touching ours."""
    for part in ("tools", "templates", "spec", "generated/python"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def build(project: Path, *args: str):
    env = {"PYTHONPATH": str(project / "tools") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = run_orspec("build", "--out", str(project / "out"), *args, cwd=project, env=env)
    assert result.returncode in (0, 1), result.stderr
    return result


EVERY_STAGE = "ran " + ", ".join(stage.name for stage in STAGES)  # what a cold build prints


@pytest.mark.process
def test_no_op_build_reuses_everything(project):
    cold = build(project)
    assert cold.returncode == 0 and EVERY_STAGE in cold.stdout
    first = read_tree(project / "out")
    assert first == read_tree(ROOT / "generated")  # the copy builds what we committed
    assert (project / "out" / ".orspec-build.json").is_file()
    again = build(project)
    assert "no input changed since the last build" in again.stdout
    assert again.stderr == cold.stderr == ""  # the shipped spec has no warnings
    assert read_tree(project / "out") == first
    check = build(project, "--check")
    assert check.returncode == 0 and "up to date" in check.stdout


@pytest.mark.process
def test_no_op_build_still_reports_the_specs_warnings(project):
    root = project / "spec" / "openapi.yaml"
    root.write_text(root.read_text().replace("  schemas:\n", "  schemas:\n    Lonely: {type: string}\n", 1))
    cold = build(project)
    assert cold.returncode == 0 and "schema 'Lonely' is never used" in cold.stderr
    again = build(project)
    assert "no input changed since the last build" in again.stdout
    assert again.stderr == cold.stderr  # the warnings come from the cache, the same as when they were found


@pytest.mark.process
def test_docs_template_change_rerenders_only_the_docs(project):
    build(project)
    before = read_tree(project / "out")
    template = project / "templates" / "docs" / "http-api.md.jinja"
    template.write_text(template.read_text() + "\nServed by orspec.\n")
    result = build(project)
    assert "ran docs)" in result.stdout
    after = read_tree(project / "out")
    changed = {path for path in set(before) | set(after) if before.get(path) != after.get(path)}
    # The page of the draft and the same page of each release's reference, which the same template renders.
    releases = sorted(p.name for p in (project / "spec" / "releases").iterdir() if p.is_dir())
    assert releases
    assert changed == {"docs/http-api.md"} | {f"docs/{date}/http-api.md" for date in releases}


@pytest.mark.process
def test_spec_change_reruns_every_stage(project):
    build(project)
    items = project / "spec" / "components" / "items.yaml"
    items.write_text(items.read_text().replace("Server-assigned", "Server assigned", 1))
    assert EVERY_STAGE in build(project).stdout


@pytest.mark.process
def test_hand_edited_output_is_rebuilt(project):
    build(project)
    models = project / "out" / "python" / "openresponses_runtime" / "models.py"
    original = models.read_bytes()
    models.write_text("# edited by hand\n")
    result = build(project)
    assert "no input changed" not in result.stdout
    assert models.read_bytes() == original


@pytest.mark.process
def test_progress_is_shown_on_a_terminal(project):
    """Stage progress goes to stderr when it is a terminal, and nowhere otherwise."""
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(project / "tools")}
    proc = subprocess.run(
        [sys.executable, "-m", "orspec", "build", "--out", str(project / "out")],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=follower,
        timeout=300,
        check=False,
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert proc.returncode == 0
    text = seen.decode(errors="replace")
    for stage in ("bundle", "models", "docs"):
        assert f"{stage} ..." in text and re.search(rf"{stage} \d+\.\ds", text), text
    piped = build(project)  # stderr is a pipe here: warnings only, no progress
    assert "models ..." not in piped.stderr


@pytest.mark.process
def test_the_cli_starts_without_heavy_imports():
    """The no-op build path must not pay for pydantic, the validator or the generators."""
    import subprocess
    import sys

    code = (
        "import sys; from orspec import cli; cli._parser(); "
        "heavy = [m for m in ('pydantic', 'openapi_spec_validator', 'datamodel_code_generator', 'jinja2', "
        "'openresponses_runtime', 'httpx') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_core_state_machines_are_part_of_the_fingerprint(tmp_path, monkeypatch):
    # A spec without its own state machines gets the core ones: a change to them must rebuild its registry.
    from orspec import cache
    from orspec.project import CORE_STATE_MACHINES

    spec = tmp_path / "openapi.json"
    shutil.copy(ROOT / "generated" / "openapi.json", spec)
    before = cache.fingerprint(spec, ROOT / "templates", lenient=False)
    core = tmp_path / "state-machines.yaml"
    core.write_text(CORE_STATE_MACHINES.read_text() + "\n# changed\n")
    monkeypatch.setattr(cache, "CORE_STATE_MACHINES", core)
    after = cache.fingerprint(spec, ROOT / "templates", lenient=False)
    assert after["tool"] != before["tool"] and after["spec"] == before["spec"]
