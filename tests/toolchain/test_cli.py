"""CLI conveniences for CI: `--version`, help on every argument, `diff` by release date and
`--fail-on`, `release` setting `info.version`, and `build --templates` layering."""

from __future__ import annotations

import argparse
import shutil

import pytest
from orspec import __version__
from orspec.cli import _parser

from ..conftest import ROOT, run_orspec


def arguments(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("orspec",)):
    """(command path, argument) for every positional argument and option, subcommands included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from arguments(sub, (*path, name))
        elif not isinstance(action, argparse._HelpAction):
            yield " ".join(path), action


def test_version():
    done = run_orspec("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"orspec {__version__}"


def test_every_argument_has_help_text():
    found = list(arguments(_parser()))
    assert len(found) > 40 and any(path == "orspec diff" and a.dest == "fail_on" for path, a in found)
    missing = [f"{path} {a.option_strings or a.dest}" for path, a in found if not (a.help or "").strip()]
    assert missing == []


def test_diff_takes_release_dates():
    by_date = run_orspec("diff", "2026-01-15", "2026-04-24", "--format", "json")
    by_path = run_orspec(
        "diff", "spec/releases/2026-01-15/openapi.json", "spec/releases/2026-04-24/openapi.json", "--format", "json"
    )
    assert by_date.returncode == 0, by_date.stderr
    assert by_date.stdout == by_path.stdout and "CompactResource" in by_date.stdout


def test_diff_names_the_releases_there_are():
    done = run_orspec("diff", "2020-01-01", "spec/")
    assert done.returncode == 2
    assert "no release 2020-01-01" in done.stderr and "2026-01-15, 2026-04-24" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("fail_on", "code"),
    [(None, 0), ("breaking", 1), ("breaking-clients", 1), ("breaking-servers", 1)],
)
def test_fail_on_breaking_changes(fail_on, code):
    # 2026-01-15 -> 2026-04-24 has changes breaking for clients and for servers.
    flags = ["--fail-on", fail_on] if fail_on else []
    done = run_orspec("diff", "2026-01-15", "2026-04-24", *flags)
    assert done.returncode == code, done.stderr
    if code:
        assert f"are {fail_on.replace('-', ' for ')}" in done.stderr


def test_fail_on_passes_when_nothing_breaks():
    done = run_orspec("diff", "2026-04-24", "2026-04-24", "--fail-on", "breaking")
    assert done.returncode == 0 and "no structural differences" in done.stdout


@pytest.mark.process
def test_release_sets_info_version(tmp_path):
    shutil.copytree(ROOT / "spec", tmp_path / "spec")
    root = tmp_path / "spec" / "openapi.yaml"
    before = root.read_text().splitlines()
    done = run_orspec("release", "2026-05-01", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    after = root.read_text().splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [('  version: "2026-04-24"', '  version: "2026-05-01"')]  # one line, layout kept
    validated = run_orspec("validate", cwd=tmp_path)
    assert validated.returncode == 0, validated.stderr


@pytest.mark.process
def test_build_templates_are_layered_file_by_file(tmp_path):
    mine = tmp_path / "mine"
    (mine / "runtime").mkdir(parents=True)
    (mine / "runtime" / "extra.py").write_text('"""A module of our own, shipped in the runtime."""\n')
    shipped = (ROOT / "templates" / "registry" / "events.py.jinja").read_text()
    (mine / "registry").mkdir()
    (mine / "registry" / "events.py.jinja").write_text("# events, our way\n" + shipped)
    done = run_orspec("build", "--out", str(tmp_path / "out"), "--templates", str(mine))
    assert done.returncode == 0, done.stderr
    package = tmp_path / "out" / "python" / "openresponses_runtime"
    assert (package / "extra.py").read_text().startswith('"""A module of our own')
    assert (package / "events.py").read_text().startswith("# events, our way\n")
    assert (package / "streaming.py").read_bytes() == (ROOT / "templates" / "runtime" / "streaming.py").read_bytes()
    assert (tmp_path / "out" / "docs" / "index.md").read_bytes() == (
        ROOT / "generated" / "docs" / "index.md"
    ).read_bytes()


def test_build_templates_refuses_an_unknown_folder(tmp_path):
    (tmp_path / "mine" / "regsitry").mkdir(parents=True)
    (tmp_path / "mine" / "regsitry" / "events.py.jinja").write_text("")
    done = run_orspec("build", "--out", str(tmp_path / "out"), "--templates", str(tmp_path / "mine"))
    assert done.returncode == 2 and "not under one of the template folders" in done.stderr
    assert not (tmp_path / "out").exists()


def test_build_templates_must_be_a_folder(tmp_path):
    done = run_orspec("build", "--out", str(tmp_path / "out"), "--templates", str(tmp_path / "mine"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"orspec: --templates {tmp_path / 'mine'}: not a directory; pass a folder laid out like the shipped templates"
    ]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("spec_version", "expected", "requirement"),
    [
        ("2026-04-24", "2026.4.24.0.1.0", "openresponses-runtime[server]~=2026.4.24.0.1"),
        ("2.3.0", "2.3.0.0.1.0", "openresponses-runtime[server]~=2.3.0.0.1"),
        ('1"""\\', "1.0.1.0", "openresponses-runtime[server]~=1.0.1"),
        ("draft", "0.0.1.0", "openresponses-runtime[server]~=0.0.1"),
    ],
)
def test_runtime_version_is_the_spec_release_then_the_generator(spec_version, expected, requirement):
    from orspec.generate.package import runtime_version
    from orspec.scaffold import Runtime

    assert runtime_version(spec_version, "0.1.0") == expected
    assert Runtime(expected).requirement == requirement


@pytest.mark.process
def test_docs_build_without_a_mkdocs_config_publishes_the_reference(tmp_path):
    pytest.importorskip("material")
    for folder in ("spec", "generated"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    done = run_orspec("docs", "build", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    site = tmp_path / "site"
    assert 'id="ResponseResource"' in (site / "responses" / "index.html").read_text()
    assert "Open Responses reference" in (site / "index.html").read_text()
    assert (site / "stylesheets" / "reference.css").is_file() and (site / "assets/javascripts/mermaid.min.js").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["generated", "site", "spec"]  # nothing else written
