"""`orspec compliance`: green against `orspec serve`, red with the right reasons against broken servers."""

from __future__ import annotations

import json
import sys

import pytest
from openresponses_runtime.server import DemoProvider, MemoryStore, create_app
from orspec.compliance import CASES, run, select

from ..conftest import run_orspec
from ..server_helpers import API_KEY, free_port, live_server, served_process

ORSPEC = [sys.executable, "-m", "orspec"]


def test_cases_are_documented_as_data():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    for c in CASES:
        assert c.title and c.sends and c.checks and c.must, c.id
    expected = {
        "basic-text", "streaming", "system-prompt", "developer-role", "tool-call", "tool-round-trip",
        "parallel-tool-calls", "image-input", "file-input", "multi-turn", "previous-response", "tool-choice-none",
        "tool-choice-required", "tool-choice-function", "allowed-tools", "max-output-tokens",
        "error-invalid-request", "error-auth", "error-not-found", "compaction", "input-tokens", "ws-single-turn",
        "ws-sequential", "ws-continuation", "ws-store-false", "ws-missing-previous", "ws-evict-after-failure",
    }  # fmt: skip
    assert expected <= set(ids)
    assert [c.id for c in select(["ws-*"])] == [i for i in ids if i.startswith("ws-")]
    with pytest.raises(ValueError, match="no compliance test matches"):
        select(["nope"])


@pytest.fixture(scope="module")
def served():
    """`orspec serve` on loopback with a fixed key."""
    port = free_port()
    command = [*ORSPEC, "serve", "--port", str(port), "--api-key", API_KEY, "--store", "memory:", "--delay", "0"]
    with served_process(command, port=port) as base:
        yield base


@pytest.mark.process
def test_orspec_serve_passes_everything(served):
    done = run_orspec("compliance", "--base-url", served, "--api-key", API_KEY, "--json")
    report = json.loads(done.stdout)
    failures = [r for r in report["results"] if r["status"] != "pass"]
    assert done.returncode == 0 and not failures, failures
    assert report["passed"] == len(CASES) and report["failed"] == 0
    assert all(r["must"] and r["sends"] and r["checks"] for r in report["results"])


@pytest.mark.process
def test_text_output_and_exit_codes(served):
    filtered = ("--filter", "basic-text,error-*", "--wait", "5")
    done = run_orspec("compliance", "--base-url", served, *filtered, env={"ORSPEC_API_KEY": API_KEY})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [f"PASS {c.id}" for c in select(["basic-text", "error-*"])]
    wrong = run_orspec("compliance", "--base-url", served, "--api-key", "sk-wrong", "--filter", "basic-text")
    assert wrong.returncode == 1
    assert wrong.stdout.startswith("FAIL basic-text: POST /responses answered 401")
    listed = run_orspec("compliance", "--list")
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == len(CASES)
    assert "error-auth: Bad or missing credentials are a 401" in listed.stdout
    unknown = run_orspec("compliance", "--base-url", served, "--api-key", API_KEY, "--filter", "nope")
    assert unknown.returncode == 2 and "no compliance test matches 'nope'" in unknown.stderr


# -- deliberately broken servers ------------------------------------------------------------------


def accepts_any_key(app):
    """Bad auth handling: every request is let in, whatever its key (or none)."""

    async def wrapped(scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            headers = [(k, v) for k, v in scope["headers"] if k != b"authorization"]
            scope = dict(scope, headers=[*headers, (b"authorization", f"Bearer {API_KEY}".encode())])
        await app(scope, receive, send)

    return wrapped


def bad_streams(app):
    """Bad streaming: every sequence_number is 0 and the `data: [DONE]` frame is dropped."""

    async def wrapped(scope, receive, send):
        async def mangle(message):
            if message["type"] == "http.response.body" and message.get("body"):
                body = message["body"].replace(b"data: [DONE]\n\n", b"")
                lines = []
                for line in body.split(b"\n"):
                    if line.startswith(b"data: {"):
                        event = json.loads(line[6:])
                        event["sequence_number"] = 0
                        line = b"data: " + json.dumps(event).encode()
                    lines.append(line)
                message = dict(message, body=b"\n".join(lines))
            await send(message)

        await app(scope, receive, mangle if scope["type"] == "http" else send)

    return wrapped


def demo_app():
    return create_app(DemoProvider(), store=MemoryStore(), api_keys=API_KEY)


def test_fails_a_server_that_accepts_any_key():
    with live_server(accepts_any_key(demo_app())) as base:
        auth, ws_auth = run(base, API_KEY, filters=["error-auth", "ws-auth"])
        assert not auth.ok and auth.reason.startswith("expected HTTP 401, got 200")
        assert not ws_auth.ok and ws_auth.reason == "a WebSocket with a wrong key was accepted"
        assert all(r.ok for r in run(base, API_KEY, filters=["basic-text", "streaming"]))


def test_fails_a_server_with_broken_streams():
    with live_server(bad_streams(demo_app())) as base:
        results = {r.case.id: r for r in run(base, API_KEY, filters=["streaming", "max-output-tokens", "basic-text"])}
    assert results["basic-text"].ok  # JSON responses are untouched
    reason = results["streaming"].reason
    assert not results["streaming"].ok and reason.startswith("stream violations:")
    assert "[sequence]" in reason or "sequence_number 0 does not increase" in reason, reason
    assert not results["max-output-tokens"].ok
    report = run(base_url := "http://127.0.0.1:9/v1", API_KEY, filters=["basic-text"], timeout=2)
    assert not report[0].ok and "HTTP failure" in report[0].reason, base_url


def test_reports_missing_done_marker():
    def only_drop_done(app):
        async def wrapped(scope, receive, send):
            async def mangle(message):
                if message["type"] == "http.response.body" and message.get("body"):
                    message = dict(message, body=message["body"].replace(b"data: [DONE]\n\n", b""))
                await send(message)

            await app(scope, receive, mangle if scope["type"] == "http" else send)

        return wrapped

    with live_server(only_drop_done(demo_app())) as base:
        (result,) = run(base, API_KEY, filters=["streaming"])
    assert not result.ok and "[DONE]" in result.reason, result.reason


# -- extension cases: the stored-response operations of the `openai` fragment -----------------------


def core_only(app):
    """A server of the core spec alone: the fragment's operations are unknown routes."""

    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and scope["path"] not in ("/v1/responses", "/v1/responses/compact"):
            body = b'{"error":{"type":"not_found","code":null,"param":null,"message":"No such route"}}'
            await send(
                {"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return wrapped


def deletes_nothing(app):
    """Delete answers the deleted object but keeps the response."""

    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "DELETE":
            response_id = scope["path"].rsplit("/", 1)[1]
            body = json.dumps({"id": response_id, "object": "response.deleted", "deleted": True}).encode()
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return wrapped


def test_extension_cases_are_marked_with_their_fragment():
    lifecycle = [c for c in CASES if c.group == "lifecycle"]
    assert {c.id for c in lifecycle} == {
        "lifecycle-retrieve",
        "lifecycle-input-items",
        "lifecycle-delete",
        "lifecycle-cancel-finished",
        "lifecycle-background",
    }
    assert {c.extension for c in lifecycle} == {"openai"}
    assert not [c for c in CASES if c.group != "lifecycle" and c.extension]


@pytest.mark.process
def test_a_core_only_server_skips_the_extension_cases_and_passes():
    with live_server(core_only(demo_app())) as base:
        results = run(base, API_KEY, filters=["lifecycle-*", "basic-text"])
        done = run_orspec("compliance", "--base-url", base, "--api-key", API_KEY, "--filter", "lifecycle-*,basic-text")
    assert all(r.ok for r in results)
    assert [r.case.id for r in results if r.skipped] == [c.id for c in select(["lifecycle-*"])]
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SKIP lifecycle-retrieve: the server answers 404 to retrieve on a response it just stored" in done.stdout
    assert "1 passed, 0 failed, 5 skipped (operations the server does not serve)" in done.stderr


def test_input_tokens_passes_on_the_demo_and_skips_a_model_that_cannot_count():
    from ..server_helpers import StepsProvider

    with live_server(demo_app()) as base:
        (counted,) = run(base, API_KEY, filters=["input-tokens"])
    with live_server(create_app(StepsProvider(), store=MemoryStore(), api_keys=API_KEY)) as base:
        (uncounted,) = run(base, API_KEY, filters=["input-tokens"])
    assert counted.ok and not counted.skipped, counted.reason
    assert (
        uncounted.skipped and uncounted.reason == "the server's model cannot count input tokens (501 not_implemented)"
    )


def test_fails_a_server_whose_count_ignores_the_history():
    class Forgetful(DemoProvider):
        async def count_input_tokens(self, request):
            return len(str(request.input[-1]))

    with live_server(create_app(Forgetful(), store=MemoryStore(), api_keys=API_KEY)) as base:
        (result,) = run(base, API_KEY, filters=["input-tokens"])
    assert not result.ok and result.reason == "the history of previous_response_id adds no tokens to the count"


def test_fails_a_server_whose_delete_keeps_the_response():
    with live_server(deletes_nothing(demo_app())) as base:
        (result,) = run(base, API_KEY, filters=["lifecycle-delete"])
    assert not result.ok and not result.skipped
    assert result.reason == "retrieve of a deleted response succeeded where it must fail"
