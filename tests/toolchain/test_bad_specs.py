"""A corpus of broken specs: every one is a located problem, exit 1, and an untouched output tree.

`tests/fixtures/bad_specs/expect.yaml` lists each committed case (a file or a small spec
directory) with a substring its report must contain. Cases too big to commit, or that need
symlinks and FIFOs, are made here in a temporary directory. Each runs `orspec build` in a process
of its own (forked with orspec imported, `cli_process.py`) with bounded time and address space,
into a copy of the project's `generated/`.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from orspec import bundle as bundle_module
from orspec.cli import main
from orspec.load import MAX_DEPTH, MAX_FILE_BYTES
from orspec.pipeline import load_spec
from orspec.problems import SpecError
from orspec.write import read_tree

from .. import cli_process
from ..conftest import ROOT

CORPUS = ROOT / "tests" / "fixtures" / "bad_specs"
EXPECT: dict[str, str] = yaml.safe_load((CORPUS / "expect.yaml").read_text())
LOCATED = re.compile(r"^\S+:\d+: /\S*: ")
MEMORY = 2 * 1024**3
TIMEOUT = 60


def build(spec: Path, out: Path) -> subprocess.CompletedProcess:
    args = ["build", "--spec", str(spec), "--out", str(out)]
    return cli_process.run(args, cwd=ROOT, env={**os.environ, "ORSPEC_DEBUG": ""}, timeout=TIMEOUT, memory=MEMORY)


@pytest.fixture
def out(tmp_path: Path) -> Path:
    target = tmp_path / "out"
    shutil.copytree(ROOT / "generated", target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def assert_refused(spec: Path, out: Path, expected: str) -> list[str]:
    before = read_tree(out)
    result = build(spec, out)
    lines = result.stderr.splitlines()
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert lines, "no problem reported"
    unlocated = [line for line in lines if not LOCATED.match(line)]
    assert not unlocated, unlocated
    assert expected in result.stderr, result.stderr
    errors = [line for line in lines if ": warning: " not in line]
    assert errors and all(not re.match(r"^\S+:0: ", line) for line in errors), errors  # a real line each
    assert read_tree(out) == before
    return lines


def test_the_corpus_is_large_enough():
    assert len(EXPECT) >= 40
    on_disk = {p.name for p in CORPUS.iterdir() if p.name != "expect.yaml"}
    assert on_disk == set(EXPECT)  # every fixture is listed, every listed case exists


# A build of its own, like every case, but one that takes seconds to reach the bound.
@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=pytest.mark.process) if c == "alias_bomb.yaml" else c for c in sorted(EXPECT)]
)
def test_bad_spec_is_a_located_problem(case, out):
    assert_refused(CORPUS / case, out, EXPECT[case])


# Cases made at test time: too big to commit, or file-system objects git does not keep.


def _big_file(tmp: Path) -> Path:
    path = tmp / "big.yaml"
    with path.open("wb") as handle:  # sparse: no disk used, but reading it would take 32 MiB
        handle.write(b"openapi: 3.1.0\n")
        handle.seek(MAX_FILE_BYTES + 1)
        handle.write(b"\n")
    return path


def _deep_flow_yaml(tmp: Path) -> Path:
    path = tmp / "deep.yaml"  # libyaml's own composer recursed in C and crashed on this
    path.write_text("openapi: 3.1.0\nx-deep: " + "[" * 200_000 + "]" * 200_000 + "\n")
    return path


def _deep_json(tmp: Path) -> Path:
    path = tmp / "deep.json"
    path.write_text('{"openapi": "3.1.0", "x-deep": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    return path


def _deep_json_within_recursion_limit(tmp: Path) -> Path:
    path = tmp / "deeper.json"  # deeper than orspec allows, shallow enough for json.loads
    depth = MAX_DEPTH + 50
    path.write_text('{"openapi": "3.1.0",\n"x-deep": ' + '{"a": ' * depth + "1" + "}" * depth + "}\n")
    return path


def _spec_dir(tmp: Path, ref: str) -> Path:
    spec = tmp / "spec"
    spec.mkdir()
    text = (CORPUS / "ref_missing_file" / "openapi.yaml").read_text()
    (spec / "openapi.yaml").write_text(text.replace("components/things.yaml#/Thing", ref))
    return spec


def _symlink_out(tmp: Path) -> Path:
    spec = _spec_dir(tmp, "things.yaml#/Thing")
    (spec / "things.yaml").symlink_to("/etc/passwd")
    return spec


def _symlink_loop(tmp: Path) -> Path:
    spec = _spec_dir(tmp, "loop.yaml#/Thing")
    (spec / "loop.yaml").symlink_to(spec / "loop.yaml")
    return spec


def _fifo_ref(tmp: Path) -> Path:
    spec = _spec_dir(tmp, "pipe.yaml#/Thing")
    os.mkfifo(spec / "pipe.yaml")  # opening it for reading would block forever
    return spec


def _fifo_root(tmp: Path) -> Path:
    path = tmp / "openapi.yaml"
    os.mkfifo(path)
    return path


def _unreadable(tmp: Path) -> Path:
    path = tmp / "locked.yaml"
    path.write_text("openapi: 3.1.0\n")
    path.chmod(0)
    if os.access(path, os.R_OK):  # root reads anything
        pytest.skip("running as a user who can read mode-000 files")
    return path


GENERATED: dict[str, tuple[Callable[[Path], Path], str]] = {
    "big_file": (_big_file, "the limit is 32 MiB"),
    "deep_flow_yaml_200k": (_deep_flow_yaml, f"nesting is deeper than {MAX_DEPTH} levels"),
    "deep_json_200k": (_deep_json, f"nesting is deeper than {MAX_DEPTH} levels"),
    "deep_json_past_limit": (_deep_json_within_recursion_limit, f"nesting is deeper than {MAX_DEPTH} levels"),
    "ref_symlink_out": (_symlink_out, "leaves the spec directory"),
    "ref_symlink_loop": (_symlink_loop, "is not a usable path"),
    "ref_fifo": (_fifo_ref, "not a regular file"),
    "root_fifo": (_fifo_root, "not a regular file"),
    "unreadable": (_unreadable, "cannot read file"),
}


@pytest.mark.parametrize("case", sorted(GENERATED))
def test_generated_bad_spec_is_a_located_problem(case, tmp_path, out):
    make, expected = GENERATED[case]
    work = tmp_path / "case"
    work.mkdir()
    spec = make(work)
    if case in ("big_file", "root_fifo", "unreadable"):
        # No line exists to point at: the file is never parsed. Line 0 is the honest answer.
        before = read_tree(out)
        result = build(spec, out)
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert all(LOCATED.match(line) for line in result.stderr.splitlines()), result.stderr
        assert expected in result.stderr, result.stderr
        assert read_tree(out) == before
    else:
        assert_refused(spec, out, expected)


# Refused references are refused from their text alone: nothing outside the spec directory is
# opened, nothing is fetched, and a FIFO inside it is never opened.

REF_CASES = sorted(name for name in EXPECT if name.startswith("ref_"))


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.mark.parametrize("case", REF_CASES)
def test_refused_refs_read_nothing_outside_the_spec(case, monkeypatch, no_network):
    spec = CORPUS / case
    root = spec if spec.is_dir() else spec.parent
    loaded: list[Path] = []
    real_load = bundle_module.load_file

    def recording_load(path: Path):
        loaded.append(path.resolve())
        return real_load(path)

    opened: list[str] = []
    real_open = Path.open

    def recording_open(self, *args, **kwargs):
        opened.append(str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(bundle_module, "load_file", recording_load)
    monkeypatch.setattr(Path, "open", recording_open)
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    assert any(EXPECT[case] in str(p) for p in info.value.problems), info.value.problems
    assert loaded and all(p.is_relative_to(root.resolve()) for p in loaded), loaded
    assert not [p for p in opened if p.startswith(("/etc", "/dev", "/proc"))], opened


def test_fifo_ref_is_never_opened(tmp_path, monkeypatch, no_network):
    spec = _fifo_ref(tmp_path)
    with pytest.raises(SpecError) as info:
        load_spec(spec)  # would block forever if the FIFO were opened
    assert any("not a regular file" in str(p) for p in info.value.problems)


# A spec that validates but that the model generator rejects is still a located problem.


def test_generator_failure_is_a_located_problem(tmp_path, monkeypatch, capsys):
    import datamodel_code_generator

    def explode(*args, **kwargs):
        raise RuntimeError("simulated generator failure\nwith a second line")

    monkeypatch.setattr(datamodel_code_generator, "generate", explode)
    out = tmp_path / "out"
    shutil.copytree(ROOT / "generated", out, ignore=shutil.ignore_patterns("__pycache__"))
    before = read_tree(out)
    spec = ROOT / "tests" / "fixtures" / "adversarial" / "openapi.yaml"
    assert main(["build", "--spec", str(spec), "--out", str(out)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err and all(LOCATED.match(line) for line in err), err
    assert any(
        "openapi.yaml:" in line
        and " /components/schemas: " in line
        and "datamodel-code-generator failed: RuntimeError: simulated generator failure with a second line" in line
        for line in err
    ), err
    assert read_tree(out) == before


def test_generator_chatter_does_not_reach_stderr(monkeypatch, capsys):
    """Whatever the generator prints would break the `file:line:` format of the report."""
    import datamodel_code_generator
    from orspec.generate.models import generate_models
    from orspec.schema import build

    real = datamodel_code_generator.generate

    def noisy(*args, **kwargs):
        print("some generator warning", file=sys.stderr)
        print("some generator output")
        return real(*args, **kwargs)

    monkeypatch.setattr(datamodel_code_generator, "generate", noisy)
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {},
        "components": {"schemas": {"Thing": {"type": "object", "properties": {"a": {"type": "string"}}}}},
    }
    assert "class Thing(" in generate_models(build(doc))
    captured = capsys.readouterr()
    assert "generator" not in captured.err + captured.out
