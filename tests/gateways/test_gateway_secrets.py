"""What a gateway tells a client never holds the operator's secrets: an upstream URL's credentials and
query, the upstream key (echoed back in an upstream's error, say), and Anthropic's server tools, which
run on the operator's key, only as the operator allows them."""

from __future__ import annotations

import json

import httpx
import pytest
from openresponses_runtime.gateways import GATEWAYS
from openresponses_runtime.gateways.anthropic_messages import AnthropicMessagesProvider
from openresponses_runtime.server import create_app

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
