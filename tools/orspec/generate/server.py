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


def generate_server(document: dict, templates: Path) -> dict[str, bytes]:
    env = environment(templates)
    code = env.get_template("server/routes.py.jinja").render(routes=route_specs(document))
    return {OUTPUT: format_python(code, filename="routes.py").encode()}
