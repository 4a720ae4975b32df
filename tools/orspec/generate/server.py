"""The server's route table: `openresponses_runtime.server.routes`, from the spec's operations.

Each operation becomes one `Operation`: its URL under the servers' base path, its `operationId`,
the handler that serves it, the request model that validates the body, and whether the path also
takes WebSocket connections (`x-openresponses-websocket`). The handler is named after the
operation id (`createResponse` -> `create_response`, see `schema.handler_name`); the hand-written
app (`templates/runtime/server/app.py`) lists the handlers it has in `HANDLERS`, and an operation
it has no handler for is a spec problem (`check_handlers`), never a route that silently 404s.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..bundle import SourceMap
from ..problems import Problem
from ..project import TEMPLATES
from ..schema import SpecModel, handler_name, ref_name
from .normalize import class_names
from .package import PACKAGE, environment
from .pyformat import format_python

OUTPUT = f"{PACKAGE}/server/routes.py"
APP = Path("runtime/server/app.py")


@dataclass(frozen=True)
class RouteSpec:
    path: str
    method: str
    operation_id: str
    handler: str
    request_model: str | None
    websocket: bool
    websocket_model: str | None = None


def base_path(document: dict) -> str:
    servers = document.get("servers") or []
    url = servers[0].get("url", "") if servers and isinstance(servers[0], dict) else ""
    return urlsplit(str(url)).path.rstrip("/")


@functools.cache
def runtime_handlers(templates: Path = TEMPLATES) -> frozenset[str]:
    """The handler names the runtime app declares in its `HANDLERS` tuple."""
    tree = ast.parse((templates / APP).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "HANDLERS" for t in targets) and node.value is not None:
                return frozenset(ast.literal_eval(node.value))
    raise ValueError(f"{templates / APP} declares no HANDLERS")


def check_handlers(model: SpecModel, sources: SourceMap, templates: Path = TEMPLATES) -> list[Problem]:
    """One error per operation the runtime app has no handler for, naming the operation."""
    known = runtime_handlers(templates)
    problems = []
    for op in model.operations:
        name = handler_name(op)
        if name not in known:
            label = op.operation_id or f"{op.method.upper()} {op.path}"
            problems.append(
                sources.problem(
                    op.pointer,
                    f"operation {label!r} ({op.method.upper()} {op.path}) has no handler: the server runtime "
                    f"implements {', '.join(sorted(known))}, not {name!r}",
                )
            )
    return problems


def route_specs(model: SpecModel, handlers: frozenset[str] | None = None) -> list[RouteSpec]:
    """A route per operation that has a handler (all of them, unless the spec was built --lenient)."""
    base = base_path(model.document)
    classes = class_names(model.schemas)
    routes = []
    for op in sorted(model.operations, key=lambda o: (o.path, o.method)):
        handler = handler_name(op)
        if handlers is not None and handler not in handlers:
            continue
        websocket = op.websocket is not None
        client = (op.websocket or {}).get("clientMessage")
        ws_name = ref_name(client.get("$ref")) if isinstance(client, dict) else None
        request = op.request_schema
        routes.append(
            RouteSpec(
                path=base + op.path,
                method=op.method.upper(),
                operation_id=op.operation_id or handler,
                handler=handler,
                request_model=classes.get(request) if request else None,  # the model's class, not the JSON name
                websocket=websocket,
                websocket_model=classes.get(ws_name) if ws_name else None,
            )
        )
    return routes


def generate_server(model: SpecModel, templates: Path) -> dict[str, bytes]:
    env = environment(templates)
    code = env.get_template("server/routes.py.jinja").render(routes=route_specs(model, runtime_handlers(templates)))
    return {OUTPUT: format_python(code, filename="routes.py").encode()}
