"""The generated half of the client: `openresponses_runtime.client._create` and `._operations`.

`create` takes one keyword per property of the create-request schema, typed from the schema and
documented from its description, so a field added to the spec or by a vendor fragment becomes a
keyword of `client.responses.create` at the next build. The hand-written rest of the client
(`openresponses_runtime/client/`, hand-written) calls into it.

`_operations` holds a method for every operation on one stored object of `/responses` (a path
with a parameter, from the core or a fragment), named by the REST convention the `openai` SDK
follows: `GET /responses/{id}` is `retrieve`, `DELETE` is `delete`, `POST /responses/{id}/<action>`
is `<action>`, and `GET /responses/{id}/<items>` is `<items>.list`. A `POST /responses/<things>`
with a JSON body (other than `compact`, which the hand-written client has) is `<things>.<verb>`, the
verb the first word of its `operationId` (`countInputTokens` -> `input_tokens.count`), with one
keyword per property of its body, as `create` has.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema import (
    ArrayShape,
    LiteralShape,
    MapShape,
    ObjectShape,
    Operation,
    PrimitiveShape,
    RefShape,
    Shape,
    SpecModel,
    UnionShape,
    deref,
    handler_name,
    ref_name,
)
from .normalize import class_names
from .package import PACKAGE, environment
from .pyformat import format_python
from .server import is_create

OUTPUT = f"{PACKAGE}/client/_create.py"
OPERATIONS_OUTPUT = f"{PACKAGE}/client/_operations.py"
RESOURCE = "responses"  # the client's one resource, `client.responses`
_ITEM_METHODS = {"get": "retrieve", "delete": "delete", "post": "update"}
_PRIMITIVES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
# Keywords of `create` that the client itself owns; a spec property of the same name is renamed.
_CLIENT_KEYWORDS = frozenset({"stream", "check", "extra_body", "timeout", "max_retries"})
_HAND_WRITTEN = frozenset({"compact"})  # `POST /responses/<action>` the hand-written client has a method for


@dataclass(frozen=True)
class CreateParam:
    """One keyword of `create`: the JSON property it fills, its Python name, type and description."""

    json_name: str
    name: str
    annotation: str
    description: str
    required: bool


def create_request_schema(model: SpecModel) -> tuple[str, dict] | None:
    """The name and schema of the create operation's request body (`POST /responses`), or None if the spec has none."""
    for op in model.operations:
        name = op.request_schema if is_create(op) else None
        if name in model.schemas and isinstance(model.schemas[name].node, dict):
            return name, model.schemas[name].node
    return None


def create_params(model: SpecModel) -> list[CreateParam]:
    """The keywords of `create`, in the schema's property order."""
    found = create_request_schema(model)
    return body_params(model, found[0]) if found else []


def body_params(model: SpecModel, name: str) -> list[CreateParam]:
    """The keywords for the properties of the request schema `name`, in its property order (the one
    place that reads the properties)."""
    schema, document = model.schemas[name], model.document
    classes = class_names(model.schemas)
    params, taken = [], set(_CLIENT_KEYWORDS)
    for json_name, prop in schema.properties.items():
        if json_name == "stream":
            continue  # `stream` is the client's own keyword: it picks the return type
        python = python_name(json_name, taken)
        taken.add(python)
        params.append(
            CreateParam(
                json_name=json_name,
                name=python,
                annotation=annotation(model.shape(prop), model, classes),
                description=_description(prop, document),
                required=json_name in schema.required,
            )
        )
    return params


@dataclass(frozen=True)
class ClientParam:
    """A path or query parameter of an operation method."""

    json_name: str
    name: str
    annotation: str
    description: str


@dataclass(frozen=True)
class ClientOperation:
    """One generated method: `client.responses.<group>.<name>(...)`, `group` "" for the resource itself."""

    group: str
    name: str
    http_method: str
    path: str  # as in the spec
    path_code: str  # an f-string body that fills in the path parameters
    path_params: tuple[ClientParam, ...]
    query_params: tuple[ClientParam, ...]
    returns: str  # the answer's model class
    summary: str
    description: str
    stream_param: str = ""  # the argument that asks for the answer as server-sent events, if it may be
    body_params: tuple[CreateParam, ...] | None = None  # the keywords of its JSON body; None: it sends none
    body_model: str | None = None  # the model class of that body


def _is_parameter(segment: str) -> bool:
    return segment.startswith("{") and segment.endswith("}")


def _takes_body(op: Operation) -> bool:
    """Whether `op` is a `POST /responses/<things>` with a JSON body of a named schema (create aside)."""
    parts = op.path.strip("/").split("/")
    return (
        op.method == "post"
        and len(parts) == 2
        and parts[0] == RESOURCE
        and not _is_parameter(parts[1])
        and parts[1] not in _HAND_WRITTEN
        and bool(op.request_schema)
    )


def client_names(op: Operation) -> tuple[str, str] | None:
    """(group, method) of an operation on one stored `/responses` object, or None for any other."""
    parts = op.path.strip("/").split("/")
    if _takes_body(op):
        return python_name(parts[1]), python_name(handler_name(op)).split("_")[0]
    if len(parts) < 2 or parts[0] != RESOURCE or not _is_parameter(parts[1]):
        return None
    if len(parts) == 2 and op.method in _ITEM_METHODS:
        return "", _ITEM_METHODS[op.method]
    if len(parts) == 3 and not _is_parameter(parts[2]):
        if op.method == "post":
            return "", python_name(parts[2])
        if op.method == "get":
            return python_name(parts[2]), "list"
    return None


def client_operations(model: SpecModel) -> list[ClientOperation]:
    """The generated methods, in the spec's operation order."""
    classes = class_names(model.schemas)
    found = []
    for op in model.operations:
        names = client_names(op)
        success = next((r for r in op.responses if r.status.startswith("2")), None)
        answer = success.content.get("application/json") if success else None
        returns = classes.get(ref_name(answer.get("$ref")) or "") if isinstance(answer, dict) else None
        if names is None or returns is None:
            continue
        taken = {"self", "timeout", "max_retries"}
        params: dict[str, list[ClientParam]] = {"path": [], "query": []}
        for parameter in op.parameters:
            if parameter.location not in params:
                continue
            name = python_name(parameter.name, taken)
            taken.add(name)
            params[parameter.location].append(
                ClientParam(
                    parameter.name,
                    name,
                    annotation(model.shape(parameter.schema), model, classes),
                    " ".join(parameter.description.split()),
                )
            )
        body = op.request_schema if _takes_body(op) else None
        body_keywords = tuple(body_params(model, body)) if body in model.schemas else None
        streams = success is not None and "text/event-stream" in success.content
        stream_param = next((p.name for p in params["query"] if streams and p.json_name == "stream"), "")
        path_code = op.path
        for param in params["path"]:
            path_code = path_code.replace("{" + param.json_name + "}", "{_segment(" + param.name + ")}")
        found.append(
            ClientOperation(
                names[0],
                names[1],
                op.method.upper(),
                op.path,
                path_code,
                tuple(params["path"]),
                tuple(params["query"]),
                returns,
                op.summary,
                " ".join(op.description.split()),
                stream_param,
                body_keywords,
                classes.get(body) if body_keywords is not None and body else None,
            )
        )
    return found


def _pascal(name: str) -> str:
    return "".join(word[:1].upper() + word[1:] for word in name.split("_") if word)


def python_name(json_name: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A keyword for a JSON property: `anthropic:mcp_servers` -> `anthropic_mcp_servers`."""
    name = re.sub(r"\W+", "_", json_name).strip("_").lower() or "field"
    if name[0].isdigit():
        name = "_" + name
    if keyword.iskeyword(name) or name in ("self", "cls"):
        name += "_"
    while name in taken:
        name += "_"
    return name


def annotation(shape: Shape, model: SpecModel, classes: dict[str, str], depth: int = 0) -> str:
    """The Python type a caller may pass for a value of `shape`: a model or its plain dict, never
    narrower than the wire. `None` is left out: every keyword that may take it defaults to it."""
    if depth > 8:
        return "Any"
    if isinstance(shape, RefShape):
        cls, target = classes.get(shape.name), model.shapes.get(shape.name)
        for _ in range(depth, 8):  # an alias of another schema (a one-member union): the model is this one's
            if not isinstance(target, RefShape):
                break
            target = model.shapes.get(target.name)
        if cls is None or target is None:
            return "Any"
        if isinstance(target, LiteralShape) and all(isinstance(v, str) for v in target.values):
            return f"models.{cls} | str"
        if isinstance(target, ObjectShape | UnionShape):
            return f"models.{cls} | dict[str, Any]"
        return annotation(target, model, classes, depth + 1)
    if isinstance(shape, UnionShape):
        return _union(annotation(m, model, classes, depth + 1) for m in shape.members)
    if isinstance(shape, LiteralShape):
        return f"Literal[{', '.join(repr(v) for v in shape.values)}]"
    if isinstance(shape, ArrayShape):
        return f"Sequence[{annotation(shape.items, model, classes, depth + 1)}]"
    if isinstance(shape, MapShape):
        return f"Mapping[str, {annotation(shape.values, model, classes, depth + 1)}]"
    if isinstance(shape, ObjectShape):
        return "Mapping[str, Any]"
    return _PRIMITIVES.get(shape.kind, "Any") if isinstance(shape, PrimitiveShape) else "Any"


def _union(parts) -> str:
    seen: list[str] = []
    for part in parts:
        for piece in _split_union(part):
            if piece not in seen and piece != "None":
                seen.append(piece)
    return "Any" if not seen or "Any" in seen else " | ".join(seen)


def _split_union(text: str) -> list[str]:
    """Top-level `|` members of an annotation (brackets respected)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return out


def _description(schema: Any, document: dict, depth: int = 0) -> str:
    """The property's description, else the first among its alternatives, items or referenced schema."""
    if not isinstance(schema, dict) or depth > 4:
        return ""
    text = " ".join(str(schema.get("description") or "").split())
    if not text and ref_name(schema.get("$ref")) is not None:
        text = _description(deref(schema, document), document, depth + 1)
    for alternative in [*(schema.get("anyOf") or ()), *(schema.get("oneOf") or ()), schema.get("items")]:
        if not text:
            text = _description(alternative, document, depth + 1)
    return text


def generate_client(model: SpecModel, templates: Path) -> dict[str, bytes]:
    env = environment(templates)
    found = create_request_schema(model)
    code = env.get_template("client/create.py.jinja").render(
        params=create_params(model),
        request_model=class_names(model.schemas).get(found[0]) if found else None,
    )
    operations = client_operations(model)
    groups = [(group, _pascal(group)) for group in sorted({op.group for op in operations if op.group})]
    template = env.overlay(trim_blocks=True, lstrip_blocks=True).get_template("client/operations.py.jinja")
    methods = template.render(operations=operations, groups=groups)
    return {
        OUTPUT: format_python(code, filename="_create.py").encode(),
        OPERATIONS_OUTPUT: format_python(methods, filename="_operations.py").encode(),
    }


def generate_client_reference(model: SpecModel, templates: Path) -> dict[str, bytes]:
    """`generated/docs/client-create.md`: the keywords of the generated `create`, for the docs site."""
    from .docs import environment as docs_environment

    found = create_request_schema(model)
    page = (
        docs_environment(templates)
        .get_template("docs/client-create.md.jinja")
        .render(params=create_params(model), request_model=found[0] if found else None)
    )
    return {"docs/client-create.md": page.encode()}
