"""What a gateway tells a client never holds the operator's secrets: an upstream URL's credentials and
query, the upstream key (echoed back in an upstream's error, say), and Anthropic's server tools, which
run on the operator's key, only as the operator allows them."""

from __future__ import annotations

import json
import sys
import time

import httpx
import pytest
from openresponses_runtime.gateways import GATEWAYS
from openresponses_runtime.gateways.anthropic_messages import AnthropicMessagesProvider
from openresponses_runtime.server import create_app

from .. import cpu_time
from ..conftest import run_orspec
from ..server_helpers import API_KEY, free_port, live_server
from ..upstream_replay import UPSTREAM_KEY, upstream

HEADERS = {"Authorization": f"Bearer {API_KEY}"}
REQUEST = {"model": "m", "input": "hi"}


def _ask(provider, body=REQUEST) -> httpx.Response:
    with live_server(create_app(provider, store="memory:", api_keys=API_KEY)) as base:
        return httpx.post(base + "/responses", json=body, headers=HEADERS, timeout=30)


@pytest.mark.parametrize("name", list(GATEWAYS))
def test_an_unreachable_upstream_is_named_without_its_credentials_or_query(name):
    closed = free_port()  # nothing listens there
    root = f"http://operator:DBPASS-SECRET@127.0.0.1:{closed}/base?token=QUERY-SECRET"
    provider = GATEWAYS[name].load()(base_url=root, api_key=UPSTREAM_KEY)
    reply = _ask(provider)
    error = reply.json()["error"]
    assert (reply.status_code, error["code"]) == (502, "upstream_unreachable")
    assert f"http://127.0.0.1:{closed}/base" in error["message"]
    for secret in ("DBPASS-SECRET", "operator", "QUERY-SECRET", UPSTREAM_KEY):
        assert secret not in error["message"]


@pytest.mark.parametrize("name", list(GATEWAYS))
@pytest.mark.parametrize("status", [400, 500])
def test_an_upstream_error_that_echoes_our_key_reaches_the_client_blanked(name, status):
    gateway = GATEWAYS[name]
    echoed = f"bad request; headers were Authorization: Bearer {UPSTREAM_KEY}, x-api-key: {UPSTREAM_KEY}"
    with upstream() as (url, replay):
        replay.answer(
            json.dumps({"error": {"message": echoed}}).encode(), status=status, content_type="application/json"
        )
        provider = gateway.load()(base_url=url.removesuffix("/v1") + gateway.api_root, api_key=UPSTREAM_KEY)
        reply = _ask(provider)
    message = reply.json()["error"]["message"]
    assert reply.status_code in (400, 502) and UPSTREAM_KEY not in message
    assert "[redacted]" in message and "bad request; headers were" in message  # the rest is still said


def test_anthropic_server_tools_are_refused_unless_the_operator_allows_them():
    tool = {"type": "anthropic:server_tool", "definition": {"type": "web_search_20250305", "name": "web_search"}}
    body = {**REQUEST, "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}, tool]}
    with upstream() as (url, replay):
        root = url.removesuffix("/v1")
        refused = _ask(AnthropicMessagesProvider(base_url=root, api_key=UPSTREAM_KEY), body)
        assert replay.requests == []  # nothing went upstream
        other = _ask(
            AnthropicMessagesProvider(base_url=root, api_key=UPSTREAM_KEY, server_tools=["code_execution"]), body
        )
    for reply in (refused, other):
        error = reply.json()["error"]
        assert (reply.status_code, error["code"], error["param"]) == (400, "tool_not_allowed", "tools[1]")
        assert "web_search_20250305" in error["message"]


def test_server_tools_are_an_option_of_the_anthropic_gateway_only():
    done = run_orspec(
        "serve", "--gateway", "chat-completions", "--upstream", "http://127.0.0.1:9/v1", "--server-tool", "x"
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "orspec: --server-tool is for --gateway anthropic-messages, not chat-completions"
    )


# -- redaction by construction: each credential a gateway holds, through each way out ----------------

USER, PASSWORD, QUERY = "operator-name", "DBPASS-SECRET", "QUERY-SECRET"


def _echoing_upstream(mode: str):
    """An upstream that says back everything it was sent (each header, its path and query): as a 500
    error body (`error`), or, after a frame that is no JSON, as an error event mid-stream (`stream`)."""

    async def app(scope, receive, send):
        while (await receive()).get("more_body"):
            pass
        said = " ".join(f"{name.decode()}: {value.decode()}" for name, value in scope["headers"])
        said += f" path: {scope['path']}?{scope['query_string'].decode()}"
        if mode == "error":
            body = json.dumps({"error": {"message": said, "type": "api_error"}}).encode()
            head = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 500, "headers": head})
        else:
            error = {"type": "error", "error": {"type": "api_error", "message": said, "code": 500}}
            body = f"data: not json, {said}\n\nevent: error\ndata: {json.dumps(error)}\n\n".encode()
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
            )
        await send({"type": "http.response.body", "body": body})

    return app


@pytest.mark.parametrize("name", list(GATEWAYS))
@pytest.mark.parametrize("exit_", ["error body", "mid-stream error"])
def test_every_credential_a_gateway_holds_is_blanked_wherever_it_goes_out(name, exit_, caplog):
    """Sources: the key, the URL's user and password, the Basic credential an HTTP client makes of
    them (was: sent upstream, echoed back and passed on whole), the query's value. Exits: what the
    client reads (the error body, or the stream's error event), and every log record of the exchange."""
    import base64
    import logging

    gateway = GATEWAYS[name]
    secrets = {
        "key": UPSTREAM_KEY,
        "user": USER,
        "password": PASSWORD,
        "basic credential": base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode(),
        "query": QUERY,
    }
    with live_server(_echoing_upstream("error" if exit_ == "error body" else "stream")) as url:
        root = url.removesuffix("/v1").replace("://", f"://{USER}:{PASSWORD}@") + gateway.api_root + f"?token={QUERY}"
        provider = gateway.load()(base_url=root, api_key=UPSTREAM_KEY)
        with caplog.at_level(logging.DEBUG):
            reply = _ask(provider, {**REQUEST, "stream": exit_ == "mid-stream error"})
    client_saw = reply.text
    logged = "\n".join(record.getMessage() + (record.exc_text or "") for record in caplog.records)
    assert "[redacted]" in client_saw + logged  # the upstream's words still come through, blanked
    for source, secret in secrets.items():
        assert secret not in client_saw, (source, client_saw)
        assert secret not in logged, (source, logged)


@pytest.mark.process
def test_the_serving_line_names_the_upstream_without_its_credentials(tmp_path):
    from ..server_helpers import start, stop

    port = free_port()
    upstream_url = f"http://{USER}:{PASSWORD}@127.0.0.1:9/v1?token={QUERY}"
    log = tmp_path / "serve.log"
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY, "--store", "memory:"]
    command += ["--gateway", "chat-completions", "--upstream", upstream_url]
    with log.open("w") as stderr:
        proc = start(command, stderr=stderr, env={"ORSPEC_UPSTREAM_API_KEY": UPSTREAM_KEY})
    try:
        deadline = time.monotonic() + cpu_time.scaled(30)
        while "serving Open Responses" not in log.read_text() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
    finally:
        stop(proc)
    said = log.read_text()
    assert "in front of http://127.0.0.1:9/v1" in said, said
    for secret in (USER, PASSWORD, QUERY, UPSTREAM_KEY):
        assert secret not in said
