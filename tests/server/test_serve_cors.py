"""`orspec serve --cors-origin`: a page on that origin may call the server from a browser; others may not,
and without the option no CORS header is sent at all."""

from __future__ import annotations

import httpx
import pytest

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
