"""`orspec build` end to end: importable packages, determinism, atomicity and the drift check."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from orspec.write import read_tree

from ..conftest import RELEASES, ROOT, run_orspec, run_python

IMPORT_CHECK = """
import openresponses_runtime as rt
from openresponses_runtime import models
names = [n for n in models.__all__]
assert len(names) > 100, len(names)
print(len(names))
"""


@pytest.mark.process
def test_generated_tree_is_up_to_date():
    result = run_orspec("build", "--check")
    assert result.returncode == 0, result.stderr


@pytest.mark.process
def test_build_is_deterministic_and_matches_committed(tmp_path):
    for out in ("one", "two"):
        result = run_orspec("build", "--out", str(tmp_path / out))
        assert result.returncode == 0, result.stderr
    one, two = read_tree(tmp_path / "one"), read_tree(tmp_path / "two")
    assert one == two
    assert one == read_tree(ROOT / "generated")
    assert not any(re.search(rb"/work/|/tmp/|\d{4}-\d\d-\d\dT\d\d:", data) for data in one.values())


@pytest.mark.process
def test_building_the_shipped_spec_warns_about_nothing(tmp_path):
    """A newcomer's first build must not look like something is wrong."""
    result = run_orspec("build", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if ": warning: " in line] == []


@pytest.mark.process
@pytest.mark.parametrize("release", sorted(RELEASES))
def test_upstream_releases_build_with_lenient(tmp_path, shared, release):
    out = tmp_path / "out"
    strict = run_orspec("build", "--spec", str(RELEASES[release]), "--out", str(out))
    assert strict.returncode == 1
    assert "/components/securitySchemes/ApiKeyAuth" in strict.stderr
    assert not out.exists()  # a failed build writes nothing
    lenient = run_orspec("build", "--spec", str(RELEASES[release]), "--out", str(out), "--lenient")
    assert lenient.returncode == 0, lenient.stderr
    assert "warning:" in lenient.stderr
    imported = run_python(IMPORT_CHECK, path=out / "python")
    assert imported.returncode == 0, imported.stderr


OPENAI_SPEC_CHECK = """
from pydantic import TypeAdapter
from openresponses_runtime import events, models
for name in models.__all__:
    TypeAdapter(getattr(models, name))  # every model and union resolves, forward references included
assert len(models.__all__) > 2000 and len(events.EVENT_TYPES) > 50
print(len(models.__all__))
"""


@pytest.mark.process
@pytest.mark.slow
def test_openai_full_spec_builds_into_an_importable_package(tmp_path, shared):
    spec = shared / "upstream" / "openai" / "openapi.json"
    out = tmp_path / "out"
    result = run_orspec("build", "--spec", str(spec), "--lenient", "--out", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "warning:" in result.stderr  # the flaws of a third-party spec are reported, not fatal
    checked = run_python(OPENAI_SPEC_CHECK, path=out / "python")
    assert checked.returncode == 0, checked.stderr[-2000:]


def test_failed_build_leaves_output_byte_identical(tmp_path):
    out = tmp_path / "out"
    shutil.copytree(ROOT / "generated", out)
    (out / "notes.txt").write_text("a user's stray file")
    before = read_tree(out)
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    items = spec / "components" / "items.yaml"
    items.write_text(
        items.read_text().replace("$ref: content.yaml#/InputTextContentParam\n", "$ref: content.yaml#/Nope\n", 1)
    )
    result = run_orspec("build", "--spec", str(spec), "--out", str(out))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert re.search(
        r"items\.yaml:\d+: /components/schemas/\S+: \$ref 'content.yaml#/Nope' does not resolve", result.stderr
    )
    assert read_tree(out) == before


@pytest.mark.process
@pytest.mark.parametrize("given", ["a file", "a folder of the user's"])
def test_build_never_replaces_what_no_build_wrote(tmp_path, given):
    """`--out` naming a file or someone's folder is refused, and left untouched."""
    out = tmp_path / "out"
    if given == "a file":
        out.write_text("notes\n")
        problem = f"{out} is a file, not a folder"
    else:
        out.mkdir()
        (out / "notes.txt").write_text("notes\n")
        (out / "docs").mkdir()  # a name the build also writes, alone, would not be reason enough
        problem = f"{out} holds notes.txt, which no build wrote"
    before = sorted((p.relative_to(tmp_path), p.is_file() and p.read_bytes()) for p in tmp_path.rglob("*"))
    result = run_orspec("build", "--out", str(out))
    assert result.returncode == 2
    expected = f"orspec: {problem}; pass a new or empty folder to --out, or move that file away"
    assert result.stderr.splitlines()[-1:] == [expected] and "Traceback" not in result.stderr
    assert sorted((p.relative_to(tmp_path), p.is_file() and p.read_bytes()) for p in tmp_path.rglob("*")) == before


@pytest.mark.process
def test_check_lists_stale_files(tmp_path):
    out = tmp_path / "out"
    shutil.copytree(ROOT / "generated", out)
    (out / "openapi.json").write_text("{}\n")
    (out / "extra.txt").write_text("x")
    result = run_orspec("build", "--check", "--out", str(out))
    assert result.returncode == 1
    assert "stale: openapi.json" in result.stderr and "stale: extra.txt" in result.stderr
    assert (out / "openapi.json").read_text() == "{}\n"  # --check writes nothing


def test_project_root_is_found_from_a_subdirectory():
    result = run_orspec("validate", cwd=ROOT / "spec" / "components")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        "OK: 141 schemas (24 from 3 vendor fragments), 6 paths (7 operations, 4 from vendor fragments)"
    )


def test_outside_a_project_needs_spec(tmp_path):
    result = run_orspec("validate", cwd=tmp_path)
    assert result.returncode == 2
    assert "not inside an orspec project" in result.stderr and "Traceback" not in result.stderr


def test_bundled_json_has_every_schema():
    bundled = json.loads((ROOT / "generated" / "openapi.json").read_text())
    core = [s for s in bundled["components"]["schemas"].values() if "x-openresponses-vendor" not in s]
    # upstream's 108, plus MessageItemParam, ErrorResponse, InputTokenCountResource and ReasoningContentParam
    # (upstream's draft after 2026-04-24 has it), less the unused DetailEnum and FunctionCallItemStatus
    assert len(core) == 110  # (spec/README)
    assert bundled["info"]["version"] == "2026-04-24"
    assert bundled["servers"][0]["url"].endswith("/v1")
    assert bundled["security"] == [{"BearerAuth": []}]
    assert bundled["components"]["securitySchemes"]["BearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": bundled["components"]["securitySchemes"]["BearerAuth"]["description"],
    }
    assert "$ref" not in json.dumps(bundled).replace('"$ref": "#/', "")  # every ref is local
