"""Reading a request: its headers, its body within the size limit, and the body as JSON validated
against the operation's model, each failure the spec's error (`InvalidRequest`, with a `param`
where the body has one to point at).

JSON is read strictly: no `NaN` or `Infinity`, no number beyond a double's range, no lone
`\\ud800` surrogate, and a boolean is never `"yes"` nor a number `false`; whole floats (`16.0`)
count as integers, as JSON Schema counts them. An explicit `null` where the spec allows none is
refused too (see `nulls`).

An item the server emits may come back in its output form, as clients that keep the whole history
send it: where the input form refuses a field of such an item, the body is validated without that
field, and `data` keeps the item whole, for `acceptance` to refuse (strict) or to leave out and report.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from json.decoder import scanstring
from typing import Any

from pydantic import BaseModel, RootModel, TypeAdapter, ValidationError
from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope

from .. import bindings
from .._base import UnknownItem
from .bounds import Bounds
from .errors import InvalidRequest
from .nulls import disallowed_null
from .wire import dumps

__all__ = ["DEFAULT_MAX_BODY_BYTES", "check_content_type", "json_path", "parse_body", "read_body", "request_headers"]

# 16 MiB: a request with a few images inline (base64 data URLs) fits; one body raises the
# server's peak memory at most some 8 times its size (bench/request_memory.py), so the cap bounds
# what one request costs to some 140 MB. Larger media belong behind URLs or file ids.
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


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


def request_headers(scope: Scope) -> tuple[str | None, str | None, str | None]:
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


async def read_body(receive: Receive, declared: str | None, limit: int) -> bytes | bytearray:
    """The body, within `limit` bytes. A large one with a `Content-Length` is read into one buffer of
    that size (a list of chunks then joined would hold it twice), which grows or shrinks to what
    came should the server's HTTP parser pass more or fewer bytes."""
    length = int(declared) if declared is not None and declared.isdigit() else 0
    if length > limit:
        raise _too_large(limit)
    buffer = bytearray(length) if length > _BUFFERED else None
    chunks = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        if message["type"] != "http.request":
            continue
        chunk = message.get("body", b"")
        if size + len(chunk) > limit:
            raise _too_large(limit)
        if buffer is None:
            chunks.append(chunk)
        else:
            buffer[size : size + len(chunk)] = chunk  # in place while it fits
        size += len(chunk)
        if not message.get("more_body", False):
            break
    if buffer is not None:
        del buffer[size:]
        return buffer
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


_BUFFERED = 64 * 1024  # a body smaller than this is one or two chunks: joined, as cheap as a buffer


def check_content_type(value: str | None) -> None:
    media = (value or "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise InvalidRequest(
            f"Content-Type must be application/json, not {value or 'missing'!r}.",
            code="unsupported_media_type",
            status=415,
        )


def parse_body(raw: bytes, model: type, bounds: Bounds | None = None) -> tuple[dict[str, Any], Any]:
    """The JSON object and its validated model; `InvalidRequest` with a `param` otherwise.

    `bounds` (what one request may ask) are checked before the object is validated, and its
    bounded arrays are counted as they are decoded: 170,000 items past the bound are read one at
    a time and dropped, never held as 170,000 dicts, let alone validated."""
    try:
        text = raw.decode(_encoding(raw), "surrogatepass")
        data, integral = _loads(text, bounds.counted if bounds is not None else None)
    except _Overflow as over:  # only `bounds` count: they refuse it
        if bounds is not None:
            bounds.check_counts(over.counts.get("input", 1), over.counts.get("tools", 0))
        raise
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"The request body is not valid JSON: {exc}", code="invalid_json") from None
    except RecursionError:
        raise InvalidRequest("The request body nests JSON too deeply.", code="invalid_json") from None
    nulls = "null" in text
    del text  # the decoded object and the bytes are enough from here on: one copy of the body fewer
    if not isinstance(data, dict):
        raise InvalidRequest("The request body must be a JSON object.", code="invalid_json")
    if _SURROGATE_ESCAPE.search(raw) and _has_lone_surrogate(data):
        raise InvalidRequest(
            "The request body is not valid JSON: a \\u escape encodes a lone surrogate, which is no character.",
            code="invalid_json",
        )
    if bounds is not None:
        bounds.check_request(data)
    if _default_message_type(data.get("input")) or integral:
        raw = dumps(data)
    try:
        # Strict, from the JSON text: `"stream": "yes"`, `"top_p": false` or `"temperature": "1"`
        # are not the spec's types, and lax mode would coerce them (to True, 0.0 and 1.0).
        body = model.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        body = _in_output_form(data, errors, model)
        if body is None:
            # The most specific error first: the one reaching deepest into the data.
            best = max(errors, key=lambda e: len(json_path(e["loc"], data, missing=e["type"] == "missing") or ""))
            param = json_path(best["loc"], data, missing=best["type"] == "missing")
            raise InvalidRequest(
                f"Invalid value for '{param or 'body'}': {best['msg']}.", code="invalid_value", param=param
            ) from None
    # The models take `null` for any optional field; the spec does not (and without the word, no null).
    null_at = disallowed_null(data, model) if nulls else None
    if null_at is not None:
        raise InvalidRequest(f"Invalid value for '{null_at}': it may not be null.", code="invalid_value", param=null_at)
    if len(raw) >= _SHARED_FROM:
        _share_strings(body, data, int(len(raw) * _PLACES_PER_BYTE))
    return data, body


_SHARED_FROM = 256 * 1024  # a smaller body's strings are not worth the walk
_LONG = 256  # characters: a string this long is worth sharing
_PLACES_PER_BYTE = 1 / 32  # the walk's budget: a body of many tiny values is not walked whole


def _share_strings(body: Any, data: Any, budget: int) -> None:
    """Give the model `body` the long strings of `data`, the object it was validated from: read
    from the JSON text, it has a copy of each of its own, and the two live as long as the request.
    A string is shared only where both hold equal ones at the same place; the walk looks at
    `budget` places at most, and holds one iterator per level of nesting."""
    levels = [_places(body, data)]
    while levels and budget > 0:
        for holder, key, given in levels[-1]:
            budget -= 1
            held = holder[key]
            if type(held) is str:
                if type(given) is str and len(held) >= _LONG and held == given:
                    holder[key] = given
            elif isinstance(held, BaseModel | list | dict):
                levels.append(_places(held, given))
                break
        else:
            levels.pop()


def _places(value: Any, sent: Any) -> Iterator[tuple[Any, Any, Any]]:
    """(holder, key, what `sent` holds there) for each value `value` holds where `sent` holds one."""
    if isinstance(value, RootModel):
        yield value.__dict__, "root", sent
    elif isinstance(value, BaseModel) and isinstance(sent, dict):
        for name, field in type(value).model_fields.items():
            key = field.alias or name
            if key in sent and name in value.__dict__:
                yield value.__dict__, name, sent[key]
        extra = value.__pydantic_extra__ or {}
        yield from ((extra, key, sent[key]) for key in extra if key in sent)
    elif isinstance(value, list) and isinstance(sent, list) and len(value) == len(sent):
        yield from ((value, index, given) for index, given in enumerate(sent))
    elif isinstance(value, dict) and isinstance(sent, dict):
        yield from ((value, key, sent[key]) for key in value if key in sent)


_OUTPUT_ITEM = TypeAdapter(bindings.OutputItem if bindings.OutputItem is not None else dict[str, Any])
_ITEM_PATH = re.compile(r"input\[(\d+)\]\.([^.\[]+)")


def _in_output_form(data: dict[str, Any], errors: list[Any], model: type) -> Any:
    """The body validated without the fields its input form refuses on items sent back in their
    output form; None when an error lies elsewhere, or an item is no valid output item either, or
    the rest is still invalid."""
    items = data.get("input")
    if not isinstance(items, list):
        return None
    refused: dict[int, set[str]] = {}
    for error in errors:
        path = json_path(error["loc"], data, missing=error["type"] == "missing") or ""
        if path == "input":
            continue  # the other member of `input`'s union (a string) does not fit a list
        match = _ITEM_PATH.match(path)
        if match is None or not isinstance(items[int(match[1])], dict):
            return None
        refused.setdefault(int(match[1]), set()).add(match[2])
    for index in refused:
        try:
            emitted = _OUTPUT_ITEM.validate_json(json.dumps(items[index]), strict=True)
        except ValidationError:
            return None
        if isinstance(emitted, UnknownItem):
            return None  # a type the server does not emit
    conformed = [
        {k: v for k, v in item.items() if k not in refused[i]} if i in refused else item for i, item in enumerate(items)
    ]
    try:
        return model.model_validate_json(json.dumps({**data, "input": conformed}, ensure_ascii=False), strict=True)
    except ValidationError:
        return None


def _loads(text: str, counted: Mapping[str, int] | None = None) -> tuple[Any, bool]:
    """`json.loads(text)` refusing `NaN` and infinite numbers, with whole floats (`16.0`) read as
    ints: JSON Schema counts them as integers, pydantic's strict mode would not (floats still
    accept ints). Also whether there was such a float, so the body is validated re-encoded.

    `counted`: top-level arrays and their bounds (`Bounds.counted`); `_Overflow` when one holds
    more, raised once the whole text has been read (bad JSON is still refused as bad JSON)."""
    integral: list[str] = []
    if _FLOAT.search(text) is None:  # no float in the body: the shared decoder reads it the same
        decoder = _DECODER
    else:

        def number(literal: str) -> float | int:
            value = _finite_float(literal)
            if value.is_integer() and abs(value) <= 2**53:
                integral.append(literal)
                return int(value)
            return value

        decoder = json.JSONDecoder(parse_constant=_no_constant, parse_float=number)
    # An array of n items has n - 1 commas: with fewer than any bound, no array can pass its bound.
    if counted and text.count(",") >= min(counted.values()):
        try:
            return _counting_decode(text, decoder, counted), bool(integral)
        except (ValueError, StopIteration, IndexError):
            integral.clear()  # not the object `_counting_decode` reads: `decode` says what is wrong
    elif decoder is _DECODER and text[:1] == "{" and text[-1:] == "}":
        # Nothing around the object: `decode` would find the same.
        data, end = _DECODER.raw_decode(text)
        if end == len(text):
            return data, False
    return decoder.decode(text), bool(integral)


class _Overflow(Exception):
    """A body whose bounded arrays hold more than their bounds, with each one's count."""

    def __init__(self, counts: dict[str, int]):
        super().__init__(counts)
        self.counts = counts


def _counting_decode(text: str, decoder: json.JSONDecoder, counted: Mapping[str, int]) -> dict[str, Any]:
    """The JSON object `text` as `decoder.decode` reads it, its members decoded one by one and the
    arrays of `counted` one item at a time, counted: past its bound an item is read and dropped.
    `_Overflow` at the end when one was past its bound; `ValueError` or `StopIteration` where the
    text is not a JSON object (the caller decodes it whole, for `decode`'s own error)."""
    scan, space = decoder.scan_once, _SPACE.match
    data: dict[str, Any] = {}
    counts: dict[str, int] = {}
    at = space(text, 0).end()
    if text[at] != "{":
        raise ValueError("not an object")
    at = space(text, at + 1).end()
    while text[at] != "}":
        if text[at] != '"':
            raise ValueError("no member name")
        key, at = scanstring(text, at + 1, True)
        at = space(text, at).end()
        if text[at] != ":":
            raise ValueError("no colon")
        at = space(text, at + 1).end()
        counts.pop(key, None)  # a repeated name: its last value is the one kept, as in `decode`
        if key in counted and text[at] == "[":
            data[key], counts[key], at = _counting_array(text, at, scan, counted[key])
        else:
            data[key], at = scan(text, at)
        at = space(text, at).end()
        if text[at] == ",":
            at = space(text, at + 1).end()
            if text[at] != '"':
                raise ValueError("a comma before the end")
        elif text[at] != "}":
            raise ValueError("no comma")
    if space(text, at + 1).end() != len(text):
        raise ValueError("extra data")
    if any(count > counted[key] for key, count in counts.items()):
        raise _Overflow(counts)
    return data


def _counting_array(
    text: str, at: int, scan: Callable[[str, int], tuple[Any, int]], bound: int
) -> tuple[list[Any], int, int]:
    """The array at `at`, its first `bound` items kept; also how many it has, and where it ends."""
    items: list[Any] = []
    keep, after = items.append, _AFTER_ITEM.match
    count = 0
    at = _SPACE.match(text, at + 1).end()
    if text[at] == "]":
        return items, 0, at + 1
    while True:
        item, at = scan(text, at)
        count += 1
        if count <= bound:
            keep(item)
        end = after(text, at)
        if end is None:
            raise ValueError("no comma")
        at = end.end()
        if end[1] is not None:
            return items, count, at


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
_SPACE = re.compile(r"[ \t\n\r]*")  # what JSON counts as whitespace
_AFTER_ITEM = re.compile(r"[ \t\n\r]*(?:,[ \t\n\r]*|(\]))")  # an array's comma, or its end


def _has_lone_surrogate(value: Any) -> bool:
    """True when a string anywhere in `value` (keys too) holds an unpaired UTF-16 surrogate.

    A walk with a list of its own, not recursion: a body nested as deep as the decoder takes
    is walked whole, never a `RecursionError`."""
    pending = [value]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
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
