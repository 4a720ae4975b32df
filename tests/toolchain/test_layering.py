"""Module layering: `orspec.schema` sits at the bottom of the toolchain, and says things once; in the
toolchain, its proxy and the runtime, no import cycle, and no module imports another's private name."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT

TOOLS = ROOT / "tools" / "orspec"
RUNTIME = ROOT / "generated" / "python" / "openresponses_runtime"
PACKAGES = {"orspec": TOOLS, "openresponses_runtime": RUNTIME}


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


def _modules(packages: dict[str, Path]) -> dict[str, Path]:
    """Every module of `packages` (name -> folder), by dotted name."""
    found = {}
    for package, folder in packages.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, str, int]]:
    """(module, imported name or "", line) for each import of `path`, anywhere in it (inside
    functions and `if TYPE_CHECKING:` too), made absolute."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, "", node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            module = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            module = module if node.level else node.module or ""
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                found.append(
                    (submodule, "", node.lineno) if submodule in modules else (module, alias.name, node.lineno)
                )
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def import_graph(packages: dict[str, Path] = PACKAGES, root: Path = ROOT) -> tuple[dict[str, set[str]], list[str]]:
    """Each module's imports of the others, and every import of another module's private name (or of
    a private module from outside the package that holds it). By default: the toolchain, its proxy
    and the runtime."""
    modules = _modules(packages)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    private = []
    for name, path in modules.items():
        for module, imported, line in _imports(name, path, modules):
            if module not in modules:
                continue
            graph[name].add(module)
            where = f"{path.relative_to(root)}:{line}"
            if imported and _private(imported):
                private.append(f"{where} imports {module}.{imported}")
            parts = module.split(".")
            for i, part in enumerate(parts):
                holder = ".".join(parts[:i])
                if _private(part) and not (name == holder or name.startswith(holder + ".")):
                    private.append(f"{where} imports the private module {module}")
    return graph, private


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles_in_the_toolchain_the_proxy_or_the_runtime():
    graph, _ = import_graph()
    assert "openresponses_runtime.server.app" in graph and "orspec.proxy.app" in graph
    assert cycles(graph) == []


def test_no_module_imports_another_modules_private_name():
    _, private = import_graph()
    assert private == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set()}, []),
    ],
)
def test_cycles_finds_every_module_of_a_cycle(graph, expected):
    assert cycles(graph) == expected


def test_a_private_import_and_a_cycle_in_source_are_found(tmp_path):
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "a.py").write_text("from .b import helper\n_secret = 1\n")
    (folder / "b.py").write_text("def helper():\n    from .a import _secret\n    return _secret\n")
    graph, private = import_graph({"pkg": folder}, tmp_path)
    assert cycles(graph) == [["pkg.a", "pkg.b"]]
    assert private == ["pkg/b.py:2 imports pkg.a._secret"]


# The runtime's rooms, as docs/guides/architecture.md lists them: a module imports only modules of
# its own row or an earlier one.
RUNTIME_ROWS = [
    [
        "_base",
        "_keywords",
        "models",
        "events",
        "bindings",
        "server.routes",
        "server.stubs",
        "server.skeleton",
        "server.request_schemas",
        "server.native",
    ],
    ["server.errors", "server.ids", "server.wire", "server.steps", "server.shutdown", "server.instances", "streaming"]
    + ["upstream", "redaction"],
    ["server.auth", "server.bodies", "server.bounds", "server.nulls", "server.acceptance", "server.sealing"],
    ["server.resource", "server.emitter", "server.compaction"],
    ["server.store", "server.runs", "server.streams"],
    ["server.observability"],
    ["server.turns"],
    ["server.asgi", "server.background", "server.websocket", "server.lifecycle"],
    ["server.app"],
    ["", "server", "server.serving", "server.demo", "gateways", "gateways.*", "client", "client.*"],
]


def _row(module: str) -> int:
    name = module.removeprefix("openresponses_runtime").removeprefix(".")
    for row, names in enumerate(RUNTIME_ROWS):
        if name in names or any(n.endswith(".*") and name.startswith(n[:-1]) for n in names):
            return row
    raise AssertionError(f"{module} has no row in RUNTIME_ROWS (and none in the architecture guide)")


def test_the_runtime_imports_follow_the_rooms_of_the_architecture_guide():
    graph, _ = import_graph({"openresponses_runtime": RUNTIME})
    against = [f"{module} imports {other}" for module in graph for other in graph[module] if _row(other) > _row(module)]
    assert against == []


def test_the_store_runs_observability_lifecycle_gateways_and_proxy_never_import_the_emitter():
    graph, _ = import_graph()
    emitter = "openresponses_runtime.server.emitter"
    users = [
        module
        for module, imported in graph.items()
        if emitter in imported
        and (
            module.startswith(("orspec.proxy", "openresponses_runtime.gateways"))
            or module.rpartition(".")[2] in ("store", "runs", "observability", "lifecycle")
        )
    ]
    assert users == []
