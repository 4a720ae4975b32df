"""`orspec scaffold provider`: names, refusal without --force, and both templates passing their own tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from orspec.scaffold import TEMPLATES, ScaffoldError, names_for, scaffold

from ..conftest import ROOT, readme_commands, run_orspec


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


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("template", TEMPLATES)
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
    assert "from 4 vendor fragments" in done.stdout  # the three shipped ones and the scaffold's


def test_refuses_a_non_empty_directory_and_never_deletes(tmp_path):
    out = tmp_path / "proj"
    assert run_orspec("scaffold", "provider", "p", "--out", str(out)).returncode == 0
    (out / "NOTES.md").write_text("mine")
    provider = out / "src/p/provider.py"
    provider.write_text("# my edits\n")
    before = snapshot(out)
    again = run_orspec("scaffold", "provider", "p", "--out", str(out))
    assert again.returncode == 2
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


@pytest.mark.process
def test_gitignore_covers_what_running_the_project_leaves_and_none_of_its_files(tmp_path):
    from openresponses_runtime.server.store import DEFAULT_SQLITE_PATH

    out = tmp_path / "proj"
    written = scaffold("acme-llm", out, vendor="zeta")
    assert ".gitignore" in written
    left = [".venv/bin/python", "src/acme_llm/__pycache__/app.cpython-311.pyc", "src/acme_llm.egg-info/PKG-INFO",
            "dist/acme_llm-0.1.0-py3-none-any.whl", "build/lib/acme_llm/app.py", ".pytest_cache/README.md",
            ".ruff_cache/CACHEDIR.TAG", DEFAULT_SQLITE_PATH, f"{DEFAULT_SQLITE_PATH}-wal", f"{DEFAULT_SQLITE_PATH}-journal"]  # fmt: skip
    for relative in left:
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        (out / relative).write_text("")
    env = os.environ | {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q"], cwd=out, env=env, check=True)
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=out, env=env,
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert sorted(line.removeprefix("?? ") for line in status.stdout.splitlines()) == written


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


def install_commands(project: Path) -> list[str]:
    """The pip install of the README's two commands and of `.ci/run`, which must be the README's test command."""
    serve, test = readme_commands(project)
    assert (project / ".ci/run").read_text().splitlines()[-1] == test
    return [command.split(" && ")[1] for command in (serve, test)]


@pytest.mark.parametrize("option", [["--runtime", "orspec/generated/python"], ["--orspec", "orspec"]])
def test_a_checkout_beside_the_project_gives_both_orspec_and_the_runtime_editable(tmp_path, option):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "orspec").symlink_to(ROOT)
    done = run_orspec("scaffold", "provider", "p", "--out", "p", *option, cwd=workspace)
    assert done.returncode == 0, done.stderr
    install = '.venv/bin/pip install -q -e ../orspec -e ../orspec/generated/python -e ".[test]"'
    assert install_commands(workspace / "p") == [install, install]
    assert str(ROOT) not in (workspace / "p/README.md").read_text()


def test_orspec_option_takes_both_from_a_folder_of_wheels(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ("orspec-7.3.1-py3-none-any.whl", "openresponses_runtime-2031.2.3.7.3.1-py3-none-any.whl"):
        (wheels / name).write_bytes(b"")  # only their names are read
    done = run_orspec("scaffold", "provider", "p", "--out", "p", "--orspec", "wheels", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    install = '.venv/bin/pip install -q --find-links ../wheels -e ".[test]"'
    assert install_commands(tmp_path / "p") == [install, install]
    pyproject = (tmp_path / "p/pyproject.toml").read_text()
    assert '"openresponses-runtime[server]~=2031.2.3.7.3"' in pyproject and '"orspec~=7.3.0"' in pyproject
    assert "package index" not in done.stdout  # the hint for a project that installs from the index


@pytest.mark.parametrize(
    ("wheels", "problem", "fix"),
    [
        (None, "no such folder", "give an orspec checkout or a folder of its wheels"),
        ([], "neither an orspec checkout nor a folder of its wheels", "pip wheel --no-deps -w DIR ORSPEC"),
        (["orspec-0.1.0-py3-none-any.whl"], "no openresponses-runtime wheel beside orspec's", "build both with"),
        (["orspec-0.1.0-py3-none-any.whl", "orspec-0.2.0-py3-none-any.whl"], "2 orspec wheels", "keep the one"),
    ],
)
def test_orspec_option_refuses_a_folder_without_one_orspec_and_runtime(tmp_path, wheels, problem, fix):
    if wheels is not None:
        (tmp_path / "wheels").mkdir()
        for name in wheels:
            (tmp_path / "wheels" / name).write_bytes(b"")
    done = run_orspec("scaffold", "provider", "p", "--out", "p", "--orspec", "wheels", cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"orspec: --orspec wheels: {problem}") and fix in line, line
    assert not (tmp_path / "p").exists()


def test_runtime_option_refuses_what_is_not_a_runtime_or_would_leak_a_path(tmp_path):
    with pytest.raises(ScaffoldError, match="not a generated openresponses-runtime"):
        scaffold("p", tmp_path / "p", runtime_path=ROOT)  # orspec's own pyproject
    if os.path.commonpath([ROOT, tmp_path]) == "/":  # this checkout and the temp folder share nothing else
        with pytest.raises(ScaffoldError, match="share no folder but /"):
            scaffold("p", tmp_path / "p", runtime_path=ROOT / "generated" / "python")
    assert not (tmp_path / "p").exists()


@pytest.mark.process
def test_main_serves_strictly_when_asked(tmp_path):
    """`python -m <package> --strict` refuses what the default server ignores and reports."""
    out = tmp_path / "proj"
    done = run_orspec("scaffold", "provider", "Strict Demo", "--out", str(out))
    assert done.returncode == 0, done.stderr
    code = """
import json, sys
from openresponses_runtime.server import serving
from starlette.testclient import TestClient
import strict_demo.__main__ as entry

served = []
serving.serve = lambda app, **options: served.append((app, options["limits"]))
for argv in (["--api-key", "k"], ["--api-key", "k", "--strict", "--graceful-timeout", "7"]):
    assert entry.main([*argv, "--store", "memory:"]) == 0
    print(served[-1][1].graceful_timeout)
    served[-1] = served[-1][0]
    answer = TestClient(served[-1]).post(
        "/v1/responses", json={"input": "hi", "client_metadata": {}}, headers={"Authorization": "Bearer k"}
    )
    print(answer.status_code, answer.headers.get("OpenResponses-Ignored"), (answer.json()["error"] or {}).get("code"))
"""
    env = os.environ | {"PYTHONPATH": str(out / "src")}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "30.0",  # the shutdown deadline and the other limits reach the server: the defaults, or as given
        "200 parameter:client_metadata None",
        "7.0",
        "400 None unknown_parameter",
    ]


@pytest.mark.process
def test_main_caps_streams_with_max_streams(tmp_path):
    """`python -m <package> --max-streams N` reaches the app: one stream more than N is a 503."""
    out = tmp_path / "proj"
    done = run_orspec("scaffold", "provider", "Capped Demo", "--out", str(out))
    assert done.returncode == 0, done.stderr
    code = """
import asyncio
import httpx
from openresponses_runtime.server import serving
from capped_demo.provider import CappedDemoProvider
import capped_demo.__main__ as entry

echo = CappedDemoProvider.respond

async def slowly(self, request):  # a model that takes its time: the first stream is still running
    async for step in echo(self, request):
        await asyncio.sleep(0.05)
        yield step

CappedDemoProvider.respond = slowly
served = []
serving.serve = lambda app, **options: served.append(app)

async def two_streams(app):
    body = {"input": "one two three four five six", "stream": True}
    headers = {"Authorization": "Bearer k"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=20) as client:
        first = asyncio.create_task(client.post("/v1/responses", json=body, headers=headers))
        await asyncio.sleep(0.2)
        second = await client.post("/v1/responses", json=body, headers=headers)
        code = second.json()["error"]["code"] if second.status_code != 200 else None
        print((await first).status_code, second.status_code, second.headers.get("retry-after"), code)

for argv in ([], ["--max-streams", "1"]):
    assert entry.main(["--api-key", "k", "--store", "memory:", *argv]) == 0
    asyncio.run(two_streams(served[-1]))
"""
    env = os.environ | {"PYTHONPATH": str(out / "src")}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "200 200 None None",  # the default cap (100) holds both
        "200 503 2 too_many_streams",
    ]
    refused = subprocess.run(
        [sys.executable, "-m", "capped_demo", "--api-key", "k", "--max-streams", "-1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2
    assert (
        refused.stderr.strip()
        .splitlines()[-1]
        .endswith("argument --max-streams: '-1' is not a whole number (0: no cap)")
    )


@pytest.mark.process  # a scaffold, then its entry point in a fresh interpreter
def test_main_writes_only_json_lines_with_log_format_json(tmp_path):
    """`python -m <package> --log-format json`: its first line, like every other, is a JSON record."""
    out = tmp_path / "proj"
    done = run_orspec("scaffold", "provider", "Json Demo", "--out", str(out))
    assert done.returncode == 0, done.stderr
    code = """
import logging, sys
from openresponses_runtime.server import serving
import json_demo.__main__ as entry

serving.serve = lambda app, **options: None  # configured and said, not served
assert entry.main(["--api-key", "k", "--store", "memory:", "--log-format", "json", "--port", "8123"]) == 0
for handler in logging.getLogger("openresponses_runtime").handlers:
    handler.flush()
"""
    env = os.environ | {"PYTHONPATH": str(out / "src")}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines, "nothing was said"
    records = [json.loads(line) for line in lines]  # each line is JSON, or this raises
    assert any(r.get("message", r.get("msg", "")).endswith("on http://127.0.0.1:8123/v1/responses") for r in records)
