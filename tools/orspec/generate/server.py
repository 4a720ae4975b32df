"""The server's route table: `openresponses_runtime.server.routes`, from the spec's `paths`.

Each POST operation becomes one `Operation`: its URL under the servers' base path, its
`operationId`, the request model that validates the body, whether it may answer with
`text/event-stream`, and whether the path also takes WebSocket connections
(`x-openresponses-websocket`). The hand-written app (`templates/runtime/server/`) binds a handler
to each operation id it knows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from jsonpointer import unescape

from .normalize import class_names
from .package import PACKAGE, environment
from .pyformat import format_python

OUTPUT = f"{PACKAGE}/server/routes.py"
SCHEMAS_OUTPUT = f"{PACKAGE}/server/request_schemas.py"
_SCHEMA_REF = "#/components/schemas/"


@dataclass(frozen=True)
class RouteSpec:
    path: str
    method: str
    operation_id: str
    summary: str
    request_model: str | None
    content_types: tuple[str, ...]
    streams: bool
    websocket: bool
    websocket_model: str | None = None


def base_path(document: dict) -> str:
    servers = document.get("servers") or []
    url = servers[0].get("url", "") if servers and isinstance(servers[0], dict) else ""
    return urlsplit(str(url)).path.rstrip("/")


def route_specs(document: dict) -> list[RouteSpec]:
    base = base_path(document)
    classes = class_names(((document.get("components") or {}).get("schemas") or {}).keys())
    routes = []
    for path, item in sorted((document.get("paths") or {}).items()):
        if not isinstance(item, dict):
            continue
        websocket = "x-openresponses-websocket" in item
        ws_ref = ((item.get("x-openresponses-websocket") or {}).get("clientMessage") or {}).get("$ref", "")
        ws_name = unescape(ws_ref[len(_SCHEMA_REF) :]) if ws_ref.startswith(_SCHEMA_REF) else None
        for method in ("get", "post", "put", "patch", "delete"):
            op = item.get(method)
            if not isinstance(op, dict) or not str(op.get("operationId", "")).isidentifier():
                continue
            content = ((op.get("requestBody") or {}).get("content")) or {}
            model = None
            for media in content.values():
                ref = (media.get("schema") or {}).get("$ref", "") if isinstance(media, dict) else ""
                if ref.startswith(_SCHEMA_REF) and unescape(ref[len(_SCHEMA_REF) :]) in classes:
                    model = classes[unescape(ref[len(_SCHEMA_REF) :])]  # the model's class, not the JSON name
                    break
            ok = (op.get("responses") or {}).get("200") or {}
            streams = "text/event-stream" in (ok.get("content") or {})
            routes.append(
                RouteSpec(
                    path=base + path,
                    method=method.upper(),
                    operation_id=op["operationId"],
                    summary=" ".join(str(op.get("summary") or "").split()),
                    request_model=model,
                    content_types=tuple(sorted(content)),
                    streams=streams,
                    websocket=websocket and method == "post",
                    websocket_model=classes.get(ws_name) if websocket and method == "post" and ws_name else None,
                )
            )
    return routes


# What the server's null check (`templates/runtime/server/nulls.py`) reads of a schema.
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
    todo = [unescape(ref[len(_SCHEMA_REF) :]) for ref in _refs(roots)]
    while todo:
        name = todo.pop()
        if name in found or not isinstance(schemas.get(name), dict):
            continue
        found[name] = _reduce(schemas[name])
        todo += [unescape(ref[len(_SCHEMA_REF) :]) for ref in _refs(found[name])]
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


def _refs(node: object) -> list[str]:
    refs, stack = [], [node]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if isinstance(value.get("$ref"), str) and value["$ref"].startswith(_SCHEMA_REF):
                refs.append(value["$ref"])
            stack += list(value.values())
            mapping = (
                (value.get("discriminator") or {}).get("mapping")
                if isinstance(value.get("discriminator"), dict)
                else None
            )
            stack += [{"$ref": t} for t in (mapping or {}).values() if isinstance(t, str)]
        elif isinstance(value, list):
            stack += value
    return refs


def generate_server(document: dict, templates: Path) -> dict[str, bytes]:
    env = environment(templates)
    code = env.get_template("server/routes.py.jinja").render(routes=route_specs(document))
    schemas = request_schemas(document)
    classes = class_names(((document.get("components") or {}).get("schemas") or {}).keys())
    roots = {classes[name]: name for name in schemas if name in classes}
    data = env.get_template("server/request_schemas.py.jinja").render(schemas=schemas, roots=roots)
    return {
        OUTPUT: format_python(code, filename="routes.py").encode(),
        SCHEMAS_OUTPUT: format_python(data, filename="request_schemas.py").encode(),
    }
