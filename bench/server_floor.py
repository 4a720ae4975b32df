"""The server's own work per request and per streamed event, in-process, with the floor beside it.

`server_bench.py` measures the command lines users run, where uvicorn, h11 and the socket cost
every server the same ~120 µs per request, and a busy machine moves every figure. This calls
each ASGI app straight from a loop (no uvicorn, no socket, no command line) and times every
call, so the app's own work shows, steady under load (the 10th percentile is taken):

- `orspec`: `create_app` with an in-memory store and a provider that streams text deltas as fast
  as it can (`--events` of them for the input "long", else 8);
- `starlette`, `fastapi`: the minimal app and the peer of `server_bench.py`, sending back the
  bytes `orspec` produced;
- `floor`: a bare ASGI callable doing only what any server of this API must do for the same
  request: check the bearer token and the media type, read and decode the body, validate it
  strictly with the same request model, build the response object, run the same provider,
  keep the text, store the record as JSON, send the JSON answer (or, streaming, each delta as a
  pre-rendered SSE frame). No acceptance checks, no emitter, no state machine: the limit of
  orspec's design in Python, not a server one could ship.

    python bench/server_floor.py [--requests 4000] [--rounds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import server_bench as bench
from orjson import dumps

KINDS = ("orspec", "floor", "starlette", "fastapi")
LONG_STREAM = {"input": "long", "stream": True}


class _Deltas:
    """A provider that streams text deltas as fast as it can: `n` for the input "long", else 8."""

    def __init__(self, n: int):
        self.n = n

    async def respond(self, request):
        from openresponses_runtime.server import MessageStart, TextDelta

        text = request.input[-1]["content"][0]["text"] if request.input else ""
        yield MessageStart()
        for _ in range(self.n if text == "long" else 8):
            yield TextDelta("token ")


def make_orspec_app(events: int):
    from openresponses_runtime.server import MemoryStore, create_app

    return create_app(_Deltas(events), store=MemoryStore(), api_keys=bench.KEY)


def make_floor_app(events: int):
    from openresponses_runtime import models
    from openresponses_runtime.server import response_skeleton
    from openresponses_runtime.server.app import input_items
    from openresponses_runtime.server.ids import new_id

    provider = _Deltas(events)
    records: dict[str, bytes] = {}
    key = bench.KEY.encode()
    decoder = json.JSONDecoder()

    async def app(scope, receive, send):
        headers = dict(scope["headers"])
        if (
            not hmac.compare_digest(headers[b"authorization"][7:], key)
            or headers[b"content-type"] != b"application/json"
        ):
            raise RuntimeError("the floor serves the bench's request only")
        raw = (await receive())["body"]
        data = decoder.decode(raw.decode())
        models.CreateResponseBody.model_validate_json(raw, strict=True)
        own = input_items(data.get("input"))
        response = response_skeleton(data, new_id("resp"), data.get("model") or "default")
        request = SimpleNamespace(input=own)
        item = {"id": new_id("msg"), "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        frame = (
            b'event: d\ndata: {"type":"d","item_id":"%s","delta":%%b,"sequence_number":%%d}\n\n' % item["id"].encode()
        )
        chunks = []
        stream = data.get("stream")
        if stream:
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
            )
        async for step in provider.respond(request):
            text = getattr(step, "text", None)
            if text is not None:
                chunks.append(text)
                if stream:
                    await send(
                        {"type": "http.response.body", "body": frame % (dumps(text), len(chunks)), "more_body": True}
                    )
        item["content"].append({"type": "output_text", "text": "".join(chunks), "annotations": [], "logprobs": []})
        item["status"] = "completed"
        response.update(output=[item], status="completed", completed_at=int(time.time()))
        encoded = dumps(response)
        head = dumps({"previous_response_id": None, "input": own, "output": response["output"]})
        records[response["id"]] = head[:-1] + b',"response":' + encoded + b"}"
        if stream:
            await send({"type": "http.response.body", "body": b"event: r\ndata: %b\n\n" % encoded, "more_body": False})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", str(len(encoded)).encode()), (b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": encoded})

    return app


def _scope(body: bytes) -> dict:
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/v1/responses", "raw_path": b"/v1/responses", "query_string": b"", "root_path": "",
        "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 50000), "state": {},
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()), (b"authorization", f"Bearer {bench.KEY}".encode())],
    }  # fmt: skip


async def _call(app, body: bytes) -> bytes:
    sent = []
    delivered = False

    async def receive():
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client never leaves

    async def send(message):
        sent.append(message.get("body", b""))

    await app(_scope(body), receive, send)
    return b"".join(sent)


def measure(apps: dict, body: bytes, count: int, rounds: int) -> dict[str, list[int]]:
    async def one(app) -> list[int]:
        times = []
        clock = time.perf_counter_ns
        for _ in range(count):
            started = clock()
            await _call(app, body)
            times.append(clock() - started)
        return times

    taken: dict[str, list[int]] = {name: [] for name in apps}
    for _ in range(rounds):
        for name, app in apps.items():  # alternating, so a busy moment touches all alike
            taken[name] += asyncio.run(one(app))
    return {name: sorted(times) for name, times in taken.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000, help="requests per app per round")
    parser.add_argument("--events", type=int, default=2000, help="deltas in the streamed response")
    parser.add_argument("--streams", type=int, default=15, help="streamed responses per app per round")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()

    fixtures = Path(tempfile.mkdtemp(prefix="orspec-server-floor-"))
    recorder = make_orspec_app(args.events)
    for name, request in (
        ("response.json", bench.SMALL),
        ("long.sse", LONG_STREAM),
        ("short.sse", bench.SHORT_STREAM),
    ):
        (fixtures / name).write_bytes(asyncio.run(_call(recorder, json.dumps(request).encode())))
    makers = {
        "orspec": lambda: make_orspec_app(args.events),
        "floor": lambda: make_floor_app(args.events),
        "starlette": lambda: bench.make_starlette_app(fixtures),
        "fastapi": lambda: bench.make_fastapi_app(fixtures),
    }
    apps = {name: makers[name]() for name in KINDS}
    requests = measure(apps, json.dumps(bench.SMALL).encode(), args.requests, args.rounds)
    streams = measure(apps, json.dumps(LONG_STREAM).encode(), args.streams, args.rounds)

    def pct(values: list[int], q: float, per: int = 1) -> float:
        return values[int(len(values) * q)] / 1000 / per

    print(f"server_floor: in-process, no uvicorn; {args.rounds} rounds of {args.requests} requests and "
          f"{args.streams} streams of {args.events} deltas per app, apps alternating")  # fmt: skip
    print(f"{'app':10} {'µs/request p10':>15} {'median':>8}   {'µs/event p10':>13} {'median':>8}")
    for name in KINDS:
        r, s = requests[name], streams[name]
        print(
            f"{name:10} {pct(r, 0.1):15.1f} {pct(r, 0.5):8.1f}   {pct(s, 0.1, args.events):13.2f} {pct(s, 0.5, args.events):8.2f}"
        )
    o, f = requests["orspec"], requests["fastapi"]
    print(f"\norspec's own work per request: {pct(o, 0.1) / pct(f, 0.1):.2f}x the FastAPI peer's, "
          f"{pct(o, 0.1) / pct(requests['floor'], 0.1):.2f}x the floor's; per streamed event "
          f"{pct(streams['orspec'], 0.1) / pct(streams['floor'], 0.1):.2f}x the floor's")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
