"""`orspec serve --cors-origin`: a page on that origin may call the server from a browser; others may not,
and without the option no CORS header is sent at all."""

from __future__ import annotations

import base64
import json

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from ..client_servers import orspec_serve
from ..server_helpers import API_KEY

pytestmark = pytest.mark.process

ORIGIN = "http://127.0.0.1:8765"
PREFLIGHT = {
    "Origin": ORIGIN,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization,content-type",
}
BODY = {"model": "demo", "input": "Say hi", "stream": False}


def test_cors_origin_allows_that_origin_only():
    with orspec_serve("--delay", "0", "--cors-origin", ORIGIN) as base, httpx.Client(timeout=10) as client:
        preflight = client.options(f"{base}/responses", headers=PREFLIGHT)
        assert preflight.status_code == 200, preflight.text
        assert preflight.headers["access-control-allow-origin"] == ORIGIN
        assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
        answer = client.post(
            f"{base}/responses", json=BODY, headers={"Origin": ORIGIN, "Authorization": f"Bearer {API_KEY}"}
        )
        assert answer.status_code == 200, answer.text
        assert answer.headers["access-control-allow-origin"] == ORIGIN
        other = client.options(f"{base}/responses", headers={**PREFLIGHT, "Origin": "http://evil.example"})
        assert other.status_code == 400
        assert "access-control-allow-origin" not in other.headers
        refused = client.post(f"{base}/responses", json=BODY, headers={"Origin": ORIGIN})
        assert refused.status_code == 401  # CORS lets the page ask; the key is still required


def test_no_cors_headers_by_default():
    with orspec_serve("--delay", "0") as base, httpx.Client(timeout=10) as client:
        answer = client.post(
            f"{base}/responses", json=BODY, headers={"Origin": ORIGIN, "Authorization": f"Bearer {API_KEY}"}
        )
        assert answer.status_code == 200, answer.text
        assert "access-control-allow-origin" not in answer.headers
        preflight = client.options(f"{base}/responses", headers=PREFLIGHT)
        assert "access-control-allow-origin" not in preflight.headers


def _key_protocol(key: str) -> str:
    return "openresponses-key." + base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def _turn(base: str, origin: str, protocols: list[str]):
    """The subprotocol the server chose and the turn's event types, or the refusal's status."""
    url = base.replace("http://", "ws://") + "/responses"
    try:
        with connect(url, origin=origin, subprotocols=protocols, open_timeout=10) as socket:
            socket.send(json.dumps({"type": "response.create", "model": "demo", "input": "Say hi"}))
            types = []
            while not types or types[-1] not in ("response.completed", "response.failed", "error"):
                types.append(json.loads(socket.recv(timeout=10))["type"])
            return socket.subprotocol, types
    except InvalidStatus as refused:
        return refused.response.status_code, []


def test_a_page_on_the_cors_origin_sends_its_websocket_key_as_a_subprotocol():
    protocols = ["openresponses", _key_protocol(API_KEY)]
    with orspec_serve("--delay", "0", "--cors-origin", ORIGIN) as base:
        chosen, types = _turn(base, ORIGIN, protocols)
        assert chosen == "openresponses" and types[-1] == "response.completed", types
        assert _turn(base, "http://evil.example", protocols) == (401, [])  # another origin: no key taken
        assert _turn(base, ORIGIN, ["openresponses", _key_protocol("wrong")]) == (401, [])
        assert _turn(base, ORIGIN, ["openresponses", "openresponses-key.%%%"]) == (401, [])
    with orspec_serve("--delay", "0") as base:  # off without --cors-origin
        assert _turn(base, ORIGIN, protocols) == (401, [])
