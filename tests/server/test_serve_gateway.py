"""`orspec serve --gateway NAME --upstream URL`: each gateway run with one command, in front of a fake
upstream on loopback. The upstream key comes from the environment only, models pass through or are
renamed by `--model`, and serve's production options (stores, workers, timeouts, observability)
apply to a gateway as to the demo model."""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from openresponses_runtime.gateways import GATEWAYS

from .. import cli_process, cpu_time
from ..conftest import run_orspec
from ..server_helpers import API_KEY, METRICS_KEY, free_port, metrics_text, served_process
from ..upstream_replay import DONE, chunk, upstream

pytestmark = pytest.mark.process  # each test starts orspec serve

ORSPEC = [sys.executable, "-m", "orspec"]
HEADERS = {"Authorization": f"Bearer {API_KEY}"}
KEY_VARIABLES = ("ORSPEC_UPSTREAM_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")
ANTHROPIC_TEXT = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
    b'"content":[],"model":"claude","stop_reason":null,"usage":{"input_tokens":5,"output_tokens":0}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Bonjour"}}\n\n'
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)  # fmt: skip


def chat_text(text: str) -> list[bytes]:
    return [chunk({"role": "assistant", "content": text}), chunk({}, finish="stop"), DONE]


def environment(**keys: str) -> dict[str, str]:
    """The test's environment with no upstream key but the ones given."""
    env = {name: value for name, value in os.environ.items() if name not in KEY_VARIABLES}
    return env | keys


@contextmanager
def gateway_serve(*options: str, env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    command = [*ORSPEC, "serve", "--port", str(port), "--api-key", API_KEY, *options]
    with served_process(command, port=port, env=env) as base:
        yield base


@contextmanager
def replayed() -> Iterator[tuple[str, object]]:
    with upstream() as (url, replay):
        yield url.removesuffix("/v1"), replay


def test_chat_completions_in_one_command_with_a_renamed_model_and_metrics():
    with replayed() as (root, replay):
        replay.answer(chat_text("Hello from upstream"))
        replay.answer(chat_text("Again"))
        options = ("--gateway", "chat-completions", "--upstream", root + "/v1", "--model", "gpt-4o=llama3.1:8b")
        options += ("--metrics-key", METRICS_KEY)
        with gateway_serve(*options, "--store", "memory:", env=environment(OPENAI_API_KEY="sk-openai")) as base:
            reply = httpx.post(base + "/responses", json={"model": "gpt-4o", "input": "hi"}, headers=HEADERS)
            other = httpx.post(base + "/responses", json={"model": "qwen3", "input": "hi"}, headers=HEADERS)
            metrics = metrics_text(base.removesuffix("/v1"))
    assert reply.status_code == 200, reply.text
    assert reply.json()["output"][0]["content"][0]["text"] == "Hello from upstream"
    assert reply.json()["model"] == "gpt-4o"  # the client sees the model it asked for
    assert other.status_code == 200 and other.json()["output"][0]["content"][0]["text"] == "Again"
    assert [r["model"] for r in replay.requests] == ["llama3.1:8b", "qwen3"]  # renamed, then passed through
    assert replay.paths == ["/v1/chat/completions"] * 2
    assert {h["authorization"] for h in replay.headers} == {"Bearer sk-openai"}
    assert "openresponses_requests_total" in metrics


def test_anthropic_messages_takes_the_orspec_key_first_and_one_model_for_all(tmp_path):
    with replayed() as (root, replay):
        replay.answer(ANTHROPIC_TEXT)
        env = environment(ORSPEC_UPSTREAM_API_KEY="sk-orspec-upstream", ANTHROPIC_API_KEY="sk-ant-other")
        options = ("--gateway", "anthropic-messages", "--upstream", root, "--model", "claude-haiku-4-5")
        with gateway_serve(*options, "--store", str(tmp_path / "r.sqlite3"), env=env) as base:
            reply = httpx.post(base + "/responses", json={"model": "anything", "input": "hi"}, headers=HEADERS)
            stored = httpx.get(base + f"/responses/{reply.json()['id']}", headers=HEADERS)
    assert reply.status_code == 200, reply.text
    assert reply.json()["output"][0]["content"][0]["text"] == "Bonjour"
    assert stored.status_code == 200  # the SQLite store holds it
    assert replay.requests[0]["model"] == "claude-haiku-4-5"
    assert replay.paths == ["/v1/messages"]
    assert replay.headers[0]["x-api-key"] == "sk-orspec-upstream"


def test_gemini_in_one_command_with_its_usual_key():
    answer = b'data: {"candidates": [{"content": {"parts": [{"text": "Ciao"}], "role": "model"}, "finishReason": "STOP"}]}\r\n\r\n'
    with replayed() as (root, replay):
        replay.answer(answer)
        options = ("--gateway", "gemini", "--upstream", root + "/v1beta", "--model", "gpt-4o=gemini-2.5-flash")
        with gateway_serve(*options, "--store", "memory:", env=environment(GEMINI_API_KEY="AIza-test")) as base:
            reply = httpx.post(base + "/responses", json={"model": "gpt-4o", "input": "hi"}, headers=HEADERS)
    assert reply.status_code == 200, reply.text
    assert reply.json()["output"][0]["content"][0]["text"] == "Ciao"
    assert replay.paths == ["/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"]
    assert replay.headers[0]["x-goog-api-key"] == "AIza-test"


def test_a_deployments_thinking_budgets_and_levels_apply():
    with replayed() as (root, replay):
        replay.answer(ANTHROPIC_TEXT)
        replay.answer(ANTHROPIC_TEXT)
        options = ("--gateway", "anthropic-messages", "--upstream", root, "--thinking-budget", "low=2048")
        options += ("--thinking-level", "xhigh=high")
        with gateway_serve(*options, "--store", "memory:", env=environment(ANTHROPIC_API_KEY="sk-ant")) as base:
            for model in ("claude-sonnet-4-5", "claude-opus-4-6"):
                body = {"model": model, "input": "hi", "reasoning": {"effort": "low" if "sonnet" in model else "xhigh"}}
                reply = httpx.post(base + "/responses", json=body, headers=HEADERS)
                assert reply.status_code == 200, reply.text
    budget, adaptive = replay.requests
    assert budget["thinking"] == {"type": "enabled", "budget_tokens": 2048} and budget["max_tokens"] == 4096 + 2048
    assert adaptive["thinking"] == {"type": "adaptive"} and "output_config" not in adaptive  # high: the default


def test_a_gemini_deployments_thinking_level_applies():
    answer = b'data: {"candidates": [{"content": {"parts": [{"text": "Ciao"}], "role": "model"}, "finishReason": "STOP"}]}\r\n\r\n'
    with replayed() as (root, replay):
        replay.answer(answer)
        options = ("--gateway", "gemini", "--upstream", root + "/v1beta", "--thinking-level", "medium=high")
        with gateway_serve(*options, "--store", "memory:", env=environment(GEMINI_API_KEY="AIza-test")) as base:
            body = {
                "model": "gemini-3-pro-preview",
                "input": "hi",
                "reasoning": {"effort": "medium", "summary": "auto"},
            }
            reply = httpx.post(base + "/responses", json=body, headers=HEADERS)
    assert reply.status_code == 200, reply.text
    assert replay.requests[0]["generationConfig"]["thinkingConfig"] == {
        "thinkingLevel": "high",
        "includeThoughts": True,
    }


def test_a_gateway_with_workers_and_a_shared_store(tmp_path):
    with replayed() as (root, replay):
        for _ in range(4):
            replay.answer(chat_text("From a worker"))
        options = ("--gateway", "chat-completions", "--upstream", root + "/v1", "--workers", "2")
        env = environment(ORSPEC_UPSTREAM_API_KEY="sk-up")
        with gateway_serve(*options, "--store", str(tmp_path / "w.sqlite3"), env=env) as base:
            replies = [
                httpx.post(base + "/responses", json={"model": "m", "input": "hi"}, headers=HEADERS) for _ in range(4)
            ]
    assert [r.status_code for r in replies] == [200] * 4
    assert {r.json()["output"][0]["content"][0]["text"] for r in replies} == {"From a worker"}
    assert {h["authorization"] for h in replay.headers} == {"Bearer sk-up"}  # each worker read the key


def test_the_upstream_timeout_applies():
    with replayed() as (root, replay):
        held = threading.Event()
        replay.answer([chunk({"role": "assistant", "content": "Hel"}), held, DONE])
        options = ("--gateway", "chat-completions", "--upstream", root + "/v1", "--upstream-timeout", "0.5")
        try:
            with gateway_serve(*options, "--store", "memory:", env=environment()) as base:
                started = time.monotonic()
                reply = httpx.post(base + "/responses", json={"model": "m", "input": "hi"}, headers=HEADERS, timeout=30)
                took = time.monotonic() - started
        finally:
            held.set()
    assert reply.status_code == 502 and reply.json()["error"]["code"] == "upstream_stream_incomplete"
    assert took < cpu_time.scaled(10)  # the upstream's silence ended the turn, not the client's timeout


@pytest.mark.parametrize(
    ("arguments", "env", "expected"),
    [
        (
            ["--gateway", "anthropic-messages"],
            {},
            "orspec: --gateway anthropic-messages: set $ORSPEC_UPSTREAM_API_KEY or $ANTHROPIC_API_KEY to the"
            " upstream's API key (never a flag: it would show in the process list)",
        ),
        (
            ["--gateway", "chat-completions"],
            {},
            "orspec: --gateway chat-completions needs --upstream URL: the API root, e.g. https://api.openai.com/v1",
        ),
        (["--gateway", "nope"], {}, "orspec: --gateway nope: no such gateway; choose one of "),
        (["--upstream", "http://127.0.0.1:9/v1"], {}, "orspec: --upstream needs --gateway NAME ("),
        (
            ["--gateway", "chat-completions", "--upstream", "http://127.0.0.1:9/v1", "--model", "=x"],
            {},
            "orspec: --model =x: give REQUESTED=UPSTREAM, or UPSTREAM alone for every request",
        ),
        (
            ["--gateway", "chat-completions", "--upstream", "127.0.0.1:9"],
            {},
            "orspec: --upstream 127.0.0.1:9: not an http:// or https:// URL",
        ),
        (
            ["--gateway", "anthropic-messages", "--thinking-budget", "low=lots"],
            {"ANTHROPIC_API_KEY": "sk-ant"},
            "orspec: --thinking-budget low=lots: give EFFORT=TOKENS, TOKENS a whole number, e.g. low=2048",
        ),
        (
            ["--gateway", "gemini", "--thinking-level", "xhigh"],
            {"GEMINI_API_KEY": "AIza-test"},
            "orspec: --thinking-level xhigh: give EFFORT=LEVEL, e.g. xhigh=high",
        ),
        (
            ["--gateway", "anthropic-messages", "--thinking-budget", "low=512"],
            {"ANTHROPIC_API_KEY": "sk-ant"},
            "orspec: --gateway anthropic-messages: thinking budget low=512: a whole number of tokens, at least 1024",
        ),
        (
            ["--gateway", "gemini", "--thinking-budget", "minimal=0"],
            {"GEMINI_API_KEY": "AIza-test"},
            "orspec: --gateway gemini: thinking budget: no effort 'minimal'; the efforts are none, low, medium,"
            " high, xhigh",
        ),
        (
            ["--gateway", "chat-completions", "--upstream", "http://127.0.0.1:9/v1", "--thinking-level", "low=low"],
            {},
            "orspec: --thinking-level is for --gateway anthropic-messages or gemini, not chat-completions",
        ),
        (["--thinking-budget", "low=2048"], {}, "orspec: --thinking-budget needs --gateway NAME ("),
    ],
    ids=[
        "no-key", "no-upstream", "unknown", "upstream-alone", "bad-model", "bad-url", "budget-not-a-number",
        "level-without-value", "budget-below-anthropics-least", "budget-of-no-effort", "thinking-for-chat",
        "thinking-without-gateway",
    ],
)  # fmt: skip
def test_a_gateway_that_cannot_be_configured_is_one_line(tmp_path, arguments, env, expected):
    args = ["serve", "--port", "0", "--store", "memory:", *arguments]
    done = cli_process.run(args, cwd=tmp_path, env=environment(**env), timeout=300)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(expected), done.stderr
    assert "Traceback" not in done.stderr


def test_the_help_offers_every_registered_gateway_and_no_upstream_key_flag():
    done = run_orspec("serve", "--help")
    assert done.returncode == 0
    help_text = " ".join(done.stdout.split())
    # The clients' keys, the metrics key and the sealing key; the upstream's key has no flag (it would show in the process list).
    keys = {flag for flag in re.findall(r"--[a-z-]+", help_text) if "key" in flag}
    assert keys == {"--api-key", "--api-keys-file", "--metrics-key", "--reasoning-key"}
    assert "$ORSPEC_UPSTREAM_API_KEY" in help_text
    assert "--thinking-budget EFFORT=TOKENS" in help_text and "--thinking-level EFFORT=LEVEL" in help_text
    assert "with --gateway anthropic-messages or gemini: the thinking budget" in help_text
    for name, gateway in GATEWAYS.items():
        assert name in help_text and f"${gateway.key_variable}" in help_text
