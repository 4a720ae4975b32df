"""Schema keywords, faithfully in both languages: each small spec of tests/fixtures/keywords built
into a folder of its own, its Python models imported with warnings as errors, its TypeScript package
type-checked with `tsc --strict`, and every sample of `samples.yaml` parsed by both: a valid one
comes back unchanged as JSON (`true` stays `true`, `__proto__` stays a key), an invalid one is refused.

Node and the npm tools come from `.cache/typescript` (installed by `.ci/services`): without them the
TypeScript half skips and says so, and fails under CI (CI=true).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ..conftest import ROOT, run_orspec

pytestmark = pytest.mark.process

FIXTURES = ROOT / "tests" / "fixtures" / "keywords"
SAMPLES = yaml.safe_load((FIXTURES / "samples.yaml").read_text())
LENIENT = {"non_ascii"}  # its component names break the OpenAPI rule, which --lenient lets through
TOOLS = Path(os.environ.get("ORSPEC_TYPESCRIPT_TOOLS", ROOT / ".cache" / "typescript")) / "node_modules"

# Reads {schema: [value, ...]} on stdin; prints, for each value, what came back as JSON, or null if refused.
PYTHON_ROUND_TRIP = r"""
import json, sys
from pydantic import TypeAdapter, ValidationError
from openresponses_runtime import models

out = {}
for name, values in json.load(sys.stdin).items():
    adapter = TypeAdapter(getattr(models, name))
    out[name] = []
    for value in values:
        try:
            parsed = adapter.validate_json(json.dumps(value))
        except ValidationError:
            out[name].append(None)
            continue
        out[name].append({"json": adapter.dump_json(parsed, exclude_unset=True).decode()})
print(json.dumps(out))
"""

TYPESCRIPT_ROUND_TRIP = r"""
import { readFileSync } from "node:fs";
import * as runtime from "openresponses-runtime";

const out = {};
for (const [name, values] of Object.entries(JSON.parse(readFileSync(0, "utf8")))) {
  out[name] = values.map((value) => {
    const result = runtime[name].safeParse(value);
    return result.success ? { json: JSON.stringify(result.data) } : null;
  });
}
console.log(JSON.stringify(out));
"""


def canonical(value) -> str:
    """One spelling of a JSON value, in which `true` and `1`, `1` and `"1"` differ, and `-2` and
    `-2.0` do not (JSON has one kind of number: pydantic writes a `number` as a float)."""

    def numbers(v):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: numbers(x) for k, x in v.items()}
        return [numbers(x) for x in v] if isinstance(v, list) else v

    return json.dumps(numbers(value), sort_keys=True, ensure_ascii=False)


@pytest.fixture(scope="module", params=sorted(SAMPLES))
def built(request, tmp_path_factory) -> tuple[str, Path]:
    name = request.param
    out = tmp_path_factory.mktemp(name) / "out"
    lenient = ["--lenient"] if name in LENIENT else []
    result = run_orspec("build", "--spec", str(FIXTURES / f"{name}.yaml"), "--out", str(out), *lenient)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return name, out


def cases(name: str) -> dict[str, list]:
    return {schema: [*both["valid"], *both["invalid"]] for schema, both in SAMPLES[name].items()}


def check_answers(name: str, answers: dict[str, list]) -> None:
    for schema, both in SAMPLES[name].items():
        got = answers[schema]
        for value, answer in zip(both["valid"], got[: len(both["valid"])], strict=True):
            assert answer is not None, f"{schema} refused the valid {value!r}"
            assert canonical(json.loads(answer["json"])) == canonical(value), (schema, value, answer)
        for value, answer in zip(both["invalid"], got[len(both["valid"]) :], strict=True):
            assert answer is None, f"{schema} accepted the invalid {value!r} as {answer}"


def test_python_imports_without_warnings(built):
    _, out = built
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", "from openresponses_runtime import models; print(len(models.__all__))"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(out / "python")},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", result.stderr


def test_python_round_trips(built):
    name, out = built
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", PYTHON_ROUND_TRIP],
        input=json.dumps(cases(name)),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(out / "python")},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    check_answers(name, json.loads(result.stdout))


def need_node() -> None:
    missing = [n for n in ("zod", "typescript") if not (TOOLS / n).is_dir()]
    if shutil.which("node") and not missing:
        return
    message = (
        f"node or {', '.join(missing) or 'node'} in {TOOLS} is missing (bash .ci/run sets it up through .ci/services)"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def project(built, tmp_path_factory) -> tuple[str, Path]:
    """A folder where `import "openresponses-runtime"` finds the built package, beside zod and TypeScript."""
    need_node()
    name, out = built
    root = tmp_path_factory.mktemp(f"{name}-ts")
    shutil.copytree(out / "typescript", root / "node_modules" / "openresponses-runtime")
    for tool in ("zod", "typescript"):
        (root / "node_modules" / tool).symlink_to(TOOLS / tool, target_is_directory=True)
    return name, root


def test_typescript_type_checks_strictly(project):
    name, root = project
    # A consumer that parses one value of each schema into its declared type.
    lines = ['import * as m from "openresponses-runtime/schemas";\n']
    for i, (schema, both) in enumerate(SAMPLES[name].items()):
        lines.append(
            f"export const v{i}: m.{schema} = m.{schema}.parse(JSON.parse({json.dumps(json.dumps(both['valid'][0]))}));\n"
        )
    (root / "consumer.ts").write_text("".join(lines))
    package = root / "node_modules" / "openresponses-runtime"
    config = {
        "compilerOptions": {
            "strict": True,
            "noEmit": True,
            "module": "nodenext",
            "moduleResolution": "nodenext",
            "target": "es2022",
            "lib": ["es2022", "dom"],
            "types": [],
            "skipLibCheck": False,
        },
        "files": [*sorted(str(p.relative_to(root)) for p in package.glob("*.d.ts")), "consumer.ts"],
    }
    (root / "tsconfig.json").write_text(json.dumps(config))
    result = subprocess.run(
        ["node", str(TOOLS / "typescript" / "bin" / "tsc"), "-p", "."],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_typescript_round_trips(project):
    name, root = project
    (root / "round_trip.mjs").write_text(TYPESCRIPT_ROUND_TRIP)
    result = subprocess.run(
        ["node", "round_trip.mjs"],
        input=json.dumps(cases(name)),
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    check_answers(name, json.loads(result.stdout))


def test_names_outside_ascii_are_refused_unless_lenient(tmp_path):
    spec = FIXTURES / "non_ascii.yaml"
    result = run_orspec("build", "--spec", str(spec), "--out", str(tmp_path / "out"))
    assert result.returncode == 1
    assert "non_ascii.yaml:24: /components/schemas: 'Café' does not match" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()
