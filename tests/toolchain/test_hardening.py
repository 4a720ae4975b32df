"""Small units behind the bad-spec corpus and the adversarial build: each guards one bug found there."""

from __future__ import annotations

import ast
import keyword

import pytest
import yaml
from orspec.generate.normalize import RESERVED_NAMES, class_names
from orspec.generate.pyformat import docstring_text
from orspec.load import MAX_DEPTH, load_file, too_deep
from orspec.problems import Problem, SpecError

from ..conftest import ROOT


def test_yaml_merge_keys_are_applied_with_lines(tmp_path):
    text = "base: &base\n  type: object\n  description: base\nmore: &more\n  format: x\n"
    text += "a:\n  <<: [*base, *more]\n  description: own\nb:\n  <<: *base\n"
    path = tmp_path / "merge.yaml"
    path.write_text(text)
    doc = load_file(path)
    assert doc.data == yaml.safe_load(text)  # what PyYAML itself makes of it
    assert doc.line_of("/a/description") == 8  # the key written here
    assert doc.line_of("/b/type") == 2  # a merged key points at where it is written


def test_merge_key_needs_a_mapping(tmp_path):
    path = tmp_path / "merge.yaml"
    path.write_text("a:\n  <<: 3\n  b: 1\n")
    with pytest.raises(SpecError) as info:
        load_file(path)
    assert "merge key (<<) needs a mapping" in str(info.value)


# 70 levels reach our composer's limit; from 1,001 on, libyaml 0.2.6 (PyYAML 6.0.4) refuses in its scanner
# first, in its own words. Both are the same located problem of ours; a comment's brackets do not count.
@pytest.mark.parametrize("levels", [70, 1_001, 100_000])
def test_deep_nesting_is_refused_before_anything_recurses(tmp_path, levels):
    path = tmp_path / "deep.yaml"
    path.write_text(
        "# [[[[ 'x\nb: '[{'\na: " + "[" * levels + "]" * levels + "\n"
    )  # libyaml's composer crashed on this
    with pytest.raises(SpecError) as info:
        load_file(path)
    (problem,) = info.value.problems
    assert problem.line == 3 and problem.message == f"nesting is deeper than {MAX_DEPTH} levels"
    assert problem.pointer == "/a" + "/0" * (MAX_DEPTH - 1)
    assert too_deep({"a": [[[]]]}, 3) == "/a/0/0"
    assert too_deep({"a": [[[]]]}, 4) is None


def test_problem_is_always_one_parseable_line():
    shown = str(Problem("a.yaml", 0, "/components/schemas/Bad Name\t%", "two\nlines"))
    assert shown == "a.yaml:0: /components/schemas/Bad%20Name%09%25: two\\nlines"
    assert str(Problem("", 3, "", "m")) == "<spec>:3: /: m"


@pytest.mark.parametrize(
    "text",
    [
        '"""',
        '""""',
        '""',
        '"starts with a quote',
        'ends with a quote"',
        "ends with a backslash \\",
        'a backslash, then a quote \\"',
        r"\d+\.\d+",
        '\\"""',
        "a\x00b\x07c\r\n",
        "{{ x }} {% if %} </script>",
    ],
)
def test_docstring_text_reads_back_exactly(text):
    source = f'"""{docstring_text(text)}"""'
    assert ast.literal_eval(source) == text


def test_class_names_are_unique_identifiers():
    names = ["class", "Class", "x-rate", "a.b", "3d", "Name", "name", "FooBar", "Foo_Bar", "Field", "Tag", "tag", "-"]
    classes = class_names(names)
    assert classes["Class"] == "Class" and classes["FooBar"] == "FooBar" and classes["Name"] == "Name"
    assert classes["x-rate"] == "XRate" and classes["a.b"] == "AB" and classes["3d"] == "Schema3d"
    values = list(classes.values())
    assert len({v.lower() for v in values}) == len(values)
    for value in values:
        assert value.isidentifier() and not keyword.iskeyword(value) and value not in RESERVED_NAMES


def test_spec_class_names_are_unchanged():
    spec = ROOT / "generated" / "openapi.json"
    import json

    schemas = json.loads(spec.read_text())["components"]["schemas"]
    assert all(name == cls for name, cls in class_names(schemas).items())
