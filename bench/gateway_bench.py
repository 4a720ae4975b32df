"""The gateways' own CPU per streamed event, against the demo provider's, in one run.

Each server app runs in this process and is called straight through ASGI (no uvicorn, no socket on
the way in), streaming one response of `--events` text deltas:

- `demo`: the built-in demo model, echoing an input of `--events` words (one delta a word);
- `chat-completions`, `anthropic-messages`, `gemini`: each gateway, whose upstream is a separate process on
  loopback answering every request with a pre-made stream of `--events` text deltas in that
  upstream's own format, sent at once. The gateway's part (its HTTP client, parsing each chunk,
  translating it into steps) is in this process; the upstream's is not.

CPU is this process's (`time.process_time`), per streamed event; the apps take turns, round after
round, and the median round counts. Goal: a gateway adds at most 30% per event to the demo's cost.

The peer, litellm's proxy, is a process of its own: so then is orspec. Both translate the same
upstream stream for `POST /v1/responses` (`orspec serve --gateway chat-completions` and
`litellm --config FILE --num_workers 1`, its Responses-to-Chat-Completions bridge, set up as
`capacity_bench.py` sets it up, installed there on first use), one streamed response at a time, in
turn; CPU per streamed event is each process tree's (psutil), over `--peer-requests` responses a
round. Goal: orspec's at most 0.1x litellm's.

    python bench/gateway_bench.py [--events 2000] [--rounds 7] [--peer-requests 3] [--no-peer]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import capacity_bench as peers  # noqa: E402
import server_bench as bench  # noqa: E402
from chat_upstream import chat_chunks  # noqa: E402
from server_floor import _call  # noqa: E402

GOAL = 1.30
PEER_GOAL = 0.10


def _chat_stream(events: int) -> bytes:
    return b"".join(chat_chunks(events))


def _anthropic_stream(events: int) -> bytes:
    def event(kind: str, data: dict) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()

    message = {"id": "msg_bench", "type": "message", "role": "assistant", "model": "bench", "content": [],
               "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}  # fmt: skip
    delta = event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "token "}})
    return b"".join(
        [
            event("message_start", {"message": message}),
            event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
            delta * events,
            event("content_block_stop", {"index": 0}),
            event("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": events}}),
            event("message_stop", {}),
        ]
    )


def _gemini_stream(events: int) -> bytes:
    def chunk(parts: list, finish: str | None = None) -> bytes:
        candidate = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        usage = {"promptTokenCount": 5, "candidatesTokenCount": events, "totalTokenCount": events + 5}
        return b"data: " + json.dumps({"candidates": [candidate], "usageMetadata": usage}).encode() + b"\r\n\r\n"

    return chunk([{"text": "token "}]) * events + chunk([{"text": ""}], "STOP")


def _upstream(port: int, events: int) -> None:
    """A loopback upstream: every request gets the same pre-made stream, in its API's format."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    chat, anthropic, gemini = _chat_stream(events), _anthropic_stream(events), _gemini_stream(events)

    async def completions(request):
        await request.body()
        return Response(chat, media_type="text/event-stream")

    async def messages(request):
        await request.body()
        return Response(anthropic, media_type="text/event-stream")

    async def generate(request):
        await request.body()
        return Response(gemini, media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]),
                            Route("/v1/messages", messages, methods=["POST"]),
                            Route("/v1beta/models/{rest:path}", generate, methods=["POST"])])  # fmt: skip
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the upstream did not start")


async def _measure(calls: dict, rounds: int) -> tuple[dict[str, list[float]], dict[str, int]]:
    """CPU per delta of each app, round after round, in one event loop, as a server runs them."""
    for app, body in calls.values():  # warm up: imports, the upstream client and its connection
        await _call(app, body)
    per_event: dict[str, list[float]] = {name: [] for name in calls}
    deltas: dict[str, int] = {}
    for _ in range(rounds):
        for name, (app, body) in calls.items():  # alternating, so a busy moment touches all alike
            started = time.process_time()
            sent = await _call(app, body)
            used = time.process_time() - started
            deltas[name] = sent.count(b"event: response.output_text.delta\n")
            per_event[name].append(used / deltas[name])
    return per_event, deltas


def _served(upstream: str, events: int, rounds: int, requests: int, version: str) -> dict[str, list[float]]:
    """CPU per streamed event of `orspec serve --gateway chat-completions` and of litellm's proxy, each
    a process tree of its own, in turn, round after round."""
    import httpx
    import psutil

    work = Path(tempfile.mkdtemp(prefix="orspec-gateway-bench-"))
    env = {**os.environ, "ORSPEC_UPSTREAM_API_KEY": peers.UPSTREAM_KEY}
    litellm = peers.litellm_venv(version)
    (work / "litellm.yaml").write_text(peers.litellm_config(upstream))
    port, peer_port = _free_port(), _free_port()
    quiet = {"LITELLM_LOG": "ERROR", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    litellm_command = [str(litellm), "--config", str(work / "litellm.yaml"), "--host", "127.0.0.1",
                       "--port", str(peer_port), "--num_workers", "1"]  # fmt: skip
    body = json.loads(peers.body("bench"))
    headers = {"Authorization": f"Bearer {peers.KEY}"}
    gateways: list[peers.Gateway] = []
    try:  # each started inside, so that one failing to start leaves none behind
        gateways.append(peers.Gateway("orspec", peers.orspec_command(upstream, port), port, env, work))
        gateways.append(peers.Gateway("litellm", litellm_command, peer_port, env | quiet, work))
        per_event: dict[str, list[float]] = {gateway.name: [] for gateway in gateways}
        for gateway in gateways:
            gateway.wait()
        with httpx.Client(timeout=120) as client:

            def stream(gateway: peers.Gateway) -> int:
                with client.stream("POST", gateway.url, json=body, headers=headers) as reply:
                    raw = reply.read()
                if reply.status_code != 200 or b"response.completed" not in raw:
                    raise SystemExit(f"{gateway.name} answered {reply.status_code}: {raw[-500:]!r}")
                return raw.count(b"response.output_text.delta")

            for gateway in gateways:  # warm up: imports, the upstream connection
                stream(gateway)
            for _ in range(rounds):
                for gateway in gateways:
                    before = gateway.cpu()
                    for _ in range(requests):
                        stream(gateway)
                    per_event[gateway.name].append((gateway.cpu() - before) / (requests * events))
    except psutil.Error as exc:
        raise SystemExit(f"a gateway process went away: {exc}") from None
    finally:
        for gateway in gateways:
            gateway.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"side by side, each its own process: `{gateways[0].shown}` and `{gateways[1].shown}` "
          f"(litellm[proxy] {version}), {requests} streamed responses of {events} upstream deltas a round")  # fmt: skip
    return per_event


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000, help="text deltas in each streamed response")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--peer-requests", type=int, default=3, help="streamed responses a round, each process")
    parser.add_argument(
        "--litellm", default=peers.LITELLM_VERSION, help="litellm[proxy] version, installed on first use"
    )
    parser.add_argument("--no-peer", action="store_true", help="no litellm side (it installs litellm once)")
    args = parser.parse_args()

    from openresponses_runtime.gateways.anthropic_messages import AnthropicMessagesProvider
    from openresponses_runtime.gateways.chat_completions import ChatCompletionsProvider
    from openresponses_runtime.gateways.gemini import GeminiProvider
    from openresponses_runtime.server import DemoProvider, MemoryStore, create_app

    port = _free_port()
    upstream = multiprocessing.get_context("spawn").Process(target=_upstream, args=(port, args.events), daemon=True)
    upstream.start()
    try:
        _wait(port)
        base = f"http://127.0.0.1:{port}"
        apps = {
            "demo": (DemoProvider(delay=0), " ".join(["token"] * args.events)),
            "chat-completions": (ChatCompletionsProvider(base_url=f"{base}/v1", api_key="k", model="bench"), "long"),
            "anthropic-messages": (AnthropicMessagesProvider(base_url=base, api_key="k", model="bench"), "long"),
            "gemini": (GeminiProvider(base_url=f"{base}/v1beta", api_key="k", model="bench"), "long"),
        }
        calls = {
            name: (
                create_app(provider, store=MemoryStore(), api_keys=bench.KEY),
                json.dumps({"input": text, "stream": True}).encode(),
            )
            for name, (provider, text) in apps.items()
        }
        per_event, deltas = asyncio.run(_measure(calls, args.rounds))
        served = None if args.no_peer else _served(base, args.events, args.rounds, args.peer_requests, args.litellm)
    finally:
        upstream.terminate()
        upstream.join(10)

    print(f"gateway_bench: in-process ASGI, {args.rounds} rounds, each app streaming one response per round; "
          "CPU of this process (the upstream's own is not counted)")  # fmt: skip
    print(f"{'app':20} {'deltas':>7} {'µs CPU/event median':>20} {'min':>8}")
    for name, values in per_event.items():
        print(f"{name:20} {deltas[name]:7} {statistics.median(values) * 1e6:20.2f} {min(values) * 1e6:8.2f}")
    demo = statistics.median(per_event["demo"])
    print()
    for name in ("chat-completions", "anthropic-messages", "gemini"):
        ratio = statistics.median(per_event[name]) / demo
        verdict = "MET" if ratio <= GOAL else "NOT MET"
        print(f"goal: {name} CPU per streamed event / demo provider's: {ratio:.2f}x  (goal <= {GOAL:.2f}x)  {verdict}")
    if served is not None:
        print()
        print(f"{'process':20} {'µs CPU/event median':>20} {'min':>8}")
        for name, values in served.items():
            print(f"{name:20} {statistics.median(values) * 1e6:20.2f} {min(values) * 1e6:8.2f}")
        ratio = statistics.median(served["orspec"]) / statistics.median(served["litellm"])
        verdict = "MET" if ratio <= PEER_GOAL else "NOT MET"
        print(f"goal: orspec gateway CPU per streamed event / litellm proxy's: {ratio:.3f}x  "
              f"(goal <= {PEER_GOAL:.2f}x)  {verdict}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
