"""`create_app`: a Starlette app serving the spec's operations for one provider.

Every route comes from the generated `routes.ROUTES`, each naming the `_Server` method that
handles it; `HANDLERS` lists those methods, and the build fails on an operation it does not list.
Every failure, including ones the framework detects (unknown route, wrong method), is answered
with the spec's error object and a fitting status:

| problem | status | `error.type` / `code` |
|---|---|---|
| body is not valid JSON, or not an object | 400 | `invalid_request` / `invalid_json` |
| (also `NaN`/`Infinity`, a number beyond double range, a lone `\\ud800` surrogate, nesting too deep) | 400 | `invalid_request` / `invalid_json` |
| body fails the request schema (strictly: no `"yes"` for a boolean, no `false` for a number) | 400 | `invalid_request` / `invalid_value` (+ `param`, e.g. `input[0].content`) |
| `tool_choice: "required"` but `tools` has no function to call | 400 | `invalid_request` / `invalid_value` (`param` `tool_choice`) |
| input the server does not honour: unknown item or content types, a `function_call_output` without its call (see `acceptance`) | 400 | `invalid_request` / `unsupported_item_type`, `unsupported_content_type`, `function_call_not_found` |
| with `strict=True` only: a parameter or a tool type the spec does not define (by default they are ignored and named in the `OpenResponses-Ignored` header; see `acceptance`) | 400 | `invalid_request` / `unknown_parameter`, `unsupported_tool_type` (`param` `tools[0].type`) |
| an explicit `null` where the spec does not allow one (the models take it; see `nulls`) | 400 | `invalid_request` / `invalid_value` (+ `param`) |
| `Content-Type` is not `application/json` | 415 | `invalid_request` / `unsupported_media_type` |
| body larger than `max_body_bytes` | 413 | `invalid_request` / `request_too_large` |
| missing or wrong bearer token | 401 | `invalid_request` / `invalid_api_key` |
| unknown `previous_response_id` | 404 | `not_found` / `previous_response_not_found` |
| a reasoning item's `encrypted_content` changed, or sealed with another key (see `sealing`) | 400 | `invalid_request` / `invalid_encrypted_content` (`param` `input[3].encrypted_content`) |
| unknown route / wrong method | 404 / 405 | `not_found` / `invalid_request` |
| provider raises `TooManyRequests` | 429 | `too_many_requests` |
| provider times out (`TimeoutError`) | 500 | `server_error` / `provider_timeout` |
| the response store cannot serve (unreachable, disk full, locked: `StoreUnavailable`) | 503 + `Retry-After` | `server_error` / `store_unavailable` |
| the server's shutdown deadline passed before the response finished (see `shutdown`) | 503 + `Retry-After` | `server_error` / `server_shutting_down` |
| a stream (or a background run) beyond `max_streams` under way, refused before it begins (see `streams`) | 503 + `Retry-After` | `server_error` / `too_many_streams` |
| `tool_choice` broken by the model | 500 | `model_error` / `tool_choice_violation` |
| anything else | 500 | `server_error` |

Upstream also lists `application/x-www-form-urlencoded` for the request body, but its prose says
clients MUST send JSON, and a nested body has no faithful form encoding; this spec drops it, and
such requests get 415.

Once a stream has begun, any failure (of the provider, with an exception of any class; of the
store saving the response; of the server itself) ends it with an `error` event, `response.failed`
and `[DONE]`; only the client leaving and the process stopping end it otherwise. The response is saved before
`response.completed` is sent, so a client is never told of a completed response the store lacks.
"""

from __future__ import annotations

import base64
import enum
import hmac
import inspect
import json
import logging
import math
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

import anyio
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticUndefined
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute, compile_path
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import models
from .acceptance import HEADER as IGNORED_HEADER
from .acceptance import Accept, Acceptance, check_function_outputs
from .emitter import DONE_FRAME, Emitter, StreamViolation, ToolPolicy, dumps, new_id
from .errors import InvalidRequest, NotFound, OpenResponsesError, ServerError, ServerShuttingDown, Unauthorized
from .lifecycle import Lifecycle
from .nulls import disallowed_null
from .observability import Observability, Observer, note_response
from .routes import ROUTES
from .sealing import INCLUDE as SEALED_REASONING
from .sealing import Sealer, unseal_reasoning
from .shutdown import ending
from .steps import Incomplete, Provider, ProviderError, ProviderRequest
from .store import ResponseStore, StoredResponse, context, open_store
from .streams import DEFAULT_MAX_STREAMS, Streams
from .websocket import websocket_endpoint

__all__ = ["create_app", "error_response", "json_path", "response_skeleton"]

log = logging.getLogger("openresponses_runtime.server")

#: The `_Server` methods that serve operations, named after their operation ids (read by the build).
HANDLERS = (
    "create_response",
    "compact_response",
    "get_response",
    "delete_response",
    "cancel_response",
    "list_input_items",
)
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)


def error_response(error: OpenResponsesError) -> Response:
    """The spec's error object with the error's status."""
    headers = dict(error.headers)
    if error.status == 401:
        headers.setdefault("WWW-Authenticate", "Bearer")
    return JSONResponse(error.body(), status_code=error.status, headers=headers)


# -- request parsing ---------------------------------------------------------------------------


def json_path(loc: Iterable[Any], data: Any, *, missing: bool = False) -> str | None:
    """A pydantic error location as a JSON path into `data` (`input[0].content`).

    Pydantic puts union tags (`message|user`, `list[...]`, `str`) between the real keys; only
    steps that exist in the data are kept, plus the final key of a missing field.
    """
    path = ""
    current = data
    loc = list(loc)
    for i, key in enumerate(loc):
        if isinstance(current, dict) and isinstance(key, str) and key in current:
            path += f".{key}" if path else key
            current = current[key]
        elif isinstance(current, list) and isinstance(key, int) and 0 <= key < len(current):
            path += f"[{key}]"
            current = current[key]
        elif missing and i == len(loc) - 1 and isinstance(key, str):
            path += f".{key}" if path else key
    return path or None


def _too_large(limit: int) -> InvalidRequest:
    return InvalidRequest(
        f"The request body is larger than the {limit} bytes this server accepts.",
        code="request_too_large",
        status=413,
    )


def _headers(scope: Scope) -> tuple[str | None, str | None, str | None]:
    """`Authorization`, `Content-Type` and `Content-Length`, each its first value (as Starlette reads them)."""
    authorization = content_type = length = None
    for name, value in scope["headers"]:
        if name == b"authorization":
            authorization = authorization if authorization is not None else value.decode("latin-1")
        elif name == b"content-type":
            content_type = content_type if content_type is not None else value.decode("latin-1")
        elif name == b"content-length":
            length = length if length is not None else value.decode("latin-1")
    return authorization, content_type, length


async def _read_body(receive: Receive, declared: str | None, limit: int) -> bytes:
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        if message["type"] != "http.request":
            continue
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _check_content_type(value: str | None) -> None:
    media = (value or "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise InvalidRequest(
            f"Content-Type must be application/json, not {value or 'missing'!r}.",
            code="unsupported_media_type",
            status=415,
        )


def parse_body(raw: bytes, model: type) -> tuple[dict[str, Any], Any]:
    """The JSON object and its validated model; `InvalidRequest` with a `param` otherwise."""
    try:
        text = raw.decode(_encoding(raw), "surrogatepass")
        data, integral = _loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"The request body is not valid JSON: {exc}", code="invalid_json") from None
    except RecursionError:
        raise InvalidRequest("The request body nests JSON too deeply.", code="invalid_json") from None
    if not isinstance(data, dict):
        raise InvalidRequest("The request body must be a JSON object.", code="invalid_json")
    if _SURROGATE_ESCAPE.search(raw) and _has_lone_surrogate(data):
        raise InvalidRequest(
            "The request body is not valid JSON: a \\u escape encodes a lone surrogate, which is no character.",
            code="invalid_json",
        )
    if _default_message_type(data.get("input")) or integral:
        raw = json.dumps(data, ensure_ascii=False).encode()
    try:
        # Strict, from the JSON text: `"stream": "yes"`, `"top_p": false` or `"temperature": "1"`
        # are not the spec's types, and lax mode would coerce them (to True, 0.0 and 1.0).
        body = model.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        # The most specific error first: the one reaching deepest into the data.
        best = max(errors, key=lambda e: len(json_path(e["loc"], data, missing=e["type"] == "missing") or ""))
        param = json_path(best["loc"], data, missing=best["type"] == "missing")
        raise InvalidRequest(
            f"Invalid value for '{param or 'body'}': {best['msg']}.", code="invalid_value", param=param
        ) from None
    # The models take `null` for any optional field; the spec does not (and without the word, no null).
    null_at = disallowed_null(data, model) if "null" in text else None
    if null_at is not None:
        raise InvalidRequest(f"Invalid value for '{null_at}': it may not be null.", code="invalid_value", param=null_at)
    return data, body


def _loads(text: str) -> tuple[Any, bool]:
    """`json.loads(text)` refusing `NaN` and infinite numbers, with whole floats (`16.0`) read as
    ints: JSON Schema counts them as integers, pydantic's strict mode would not (floats still
    accept ints). Also whether there was such a float, so the body is validated re-encoded."""
    if _FLOAT.search(text) is None:  # no float in the body: the shared decoder reads it the same
        if text[:1] == "{" and text[-1:] == "}":  # nothing around the object: `decode` would find the same
            data, end = _DECODER.raw_decode(text)
            if end == len(text):
                return data, False
        return _DECODER.decode(text), False
    integral: list[str] = []

    def number(literal: str) -> float | int:
        value = _finite_float(literal)
        if value.is_integer() and abs(value) <= 2**53:
            integral.append(literal)
            return int(value)
        return value

    return json.JSONDecoder(parse_constant=_no_constant, parse_float=number).decode(text), bool(integral)


def _encoding(raw: bytes) -> str:
    """The body's encoding as `json.loads` detects it, without asking `json.detect_encoding` in
    the common case: a first byte that starts no byte order mark, and no NUL among the first
    two, is UTF-8."""
    if raw[:1] not in (b"", b"\x00", b"\xef", b"\xfe", b"\xff") and raw[1:2] != b"\x00":
        return "utf-8"
    return json.detect_encoding(raw)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is beyond the range of a double")
    return value


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_FLOAT = re.compile(r"[0-9][.eE]")  # every JSON float has one of these after a digit
_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _has_lone_surrogate(value: Any) -> bool:
    """True when a string anywhere in `value` (keys too) holds an unpaired UTF-16 surrogate."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _default_message_type(items: Any) -> bool:
    """`{"role": ..., "content": ...}` without `type` is a message (what OpenAI clients send).

    True when an item was given its `type`."""
    changed = False
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict) and "type" not in item and "role" in item:
                item["type"] = "message"
                changed = True
    return changed


def _bearer(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header value."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


# -- the response object ---------------------------------------------------------------------


def _echo_tool(tool: dict[str, Any]) -> dict[str, Any]:
    if tool.get("type") == "function":
        return {
            "type": "function",
            "name": tool.get("name"),
            "description": tool.get("description"),
            "parameters": tool.get("parameters"),
            "strict": tool.get("strict"),
        }
    return dict(tool)


def _echo_tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "name": choice.get("name")}
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        return {
            "type": "allowed_tools",
            "tools": [{"type": "function", "name": t.get("name")} for t in choice.get("tools") or ()],
            "mode": choice.get("mode") or "auto",
        }
    return choice


def _echo_format(fmt: Any) -> dict[str, Any]:
    if not isinstance(fmt, dict) or fmt.get("type") in (None, "text"):
        return {"type": "text"}
    if fmt.get("type") == "json_schema":
        return {
            "type": "json_schema",
            "name": fmt.get("name") or "response",
            "description": fmt.get("description"),
            "schema": fmt.get("schema") if isinstance(fmt.get("schema"), dict) else {},
            "strict": bool(fmt.get("strict")),
        }
    return dict(fmt)


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _declared_defaults(model: type[BaseModel]) -> dict[str, Any]:
    """The `default`s the spec declares for a request model's fields, by JSON name."""
    out = {}
    for name, info in model.model_fields.items():
        if info.default is not None and info.default is not PydanticUndefined:
            value = info.default
            out[info.alias or name] = value.value if isinstance(value, enum.Enum) else value
    return out


# What the response states for a setting the request left out: the default the spec declares
# (`tool_choice`), else this server's own choice where the spec leaves it open.
SETTING_DEFAULTS: dict[str, Any] = {
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "truncation": "disabled",
    "parallel_tool_calls": True,
    "verbosity": "medium",
    "top_p": 1.0,
    "temperature": 1.0,
    "top_logprobs": 0,
    "store": True,
    "background": False,
    **_declared_defaults(models.CreateResponseBody),
}


def _echo_text(text: Any) -> dict[str, Any]:
    text = text if isinstance(text, dict) else {}
    verbosity = _or(text.get("verbosity"), SETTING_DEFAULTS["verbosity"])
    return {"format": _echo_format(text.get("format")), "verbosity": verbosity}


def _as_is(value: Any) -> Any:
    return value


# How the response states each request setting it echoes (a setting left out has its `_UNSET` value).
_ECHO: dict[str, Any] = {
    "previous_response_id": _as_is,
    "instructions": _as_is,
    "tools": lambda tools: [_echo_tool(t) for t in tools or () if isinstance(t, dict)],
    "tool_choice": _echo_tool_choice,
    "truncation": _as_is,
    "parallel_tool_calls": _as_is,
    "text": _echo_text,
    "top_p": float,
    "presence_penalty": float,
    "frequency_penalty": float,
    "top_logprobs": _as_is,
    "temperature": float,
    "reasoning": lambda r: {"effort": r.get("effort"), "summary": r.get("summary")} if isinstance(r, dict) else None,
    "max_output_tokens": _as_is,
    "max_tool_calls": _as_is,
    "store": _as_is,
    "background": _as_is,
    "service_tier": lambda tier: "default" if tier == "auto" else tier,
    "metadata": _as_is,
    "safety_identifier": _as_is,
    "prompt_cache_key": _as_is,
}

# The response of a request that sets nothing, in the response's field order (the mutable
# fields are made afresh for each response).
_UNSET: dict[str, Any] = {
    "id": None,
    "object": "response",
    "created_at": None,
    "completed_at": None,
    "status": "in_progress",
    "incomplete_details": None,
    "model": None,
    "previous_response_id": None,
    "instructions": None,
    "output": None,
    "error": None,
    "tools": None,
    "tool_choice": _echo_tool_choice(SETTING_DEFAULTS["tool_choice"]),
    "truncation": SETTING_DEFAULTS["truncation"],
    "parallel_tool_calls": SETTING_DEFAULTS["parallel_tool_calls"],
    "text": None,
    "top_p": float(SETTING_DEFAULTS["top_p"]),
    "presence_penalty": float(SETTING_DEFAULTS["presence_penalty"]),
    "frequency_penalty": float(SETTING_DEFAULTS["frequency_penalty"]),
    "top_logprobs": SETTING_DEFAULTS["top_logprobs"],
    "temperature": float(SETTING_DEFAULTS["temperature"]),
    "reasoning": None,
    "usage": None,
    "max_output_tokens": None,
    "max_tool_calls": None,
    "store": SETTING_DEFAULTS["store"],
    "background": SETTING_DEFAULTS["background"],
    "service_tier": "default",
    "metadata": None,
    "safety_identifier": None,
    "prompt_cache_key": None,
}


def response_skeleton(data: dict[str, Any], response_id: str, model: str) -> dict[str, Any]:
    """A complete `ResponseResource` in status `in_progress`, echoing the request's settings."""
    response = {
        **_UNSET,
        "id": response_id,
        "created_at": int(time.time()),
        "model": model,
        "output": [],
        "tools": [],
        "text": {"format": {"type": "text"}, "verbosity": SETTING_DEFAULTS["verbosity"]},
        "metadata": {},
    }
    for name, value in data.items():
        echo = _ECHO.get(name)
        if echo is not None and value is not None:  # a null sets nothing
            response[name] = echo(value)
    return response


def input_items(value: Any) -> list[dict[str, Any]]:
    """A request's `input` as items: a string becomes one user message."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": value}]}]
    return [dict(item) for item in value if isinstance(item, dict)]


# -- the app -----------------------------------------------------------------------------------


class _Server(Lifecycle):
    def __init__(
        self,
        provider: Provider,
        store: ResponseStore,
        api_keys: frozenset[str],
        *,
        debug: bool,
        max_body_bytes: int,
        default_model: str,
        acceptance: Acceptance,
        sealer: Sealer,
        max_streams: int | None = DEFAULT_MAX_STREAMS,
    ):
        self.provider = provider
        self.acceptance = acceptance
        self.sealer = sealer
        self.store = store
        self.api_keys = api_keys
        self._keys = tuple(key.encode() for key in api_keys)
        self.debug = debug
        self.max_body_bytes = max_body_bytes
        self.default_model = default_model
        self.streams = Streams(max_streams)

    @property
    def active(self) -> int:
        """Streams under way right now (streamed requests, WebSocket turns, background runs)."""
        return self.streams.active

    def authorize(self, token: str | None) -> None:
        if token is None:
            raise Unauthorized("Missing bearer token: send `Authorization: Bearer <key>`.", code="missing_api_key")
        given = token.encode()
        for key in self._keys:
            if hmac.compare_digest(given, key):
                return
        raise Unauthorized("Incorrect API key provided.")

    def authorize_scope(self, scope: Scope) -> None:
        self.authorize(_bearer(_headers(scope)[0]))

    async def read(self, scope: Scope, receive: Receive, model: type) -> tuple[dict[str, Any], Any]:
        authorization, content_type, length = _headers(scope)
        self.authorize(_bearer(authorization))
        _check_content_type(content_type)
        raw = await _read_body(receive, length, self.max_body_bytes)
        return parse_body(raw, model)

    async def prepare(
        self, data: dict[str, Any], body: Any, store: ResponseStore | None = None
    ) -> tuple[dict[str, Any], ProviderRequest, list[dict], ToolPolicy]:
        """The response skeleton, the provider request and this turn's own input items."""
        admitted = self.acceptance.admit(data, body)  # unknown tool types are never offered, nor echoed
        data, body = admitted.data, admitted.body
        own_input = unseal_reasoning(self.sealer, input_items(data.get("input")))
        previous = data.get("previous_response_id")
        history = await context(store or self.store, previous) if previous else []
        history = unseal_reasoning(self.sealer, history, None)
        check_function_outputs(own_input, history)
        response_id = new_id("resp")
        model = data.get("model") or self.default_model
        response = response_skeleton(data, response_id, model)
        policy = ToolPolicy.from_request(response["tools"], data.get("tool_choice"))
        request = ProviderRequest(
            response_id=response_id,
            model=model,
            input=history + own_input,
            instructions=data.get("instructions"),
            tools=response["tools"],
            tool_choice=policy.mode,
            allowed_tools=policy.allowed,
            max_output_tokens=data.get("max_output_tokens"),
            reasoning=response["reasoning"],
            body=body,
            metadata=response["metadata"],
            ignored=admitted.ignored,
        )
        return response, request, own_input, policy

    def seal(self, data: dict[str, Any]) -> Callable[[str, dict[str, Any], str | None], str | None]:
        """How the emitter seals a reasoning item: always when the request asks to carry reasoning
        (`include`), and whenever the provider left opaque state its next turn needs (a gateway's
        thinking signature), so that state comes back through `previous_response_id` or the client."""
        include = data.get("include")
        carry = bool(include and SEALED_REASONING in include)

        def seal(item_id: str, fields: dict[str, Any], state: str | None) -> str | None:
            return self.sealer.seal_reasoning(item_id, fields, state) if carry or state is not None else None

        return seal

    async def save(
        self,
        response: dict[str, Any],
        own_input: list[dict],
        store: ResponseStore | None = None,
        encoded: bytes | None = None,
    ) -> None:
        """Keep the finished response in `store` (default: the server's store, unless `store: false`);
        `encoded`: the response as JSON, when it is at hand."""
        if store is None and response.get("store") is False:
            return
        record = StoredResponse(
            response["id"], response.get("previous_response_id"), own_input, list(response["output"]), response, encoded
        )
        await (store or self.store).put(record)

    async def run(
        self,
        emitter: Emitter,
        steps: AsyncIterator[Any],
        first: Any,
        own_input: list[dict],
        deliver: Callable[[list[Any]], Awaitable[None]] | None = None,
        store: ResponseStore | None = None,
    ) -> bytes | None:
        """Drive the provider's steps through `emitter` to the end of the response, save it, then end it.

        `deliver` is awaited with each batch of events (one per provider step) as soon as it is
        made. Without it nobody sees them (a non-streamed response), and the response is returned
        encoded, as it was saved. A provider that fails, with an exception of any kind, ends the
        response `failed`; so does a save that fails, before the client is told the response
        completed, so that no client holds a completed response the store lacks. Whatever else
        breaks once the response has begun (the emitter meeting a value it cannot write, a bug)
        ends it failed too, through `Emitter.abort`. A failure to deliver (the client left),
        cancellation and the process stopping propagate, unsaved."""
        sent = 0  # events made and delivered: where the ending's numbering goes on
        delivering = False

        async def send(batch: list[Any]) -> None:
            nonlocal sent, delivering
            if deliver is not None:
                delivering = True
                await deliver(batch)
                delivering = False
            sent += len(batch)

        try:
            await send(emitter.start())
            try:
                try:
                    with ending() as shutdown:  # the server's shutdown deadline cancels this
                        step = first
                        while step is not None:
                            batch = emitter.step(step)
                            if batch:
                                await send(batch)
                            if isinstance(step, Incomplete):
                                break
                            try:
                                step = await steps.__anext__()
                            except StopAsyncIteration:
                                break
                    if shutdown.cancelled_caught:
                        # A frame cut short is whole: uvicorn writes it before it waits.
                        delivering, sent = False, emitter.seq
                        raise ServerShuttingDown()
                    final: list[Any] = []
                except BaseException as exc:
                    # Events made and not delivered (the emitter broke mid-step) leave `abort` to end it.
                    if delivering or _stopping(exc) or emitter.seq != sent:
                        raise
                    final = emitter.fail(_as_error(exc))
            finally:
                if getattr(steps, "ag_frame", True) is not None:  # a generator run to its end has nothing to close
                    with anyio.CancelScope(shield=True):
                        await steps.aclose()
            # Saved before the client hears of the end, so that a save that fails can still end it failed.
            response = emitter.preview()
            encoded = dumps(response) if deliver is None else None
            try:
                await self.save(response, own_input, store, encoded)
            except Exception as exc:
                final += emitter.fail(_save_error(exc))  # each adds nothing to a response that has failed already
            else:
                final += emitter.finish()
        except BaseException as exc:
            if delivering or _stopping(exc):
                raise
            log.error("response %s broke off", emitter.response["id"], exc_info=exc)
            final = emitter.abort(ServerError("The server had an error while making the response."), sent)
            try:
                await self.save(emitter.response, own_input, store)
            except Exception as error:
                _save_error(error)  # logged; the client still hears of the failure
        note_response(emitter.response)
        if deliver is None:
            return None if emitter.error is not None else encoded
        await deliver(final)
        return None

    async def create_response(self, scope: Scope, receive: Receive, model: type = models.CreateResponseBody) -> ASGIApp:
        data, body = await self.read(scope, receive, model)
        response, provider_request, own_input, policy = await self.prepare(data, body)
        headers = _ignored_header(provider_request.ignored)
        if data.get("background"):  # run by a task of the server's own (see `background`)
            return await self.start_background(
                data, response, provider_request, own_input, policy, self.seal(data), headers
            )
        stream = bool(data.get("stream"))
        emitter = Emitter(response, policy, check=self.debug, events=stream, frames=stream, seal=self.seal(data))
        if stream:
            release = self.streams.take()  # beyond the cap: a 503 now, before the provider is called
            try:
                steps, first = await self.first_step(provider_request)
            except BaseException:
                release()
                raise
            return _EventStream(lambda send: self.sse(send, emitter, steps, first, own_input), headers, release)
        steps, first = await self.first_step(provider_request)
        encoded = await self.run(emitter, steps, first, own_input)
        if self.debug:
            emitter.verify()
        if emitter.error is not None:
            return error_response(emitter.error)
        return _JSONAnswer(encoded, headers)

    async def first_step(self, request: ProviderRequest) -> tuple[AsyncIterator[Any], Any]:
        """The provider's steps and the first of them, pulled before any byte is sent so that
        early errors (a 429, say) keep their own status."""
        steps = aiter(self.provider.respond(request))
        try:
            first = await steps.__anext__()
        except StopAsyncIteration:
            first = None
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await steps.aclose()
            if not _stopping(exc):  # answered as it would end a stream: a timeout is a timeout
                raise _as_error(exc) from exc
            raise
        return steps, first

    async def sse(
        self, send: Send, emitter: Emitter, steps: AsyncIterator[Any], first: Any, own_input: list[dict]
    ) -> None:
        """The response's events as SSE frames, each provider step's sent as soon as it is made."""

        def deliver(frames: list[bytes]) -> Awaitable[None]:  # the send itself is awaited: no coroutine between
            return send({"type": "http.response.body", "body": b"".join(frames), "more_body": True})

        await self.run(emitter, steps, first, own_input, deliver)
        await send({"type": "http.response.body", "body": DONE_FRAME, "more_body": True})
        if self.debug:
            emitter.verify()

    async def compact_response(
        self, scope: Scope, receive: Receive, model: type = models.CompactResponseMethodPublicBody
    ) -> ASGIApp:
        data, body = await self.read(scope, receive, model)
        # Compaction keeps what it is given, so it refuses what it cannot read too.
        admitted = self.acceptance.admit(data, body)
        data = admitted.data
        previous = data.get("previous_response_id")
        history = await context(self.store, previous) if previous else []
        items = unseal_reasoning(self.sealer, history, None) + unseal_reasoning(
            self.sealer, input_items(data.get("input"))
        )
        model = data.get("model") or self.default_model
        compact = getattr(self.provider, "compact", None)
        if compact is not None:
            output = await compact(items, model=model, instructions=data.get("instructions"))
        else:
            output = default_compaction(items)
        return JSONResponse(
            {
                "id": new_id("cmp"),
                "object": "response.compaction",
                "output": output,
                "created_at": int(time.time()),
                "usage": {
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "total_tokens": 0,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            },
            headers=dict(_ignored_header(admitted.ignored)),
        )


def default_compaction(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One opaque `compaction` item holding the conversation (base64 JSON; not encryption)."""
    blob = base64.b64encode(dumps(items)).decode()
    return [{"type": "compaction", "id": new_id("cmp"), "encrypted_content": blob}]


def create_app(
    provider: Provider,
    *,
    store: ResponseStore | str | None = None,
    api_keys: Iterable[str] | str | None = None,
    debug: bool = False,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    default_model: str = "default",
    max_connection_seconds: float = 3600,
    accept: Accept | None = None,
    strict: bool = False,
    reasoning_key: str | bytes | None = None,
    observability: Observability | bool = False,
    max_streams: int | None = DEFAULT_MAX_STREAMS,
) -> Starlette:
    """A Starlette app serving the spec's operations with `provider` behind them.

    `store`: a `ResponseStore`, or a URL for `open_store` (default `$ORSPEC_STORE`, else a SQLite
    file in the working directory). `api_keys`: the bearer tokens accepted (default
    `$ORSPEC_API_KEY`); there is no open mode, so without any key this raises `ValueError`.
    `debug`: run the stream checker on every response the server emits and fail loudly.
    `max_connection_seconds`: how long a WebSocket connection may last (the spec's 60 minutes).
    `accept`: the input item types, content types and parameters the provider honours beyond the
    spec (see `acceptance`). Other unknown parameters and tool types are ignored and reported in
    the `OpenResponses-Ignored` header; `strict`: refuse them with a 400 instead. Unknown input
    item and content types are refused either way. `reasoning_key`: the key that seals reasoning
    items for clients that carry them (`include: ["reasoning.encrypted_content"]`), default
    `$ORSPEC_REASONING_KEY`, else a random key for this process (see `sealing`).
    `observability`: `True` or an `Observability` with its settings serves `/metrics`, `/healthz`
    and `/readyz`, gives each request an id, an access log record and a trace span (the
    `observability` extra; see `observability`). `max_streams`: streams generated at once (streamed
    requests, WebSocket turns, background runs); one more is refused with a 503 before it begins
    (`None` or 0: no cap; see `streams`).
    """
    if api_keys is None:
        api_keys = os.environ.get("ORSPEC_API_KEY")
    keys = frozenset([api_keys] if isinstance(api_keys, str) else (api_keys or ()))
    keys = frozenset(k for k in keys if k)
    if not keys:
        raise ValueError("create_app needs at least one API key (api_keys=... or $ORSPEC_API_KEY); it never runs open")
    if store is None or isinstance(store, str | os.PathLike):
        store = open_store(store)
    observer = None
    if observability:
        observer = Observer(
            observability if isinstance(observability, Observability) else Observability(), store, provider
        )
        store, provider = observer.store, observer.provider
    server = _Server(
        provider,
        store,
        keys,
        debug=debug,
        max_body_bytes=max_body_bytes,
        default_model=default_model,
        acceptance=Acceptance(accept, strict=strict),
        sealer=Sealer(reasoning_key),
        max_streams=max_streams,
    )
    routes: list[Any] = []
    operations: dict[tuple[str, str], _Operation] = {}
    for op in ROUTES:
        operation = _Operation(getattr(server, op.handler), op.request_model)
        operations[op.method, op.path] = operation
        routes.append(Route(op.path, operation, methods=[op.method], name=op.operation_id))
        if op.websocket and op.websocket_model is not None:
            endpoint = websocket_endpoint(server, op.websocket_model, max_connection_seconds)
            routes.append(WebSocketRoute(op.path, endpoint, name=f"{op.operation_id}_websocket"))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            error: OpenResponsesError = NotFound(
                f"No such route: {request.method} {request.url.path}", code="route_not_found"
            )
        elif exc.status_code == 405:
            error = InvalidRequest(
                f"Method {request.method} is not allowed on {request.url.path}.",
                code="method_not_allowed",
                status=405,
                headers={**(exc.headers or {}), **_allow(request.scope["path"])},
            )
        else:
            error = InvalidRequest(str(exc.detail), status=exc.status_code, headers=dict(exc.headers or {}))
        return error_response(error)

    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error", exc_info=exc)
        return error_response(ServerError("The server had an error while processing your request."))

    app = _App(
        operations,
        routes=routes,
        exception_handlers={HTTPException: http_error, Exception: server_error},
        lifespan=server.background_lifespan,
    )
    app.observer = observer
    app.state.openresponses = server
    return app


# Every method the spec serves on each path: a path with several operations has a route for each, and
# Starlette's own `Allow` would name only the first route's.
_PATH_METHODS: dict[str, list[str]] = {}
for _op in ROUTES:
    _PATH_METHODS.setdefault(_op.path, []).append(_op.method)
_ALLOWED = [(compile_path(path)[0], ", ".join(methods)) for path, methods in _PATH_METHODS.items()]


def _allow(path: str) -> dict[str, str]:
    """The `Allow` header for `path`: the methods of the spec's operations on it."""
    return next(({"Allow": methods} for regex, methods in _ALLOWED if regex.match(path)), {})


class _Operation:
    """One operation as an ASGI app: its handler's response, or the spec's error object."""

    def __init__(self, handler: Callable[..., Awaitable[ASGIApp]], model: type | None):
        self.handler = handler
        self.model = model

    async def respond(self, scope: Scope, receive: Receive) -> ASGIApp:
        try:
            if self.model is None:
                return await self.handler(scope, receive)
            return await self.handler(scope, receive, self.model)
        except OpenResponsesError as exc:
            return error_response(exc)
        except StreamViolation:
            raise
        except Exception:
            log.exception("handler failed")
            return error_response(ServerError("The server had an error while processing your request."))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.respond(scope, receive)
        await response(scope, receive, send)


class _App(Starlette):
    """Starlette, with the spec's operations called straight from `__call__`.

    The operations answer every failure themselves, so on their exact path (and with no
    middleware added, no `debug`) the router and Starlette's two middleware would only add
    work to every request and every streamed event. What escapes an operation (a
    `StreamViolation` in debug mode) is treated as Starlette's outermost middleware does: the
    app's 500 handler answers if nothing was sent yet, and the error goes on to the server.
    Anything else, WebSockets and unknown routes included, takes Starlette's own path.
    """

    def __init__(self, operations: dict[tuple[str, str], _Operation], **options: Any):
        super().__init__(**options)
        self.operations = operations
        self.observer: Observer | None = None  # around everything the app serves, when observed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.observer is None:
            await self.dispatch(scope, receive, send)
        else:
            await self.observer(scope, receive, send, self.dispatch)

    async def dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        operation = self.operations.get((scope.get("method"), scope["path"])) if scope["type"] == "http" else None
        if (
            operation is None
            or scope.get("root_path")
            or self.user_middleware
            or self.debug
            or getattr(self, "max_body_size", None) is not None  # Starlette's own body limit is a middleware
        ):
            await super().__call__(scope, receive, send)
            return
        scope["app"] = self
        try:
            response = await operation.respond(scope, receive)
        except Exception as exc:
            handler = self.exception_handlers.get(500) or self.exception_handlers.get(Exception)
            if handler is not None:
                answer = handler(Request(scope), exc)
                await (await answer if inspect.isawaitable(answer) else answer)(scope, receive, send)
            raise
        await response(scope, receive, send)


def _ignored_header(ignored: tuple[str, ...]) -> list[tuple[str, str]]:
    """The `OpenResponses-Ignored` header naming what the request had ignored, if anything."""
    return [(IGNORED_HEADER, ", ".join(ignored))] if ignored else []


class _JSONAnswer:
    """A 200 JSON body, sent with the headers Starlette's `Response` would send (and `extra` ones)."""

    __slots__ = ("body", "extra")

    def __init__(self, body: bytes, extra: Iterable[tuple[str, str]] = ()):
        self.body = body
        self.extra = extra

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-length", str(len(self.body)).encode()), (b"content-type", b"application/json")]
        headers += [(name.lower().encode(), value.encode()) for name, value in self.extra]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


class _EventStream(StreamingResponse):
    """`text/event-stream`, its body pushed by `produce(send)` as events are made (no iterator
    between the provider and the socket); Starlette's `StreamingResponse` still watches for the
    client leaving, and stops the production when it does."""

    def __init__(
        self,
        produce: Callable[[Send], Awaitable[None]],
        extra: Iterable[tuple[str, str]] = (),
        release: Callable[[], None] = lambda: None,
    ):
        self.produce = produce
        self.release = release  # the stream's slot under the cap
        self.status_code = 200
        self.media_type = "text/event-stream"
        self.background = None
        self.init_headers({**_SSE_HEADERS, **dict(extra)})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.release()  # also when the client left before `stream_response` began

    async def stream_response(self, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            await self.produce(send)
        finally:
            self.release()  # before the body ends: a client that read it all finds the slot free
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _save_error(exc: Exception) -> OpenResponsesError:
    """What a failed save ends the response with: the store's own 503 (logged by the store), or a bug."""
    if isinstance(exc, OpenResponsesError):
        return exc
    log.error("saving the response failed", exc_info=exc)
    return ServerError("The server had an error while saving the response.")


def _stopping(exc: BaseException) -> bool:
    """Cancellation (the client left, a deadline passed) or the process stopping: what ends a
    response without being its failure, so it is never answered as one."""
    return isinstance(exc, anyio.get_cancelled_exc_class() | KeyboardInterrupt | SystemExit)


def _as_error(exc: BaseException) -> OpenResponsesError:
    """What a provider's failure ends the response with (logged, unless it is the spec's own error)."""
    if isinstance(exc, OpenResponsesError):
        return exc
    if isinstance(exc, ProviderError):
        log.error("provider error: %s", exc)
        return ServerError(f"The provider failed: {exc}", code="provider_error")
    if isinstance(exc, TimeoutError):  # its upstream stopped answering: an outage to report, not a bug to trace
        log.error("provider timed out")
        return ServerError("The provider did not answer in time.", code="provider_timeout")
    log.exception("provider failed")
    return ServerError(f"The provider failed: {type(exc).__name__}")
