"""The app's direct path to its operations, against Starlette's own path, and the body decoder."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from openresponses_runtime.server import MemoryStore, TextDelta, bodies, create_app
from starlette.middleware import Middleware

from ..server_helpers import API_KEY, StepsProvider

HEADERS = {"Authorization": f"Bearer {API_KEY}"}


class _Stamp:
    """A pure ASGI middleware that marks every response it passes on."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        async def stamped(message):
            if message["type"] == "http.response.start":
                message["headers"] = [*message["headers"], (b"x-stamp", b"1")]
            await send(message)

        await self.app(scope, receive, stamped)


def _exchange(app, *requests):
    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [await client.request(method, path, json=body, headers=HEADERS) for method, path, body in requests]

    return asyncio.run(go())


REQUESTS = [
    ("POST", "/v1/responses", {"input": "hi"}),
    ("POST", "/v1/responses", {"input": "hi", "stream": True}),
    ("POST", "/v1/responses", {"input": "hi", "temperature": "hot"}),
    ("GET", "/v1/responses", None),
    ("POST", "/v1/nowhere", {}),
]


def test_direct_path_answers_as_starlette_does():
    """With a middleware added the operations take Starlette's router and middleware again; the
    answers (status, headers, error objects, event streams) are the same either way."""
    direct = create_app(StepsProvider([TextDelta("a"), TextDelta("b")]), store=MemoryStore(), api_keys=API_KEY)
    routed = create_app(StepsProvider([TextDelta("a"), TextDelta("b")]), store=MemoryStore(), api_keys=API_KEY)
    routed.user_middleware.append(Middleware(_Stamp))
    for fast, slow in zip(_exchange(direct, *REQUESTS), _exchange(routed, *REQUESTS), strict=True):
        assert slow.headers.pop("x-stamp") == "1"
        assert (fast.status_code, dict(fast.headers)) == (slow.status_code, dict(slow.headers))
        if fast.headers["content-type"].startswith("text/event-stream"):
            assert fast.text.count("event: ") == slow.text.count("event: ") == 10  # 8 around 2 deltas
        else:
            fast_body, slow_body = fast.json(), slow.json()
            for body in (fast_body, slow_body):
                for volatile in ("id", "created_at", "completed_at"):
                    body.pop(volatile, None)
                for item in body.get("output", ()):
                    item.pop("id")
            assert fast_body == slow_body
    assert [r.status_code for r in _exchange(direct, *REQUESTS)] == [200, 200, 400, 405, 404]


def _stdlib(raw: bytes):
    """What `json.loads` makes of a body under the server's number rules (whole floats are ints)."""

    def number(text: str):
        value = float(text)
        if value in (float("inf"), float("-inf")):
            raise ValueError(text)
        return int(value) if value.is_integer() and abs(value) <= 2**53 else value

    def constant(name: str):
        raise ValueError(name)

    return json.loads(raw, parse_float=number, parse_constant=constant)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"input": "hi"}',
        b'{"input": "hi", "max_output_tokens": 16.0, "temperature": 0.5, "top_p": 1e0}',
        b' \n{"input": "hi"}\t ',
        b'{"input": "hi"} {}',
        b'{"input": "hi"}}',
        b'{"input": "hi"',
        b"{}",
        b"[]",
        b"",
        b"7",
        b'{"input": "hi", "temperature": NaN}',
        b'{"input": "hi", "temperature": 1e400}',
        b'{"input": "\\ud800"}',
        b'\xef\xbb\xbf{"input": "hi"}',
        '{"input": "hi"}'.encode("utf-16"),
        '{"input": "hi"}'.encode("utf-16-le"),
        '{"input": "hi"}'.encode("utf-32"),
        b"\xff\xfe",
        b'{"input": "caf\xc3\xa9 \xe9"}',
    ],
)
def test_bodies_decode_as_json_loads_reads_them(raw):
    """The decoder's shortcuts (the encoding guess, the shared decoder, no whitespace scan) read
    every body as `json.loads` does, or fail where it fails."""
    try:
        expected = _stdlib(raw)
    except (ValueError, UnicodeDecodeError):
        expected = "error"
    try:
        got, _ = bodies._loads(raw.decode(bodies._encoding(raw), "surrogatepass"))
    except (ValueError, UnicodeDecodeError):
        got = "error"
    assert got == expected


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/responses/{response_id}"),
        ("DELETE", "/v1/responses/{response_id}"),
        ("GET", "/v1/responses/{response_id}/input_items"),
    ],
)
def test_a_path_template_sent_literally_is_refused_as_an_id(method, path):
    """As a docs console sends it unfilled: was a 500 (`KeyError: 'path_params'`)."""
    app = create_app(StepsProvider([TextDelta("hi")]), store=MemoryStore(), api_keys=API_KEY)
    (answer,) = _exchange(app, (method, path, None))
    assert answer.status_code == 400, answer.text
    assert (answer.json()["error"]["code"], answer.json()["error"]["param"]) == ("invalid_value", "response_id")
