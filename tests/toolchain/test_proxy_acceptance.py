"""`orspec proxy` checks requests with the server's own acceptance code: Codex's request, unchanged,
is recorded with what a tolerant server ignores, and `--enforce` refuses exactly what a strict
server refuses, with the same status and the same bytes."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from openresponses_runtime import models
from openresponses_runtime.server import DemoProvider, MemoryStore, create_app
from openresponses_runtime.server.acceptance import Acceptance
from orspec.proxy.observer import check_request
from orspec.report import render
from websockets.sync.client import connect

from ..server.test_server_acceptance import CODEX, CODEX_IGNORED
from ..server_helpers import API_KEY, live_server
from .test_proxy import proxy, records

AUTH = {"Authorization": f"Bearer {API_KEY}"}
# A first turn that answers a call nobody made: refused by every server, tolerant or strict.
ORPHAN_OUTPUT = {"model": "demo", "input": [{"type": "function_call_output", "call_id": "call_x", "output": "42"}]}


@pytest.fixture(scope="module")
def tolerant_upstream():
    with live_server(create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys=API_KEY)) as base:
        yield base


@pytest.fixture(scope="module")
def strict_upstream():
    app = create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys=API_KEY, strict=True)
    with live_server(app) as base:
        yield base


def ws_exchange(base: str, message: dict) -> str:
    """The first message a WebSocket server sends back for one `response.create`."""
    with connect(base.replace("http", "ws") + "/responses", additional_headers=AUTH) as ws:
        ws.send(json.dumps({"type": "response.create", **message}))
        return ws.recv(timeout=5)


def test_codex_request_is_forwarded_and_recorded_with_what_is_ignored(tolerant_upstream, tmp_path):
    with proxy(tolerant_upstream, tmp_path) as (base, recorder):
        answer = httpx.post(base + "/responses", json=CODEX, headers=AUTH)
        (record,) = records(recorder)
    assert answer.status_code == 200
    assert record["ignored"] == CODEX_IGNORED.split(", ")
    assert (record["request_problems"], record["refused"], record["upstream_status"]) == ([], None, 200)


def test_codex_websocket_turn_is_recorded_with_what_is_ignored(tolerant_upstream, tmp_path):
    with proxy(tolerant_upstream, tmp_path) as (base, recorder):
        body = {k: v for k, v in CODEX.items() if k != "stream"}
        first = json.loads(ws_exchange(base, {**body, "stream": True, "generate": False}))
        (record,) = records(recorder)
    assert first["type"] == "response.created"
    assert record["ignored"] == CODEX_IGNORED.split(", ")
    assert record["refused"] is None


def test_enforce_refuses_codex_request_as_a_strict_server_does(tolerant_upstream, strict_upstream, tmp_path):
    direct = httpx.post(strict_upstream + "/responses", json=CODEX, headers=AUTH)
    with proxy(tolerant_upstream, tmp_path, enforce=True) as (base, recorder):
        refused = httpx.post(base + "/responses", json=CODEX, headers=AUTH)
        (record,) = records(recorder)
    assert direct.status_code == refused.status_code == 400
    assert refused.content == direct.content
    assert record["upstream_status"] is None  # refused by the proxy, never sent to the (tolerant) upstream
    assert record["refused"] == {"status": 400, **direct.json()["error"]}
    assert record["refused"]["code"] == "unknown_parameter"


def test_enforce_refuses_a_codex_websocket_turn_as_a_strict_server_does(tolerant_upstream, strict_upstream, tmp_path):
    direct = ws_exchange(strict_upstream, CODEX)
    with proxy(tolerant_upstream, tmp_path, enforce=True) as (base, recorder):
        refused = ws_exchange(base, CODEX)
        (record,) = records(recorder)
    assert refused == direct
    error = json.loads(direct)["error"]
    assert (error["code"], error["param"]) == ("invalid_value", "stream")  # a strict server's WebSocket refuses it
    assert record["refused"] == {"status": 400, **error}


@pytest.mark.parametrize("enforce", [False, True], ids=["tolerant", "enforce"])
def test_what_every_server_refuses_is_recorded_as_refused(tolerant_upstream, tmp_path, enforce):
    direct = httpx.post(tolerant_upstream + "/responses", json=ORPHAN_OUTPUT, headers=AUTH)
    with proxy(tolerant_upstream, tmp_path, enforce=enforce) as (base, recorder):
        answer = httpx.post(base + "/responses", json=ORPHAN_OUTPUT, headers=AUTH)
        (record,) = records(recorder)
    assert answer.content == direct.content and answer.status_code == 400
    assert record["refused"]["code"] == "function_call_not_found"
    assert record["upstream_status"] == (None if enforce else 400)


def test_the_report_lists_ignored_and_refused_parameters_and_tools(tolerant_upstream, tmp_path):
    with proxy(tolerant_upstream, tmp_path) as (base, recorder):
        httpx.post(base + "/responses", json=CODEX, headers=AUTH)
        httpx.post(base + "/responses", json=ORPHAN_OUTPUT, headers=AUTH)
        found = records(recorder, 2)
    markdown = render(found, "md")
    for name in CODEX_IGNORED.split(", "):
        assert f"| ignored: `{name}` | 1 |" in markdown
    assert "| refused: `function_call_not_found input` | 1 |" in markdown
    html = render(found, "html")
    assert "ignored: <code>tool:web_search</code>" in html
    assert "refused: <code>function_call_not_found input</code>" in html


def test_the_proxys_check_logs_nothing(caplog):
    """The names are the upstream's to log: the proxy only records them."""
    with caplog.at_level(logging.WARNING):
        check = check_request(json.dumps(CODEX).encode(), models.CreateResponseBody, Acceptance(quiet=True))
    assert check.ignored == tuple(CODEX_IGNORED.split(", "))
    assert not caplog.records
