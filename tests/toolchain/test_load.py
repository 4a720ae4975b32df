"""Loading: values keep their lines, and bad files become located problems."""

from __future__ import annotations

from pathlib import Path

import pytest
from orspec.load import load_file
from orspec.problems import SpecError

from ..conftest import ROOT


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_file(path)
    return [str(p) for p in info.value.problems]


def test_yaml_pointers_map_to_lines(tmp_path):
    path = write(tmp_path, "a.yaml", "a:\n  b:\n    - x\n    - y: 1\nc: 2026-04-24\n")
    doc = load_file(path)
    assert doc.data == {"a": {"b": ["x", {"y": 1}]}, "c": "2026-04-24"}  # dates stay strings
    assert doc.line_of("/a/b") == 2
    assert doc.line_of("/a/b/1/y") == 4
    assert doc.line_of("/c") == 5
    assert doc.line_of("/a/b/1/y/missing") == 4  # nearest ancestor


def test_json_lines_are_found_on_demand(tmp_path):
    path = write(tmp_path, "a.json", '{\n  "a": {\n    "b": [1,\n 2]\n  }\n}\n')
    doc = load_file(path)
    assert doc.data == {"a": {"b": [1, 2]}}
    assert doc.line_of("/a") == 2


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("dup.yaml", "a: 1\nb: 2\na: 3\n", "dup.yaml:3: /a: duplicate key 'a'"),
        ("dup.json", '{"a": 1,\n "a": 2}', "dup.json:2: /a: duplicate key 'a'"),
        ("bad.yaml", "a: [1, 2\nb: 3\n", "bad.yaml:"),
        ("bad.json", '{"a": }', "bad.json:1: /: invalid JSON"),
        ("empty.yaml", "  \n", "empty.yaml:1: /: file is empty"),
        ("latin1.yaml", b"a: caf\xe9\n", "latin1.yaml:1: /: not valid UTF-8"),
        ("two.yaml", "a: 1\n---\nb: 2\n", "expected one YAML document, found 2"),
        ("keys.yaml", "? [a, b]\n: 1\n", "mapping keys must be strings"),
    ],
)
def test_bad_files_are_located_problems(tmp_path, name, content, expected):
    found = problems_of(write(tmp_path, name, content))
    assert any(expected in p for p in found), found


@pytest.mark.slow
def test_alias_bomb_is_bounded(tmp_path):
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev = f"*a{i - 1}"
        levels.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    found = problems_of(write(tmp_path, "bomb.yaml", "\n".join(levels) + "\n"))
    assert any("alias bomb" in p for p in found), found


JSON_LAYOUTS = [
    '{"a": {"b/c": [1, {"~x": "q\\"uote"}, [], {}],\n "d": "line\u2028sep"},\n"e":\n  [\n true,\r\n null, "\x85", -1.5e3 ]\r\n}',
    '[\n{"a":1},\n[2,\n3]]',
    '"x"',
    '{"k": "\\\\", "k2": "\\u2028",\n "z": {"y": [\n[\n]]}}',
    '{"a":\t1,\t"b": [ "x" ,\n\n "y"]}',
]


@pytest.mark.parametrize("text", JSON_LAYOUTS)
def test_json_line_scan_gives_the_yaml_composers_lines(text):
    from orspec.load import _scan_json_lines, _yaml_lines

    # Line breaks YAML counts inside strings (U+2028, NEL) included.
    assert _scan_json_lines(text) == _yaml_lines(text)


def test_json_line_scan_on_a_real_spec():
    from orspec.load import _scan_json_lines, _yaml_lines

    text = (ROOT / "generated" / "openapi.json").read_text()
    lines = _scan_json_lines(text)
    assert len(lines) > 1000 and lines == _yaml_lines(text)
