"""The server's generated data: the route table (`openresponses_runtime.server.routes`, from the
spec's operations), the typed stubs a provider implements (`stubs`), what decides whether a request
field may be null (`request_schemas`), OpenAI's names the spec does not define (`native`, from
`spec/openai-native.yaml`), and the response object's fields and declared defaults (`skeleton`).

Each operation becomes one `Operation`: its URL under the servers' base path, its `operationId`,
what serves it, the models of its body and its answer, and whether the path also takes WebSocket
connections (`x-openresponses-websocket`). An operation is served by the runtime's own handler for
its HTTP method and path template (`app.HANDLERS` in the hand-written runtime, keyed by method and
template under the base path, whatever the parameters are called), whatever its `operationId` says.
Every other operation is a stub: a route with its request and response models that answers 501
`not_implemented` until the provider defines the method the route names (`Operation.implement`:
its `operationId` in snake case, `Getinputtokencounts` -> `getinputtokencounts`).
"""

from __future__ import annotations

import ast
import functools
import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..bundle import SourceMap
from ..native import NativeNames
from ..pointers import MISSING
from ..problems import Level, Problem
from ..project import RUNTIME
from ..schema import Operation, SpecModel, declared_default, handler_name, ref_name
from .bindings import json_answer, object_fields
from .normalize import class_names
from .package import PACKAGE, environment
from .pyformat import format_python

OUTPUT = f"{PACKAGE}/server/routes.py"
STUBS_OUTPUT = f"{PACKAGE}/server/stubs.py"
SCHEMAS_OUTPUT = f"{PACKAGE}/server/request_schemas.py"
NATIVE_OUTPUT = f"{PACKAGE}/server/native.py"
SKELETON_OUTPUT = f"{PACKAGE}/server/skeleton.py"
CREATE = ("POST", "/responses")  # the create operation, by method and path template
APP = Path("server/app.py")
# A provider's own methods (`steps.Provider`, the gateways'), which no stub may take as its name.
_PROVIDER_METHODS = frozenset({"respond", "compact", "count_input_tokens", "steps", "close"})
_PARAMETER = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class Param:
    """A path or query parameter: its name in the route (path) or the query, and the keyword a stub's
    provider method takes it as."""

    json_name: str
    name: str


@dataclass(frozen=True)
class RouteSpec:
    path: str
    method: str
    operation_id: str
    handler: str | None  # the runtime's own handler; None: a stub
    request_model: str | None
    websocket: bool
    websocket_model: str | None = None
    implement: str | None = None  # a stub: the provider method that implements it
    response_model: str | None = None  # the model of its success answer
    status: int = 200  # the status of its success answer
    body: bool = False  # whether it takes a body
    path_params: tuple[Param, ...] = ()
    query_params: tuple[Param, ...] = ()
    summary: str = ""
    spec_path: str = ""  # the path as the spec writes it (relative to the base path)


def base_path(document: dict) -> str:
    servers = document.get("servers") or []
    url = servers[0].get("url", "") if servers and isinstance(servers[0], dict) else ""
    return urlsplit(str(url)).path.rstrip("/")


def template(method: str, path: str) -> tuple[str, str]:
    """An operation's key: its method, and its path with every parameter unnamed (`/a/{}`), without
    a query part (OpenAI's spec writes `/responses/input_tokens?beta=true` as a path of its own)."""
    return method.upper(), _PARAMETER.sub("{}", path.split("?", 1)[0])


@functools.cache
def runtime_handlers(runtime: Path = RUNTIME) -> dict[tuple[str, str], str]:
    """The runtime app's own handlers (`HANDLERS`), by method and path as it writes them."""
    tree = ast.parse((runtime / APP).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "HANDLERS" for t in targets) and node.value is not None:
                return dict(ast.literal_eval(node.value))
    raise ValueError(f"{runtime / APP} declares no HANDLERS")


def is_create(op: Operation) -> bool:
    """Whether `op` is the create operation (`POST /responses`), whatever its `operationId`."""
    return template(op.method, op.path) == CREATE


def check_operations(model: SpecModel, sources: SourceMap) -> list[Problem]:
    """A warning for each operation no route can serve: one whose method and path template (its
    query part removed, its parameters unnamed) are another's (the first in the spec's order is served)."""
    problems, seen = [], {}
    for op in model.operations:
        key = template(op.method, op.path)
        if key in seen:
            problems.append(
                sources.problem(
                    op.pointer,
                    f"operation {_label(op)!r} ({op.method.upper()} {op.path}) is served as "
                    f"{seen[key]!r}, which has the same method and path; it gets no route of its own",
                    level=Level.WARNING,
                )
            )
        else:
            seen[key] = _label(op)
    return problems


def _label(op: Operation) -> str:
    return op.operation_id or f"{op.method.upper()} {op.path}"


def _route_path(path: str) -> str:
    """The spec's path as a route: no query part, each parameter a Python identifier."""
    return _PARAMETER.sub(lambda m: "{" + _identifier(m.group(1)) + "}", path.split("?", 1)[0])


def _identifier(name: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    found = re.sub(r"\W+", "_", name).strip("_") or "value"
    found = f"_{found}" if found[0].isdigit() else found
    if keyword.iskeyword(found) or found in ("self", "body"):
        found += "_"
    while found in taken:
        found += "_"
    return found


def _answer(op: Operation) -> tuple[int, str | None]:
    """The status of an operation's first success answer and the component schema of its JSON body."""
    for response in op.responses:
        if response.status.startswith("2") and response.status.isdigit():
            schema = response.content.get("application/json")
            return int(response.status), ref_name(schema.get("$ref")) if isinstance(schema, dict) else None
    return 200, None


def route_specs(model: SpecModel, handlers: dict[tuple[str, str], str] | None = None) -> list[RouteSpec]:
    """A route per operation, each served by the runtime's handler for its method and path template
    (`handlers`, default the runtime's `HANDLERS`) or, if it has none, a stub; in matching order:
    a literal segment before a parameter (`/responses/compact` before `/responses/{response_id}`)."""
    # Each handler by template; its route keeps the runtime's parameter names, which the handler reads.
    bound = {
        template(*key): (name, key[1]) for key, name in (runtime_handlers() if handlers is None else handlers).items()
    }
    base = base_path(model.document)
    classes = class_names(model.schemas)
    routes, seen = [], set()
    taken = set(_PROVIDER_METHODS) | {name for name, _ in bound.values()}
    for op in sorted(model.operations, key=_matching_order):
        if template(op.method, op.path) in seen:
            continue  # `check_operations` says so
        seen.add(template(op.method, op.path))
        websocket = op.websocket is not None
        client = (op.websocket or {}).get("clientMessage")
        ws_name = ref_name(client.get("$ref")) if isinstance(client, dict) else None
        request = op.request_schema
        handler, own_path = bound.get(template(op.method, op.path), (None, op.path))
        path = _route_path(own_path)
        status, answer = _answer(op)
        renamed = dict(zip(_PARAMETER.findall(op.path), _PARAMETER.findall(own_path), strict=False))
        path_params, query_params = _parameters(op, renamed)
        implement = None
        if handler is None:
            implement = _identifier(handler_name(op), taken)
            taken.add(implement)
        routes.append(
            RouteSpec(
                path=base + path,
                method=op.method.upper(),
                operation_id=op.operation_id or handler_name(op),
                handler=handler,
                request_model=classes.get(request) if request else None,  # the model's class, not the JSON name
                websocket=websocket,
                websocket_model=classes.get(ws_name) if ws_name else None,
                implement=implement,
                response_model=classes.get(answer) if answer else None,
                status=status,
                body=bool(op.request),
                path_params=path_params,
                query_params=query_params,
                summary=op.summary,
                spec_path=op.path,
            )
        )
    return routes


def _parameters(op: Operation, renamed: dict[str, str]) -> tuple[tuple[Param, ...], tuple[Param, ...]]:
    """The path parameters (by their names in the route, which are identifiers; `renamed`: the spec's
    names the runtime's handler calls otherwise) and the query parameters (by their names in the
    query), each with the keyword a stub's method takes it as."""
    found: dict[str, list[Param]] = {"path": [], "query": []}
    used = {"self", "body"}
    for parameter in op.parameters:
        if parameter.location in found:
            python = _identifier(parameter.name, used)
            used.add(python)
            path_name = _identifier(renamed.get(parameter.name, parameter.name))
            route_name = path_name if parameter.location == "path" else parameter.name
            found[parameter.location].append(Param(route_name, python))
    return tuple(found["path"]), tuple(found["query"])


def _matching_order(op: Operation) -> tuple:
    segments = op.path.split("?", 1)[0].strip("/").split("/")
    return tuple((1, "") if _PARAMETER.fullmatch(s) else (0, s) for s in segments), op.method, op.path


def stubs(model: SpecModel) -> list[RouteSpec]:
    """The operations the runtime does not implement, each answering 501 until the provider does."""
    return [route for route in route_specs(model) if route.handler is None]


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
    create = next((op for op in model.operations if is_create(op)), None)
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
    routes = route_specs(model)
    code = env.get_template("server/routes.py.jinja").render(routes=routes)
    lines = env.overlay(trim_blocks=True, lstrip_blocks=True)
    stub_code = lines.get_template("server/stubs.py.jinja").render(stubs=[r for r in routes if r.handler is None])
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
        STUBS_OUTPUT: format_python(stub_code, filename="stubs.py").encode(),
        SCHEMAS_OUTPUT: format_python(data, filename="request_schemas.py").encode(),
        NATIVE_OUTPUT: format_python(names, filename="native.py").encode(),
        SKELETON_OUTPUT: format_python(skeleton_code, filename="skeleton.py").encode(),
    }
