"""Names and strings that break code generators still give importable, lint-clean, exact models.

The fixture names schemas and properties after Python keywords and builtins, pydantic's own
attributes, with leading digits and punctuation, and with names that only differ in case; its
descriptions try to close docstrings and look like Jinja or HTML. The build must turn every one
into a valid Python name while the JSON names on the wire stay exactly as written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ..conftest import ROOT, run_orspec, run_python

pytestmark = pytest.mark.process

SPEC = ROOT / "tests" / "fixtures" / "adversarial" / "openapi.yaml"

ROUND_TRIP = r"""
import json, sys
from pathlib import Path
from pydantic import BaseModel, TypeAdapter
from openresponses_runtime import models

bundled = json.loads(Path(sys.argv[1]).read_text())
schemas = bundled["components"]["schemas"]


def sample(schema, choice=0):
    if "$ref" in schema:
        return sample(schemas[schema["$ref"].rsplit("/", 1)[1]], choice)
    if "oneOf" in schema:
        return sample(schema["oneOf"][choice % len(schema["oneOf"])], choice)
    if "enum" in schema:
        return schema["enum"][choice % len(schema["enum"])]
    kind = schema.get("type")
    if kind == "object":
        return {name: sample(sub, choice) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [sample(schema["items"], choice)]
    return {"string": "s\"\\'", "integer": 7, "number": 1.5, "boolean": True}[kind]


def no_extras(model, where):
    # Every JSON name must land on a declared field; `extra="allow"` would hide a wrong alias.
    assert not model.model_extra, (where, model.model_extra)
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            no_extras(value, f"{where}.{name}")


checked = set()
enum_values = len(schemas["type"]["enum"])
for choice in range(enum_values):
    payload = sample({"$ref": "#/components/schemas/Holder"}, choice)
    holder = models.Holder.model_validate(payload)
    no_extras(holder, "Holder")
    assert holder.model_dump(mode="json", exclude_unset=True) == payload, choice
    assert json.loads(holder.model_dump_json(exclude_unset=True)) == payload
    assert models.Holder.model_validate_json(json.dumps(payload)) == holder
    for key, value in payload.items():
        part = getattr(holder, [n for n, f in models.Holder.model_fields.items() if (f.alias or n) == key][0])
        if isinstance(part, BaseModel):
            again = type(part).model_validate(value)
            no_extras(again, key)
            assert again.model_dump(mode="json", exclude_unset=True) == value, key
            checked.add(type(part).__name__)
        else:
            assert TypeAdapter(type(part)).dump_python(part, mode="json") == value, key
print(json.dumps(sorted(checked)))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("adversarial") / "out"
    result = run_orspec("build", "--spec", str(SPEC), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return out


def test_models_import_and_lint_clean(built):
    models = built / "python" / "openresponses_runtime" / "models.py"
    imported = run_python("from openresponses_runtime import models; print(len(models.__all__))", path=built / "python")
    assert imported.returncode == 0, imported.stderr
    assert "Warning" not in imported.stderr, imported.stderr  # e.g. a field shadowing a BaseModel attribute
    lint = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(models)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_every_model_round_trips_with_json_names(built):
    script = built / "round_trip.py"
    script.write_text(ROUND_TRIP)
    result = subprocess.run(
        [sys.executable, str(script), str(built / "openapi.json")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(built / "python")},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    checked = set(json.loads(result.stdout))
    spec = yaml.safe_load(SPEC.read_text())
    objects = [n for n, s in spec["components"]["schemas"].items() if s.get("type") == "object" and n != "Holder"]
    assert len(checked) == len(objects), (checked, objects)


def test_descriptions_survive_as_written(built):
    """Docstrings read back exactly as the spec's descriptions, whatever quotes they hold."""
    code = r"""
import ast, json, sys
from pathlib import Path
tree = ast.parse(Path(sys.argv[1]).read_text())
print(json.dumps([ast.get_docstring(n, clean=True) for n in tree.body if isinstance(n, ast.ClassDef)]))
"""
    models = built / "python" / "openresponses_runtime" / "models.py"
    result = subprocess.run([sys.executable, "-c", code, str(models)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    docs = set(filter(None, json.loads(result.stdout)))
    spec = yaml.safe_load(SPEC.read_text())
    for name in ("class", "from", "list", "type"):
        assert spec["components"]["schemas"][name]["description"] in docs, name
    version = run_python("import openresponses_runtime as rt; print(repr(rt.SPEC_VERSION))", path=built / "python")
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == repr(spec["info"]["version"])
