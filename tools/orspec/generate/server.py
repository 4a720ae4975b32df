"""The server's generated data: the route table (`openresponses_runtime.server.routes`, from the
spec's operations), what decides whether a request field may be null (`request_schemas`),
OpenAI's names the spec does not define (`native`, from `spec/openai-native.yaml`), and the
response object's fields and declared defaults (`skeleton`).

Each operation becomes one `Operation`: its URL under the servers' base path, its `operationId`,
the handler that serves it, the request model that validates the body, and whether the path also
takes WebSocket connections (`x-openresponses-websocket`). The handler is named after the
operation id (`createResponse` -> `create_response`, see `schema.handler_name`); the hand-written
app (`openresponses_runtime/server/app.py`) lists the handlers it has in `HANDLERS`, and an operation
it has no handler for is a spec problem (`check_handlers`), never a route that silently 404s.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..bundle import SourceMap
from ..native import NativeNames
from ..pointers import MISSING
from ..problems import Problem
from ..project import RUNTIME
from ..schema import SpecModel, declared_default, handler_name, ref_name
from .bindings import CREATE, json_answer, object_fields, operation
from .normalize import class_names
from .package import PACKAGE, environment
from .pyformat import format_python

OUTPUT = f"{PACKAGE}/server/routes.py"
SCHEMAS_OUTPUT = f"{PACKAGE}/server/request_schemas.py"
NATIVE_OUTPUT = f"{PACKAGE}/server/native.py"
SKELETON_OUTPUT = f"{PACKAGE}/server/skeleton.py"
APP = Path("server/app.py")


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
def runtime_handlers(runtime: Path = RUNTIME) -> frozenset[str]:
    """The handler names the runtime app declares in its `HANDLERS` tuple."""
    tree = ast.parse((runtime / APP).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "HANDLERS" for t in targets) and node.value is not None:
                return frozenset(ast.literal_eval(node.value))
    raise ValueError(f"{runtime / APP} declares no HANDLERS")


def check_handlers(model: SpecModel, sources: SourceMap, runtime: Path = RUNTIME) -> list[Problem]:
    """One error per operation the runtime app has no handler for, naming the operation."""
    known = runtime_handlers(runtime)
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


# What the server's null check (`openresponses_runtime/server/nulls.py`) reads of a schema.
_NULL_KEYWORDS = ("$ref", "type", "enum", "const", "not", "properties", "additionalProperties", "items")
_NULL_KEYWORDS += ("oneOf", "anyOf", "allOf", "discriminator")


def request_schemas(document: dict) -> dict[str, dict]:
    """Every component schema a request can reach, keyed by name, reduced to what decides nullness.

    The roots are the operations' request bodies and WebSocket client messages; the request
    models' class names map to them in `ROOTS`.
    """
    schemas = (document.get("components") or {}).get("schemas") or {}
    roots: list = []
    for item in (document.get("paths") or {}).values():
        if not isinstance(item, dict):
            continue
        roots.append((item.get("x-openresponses-websocket") or {}).get("clientMessage"))
        roots += [op.get("requestBody") for op in item.values() if isinstance(op, dict)]
    found: dict[str, dict] = {}
    todo = _schema_names(roots)
    while todo:
        name = todo.pop()
        if name in found or not isinstance(schemas.get(name), dict):
            continue
        found[name] = _reduce(schemas[name])
        todo += _schema_names(found[name])
    return dict(sorted(found.items()))


def _reduce(node: object) -> object:
    if isinstance(node, list):
        return [_reduce(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {k: _reduce(v) for k, v in value.items()}
        elif key in ("enum", "const", "discriminator"):
            out[key] = value
        elif key in _NULL_KEYWORDS:
            out[key] = _reduce(value)
    return out


def _schema_names(node: object) -> list[str]:
    """The component schemas `node` refers to, discriminator mappings included."""
    names, stack = [], [node]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if name := ref_name(value.get("$ref")):
                names.append(name)
            stack += list(value.values())
            mapping = (
                (value.get("discriminator") or {}).get("mapping")
                if isinstance(value.get("discriminator"), dict)
                else None
            )
            stack += [{"$ref": t} for t in (mapping or {}).values() if isinstance(t, str)]
        elif isinstance(value, list):
            stack += value
    return names


@dataclass(frozen=True)
class Skeleton:
    """What the server's response skeleton reads of the spec."""

    response: str
    request: str
    fields: tuple[str, ...]  # the response schema's required fields, in the spec's order
    response_defaults: dict[str, Any]
    request_defaults: dict[str, Any]


# The response fields the runtime writes whether or not the spec requires them (OpenAI's does not
# require `status`, say), where the spec declares them.
RUNTIME_FIELDS = frozenset(("status", "completed_at", "reasoning", "usage", "text", "store", "background"))


def _stated(model: SpecModel, node: Any) -> Any:
    """The value a response field declares: its `default`, else the one value its enum allows
    (OpenAI's `object: {enum: [response]}`); MISSING if neither."""
    found = declared_default(node)
    if found is not MISSING:
        return found
    node = model.deref(node)
    if not isinstance(node, dict):
        return MISSING
    values = node.get("enum")
    return values[0] if isinstance(values, list) and len(values) == 1 else node.get("const", MISSING)


def skeleton(model: SpecModel) -> Skeleton:
    """The fields of the create operation's answer and the defaults it and the create request declare."""
    create = operation(model, *CREATE)
    response_name = json_answer(create) if create is not None else None
    response = model.schemas.get(response_name) if response_name else None
    request_name = create.request_schema if create is not None else None
    request = model.schemas.get(request_name) if request_name else None
    properties, required = object_fields(model, response.node) if response else ({}, set())
    fields = tuple(name for name in properties if name in required or name in RUNTIME_FIELDS)
    declared = {k: d for k, v in properties.items() if k in fields and (d := _stated(model, v)) is not MISSING}
    request_properties = object_fields(model, request.node)[0] if request else {}
    return Skeleton(
        response=response_name or "",
        request=request_name or "",
        fields=fields,
        response_defaults=declared,
        request_defaults={k: d for k, v in request_properties.items() if (d := declared_default(v)) is not MISSING},
    )


def generate_server(model: SpecModel, templates: Path, native: NativeNames | None = None) -> dict[str, bytes]:
    env = environment(templates)
    code = env.get_template("server/routes.py.jinja").render(routes=route_specs(model, runtime_handlers()))
    document = model.document
    schemas = request_schemas(document)
    classes = class_names(((document.get("components") or {}).get("schemas") or {}).keys())
    roots = {classes[name]: name for name in schemas if name in classes}
    data = env.get_template("server/request_schemas.py.jinja").render(schemas=schemas, roots=roots)
    native = native or NativeNames()
    names = env.get_template("server/native.py.jinja").render(parameters=native.parameters, tools=native.tools)
    shape = skeleton(model)
    skeleton_code = env.get_template("server/skeleton.py.jinja").render(
        response=shape.response,
        request=shape.request,
        fields=shape.fields,
        response_defaults=shape.response_defaults,
        request_defaults=shape.request_defaults,
    )
    return {
        OUTPUT: format_python(code, filename="routes.py").encode(),
        SCHEMAS_OUTPUT: format_python(data, filename="request_schemas.py").encode(),
        NATIVE_OUTPUT: format_python(names, filename="native.py").encode(),
        SKELETON_OUTPUT: format_python(skeleton_code, filename="skeleton.py").encode(),
    }
