"""The operations on a stored response: retrieve, delete, cancel and list its input items.

They are the `openai` fragment's operations (`spec/extensions/openai.yaml`), served by
`Lifecycle`'s methods; `app.HANDLERS` names them so the build knows the runtime serves them.
Every failure is the spec's error object with `param`:

| problem | status | `error.code` / `param` |
|---|---|---|
| no stored response with that id (never stored, `store: false`, or deleted) | 404 | `response_not_found` / `response_id` |
| an id that cannot be one (empty, too long, characters outside `A-Z a-z 0-9 _ -`) | 400 | `invalid_value` / `response_id` |
| `stream=true` on retrieve: only responses created with `background` and `stream` keep their events | 400 | `response_not_resumable` / `stream` |
| cancel of a response not created in background mode, or one that has ended | 400 | `response_not_cancellable` / `response_id` |
| `limit` not an integer from 1 to 100, `order` not `asc`/`desc`, `starting_after` not an integer from 0 to 2^53, an unknown `include` value | 400 | `invalid_value` / the parameter |
| `starting_after` at or beyond the last event of a run that ended | 400 | `invalid_value` / `starting_after` |
| `after` that is not an input item of this response | 400 | `invalid_value` / `after` |

Input items carry the `id` the client sent; one sent without gets `<response id>_input_<n>`
(n its position in the input), stable for as long as the response is stored.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope

from .. import bindings
from .asgi import event_stream
from .auth import Keys, current_tenant
from .background import BackgroundRuns
from .errors import InvalidRequest, NotFound
from .store import ResponseStore, StoredResponse
from .wire import dumps

__all__ = ["Lifecycle"]

_ID = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
_INCLUDE = bindings.INCLUDE
MAX_PAGE = 100
MAX_SEQUENCE = 2**53
DEFAULT_PAGE = 20


class Lifecycle:
    """The stored-response operations: the caller's key checked by `keys`, responses read from the
    background runs' store, and a response's run (if it had one) asked of `background`."""

    def __init__(self, keys: Keys, background: BackgroundRuns):
        self.keys = keys
        self.background = background
        self.store: ResponseStore = background.store

    async def get_response(self, scope: Scope, receive: Receive) -> ASGIApp:
        query = self._query(scope)
        _include(query)
        stream = _boolean(query, "stream")
        # A sequence number is a JSON integer a client can hold exactly (2^53), and what a database
        # column holds: beyond, a 400 on every path, not an overflow in the store.
        starting_after = _integer(query, "starting_after", 0, MAX_SEQUENCE)
        record = await self._stored(scope)  # an unknown id is a 404 whatever else is asked
        run = await self.background.run_of(record.id)  # a run whose owner died is failed here
        if not stream:
            return _json(dumps(record.response if run is None else (await self._stored(scope)).response))
        if run is None or not run.stream:
            raise InvalidRequest(
                f"Response '{record.id}' was not created with `background: true` and `stream: true`, so its events "
                "were not kept and it cannot be streamed again; retrieve it without `stream`.",
                code="response_not_resumable",
                param="stream",
            )
        after = -1 if starting_after is None else starting_after
        if run.done:
            count = len(await self.background.runs.frames(record.id, -1))
            if after >= count:
                raise InvalidRequest(
                    f"`starting_after` is {after}, but response '{record.id}' has events 0 to {count - 1}; pass the "
                    "`sequence_number` of the last event you received.",
                    code="invalid_value",
                    param="starting_after",
                )
        return event_stream(self.background.follow(record.id, after), [])

    async def delete_response(self, scope: Scope, receive: Receive) -> ASGIApp:
        self.keys.authorize_scope(scope)
        response_id = (await self._stored(scope)).id  # another tenant's response is not found, as none is
        await self.background.forget_run(response_id)
        if not await self.store.delete(response_id):
            raise _not_found(response_id)
        return _json(dumps({"id": response_id, "object": "response.deleted", "deleted": True}))

    async def cancel_response(self, scope: Scope, receive: Receive) -> ASGIApp:
        self.keys.authorize_scope(scope)
        record = await self._stored(scope)
        return _json(dumps((await self.background.cancel_run(record)).response))

    async def list_input_items(self, scope: Scope, receive: Receive) -> ASGIApp:
        query = self._query(scope)
        _include(query)
        limit = _integer(query, "limit", 1, MAX_PAGE)
        limit = DEFAULT_PAGE if limit is None else limit
        order = _one(query, "order") or "desc"
        if order not in ("asc", "desc"):
            raise InvalidRequest(
                f"`order` must be `asc` or `desc`, not {order!r}.", code="invalid_value", param="order"
            )
        after = _one(query, "after")
        record = await self._stored(scope)
        items = listed_input(record)
        if order == "desc":
            items.reverse()
        start = 0
        if after is not None:
            ids = [item["id"] for item in items]
            if after not in ids:
                raise InvalidRequest(
                    f"{after[:64]!r} is not an input item of response '{record.id}': pass as `after` the `last_id` "
                    "of an earlier page of the same response.",
                    code="invalid_value",
                    param="after",
                )
            start = ids.index(after) + 1
        page = items[start : start + limit]
        body = {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": start + limit < len(items),
        }
        return _json(dumps(body))

    def _query(self, scope: Scope) -> dict[str, list[str]]:
        """The query string's parameters, once the caller's key is accepted."""
        self.keys.authorize_scope(scope)
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        return {name.removesuffix("[]"): values for name, values in query.items()}  # `include[]=`, as the SDK sends

    async def _stored(self, scope: Scope) -> StoredResponse:
        """The stored response the path names, if the caller's tenant made it; a 404 otherwise, the same
        whether it was never stored or is another tenant's, so ids of others say nothing."""
        response_id = _response_id(scope)
        tenant = current_tenant()
        record = await self.store.get_owned(response_id, None if tenant is None else tenant.owner)
        if record is None:
            raise _not_found(response_id)
        return record


def _json(body: bytes) -> Response:
    return Response(body, media_type="application/json")


def listed_input(record: StoredResponse) -> list[dict[str, Any]]:
    """The response's own input items, in the order sent, each with an `id` (and messages with their `type`)."""
    items = []
    for index, item in enumerate(record.input):
        listed = {"id": f"{record.id}_input_{index}", **item} if not item.get("id") else dict(item)
        if "role" in listed and "type" not in listed:
            listed["type"] = "message"  # the type the spec gives a message that leaves it out
        items.append(listed)
    return items


def _response_id(scope: Scope) -> str:
    response_id = scope["path_params"]["response_id"]
    if not _ID.match(response_id):
        raise InvalidRequest(
            f"{response_id[:64]!r} is not a response id: ids are 1 to 256 letters, digits, '_' or '-', "
            "as in the `id` of a response object.",
            code="invalid_value",
            param="response_id",
        )
    return response_id


def _not_found(response_id: str) -> NotFound:
    return NotFound(
        f"No stored response with id '{response_id}': it was never stored (`store: false`), was deleted, "
        "or belongs to another server.",
        code="response_not_found",
        param="response_id",
    )


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise InvalidRequest(f"`{name}` is given {len(values)} times; give it once.", code="invalid_value", param=name)
    return values[0]


def _boolean(query: dict[str, list[str]], name: str) -> bool:
    value = _one(query, name)
    if value is None or value.lower() == "false":
        return False
    if value.lower() == "true":
        return True
    raise InvalidRequest(f"`{name}` must be `true` or `false`, not {value!r}.", code="invalid_value", param=name)


def _integer(query: dict[str, list[str]], name: str, low: int, high: int | None) -> int | None:
    value = _one(query, name)
    if value is None:
        return None
    number = int(value) if re.fullmatch(r"[0-9]{1,4000}", value) else None  # int() reads 4,300 digits at most
    if number is None or number < low or (high is not None and number > high):
        bounds = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise InvalidRequest(f"`{name}` must be an integer {bounds}, not {value!r}.", code="invalid_value", param=name)
    return number


def _include(query: dict[str, list[str]]) -> None:
    """`include` asks for data a stored response either has or not; an unknown value is refused."""
    for value in query.get("include", ()):
        if value not in _INCLUDE:
            raise InvalidRequest(
                f"Unknown `include` value {value!r}; known values: {', '.join(sorted(_INCLUDE))}.",
                code="invalid_value",
                param="include",
            )
