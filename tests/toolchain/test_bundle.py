"""Bundling: cross-file refs become component refs or are inlined, and unsafe refs are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from orspec.bundle import bundle
from orspec.problems import SpecError

ROOT_YAML = """\
openapi: 3.1.0
info: {title: t, version: "1"}
paths: {}
components:
  schemas:
    A: {$ref: "parts.yaml#/A"}
    B: {$ref: "parts.yaml#/B"}
"""


def make_spec(tmp_path: Path, parts: str, root: str = ROOT_YAML) -> Path:
    spec = tmp_path / "spec"
    spec.mkdir()
    (spec / "openapi.yaml").write_text(root)
    (spec / "parts.yaml").write_text(parts)
    return spec


def messages(spec: Path) -> list[str]:
    with pytest.raises(SpecError) as info:
        bundle(spec)
    return [str(p) for p in info.value.problems]


def test_registered_schemas_are_referenced_by_name(tmp_path):
    spec = make_spec(tmp_path, "A:\n  type: object\n  properties:\n    b: {$ref: '#/B'}\nB: {type: string}\n")
    result = bundle(spec)
    schemas = result.document["components"]["schemas"]
    assert schemas["A"]["properties"]["b"] == {"$ref": "#/components/schemas/B"}
    assert schemas["B"] == {"type": "string"}
    file, line = result.sources.locate("/components/schemas/A/properties/b")
    assert (Path(file).name, line) == ("parts.yaml", 4)


def test_unregistered_targets_are_inlined(tmp_path):
    spec = make_spec(tmp_path, "A: {$ref: 'shapes.yaml#/Inner'}\nB: {type: string}\n")
    (spec / "shapes.yaml").write_text("Inner:\n  type: integer\n  minimum: 3\n")
    assert bundle(spec).document["components"]["schemas"]["A"] == {"type": "integer", "minimum": 3}


def test_single_file_spec_keeps_local_refs(shared):
    doc = bundle(shared / "upstream/openresponses/2026-04-24/openapi.json").document
    assert doc["components"]["schemas"]["ItemParam"]["oneOf"][0] == {"$ref": "#/components/schemas/ItemReferenceParam"}


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ("A: {$ref: '#/Missing'}\nB: {type: string}\n", "does not resolve"),
        ("A: {$ref: 'nope.yaml#/X'}\nB: {type: string}\n", "file not found"),
        ("A: {$ref: '../outside.yaml#/X'}\nB: {type: string}\n", "leaves the spec directory"),
        ("A: {$ref: '/etc/passwd'}\nB: {type: string}\n", "leaves the spec directory"),
        ("A: {$ref: 'https://example.com/x.yaml#/X'}\nB: {type: string}\n", "is remote"),
        ("A: {$ref: 'file:///etc/passwd'}\nB: {type: string}\n", "is remote"),
        ("A: {$ref: 'loop.yaml#/X'}\nB: {type: string}\n", "cyclic $ref"),
    ],
)
def test_bad_refs_are_refused_with_location(tmp_path, parts, expected):
    spec = make_spec(tmp_path, parts)
    (tmp_path / "outside.yaml").write_text("X: {type: string}\n")
    (spec / "loop.yaml").write_text("X: {$ref: 'loop2.yaml#/Y'}\n")
    (spec / "loop2.yaml").write_text("Y: {$ref: 'loop.yaml#/X'}\n")
    found = messages(spec)
    assert any(expected in m and "/components/schemas/A" in m for m in found), found
    assert all(":" in m.split(" ")[0] for m in found)  # file:line prefix


def test_spec_directory_without_root_is_an_error(tmp_path):
    assert any("no openapi.yaml" in m for m in messages(tmp_path))


def doubling_parts(levels: int) -> str:
    """parts.yaml where each level refers to the one below twice: level n inlines 2**n strings."""
    lines = ["L0: {type: string}"]
    lines += [f"L{n}: {{allOf: [{{$ref: '#/L{n - 1}'}}, {{$ref: '#/L{n - 1}'}}]}}" for n in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_a_ref_bomb_is_refused_at_the_ref_that_passes_the_limit(tmp_path):
    root = ROOT_YAML.replace('B: {$ref: "parts.yaml#/B"}', 'B: {$ref: "parts.yaml#/L40"}')
    spec = make_spec(tmp_path, "A: {type: string}\n" + doubling_parts(40), root)
    assert messages(spec) == [
        f"{spec / 'openapi.yaml'}:7: /components/schemas/B/$ref: resolving $refs expands the spec to more than "
        "2,000,000 values"
    ]


def test_a_target_inlined_many_times_under_the_limit_bundles(tmp_path):
    root = ROOT_YAML.replace('B: {$ref: "parts.yaml#/B"}', 'B: {$ref: "parts.yaml#/L12"}')
    result = bundle(make_spec(tmp_path, "A: {type: string}\n" + doubling_parts(12), root))
    level = result.document["components"]["schemas"]["B"]
    for _ in range(12):
        assert level["allOf"][0] == level["allOf"][1]
        level = level["allOf"][0]
    assert level == {"type": "string"}
