"""`orspec proxy` on what it must not hold or keep: request bodies past its cap pass unchecked as
they arrive, and records never keep sealed reasoning or a field named like a credential."""

from __future__ import annotations

import hashlib
import json
import threading

import httpx
import pytest
from openresponses_runtime.server import DemoProvider, MemoryStore, create_app
from orspec.proxy.app import DEFAULT_MAX_CHECKED_REQUEST
from orspec.proxy.cli import DEFAULT_MAX_CHECKED_REQUEST as CLI_DEFAULT
from orspec.proxy.recorder import PROBLEMS, REDACTED, scrub, secret_name
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..server_helpers import API_KEY, live_server
from .test_proxy import AUTH, proxy, records

CAP = 4096


def _request(size: int) -> bytes:
    """A valid request body of exactly `size` bytes."""
    shell = json.dumps({"model": "demo", "input": ""}).encode()
    return json.dumps({"model": "demo", "input": "x" * (size - len(shell))}).encode()


class _Echo:
    """An upstream that reads the body as it comes, says when it has more than CAP bytes, and
    answers with what it got: its length, its hash and the framing headers."""

    def __init__(self) -> None:
        self.past_cap = threading.Event()

    async def handle(self, request):
        got = bytearray()
        async for chunk in request.stream():
            got += chunk
            if len(got) > CAP:
                self.past_cap.set()
        framing = {k: v for k, v in request.headers.items() if k in ("content-length", "transfer-encoding")}
        return JSONResponse({"length": len(got), "sha256": hashlib.sha256(got).hexdigest(), "framing": framing})


@pytest.fixture
def echo():
    handler = _Echo()
    with live_server(Starlette(routes=[Route("/v1/responses", handler.handle, methods=["POST"])])) as base:
        handler.base = base
        yield handler


@pytest.mark.parametrize(("size", "checked"), [(CAP, True), (CAP + 1, False)], ids=["at-the-cap", "one-past"])
def test_a_request_past_the_cap_is_forwarded_whole_unchecked_and_the_record_says_so(echo, tmp_path, size, checked):
    body = _request(size)
    with proxy(echo.base, tmp_path, max_checked_request=CAP, bodies=True) as (base, recorder):
        answer = httpx.post(base + "/responses", content=body, headers={**AUTH, "Content-Type": "application/json"})
        (record,) = records(recorder)
    assert answer.status_code == 200
    got = answer.json()
    assert (got["length"], got["sha256"]) == (size, hashlib.sha256(body).hexdigest())
    assert got["framing"] == {"content-length": str(size)}
    kinds = [d["kind"] for d in record["diagnoses"]]
    if checked:
        assert kinds == [] and record["model"] == "demo" and record["request_body"]["model"] == "demo"
    else:
        assert kinds == ["request-not-checked"], record
        assert f"{CAP:,} bytes" in record["diagnoses"][0]["message"]
        assert record["model"] is None and record["request_body"] is None and record["request_problems"] == []
        assert "request-not-checked" not in PROBLEMS  # an observation, not a fault


def test_a_large_body_streams_to_the_upstream_as_it_arrives(echo, tmp_path):
    """The proxy does not wait for the end of a body past its cap: the upstream has the first part
    before the client sends the rest (chunked, as the client sent it)."""
    first, rest = b'{"model": "demo", "input": "' + b"a" * (2 * CAP), b"b" * (3 * CAP) + b'"}'

    def body():
        yield first
        assert echo.past_cap.wait(10), "the proxy held the body instead of passing it on"
        yield rest

    with proxy(echo.base, tmp_path, max_checked_request=CAP) as (base, recorder):
        answer = httpx.post(base + "/responses", content=body(), headers=AUTH, timeout=20)
        (record,) = records(recorder)
    got = answer.json()
    assert got["length"] == len(first + rest) and got["sha256"] == hashlib.sha256(first + rest).hexdigest()
    assert got["framing"] == {"transfer-encoding": "chunked"}
    assert [d["kind"] for d in record["diagnoses"]] == ["request-not-checked"]


def test_a_websocket_turn_past_the_cap_is_relayed_unchecked(tmp_path):
    from websockets.sync.client import connect

    app = create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys=API_KEY)
    turn = {"type": "response.create", "model": "demo", "input": "y" * (2 * CAP), "bogus_param": 1}
    with live_server(app) as up, proxy(up, tmp_path, max_checked_request=CAP) as (base, recorder):
        with connect(base.replace("http", "ws") + "/responses", additional_headers=AUTH) as ws:
            ws.send(json.dumps(turn))
            while json.loads(ws.recv(timeout=5))["type"] != "response.completed":
                pass
        (record,) = records(recorder)
    assert [d["kind"] for d in record["diagnoses"]] == ["request-not-checked"]
    assert record["ignored"] == [] and record["status"] == 200  # not read, so nothing said of its parameters


def test_the_cap_has_one_default_and_the_command_refuses_a_bad_one():
    from ..conftest import run_orspec

    assert CLI_DEFAULT == DEFAULT_MAX_CHECKED_REQUEST == 8 * 1024 * 1024
    result = run_orspec("proxy", "--upstream", "http://127.0.0.1:9", "--max-checked-request", "8MB")
    assert result.returncode == 2 and "is not a whole number of bytes" in result.stderr


# -- what a record never keeps ------------------------------------------------------------------

SECRET_NAMES = [
    "user_pw",
    "pw",
    "userPw",
    "password",
    "db_password",
    "passwd",
    "passphrase",
    "api_key",
    "apiKey",
    "X-Api-Key",
    "token",
    "access_token",
    "refreshToken",
    "id_token",
    "secret",
    "client_secret",
    "authorization",
    "Authorization",
    "proxy_authorization",
    "auth",
    "basic_auth",
    "bearer",
    "cookie",
    "set-cookie",
    "credentials",
    "private_key",
    "aws_secret_access_key",
    "access_key_id",
    "session_key",
    "encrypted_content",
    "signature",
    "otp",
    "pin",
    "key",  # these three were kept, the review found
    "ssh_key",
    "sig",
]
KEPT_NAMES = [
    "input_tokens",
    "output_tokens",
    "max_output_tokens",
    "cached_tokens",
    "author",
    "keyword",
    "passage",
    "spinach",
    "model",
    "prompt_cache_key",
    "content",
    "summary",
    "id",
    "type",
    "status",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_credential_like_names_are_redacted(name):
    assert secret_name(name), name


@pytest.mark.parametrize("name", KEPT_NAMES)
def test_ordinary_names_are_kept(name):
    assert not secret_name(name), name


def test_scrub_redacts_at_any_depth_and_keeps_the_rest():
    body = {
        "input": [
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-sealed"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        ],
        "metadata": {"user_pw": "hunter2", "team": "blue"},
        "tools": [{"type": "mcp", "headers": {"X-Api-Key": "k-123"}, "server_url": "https://tools.example"}],
        "usage": {"input_tokens": 5},
    }
    clean = scrub(body)
    text = json.dumps(clean)
    for value in ("gAAAA-sealed", "hunter2", "k-123"):
        assert value not in text
    assert clean["input"][0]["encrypted_content"] == REDACTED
    assert clean["metadata"] == {"user_pw": REDACTED, "team": "blue"}
    assert clean["tools"][0]["headers"]["X-Api-Key"] == REDACTED
    assert clean["usage"] == {"input_tokens": 5} and clean["input"][1] == body["input"][1]


def test_scrub_blanks_a_token_used_as_a_key_and_the_credentials_urls_carry():
    """Gaps the review found: a bearer token as a JSON object's key, and URL passwords or `?token=` in values."""
    token = "sk-client-token-123456"
    body = {
        "metadata": {token: "seen as a key", "note": f"the token {token} in a value"},
        "input": "fetch https://bob:hunter2-pass@db.example/x?token=tok-SECRET&page=2 and http://a.example/?sig=SIG-SECRET",
    }
    text = json.dumps(scrub(body, (token,)))
    for secret in (token, "bob", "hunter2-pass", "tok-SECRET", "SIG-SECRET"):
        assert secret not in text, secret
    assert "https://db.example/x?token=[redacted]&page=2" in text  # the rest of the URL is kept


def test_every_credential_header_the_proxy_passes_on_is_scrubbed_from_records():
    from orspec.proxy.headers import credentials

    headers = [(b"x-goog-api-key", b"goog-SECRET"), (b"cookie", b"sid=COOKIE-SECRET"), (b"accept", b"text/plain")]
    assert set(credentials(headers)) >= {"goog-SECRET", "sid=COOKIE-SECRET"}
    assert "text/plain" not in credentials(headers)


def test_recorded_bodies_keep_no_sealed_reasoning_and_no_credential_field(tmp_path):
    """End to end: a reasoning item the server sealed goes back through the proxy with
    `--record-bodies`; neither the answer that carried the blob nor the request that returns it
    keeps it, nor the credential-like metadata."""
    app = create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys=API_KEY)
    with live_server(app) as up, proxy(up, tmp_path, bodies=True) as (base, recorder):
        first = httpx.post(
            base + "/responses",
            json={
                "model": "demo",
                "input": "think",
                "reasoning": {"summary": "auto"},
                "include": ["reasoning.encrypted_content"],
                "store": False,
                "metadata": {"user_pw": "hunter2-secret"},
            },
            headers=AUTH,
        ).json()
        (reasoning,) = [item for item in first["output"] if item["type"] == "reasoning"]
        blob = reasoning["encrypted_content"]
        assert blob
        again = httpx.post(
            base + "/responses", json={"model": "demo", "input": [reasoning], "store": False}, headers=AUTH
        )
        assert again.status_code == 200, again.text
        found = records(recorder, 2)
    text = recorder.path.read_text()
    assert blob not in text and "hunter2-secret" not in text
    assert found[0]["request_body"]["metadata"]["user_pw"] == REDACTED
    assert [i["encrypted_content"] for i in found[0]["response_body"]["output"] if i["type"] == "reasoning"] == [
        REDACTED
    ]
    assert found[1]["request_body"]["input"][0]["encrypted_content"] == REDACTED
    assert found[1]["request_body"]["input"][0]["id"] == reasoning["id"]  # the rest is kept
