"""Dated releases: frozen, immutable, seeded with our own versions of the two upstream releases,
with a changelog drafted from `orspec diff` and "added in" badges in the docs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from orspec.bundle import bundle
from orspec.diff import diff_documents

from ..conftest import RELEASES, ROOT, run_orspec
from .test_diff import ALLOWED_DEVIATIONS

# Upstream's 2026-01-15 release misspelt the operationId (`Createresponse`); upstream fixed it in
# 2026-04-24, and our history never had the typo.
FIXED_IN_OUR_HISTORY = {("/paths/~1responses/post/operationId", "operation-id-changed")}


@pytest.mark.parametrize("date", sorted(RELEASES))
def test_seeded_releases_match_upstream_on_the_wire(shared, date):
    ours = json.loads((ROOT / "spec" / "releases" / date / "openapi.json").read_text())
    assert ours["info"]["version"] == date
    changes = diff_documents(ours, bundle(RELEASES[date]).document)
    remaining = [str(c) for c in changes if (c.pointer, c.kind) not in ALLOWED_DEVIATIONS | FIXED_IN_OUR_HISTORY]
    assert remaining == []


def test_releases_are_published_and_in_the_changelog():
    for date in RELEASES:
        published = ROOT / "generated" / "releases" / date / "openapi.json"
        assert published.read_bytes() == (ROOT / "spec" / "releases" / date / "openapi.json").read_bytes()
    changelog = (ROOT / "generated" / "docs" / "changelog.md").read_text()
    assert changelog.index("## 2026-04-24") < changelog.index("## 2026-01-15")
    for expected in ("CompactResource", "WebSocketResponseCreateEvent", "/properties/phase", "/properties/logprobs"):
        assert expected in changelog


def test_added_in_badges_follow_the_releases():
    items = (ROOT / "generated" / "docs" / "items.md").read_text()
    phase_rows = [line for line in items.splitlines() if line.startswith("| <code>phase</code>")]
    assert phase_rows and all("added in 2026-04-24" in row for row in phase_rows)
    role_rows = [line for line in items.splitlines() if line.startswith("| <code>role</code>")]
    assert role_rows and not any("added in" in row for row in role_rows)  # there from the first release


@pytest.fixture
def project(tmp_path) -> Path:
    shutil.copytree(ROOT / "spec", tmp_path / "spec")
    return tmp_path


def test_a_changed_release_fails_the_build(project):
    frozen = project / "spec" / "releases" / "2026-01-15" / "openapi.json"
    frozen.write_text(frozen.read_text().replace('"Open Responses"', '"Open Responses!"', 1))
    result = run_orspec("build", "--out", str(project / "out"), cwd=project)
    assert result.returncode == 1
    assert (
        "spec/releases/2026-01-15/openapi.json:1: /: release 2026-01-15 was changed after it was released"
        in result.stderr
    )
    assert not (project / "out").exists()


@pytest.mark.slow
def test_release_twice_with_a_change_between(project):
    shutil.rmtree(project / "spec" / "releases")
    first = run_orspec("release", "2026-05-01", cwd=project)
    assert first.returncode == 0, first.stderr
    responses = project / "spec" / "components" / "responses.yaml"
    text = responses.read_text()
    start = text.index("\nResponseResource:\n")
    at = text.index("    background:\n", start)  # a property of ResponseResource
    region = "    region:\n      type: string\n      description: Where the response was computed.\n"
    responses.write_text(text[:at] + region + text[at:])
    second = run_orspec("release", "2026-06-01", cwd=project)
    assert second.returncode == 0, second.stderr
    notes = (project / "spec" / "releases" / "2026-06-01" / "CHANGELOG.md").read_text()
    assert "Changes since 2026-05-01" in notes and "/properties/region" in notes and "property-added" in notes
    assert "The first release." in (project / "spec" / "releases" / "2026-05-01" / "CHANGELOG.md").read_text()
    built = run_orspec("build", "--out", str(project / "out"), cwd=project)
    assert built.returncode == 0, built.stderr
    docs = (project / "out" / "docs" / "responses.md").read_text()
    region = [line for line in docs.splitlines() if line.startswith("| <code>region</code>")]
    assert len(region) >= 1 and "added in 2026-06-01" in region[0]
    assert "added in 2026-05-01" not in docs  # the first release introduces nothing
    changelog = (project / "out" / "docs" / "changelog.md").read_text()
    assert changelog.index("## 2026-06-01") < changelog.index("## 2026-05-01")
    again = run_orspec("release", "2026-06-01", cwd=project)
    assert again.returncode == 2
    assert again.stderr.splitlines() == [
        "orspec: release 2026-06-01 must be later than the last one, 2026-06-01; pass a later date"
    ]


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("date", "problem"),
    [
        ("2026-13", "'2026-13' is not YYYY-MM-DD"),
        ("yesterday", "'yesterday' is not YYYY-MM-DD"),
        ("2026/06/01", "'2026/06/01' is not YYYY-MM-DD"),
        ("20260601", "'20260601' is not YYYY-MM-DD"),
        ("2026-13-45", "2026-13-45 is not a day of the calendar"),
        ("2026-02-30", "2026-02-30 is not a day of the calendar"),
    ],
)
def test_release_date_must_be_a_day_of_the_calendar(project, date, problem):
    """A usage mistake: one line, exit 2, and the spec (info.version, the releases) untouched."""
    before = _tree(project)
    result = run_orspec("release", date, cwd=project)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"orspec: release date {problem}; pass the day of the release, e.g. 2026-05-01"
    ]
    assert _tree(project) == before


def test_a_release_not_later_than_the_last_is_a_usage_error(project):
    before = _tree(project)
    result = run_orspec("release", "2026-04-24", cwd=project)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "orspec: release 2026-04-24 must be later than the last one, 2026-04-24; pass a later date"
    ]
    assert _tree(project) == before


def test_an_impossible_date_in_the_index_is_located(project):
    index = project / "spec" / "releases" / "index.yaml"
    index.write_text(index.read_text().replace("2026-04-24", "2026-04-31"))
    result = run_orspec("validate", cwd=project)
    assert result.returncode == 1
    assert (
        "spec/releases/index.yaml:" in result.stderr
        and "release date 2026-04-31 is not a day of the calendar" in result.stderr
    )
