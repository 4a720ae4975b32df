"""The npm package's route table: `typescript/routes.js` (with its `.d.ts`).

The same table as the Python server's `routes.ROUTES` (`generate/server.py`'s `route_specs`), so a
TypeScript provider serves every operation the same way: each route's method and path, its
`operationId`, and either the runtime's handler for that method and path template (`handler`) or,
for a stub, the method a provider defines to implement it (`implement`), answering 501
`not_implemented` until it does. Each carries the zod models of its body and its answer, where
the spec names them, to validate with.
"""

from __future__ import annotations

from ..schema import SpecModel
from .jsformat import Array, Atom, Call, Object, literal, statement
from .server import route_specs

ROOT = "typescript"

_DTS = """/** One operation of the spec, and what serves it. */
export interface Route {
  /** The HTTP method, upper case. */
  method: string;
  /** The path under the server's base URL, with `{name}` for each parameter. */
  path: string;
  operationId: string;
  /** The runtime's own handler for this method and path template; null for a stub. */
  handler: string | null;
  /** A stub: the provider method that implements it (501 `not_implemented` until then). */
  implement: string | null;
  /** The status of its success answer. */
  status: number;
  pathParams: readonly string[];
  query: readonly string[];
  /** The model that validates its JSON body, if the spec names one. */
  request: { parse(value: unknown): unknown } | null;
  /** The model of its success answer, if the spec names one. */
  response: { parse(value: unknown): unknown } | null;
}

/**
 * Every operation of the spec, in matching order: a literal path segment before
 * a parameter.
 */
export declare const ROUTES: readonly Route[];
"""


def _model(name: str | None) -> Atom:
    return Atom(f"models.{name}" if name else "null")


def generate_typescript_routes(model: SpecModel) -> dict[str, bytes]:
    """`routes.js` and `routes.d.ts`, under `generated/`."""
    entries, uses_models = [], False
    for route in route_specs(model):
        uses_models = uses_models or bool(route.request_model or route.response_model)
        props = (
            ("method", Atom(literal(route.method))),
            ("path", Atom(literal(route.path))),
            ("operationId", Atom(literal(route.operation_id))),
            ("handler", Atom(literal(route.handler))),
            ("implement", Atom(literal(route.implement))),
            ("status", Atom(literal(route.status))),
            ("pathParams", Array(tuple(Atom(literal(p.json_name)) for p in route.path_params))),
            ("query", Array(tuple(Atom(literal(p.json_name)) for p in route.query_params))),
            ("request", _model(route.request_model)),
            ("response", _model(route.response_model)),
        )
        entries.append(Call("Object.freeze", (Object(props),)))
    js = ['import * as models from "./models.js";\n\n'] if uses_models else []
    js.append("/** Every operation of the spec, in matching order. */\n")
    js.append(statement("export const ROUTES = ", Call("Object.freeze", (Array(tuple(entries)),))) + "\n")
    return {f"{ROOT}/routes.js": "".join(js).encode(), f"{ROOT}/routes.d.ts": _DTS.encode()}
