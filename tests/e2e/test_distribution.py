"""The two distributions, as a new user gets them: built as wheels, installed into fresh venvs from
those wheels only (their dependencies from the package index), and run far from this checkout.

- `orspec` validates, builds and publishes the docs in an empty folder holding a copy of `spec/`;
- a provider it scaffolds runs its README's two commands (set up and serve; set up and test) and
  `.ci/run` as written, with orspec and the runtime from the wheels (`--orspec WHEELS`) or from a
  checkout beside it (`--runtime CHECKOUT/generated/python`), with no path of this machine in its
  files, and leaves nothing `git status` would show but its own files;
- `openresponses-runtime` installs alone, without the generator's dependencies, and its core works;
- `pre-commit try-repo` runs both hooks of `.pre-commit-hooks.yaml`.

Slow (it makes five venvs): CI runs it (`.ci/run` sets ORSPEC_TEST_FRESH_VENV=1).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest

from ..conftest import ROOT, built_once, readme_commands, run_orspec
from ..server_helpers import free_port
from ..streams import SHARED

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("ORSPEC_TEST_FRESH_VENV"),
        reason="set ORSPEC_TEST_FRESH_VENV=1 to build the wheels and install them into fresh venvs (a few minutes)",
    ),
    pytest.mark.slow,
    pytest.mark.venv,
    pytest.mark.process,
]

GENERATOR_ONLY = ("datamodel-code-generator", "jinja2", "ruff", "openapi-spec-validator")


def run(*args, cwd: Path, env: dict, timeout: int = 600, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, f"{args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="session")
def wheels(tmp_path_factory) -> Path:
    """Both wheels, built once for the run."""

    def build(folder: Path) -> None:
        run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", folder, ROOT, ROOT / "generated" / "python",
            cwd=folder, env=clean_env())  # fmt: skip

    return built_once(tmp_path_factory, "wheels", build)


def clean_env(wheels: Path | None = None) -> dict:
    """This environment without any trace of the checkout or its venv; pip also looks in `wheels`."""
    unset = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not p.startswith(str(ROOT)))
    # pip byte-compiles all it installs, about a quarter of an install's CPU; here (the provider's
    # .ci/run and pre-commit's hook venv too) Python compiles only what is imported, once.
    env["PIP_COMPILE"] = "0"
    if wheels:
        env["PIP_FIND_LINKS"] = " ".join(filter(None, [str(wheels), os.environ.get("PIP_FIND_LINKS", "")]))
    return env


def pip(*args, python: Path, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """This venv's pip (a current one, from the test extra) acting on the environment of `python`.

    The venvs made here hold no pip of their own: ensurepip's bundled pip 23 took a quarter of a
    venv's CPU to seed and twice a current pip's to resolve and install the same wheels.
    """
    return run(sys.executable, "-m", "pip", "--python", python, *args, cwd=cwd, env=env)


def make_venv(where: Path, wheels: Path, *requirements: str) -> Path:
    """A fresh venv at `where` with `requirements` installed from the wheels; its bin folder."""
    env = clean_env(wheels)
    run(sys.executable, "-m", "venv", "--without-pip", where, cwd=where.parent, env=env)
    pip("install", "-q", *requirements, python=where / "bin" / "python", cwd=where.parent, env=env)
    return where / "bin"


@pytest.fixture(scope="session")
def toolchain(wheels, tmp_path_factory) -> Path:
    """A venv with `orspec[docs]` from the wheel, made once for the run: its bin folder."""
    folder = built_once(
        tmp_path_factory, "toolchain", lambda folder: make_venv(folder / "venv", wheels, "orspec[docs]")
    )
    return folder / "venv" / "bin"


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    """An empty folder with a copy of spec/ and nothing else."""
    folder = tmp_path_factory.mktemp("outside")
    shutil.copytree(ROOT / "spec", folder / "spec")
    return folder


def test_wheels_hold_what_they_should(wheels):
    (orspec,) = wheels.glob("orspec-*.whl")
    (runtime,) = wheels.glob("openresponses_runtime-*.whl")
    import openresponses_runtime

    assert runtime.name.startswith(f"openresponses_runtime-{openresponses_runtime.__version__}-")
    tool_files = zipfile.ZipFile(orspec).namelist()
    assert "orspec/cli.py" in tool_files and "orspec/templates/registry/events.py.jinja" in tool_files
    assert "orspec/templates/scaffold/common/pyproject.toml.jinja" in tool_files
    assert "orspec/templates/site/assets/javascripts/mermaid.min.js" in tool_files
    assert "orspec/state-machines.yaml" in tool_files
    assert not any(name.startswith("openresponses_runtime/") for name in tool_files)
    # The runtime's hand-written modules ride along, for builds into other folders to copy.
    assert "orspec/runtime/server/app.py" in tool_files and "orspec/runtime/streaming.py" in tool_files
    assert "orspec/runtime-typescript/client.js" in tool_files and "orspec/runtime-typescript/sse.d.ts" in tool_files
    assert not any("__pycache__" in name for name in tool_files)
    runtime_files = zipfile.ZipFile(runtime).namelist()
    # Users lose nothing: the wheel holds every file it held while the runtime was copied from templates/
    # (the server's rooms added modules since).
    before = json.loads((ROOT / "tests" / "fixtures" / "runtime" / "runtime_wheel_files.json").read_text())
    assert set(before) - set(runtime_files) == set()
    assert "openresponses_runtime/models.py" in runtime_files and "openresponses_runtime/py.typed" in runtime_files
    metadata = next(n for n in runtime_files if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(runtime).read(metadata).decode()
    assert "Requires-Dist: pydantic" in text
    for extra in ("server", "client", "gateways", "postgres", "fast", "observability"):
        assert f"Provides-Extra: {extra}" in text


def test_installed_orspec_validates_builds_and_publishes_outside_the_repo(toolchain, outside):
    env = clean_env()
    where = run(toolchain / "python", "-c", "import orspec, openresponses_runtime as r; print(orspec.__file__, r.__file__)",
                cwd=outside, env=env)  # fmt: skip
    assert str(ROOT) not in where.stdout and str(toolchain.parent) in where.stdout
    validated = run(toolchain / "orspec", "validate", cwd=outside, env=env)
    assert validated.stdout.startswith("OK: ")
    run(toolchain / "orspec", "build", cwd=outside, env=env)
    built = outside / "generated"
    names = ("openapi.json", "python/pyproject.toml", "python/openresponses_runtime/models.py", "docs/index.md")
    for name in (*names, "typescript/package.json", "typescript/models.js", "typescript/client.js"):
        assert (built / name).read_bytes() == (ROOT / "generated" / name).read_bytes(), name
    assert run(toolchain / "orspec", "build", "--check", cwd=outside, env=env).stdout.startswith("up to date")
    run(toolchain / "orspec", "docs", "build", cwd=outside, env=env)
    site = outside / "site"
    assert "ResponseResource" in (site / "responses" / "index.html").read_text()
    assert (site / "stylesheets" / "reference.css").is_file() and (site / "assets/javascripts/mermaid.min.js").is_file()
    assert sorted(p.name for p in outside.iterdir()) == ["generated", "site", "spec"]


def project_env() -> dict:
    """The environment a newcomer runs a scaffolded project's commands in: none of our settings, no wheels."""
    return {k: v for k, v in clean_env().items() if not k.startswith(("ORSPEC_", "CHAT_COMPLETIONS_", "OPENAI_"))}


def project_files(project: Path) -> list[str]:
    return sorted(p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file())


@contextmanager
def serving(project: Path, command: str) -> Iterator[str]:
    """The README's set-up-and-serve `command` running in `project` until it answers HTTP; its base URL."""
    port = free_port()  # the command serves on $PORT (8000 without it)
    log = project.parent / f"{project.name}-serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(["bash", "-c", command], cwd=project, env=project_env() | {"PORT": str(port)},
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 600  # the set-up makes the venv and installs everything first
        while True:
            try:
                httpx.get(f"{base}/responses", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.5)
        yield base
    finally:
        with suppress(ProcessLookupError):  # bash and the server it started, unless both are gone
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)


def assert_git_shows_only_the_project(project: Path, scaffolded: list[str]) -> None:
    """After both commands (a venv, caches, the response store) `git status` shows the scaffolded files only."""
    env = project_env() | {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    run("git", "init", "-q", cwd=project, env=env)
    status = run("git", "status", "--porcelain", "--untracked-files=all", cwd=project, env=env).stdout
    assert sorted(line.removeprefix("?? ") for line in status.splitlines()) == scaffolded


def test_scaffolded_provider_from_the_wheels_runs_its_readme_commands(toolchain, wheels, tmp_path):
    (tmp_path / "wheels").symlink_to(wheels)
    project = tmp_path / "acme-gateway"
    run(toolchain / "orspec", "scaffold", "provider", "acme-gateway", "--out", project.name, "--orspec", "wheels",
        "--template", "chat-completions", cwd=tmp_path, env=clean_env())  # fmt: skip
    scaffolded = project_files(project)
    for name in scaffolded:
        text = (project / name).read_text()
        assert str(ROOT) not in text and str(tmp_path) not in text and str(wheels) not in text, name
    serve, test = readme_commands(project)
    assert "--find-links ../wheels" in test and (project / ".ci/run").read_text().splitlines()[-1] == test
    with serving(project, serve) as base:  # its upstream is the real API: a wrong key is refused before it
        refused = httpx.post(f"{base}/responses", json={"input": "hi"}, headers={"Authorization": "Bearer sk-wrong"})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
    done = run("bash", ".ci/run", cwd=project, env=project_env(), timeout=900)  # the README's test command
    assert " passed" in done.stdout and "failed" not in done.stdout
    assert "openresponses_runtime/" not in done.stdout  # no warning points into the runtime
    installed = run(
        project / ".venv/bin/python", "-m", "pip", "list", "--format=freeze", cwd=project, env=clean_env()
    ).stdout
    assert "openresponses-runtime==" in installed and "orspec==" in installed
    assert_git_shows_only_the_project(project, scaffolded)


def test_scaffolded_provider_beside_a_checkout_runs_its_readme_commands(tmp_path):
    from openresponses_runtime.server.store import DEFAULT_SQLITE_PATH

    (tmp_path / "orspec").symlink_to(ROOT)
    project = tmp_path / "acme-llm"
    done = run_orspec("scaffold", "provider", "acme-llm", "--out", project.name, "--runtime", "orspec/generated/python",
                      cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    scaffolded = project_files(project)
    serve, test = readme_commands(project)
    assert "-e ../orspec -e ../orspec/generated/python" in test
    tested = run("bash", "-c", test, cwd=project, env=project_env(), timeout=900)
    assert " passed" in tested.stdout and "failed" not in tested.stdout
    assert "openresponses_runtime/" not in tested.stdout  # no warning points into the runtime
    with serving(project, serve) as base:
        answer = httpx.post(f"{base}/responses", json={"model": "demo", "input": "Hello."},
                            headers={"Authorization": "Bearer sk-local"}, timeout=30)  # fmt: skip
    assert answer.status_code == 200 and answer.json()["status"] == "completed", answer.text
    assert (project / DEFAULT_SQLITE_PATH).is_file()  # the response is stored where the server runs
    assert_git_shows_only_the_project(project, scaffolded)


def test_scaffolded_anthropic_gateway_beside_a_checkout_runs_its_readme_commands(tmp_path, monkeypatch):
    (tmp_path / "orspec").symlink_to(ROOT)
    project = tmp_path / "acme-claude"
    done = run_orspec("scaffold", "provider", "acme-claude", "--out", project.name, "--template", "anthropic-messages",
                      "--orspec", "orspec", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    scaffolded = project_files(project)
    serve, test = readme_commands(project)
    tested = run("bash", "-c", test, cwd=project, env=project_env(), timeout=900)  # its tests and compliance run
    assert " passed" in tested.stdout and "failed" not in tested.stdout
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unused")  # the README's serve command reads it
    with serving(project, serve) as base:  # its upstream is the real API: a wrong key is refused before it
        refused = httpx.post(f"{base}/responses", json={"input": "hi"}, headers={"Authorization": "Bearer sk-wrong"})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
    assert_git_shows_only_the_project(project, scaffolded)


def test_runtime_installs_alone_and_its_core_works(wheels, tmp_path):
    bin_ = make_venv(tmp_path / "venv", wheels, "openresponses-runtime")
    env = clean_env()
    installed = pip("list", "--format=freeze", python=bin_ / "python", cwd=tmp_path, env=env).stdout.lower()
    assert "pydantic==" in installed
    for name in GENERATOR_ONLY + ("starlette", "orspec"):
        assert f"{name}==" not in installed, name
    recording = next((SHARED / "recordings" / "streams").glob("*.sse"), None) if SHARED.is_dir() else None
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from pydantic import TypeAdapter
        import openresponses_runtime as rt
        from openresponses_runtime import events, models, streaming

        release = ".".join(str(int(part)) for part in rt.SPEC_VERSION.split("-"))
        assert rt.__version__.startswith(release + "."), (rt.SPEC_VERSION, rt.__version__)
        body = {"type": "message", "role": "developer", "content": "Be brief."}
        assert type(TypeAdapter(models.ItemParam).validate_python(body)).__name__ == "DeveloperMessageItemParam"
        event = events.parse_event({"type": "response.output_text.delta", "sequence_number": 3, "item_id": "m",
                                    "output_index": 0, "content_index": 0, "delta": "Hi", "logprobs": []})
        assert event.delta == "Hi"
        if len(sys.argv) > 1:
            checker = streaming.StreamChecker()
            violations = checker.check_sse(Path(sys.argv[1]).read_bytes())
            assert checker.events > 0, "no events read"
            print("events", checker.events, "violations", len(violations))
        print("core ok")
        """
    )
    done = run(bin_ / "python", "-c", script, *([recording] if recording else []), cwd=tmp_path, env=env)
    assert "core ok" in done.stdout
    server = run(bin_ / "python", "-c", "import openresponses_runtime.server", cwd=tmp_path, env=env, check=False)
    assert server.returncode == 1
    assert server.stderr.strip().splitlines()[-1] == (
        "ImportError: openresponses_runtime.server needs the server extra: pip install 'openresponses-runtime[server]'"
    )


def test_pre_commit_runs_both_hooks(wheels, tmp_path):
    """`pre-commit try-repo` with a git copy of this repository, in a project holding spec/ and generated/:
    both hooks run and pass (`build --check` failing on stale files is tested in test_build.py)."""
    pre_commit = shutil.which("pre-commit", path=str(Path(sys.executable).parent))
    if pre_commit is None:
        pytest.fail("pre-commit is not installed; it is in the test extra")
    env = clean_env(wheels) | {"PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "GIT_CONFIG_GLOBAL": os.devnull}
    git = ("git", "-c", "user.name=orspec tests", "-c", "user.email=tests@localhost", "-c", "commit.gpgsign=false")
    junk = shutil.ignore_patterns(
        ".git", ".venv", "site", "__pycache__", "*.egg-info", ".*_cache", ".orspec-build.json"
    )
    repo, project = tmp_path / "orspec", tmp_path / "project"
    shutil.copytree(ROOT, repo, ignore=junk)
    for folder in ("spec", "generated"):
        shutil.copytree(ROOT / folder, project / folder, ignore=junk)
    for where in (repo, project):
        run(*git, "init", "-q", cwd=where, env=env)
        run(*git, "add", "-A", cwd=where, env=env)
        run(*git, "commit", "-q", "-m", "copy", cwd=where, env=env)
    # One run for both hooks: every try-repo builds the hook environment afresh (about a minute).
    done = run(pre_commit, "try-repo", repo, "--all-files", cwd=project, env=env, timeout=900)
    passed = [line.split(".")[0] for line in done.stdout.splitlines() if line.endswith("Passed")]
    assert sorted(passed) == ["orspec build --check", "orspec validate"], done.stdout
