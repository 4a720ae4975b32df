"""`orspec scaffold provider`: names, refusal without --force, and both templates passing their own tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from orspec.scaffold import ScaffoldError, names_for, scaffold

from .conftest import ROOT, run_orspec


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


def run_project_tests(project: Path) -> subprocess.CompletedProcess:
    """The project's README test command, with this interpreter's environment standing in for its venv."""
    readme = (project / "README.md").read_text()
    assert '.venv/bin/pip install -q -e ".[test]" && .venv/bin/python -m pytest -q' in readme
    # This environment holds the suite's own pytest plugins (hypothesis, schemathesis), which the
    # project's venv would not: pytest leaves them unloaded, as it would never find them there.
    env = os.environ | {"PYTHONPATH": str(project / "src"), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_names_are_sanitised():
    names = names_for("  Acme LLM!! ", "Acme Corp")
    assert (names.dist, names.package, names.class_name) == ("acme-llm", "acme_llm", "AcmeLlmProvider")
    assert (names.vendor, names.vendor_pascal) == ("acme-corp", "AcmeCorp")
    assert names_for("42-models").package == "42_models_provider"
    assert names_for("42-models").class_name == "P42ModelsProvider"
    assert names_for("class").package == "class_provider"
    assert names_for("json").package == "json_provider"  # never shadow the standard library
    assert names_for("my-provider").class_name == "MyProvider"
    with pytest.raises(ScaffoldError):
        names_for("!!!")
    with pytest.raises(ScaffoldError, match="slug"):
        names_for("x", "9lives")


@pytest.mark.slow
@pytest.mark.parametrize("template", ["demo", "chat-completions"])
def test_scaffolded_project_passes_its_own_tests(tmp_path, template):
    out = tmp_path / "proj"
    done = run_orspec("scaffold", "provider", "Acme LLM", "--out", str(out), "--template", template)
    assert done.returncode == 0, done.stderr
    assert "AcmeLlmProvider" in done.stdout
    assert (out / "src/acme_llm/provider.py").is_file() and os.access(out / ".ci/run", os.X_OK)
    result = run_project_tests(out)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout


def test_vendor_fragment_validates(tmp_path):
    out = tmp_path / "proj"
    scaffold("acme-llm", out, vendor="zeta")
    fragment = out / "extensions" / "zeta.yaml"
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec, ignore=shutil.ignore_patterns("releases"))
    shutil.copy(fragment, spec / "extensions" / "zeta.yaml")
    done = run_orspec("validate", "--spec", str(spec))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "from 4 vendor fragments" in done.stdout


def test_refuses_a_non_empty_directory_and_never_deletes(tmp_path):
    out = tmp_path / "proj"
    assert run_orspec("scaffold", "provider", "p", "--out", str(out)).returncode == 0
    (out / "NOTES.md").write_text("mine")
    provider = out / "src/p/provider.py"
    provider.write_text("# my edits\n")
    before = snapshot(out)
    again = run_orspec("scaffold", "provider", "p", "--out", str(out))
    assert again.returncode == 1
    assert "is not empty; nothing was changed" in again.stderr and "--force" in again.stderr
    assert snapshot(out) == before
    forced = run_orspec("scaffold", "provider", "p", "--out", str(out), "--force")
    assert forced.returncode == 0, forced.stderr
    assert (out / "NOTES.md").read_text() == "mine"  # not ours: left alone
    assert provider.read_text() != "# my edits\n"  # ours: rewritten
    assert set(before) <= set(snapshot(out))


def test_a_file_in_the_way_is_refused(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(ScaffoldError, match="not a directory"):
        scaffold("p", target)
    assert target.read_text() == "x"


def test_depends_on_the_runtime_by_name_and_holds_no_path_of_this_machine(tmp_path):
    import openresponses_runtime

    out = tmp_path / "proj"
    scaffold("acme-llm", out, template="chat-completions", vendor="zeta")
    release = openresponses_runtime.__version__.rsplit(".", 1)[0]
    pyproject = (out / "pyproject.toml").read_text()
    assert f'"openresponses-runtime[server]~={release}"' in pyproject
    assert '"orspec~=0.1.0"' in pyproject.split("[project.optional-dependencies]")[1]  # tests only
    assert '"orspec' not in pyproject.split("[project.optional-dependencies]")[0]
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text()
            for leak in (str(ROOT), str(tmp_path), str(Path.home()), "](https://github.com/)"):
                assert leak not in text, (path, leak)


def test_runtime_option_points_at_a_local_runtime_relative_to_the_project(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "orspec").symlink_to(ROOT)
    done = run_orspec("scaffold", "provider", "p", "--out", "p", "--runtime", "orspec/generated/python", cwd=workspace)
    assert done.returncode == 0, done.stderr
    command = 'pip install -q -e ../orspec/generated/python -e ".[test]"'
    assert command in (workspace / "p/.ci/run").read_text()
    assert (workspace / "p/README.md").read_text().count(command) == 2
    assert str(ROOT) not in (workspace / "p/README.md").read_text()


def test_runtime_option_refuses_what_is_not_a_runtime_or_would_leak_a_path(tmp_path):
    with pytest.raises(ScaffoldError, match="not a generated openresponses-runtime"):
        scaffold("p", tmp_path / "p", runtime_path=ROOT)  # orspec's own pyproject
    if os.path.commonpath([ROOT, tmp_path]) == "/":  # this checkout and the temp folder share nothing else
        with pytest.raises(ScaffoldError, match="share no folder but /"):
            scaffold("p", tmp_path / "p", runtime_path=ROOT / "generated" / "python")
    assert not (tmp_path / "p").exists()


def test_main_serves_strictly_when_asked(tmp_path):
    """`python -m <package> --strict` refuses what the default server ignores and reports."""
    out = tmp_path / "proj"
    done = run_orspec("scaffold", "provider", "Strict Demo", "--out", str(out))
    assert done.returncode == 0, done.stderr
    code = """
import json, sys
import uvicorn
from starlette.testclient import TestClient
import strict_demo.__main__ as entry

served = []
uvicorn.run = lambda app, **options: served.append(app)
for argv in (["--api-key", "k"], ["--api-key", "k", "--strict"]):
    assert entry.main([*argv, "--store", "memory:"]) == 0
    answer = TestClient(served[-1]).post(
        "/v1/responses", json={"input": "hi", "client_metadata": {}}, headers={"Authorization": "Bearer k"}
    )
    print(answer.status_code, answer.headers.get("OpenResponses-Ignored"), (answer.json()["error"] or {}).get("code"))
"""
    env = os.environ | {"PYTHONPATH": str(out / "src")}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["200 parameter:client_metadata None", "400 None unknown_parameter"]
