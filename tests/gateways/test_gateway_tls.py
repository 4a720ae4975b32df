"""A gateway in front of an https:// upstream: the certificate is verified, against the authorities
`$SSL_CERT_FILE` names (a private authority's bundle) or the system's, and a certificate the
gateway cannot trust is an `upstream_unreachable` that says why, never a request sent in clear."""

from __future__ import annotations

import os
import sys

import httpx
import pytest
from openresponses_runtime.gateways.chat_completions import ChatCompletionsProvider

from .. import cli_process
from ..server_helpers import API_KEY, free_port, live_server, served_process
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


def _without_ssl_env() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}


@pytest.mark.parametrize("named", [True, False])
def test_serve_trusts_the_upstream_ca_file_it_is_given(tmp_path, named):
    """`orspec serve --gateway ... --upstream-ca-file PEM`: a private authority's upstream is trusted
    with the flag, and refused without it (the system's authorities never signed it)."""
    authority(tmp_path)
    ca_file, certificate, key = key_files(tmp_path)
    replay = ReplayUpstream()
    replay.answer([chunk({"content": "Trusted."}), chunk({}, "stop"), DONE])
    with live_server(replay.app, ssl_certfile=str(certificate), ssl_keyfile=str(key)) as url:
        https = url.replace("http://127.0.0.1", "https://localhost")
        options = ["--gateway", "chat-completions", "--upstream", https, "--store", "memory:"]
        options += ["--upstream-ca-file", str(ca_file)] if named else []
        port = free_port()
        command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY, *options]
        with served_process(command, port=port, env=_without_ssl_env() | {"ORSPEC_UPSTREAM_API_KEY": "k"}) as base:
            reply = httpx.post(base + "/responses", json={"model": "m", "input": "Hi"}, headers=HEADERS, timeout=30)
    if named:
        assert reply.status_code == 200, reply.text
        assert reply.json()["output"][0]["content"][0]["text"] == "Trusted."
    else:
        assert reply.status_code == 502 and "CERTIFICATE_VERIFY_FAILED" in reply.json()["error"]["message"]
        assert replay.requests == []


@pytest.mark.parametrize("command", ["serve", "proxy"])
def test_an_upstream_ca_file_that_cannot_be_used_is_refused_at_start(tmp_path, command):
    (tmp_path / "not.pem").write_text("not a certificate\n")
    for given, said in ((tmp_path / "not.pem", "holds no PEM CA certificate"), (tmp_path / "gone.pem", "cannot read")):
        args = [command, "--port", "0", "--upstream-ca-file", str(given)]
        args += ["--gateway", "chat-completions", "--upstream", "https://localhost:9/v1"] if command == "serve" else []
        args += ["--upstream", "https://localhost:9"] if command == "proxy" else []
        done = cli_process.run(args, cwd=tmp_path, env=_without_ssl_env(), timeout=300)
        assert done.returncode == 2, done.stderr
        last = done.stderr.splitlines()[-1]
        assert said in last and "--upstream-ca-file" in last and "Traceback" not in done.stderr


def test_the_proxy_checks_its_upstream_against_the_ca_file(tmp_path):
    from orspec.proxy.app import ProxyApp, ProxyConfig
    from orspec.proxy.recorder import Recorder

    ca_file, _ = authority(tmp_path)
    app = ProxyApp(ProxyConfig(upstream="https://localhost:9", upstream_ca_file=str(ca_file)), Recorder(None))
    trusted = {entry[0][0][1] for entry in (ca["subject"] for ca in app.pool.ssl.get_ca_certs())}
    assert trusted == {"orspec test authority"}  # that bundle only, not the system's
