"""The project's own promises about how it is set up and tested: README's two commands, `.ci/run`, and
the locked dependency set (`.ci/constraints.txt`) that makes a fresh clone test what CI tested."""

from __future__ import annotations

import re
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from ..conftest import ROOT

README = (ROOT / "README.md").read_text()
CI_RUN = (ROOT / ".ci" / "run").read_text()
SERVICES = (ROOT / ".ci" / "services").read_text()
LOCK = ROOT / ".ci" / "constraints.txt"
OURS = {"orspec", "openresponses-runtime"}  # this repository's distributions, installed from the checkout


def _readme_command(heading: str) -> str:
    """The one-line command in the sh block that follows the sentence starting with `heading`."""
    found = re.search(re.escape(heading) + r"[^\n]*\n\n```sh\n([^\n]+)\n```", README)
    assert found, f"README.md has no command block after {heading!r}"
    return found.group(1)


def _locked() -> dict[str, list[tuple[Version, str]]]:
    """Each locked distribution's versions, with the environment marker each applies under."""
    pins: dict[str, list[tuple[Version, str]]] = {}
    for line in LOCK.read_text().splitlines():
        requirement = line.split("#", 1)[0].strip()
        if requirement:
            parsed = Requirement(requirement)
            (spec,) = parsed.specifier  # one exact pin a line
            assert spec.operator == "==", line
            pins.setdefault(canonicalize_name(parsed.name), []).append((Version(spec.version), str(parsed.marker)))
    return pins


def _direct_requirements() -> list[tuple[str, Requirement]]:
    """Every requirement both pyproject files state, with where it is stated."""
    found = []
    for path in (ROOT / "pyproject.toml", ROOT / "generated" / "python" / "pyproject.toml"):
        project = tomllib.loads(path.read_text())["project"]
        groups = {"dependencies": project.get("dependencies", [])} | project.get("optional-dependencies", {})
        for group, requirements in groups.items():
            found += [(f"{path.relative_to(ROOT)} [{group}]", Requirement(text)) for text in requirements]
    return found


def test_ci_runs_exactly_readmes_test_command():
    test_command = _readme_command("Set up and run the tests")
    last_line = [line for line in CI_RUN.splitlines() if line.strip()][-1]
    assert last_line == test_command
    assert "-c .ci/constraints.txt" in test_command  # CI installs the locked set
    assert "-c .ci/constraints.txt" in _readme_command("Set up and run the main job")


def test_readme_names_everything_ci_sets_up_beyond_the_command():
    # A local run of README's command skips what .ci/run prepares; README says what that is.
    exported = re.findall(r"^\s*export ([A-Z_]+)=", CI_RUN + SERVICES, re.MULTILINE)
    assert {"ORSPEC_TEST_POSTGRES", "ORSPEC_TEST_FRESH_VENV", "PIP_CONSTRAINT"} <= set(exported)
    for name in exported:
        assert f"`{name}" in README, f"README.md does not say that .ci/run sets {name}"
    assert "source .ci/services" in CI_RUN and "source .ci/services" in (ROOT / ".ci" / "newest").read_text()


@pytest.mark.parametrize("where, requirement", _direct_requirements(), ids=lambda value: str(value))
def test_every_direct_dependency_is_bounded_and_locked_within_its_bounds(where, requirement):
    name = canonicalize_name(requirement.name)
    if name in OURS:
        return  # installed from this checkout, never from an index
    upper = [spec for spec in requirement.specifier if spec.operator in ("<", "<=", "~=", "==")]
    assert upper, f"{where}: {requirement} has no upper bound; bound it to the major versions tested"
    pins = _locked().get(name)
    assert pins, f"{where}: {requirement.name} is not in .ci/constraints.txt; run .ci/lock"
    for version, marker in pins:
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{where}: .ci/constraints.txt pins {requirement.name}=={version} ({marker}) outside {requirement.specifier};"
            " run .ci/lock"
        )


def test_the_lock_leaves_out_this_repositorys_own_distributions():
    assert not OURS & set(_locked()), "the lock pins a distribution this checkout installs editable"


def test_the_real_clients_page_names_the_versions_ci_pins():
    page = (ROOT / "docs" / "guides" / "real-clients.md").read_text()
    npm = dict(re.findall(r"(@?[a-z][\w./-]*)@(\d[\w.]*)", re.search(r'^want="(.*)"$', SERVICES, re.M).group(1)))
    for name in ("@openai/codex", "ai", "@ai-sdk/openai", "openai"):
        assert npm[name] in page, f"docs/guides/real-clients.md does not name {name} {npm[name]}"
    locked = _locked()
    for name in ("openai", "openai-agents", "pydantic-ai-slim", "langchain-openai", "litellm"):
        ((version, _),) = locked[name]
        assert f"| {version} |" in page, f"docs/guides/real-clients.md does not name {name} {version}"


def test_test_modules_sit_in_the_folder_of_what_they_test():
    # tests/ mirrors the packages (README's layout table); its top holds only the helpers they share.
    folders = {"toolchain", "server", "gateways", "client", "streaming", "typescript", "e2e"}
    tests = ROOT / "tests"
    misplaced = [str(path.relative_to(tests)) for path in tests.rglob("test_*.py") if path.parent.name not in folders]
    assert not misplaced, f"move these into one of tests/{{{','.join(sorted(folders))}}}/: {misplaced}"
    assert all((tests / folder / "__init__.py").is_file() for folder in folders)
    for folder in folders:
        assert f"`{folder}/`" in README, f"README.md's layout table does not name tests/{folder}/"
