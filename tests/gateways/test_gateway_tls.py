"""A gateway in front of an https:// upstream: the certificate is verified, against the authorities
`$SSL_CERT_FILE` names (a private authority's bundle) or the system's, and a certificate the
gateway cannot trust is an `upstream_unreachable` that says why, never a request sent in clear."""

from __future__ import annotations

import httpx
import pytest
from openresponses_runtime.gateways.chat_completions import ChatCompletionsProvider

from ..server_helpers import API_KEY, live_server
from ..tls_authority import authority, key_files
from ..upstream_replay import DONE, ReplayUpstream, chunk, gateway

pytestmark = pytest.mark.process
HEADERS = {"Authorization": f"Bearer {API_KEY}"}


@pytest.mark.parametrize("trusted", [True, False])
def test_an_https_upstream_is_verified(tmp_path, monkeypatch, trusted):
    authority(tmp_path)
    ca_file, certificate, key = key_files(tmp_path)
    if trusted:
        monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))  # the bundle a deployment names
    replay = ReplayUpstream()
    replay.answer([chunk({"content": "Over TLS."}), chunk({}, "stop"), DONE])
    with live_server(replay.app, ssl_certfile=str(certificate), ssl_keyfile=str(key)) as url:
        https = url.replace("http://127.0.0.1", "https://localhost")
        with gateway(https, ChatCompletionsProvider) as base:
            reply = httpx.post(base + "/responses", json={"model": "m", "input": "Hi"}, headers=HEADERS, timeout=30)
    if trusted:
        assert reply.status_code == 200, reply.text
        assert reply.json()["output"][0]["content"][0]["text"] == "Over TLS."
        assert len(replay.requests) == 1
    else:
        assert reply.status_code == 502
        error = reply.json()["error"]
        assert error["code"] == "upstream_unreachable" and "no TLS connection to localhost" in error["message"]
        assert replay.requests == []  # nothing reached the upstream
