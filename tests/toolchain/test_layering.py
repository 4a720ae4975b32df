"""Module layering: `orspec.schema` sits at the bottom of the toolchain, and says things once."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from ..conftest import ROOT

TOOLS = ROOT / "tools" / "orspec"


def _orspec_imports(path) -> set[str]:
    """The orspec modules a file imports, at run time or for type checking alike."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            found |= {node.module} if node.module else {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("orspec"):
            found.add(node.module.removeprefix("orspec."))
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("orspec.") for a in node.names if a.name.startswith("orspec.")}
    return found


def test_schema_imports_nothing_above_it():
    assert _orspec_imports(TOOLS / "schema.py") == {"pointers"}


@pytest.mark.process
def test_importing_schema_loads_no_other_orspec_module():
    code = "import sys, orspec.schema; print(' '.join(sorted(m for m in sys.modules if m.startswith('orspec.'))))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == ["orspec.pointers", "orspec.schema"]


def test_the_schema_ref_prefix_is_spelled_once():
    spelled = []
    for path in sorted(TOOLS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and str(node.value).startswith("#/components/schemas/"):
                spelled.append(f"{path.relative_to(TOOLS)}:{node.lineno}")
    assert [where.split(":")[0] for where in spelled] == ["schema.py"], spelled
