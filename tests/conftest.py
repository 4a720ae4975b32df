from __future__ import annotations

import compileall
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from types import ModuleType

import pytest
from filelock import FileLock
from hypothesis import settings

from . import cli_process, cpu_time

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ORSPEC_SHARED") or ROOT.parent / "shared")  # a worktree elsewhere names it
UPSTREAM = SHARED / "upstream" / "openresponses"
RELEASES = {
    "2026-01-15": UPSTREAM / "2026-01-15" / "openapi.json",
    "2026-04-24": UPSTREAM / "2026-04-24" / "openapi.json",
}

# What a test costs beyond this process, as markers (registered in pyproject.toml). `--fast` leaves
# these out; an unmarked test whose call takes longer than FAST_LIMIT fails, naming them.
COST_MARKERS = {
    "process": "starts processes and waits on them (orspec serve, the proxy, a scaffolded provider, a whole build)",
    "venv": "makes venvs or installs wheels",
    "clients": "drives real third-party clients (the client matrix, Codex CLI, the npm SDKs)",
    "browser": "drives a real browser",
    "slow": "is long in this process (slow tests are started before the rest)",
}
FAST_LIMIT = 2.0  # seconds

# Property tests (hypothesis, schemathesis): a short run here, the full one in CI (CI=true: .ci/services).
# A test that sets its own number of examples asks `examples(n)`: n in CI, at most the profile's here.
settings.register_profile("ci", max_examples=100)
settings.register_profile("dev", max_examples=5)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")


def examples(full: int) -> int:
    """How many examples a property test draws: `full` under the ci profile, no more than the loaded profile's."""
    return min(full, settings.default.max_examples)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help="the fast tier: leave out tests marked " + ", ".join(COST_MARKERS) + " (README says what that skips)",
    )


def pytest_configure(config: pytest.Config) -> None:
    # With PYTHONDONTWRITEBYTECODE set (as on CI machines), every `python -m orspec` a test starts
    # would compile orspec and the generated runtime from source again. They are compiled once
    # here, as an installed package is: the flag stops Python writing bytecode, not reading it.
    if not hasattr(config, "workerinput"):  # the xdist controller, or a run without xdist
        for folder in (ROOT / "tools", ROOT / "generated" / "python"):
            compileall.compile_dir(folder, quiet=1)


def pytest_sessionstart(session: pytest.Session) -> None:
    # Where tests run (an xdist worker, or a run without xdist), the forkserver behind `run_orspec` imports
    # the CLI while tests are collected, not within the first test that runs a command (charged to it).
    if hasattr(session.config, "workerinput") or not session.config.pluginmanager.hasplugin("dsession"):
        cli_process.start()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    # Many tests wait on servers, sockets and subprocesses: one worker more than the cores keeps them
    # busy. More cost more than they won: each worker collects (about 10 s of CPU) and competes for
    # the cores (on 2 cores, 4 workers took 331 s of CPU and 169 s; 3 took 291 s and 157 s).
    return len(os.sched_getaffinity(0)) + 1


CLIENTS = Path(os.environ.get("ORSPEC_TEST_CLIENTS_DIR", ROOT / ".cache" / "clients"))
PYTHON_CLIENTS = ("openai", "openai-agents", "pydantic-ai-slim", "langchain-openai", "litellm")


def client_versions() -> list[str]:
    """The real clients the suite drives, with their versions: PyPI's from this venv, npm's from .cache/clients."""
    found = []
    for name in PYTHON_CLIENTS:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} missing")
    manifest = CLIENTS / "package.json"
    wanted = json.loads(manifest.read_text()).get("dependencies", {}) if manifest.exists() else {}
    for name in sorted(wanted):
        installed = CLIENTS / "node_modules" / name / "package.json"
        found.append(
            f"{name} {json.loads(installed.read_text())['version'] if installed.exists() else 'missing'} (npm)"
        )
    return found


def npm_client(path: str) -> Path:
    """`path` under .cache/clients/node_modules (a client's bin or folder): there, or the test cannot run.

    With ORSPEC_TEST_CLIENTS=1 (set by .ci/services) a missing client fails the test: the matrix never
    shrinks silently. Elsewhere the test skips and says how to get it."""
    found = CLIENTS / "node_modules" / path
    if found.exists():
        return found
    message = f"{path} is not installed in {CLIENTS} (bash .ci/run installs the client matrix there)"
    if os.environ.get("ORSPEC_TEST_CLIENTS") == "1":
        pytest.fail(message)
    pytest.skip(message)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        terminalreporter.write_line("client matrix: " + ", ".join(client_versions()))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("fast"):
        costly = [item for item in items if _costs(item)]
        if costly:
            config.hook.pytest_deselected(items=costly)
            items[:] = [item for item in items if not _costs(item)]
    # Slow tests go out first and the short ones fill in around them (`--dist load --maxschedchunk 1`
    # hands tests out two at a time), so no slow test holds up the end. A module's slow tests are dealt
    # out in turns with other modules', so workers run them side by side rather than one after another.
    nth_in_module: dict[Path, int] = {}
    rank: dict[str, tuple[int, int]] = {}
    for item in items:
        if item.get_closest_marker("slow"):
            nth_in_module[item.path] = nth_in_module.get(item.path, -1) + 1
            rank[item.nodeid] = (0, nth_in_module[item.path])
    items.sort(key=lambda item: rank.get(item.nodeid, (1, 0)))


def _costs(item: pytest.Item) -> list[str]:
    return [name for name in COST_MARKERS if item.get_closest_marker(name)]


_CALL_TIME = pytest.StashKey[float]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    # The call's own CPU time (cpu_time.py: its threads', its waited-for children's, its `orspec` commands'),
    # which other jobs on the machine, the extra xdist worker among them, do not stretch as they stretch
    # wall time: a busy machine fails no fast test.
    start = cpu_time.spent()
    try:
        return (yield)
    finally:
        item.stash[_CALL_TIME] = cpu_time.spent() - start


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    # The guard that keeps `--fast` fast. Only the call is timed: setup and teardown run fixtures that
    # several tests share (a module's server, a build made once), paid by whichever test comes first.
    report = yield
    took = item.stash.get(_CALL_TIME, 0.0)
    if report.when == "call" and report.passed and took > FAST_LIMIT and not _costs(item):
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} took {took:.1f} s of CPU, over the {FAST_LIMIT:.0f} s an unmarked test may take."
            " Mark it with what it costs: "
            + "; ".join(f"@pytest.mark.{name} if it {what}" for name, what in COST_MARKERS.items())
        )
    return report


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder filled by `build` once per test run, however many xdist workers ask for it."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, shared by its workers
    folder = base / f"once-{name}"
    with FileLock(f"{folder}.lock"):
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / ".built").touch()
    return folder


# The fictional vendor `acme`, whose fragment uses every kind of extension once (item, tool, content,
# event, and a field on the response). It is a test fixture, never part of spec/, so no release ships it:
# the tests lay it over a copy of spec/ and build that.
WITH_VENDOR = ROOT / "tests" / "fixtures" / "spec-with-vendor"


def spec_with_vendor(folder: Path) -> Path:
    """`folder`/spec: a copy of spec/ with tests/fixtures/spec-with-vendor laid over it."""
    spec = folder / "spec"
    shutil.copytree(ROOT / "spec", spec, ignore=shutil.ignore_patterns("releases"))
    shutil.copytree(WITH_VENDOR, spec, dirs_exist_ok=True)
    return spec


@pytest.fixture(scope="session")
def vendor_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated/ folder `orspec build` makes from spec_with_vendor, built once per test run."""

    def build(folder: Path) -> None:
        done = run_orspec("build", "--spec", str(spec_with_vendor(folder)), "--out", str(folder / "generated"))
        assert done.returncode == 0, done.stderr

    return built_once(tmp_path_factory, "vendor-build", build) / "generated"


@pytest.fixture(scope="session")
def vendor_models(vendor_build: Path) -> ModuleType:
    """The fixture build's `models` module, imported beside the shipped one under a name of its own.

    Its hand-written imports (`_base`, `_keywords`) are the shipped runtime's, which the build copies."""
    name = "vendor_build_models"
    spec = importlib.util.spec_from_file_location(name, vendor_build / "python" / "openresponses_runtime" / "models.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves the postponed annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def run_orspec(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the CLI as a user would, in a process of its own (forked with orspec imported: cli_process.py)."""
    return cli_process.run(list(args), cwd=cwd, env={**os.environ, **(env or {})}, timeout=300)


def readme_commands(project: Path) -> tuple[str, str]:
    """A scaffolded project's two commands as its README gives them: set up and serve; set up and test."""
    section = (project / "README.md").read_text().split("\n## The two commands\n", 1)[1].split("\n## ", 1)[0]
    serve, test = re.findall(r"^```sh\n(.*?)\n```", section, flags=re.S | re.M)
    return serve, test


def run_python(code: str, *, path: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Run `code` with only `path` put in front of sys.path, to import a freshly built package."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(path)},
        timeout=300,
    )


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside the project; upstream fixtures are unavailable")
    return SHARED
