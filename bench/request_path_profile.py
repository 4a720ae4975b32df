"""Where one non-streamed create's microseconds go, layer by layer, in-process.

The app `orspec serve --store memory: --delay 0` builds (`create_app` with the demo model and an
in-memory store) is called straight from a loop, as `server_floor.py` calls it (no uvicorn, no
socket), with `{"input": "hello"}`; then each layer of its path is called alone, with what it
takes on that path, and timed the same way. What the whole costs beyond the layers' sum is the
calls between them (coroutines, arguments, the operation's lookup) and what the layers cost when
they run one after another rather than alone in a loop (their code and data no longer in cache). CPU time, the fastest of
`--rounds` loops of `--requests` calls: steady on a busy machine, and comparable row to row.

The HTTP server (uvicorn, httptools, the socket) is not here: `server_bench.py` and
`http_layer_bench.py` measure it, the same for every app.

    python bench/request_path_profile.py [--requests 3000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import tempfile
import time
from pathlib import Path

import server_floor
from openresponses_runtime import models
from openresponses_runtime.server import DemoProvider, MemoryStore, Observability, create_app
from openresponses_runtime.server import app as app_module
from openresponses_runtime.server.asgi import JSONAnswer
from openresponses_runtime.server.auth import bearer
from openresponses_runtime.server.bodies import check_content_type, parse_body, read_body, request_headers
from openresponses_runtime.server.emitter import Emitter
from openresponses_runtime.server.observability import configure_logging
from openresponses_runtime.server.shutdown import ending
from openresponses_runtime.server.store import StoredResponse
from openresponses_runtime.server.wire import dumps

BODY = json.dumps({"input": "hello"}).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="calls per loop")
    parser.add_argument("--rounds", type=int, default=7, help="loops per row; the fastest is taken")
    args = parser.parse_args()
    rows = asyncio.run(profile(args.requests, args.rounds))
    print(f"request_path_profile: µs of CPU per non-streamed create, in-process, fastest of {args.rounds} loops")
    for label, value in rows:
        print(f"  {label:58} {value:6.1f}")
    return 0


async def profile(count: int, rounds: int) -> list[tuple[str, float]]:
    async def timed(call) -> float:
        fastest = float("inf")
        for _ in range(rounds):
            started = time.process_time_ns()
            for _ in range(count):
                result = call()
                if asyncio.iscoroutine(result):
                    await result
            fastest = min(fastest, (time.process_time_ns() - started) / count / 1000)
        return fastest

    def make(observed: bool):
        observability = Observability() if observed else False
        return create_app(
            DemoProvider(delay=0), store=MemoryStore(), api_keys=server_floor.bench.KEY, observability=observability
        )

    app = make(False)
    server = app.state.openresponses
    turns = server.turns
    scope = server_floor._scope(BODY)
    model = models.CreateResponseBody

    async def receive() -> dict:
        return {"type": "http.request", "body": BODY, "more_body": False}

    async def send(message: dict) -> None:
        pass

    data, body = parse_body(BODY, model, turns.bounds)
    response, request, own_input, policy = await turns.prepare(dict(data), body)
    steps = [step async for step in turns.provider.respond(request)]

    def emit() -> Emitter:
        emitter = Emitter({**response, "output": []}, policy, events=False, seal=turns.seal(data))
        for step in steps:
            emitter.step(step)
        emitter.finish()
        return emitter

    finished = emit().response
    encoded = dumps(finished)
    store = MemoryStore()

    async def provider() -> None:
        async for _ in turns.provider.respond(request):
            pass

    def scope_only() -> None:
        with ending():
            pass

    async def done() -> int:
        return 0

    async def noop_app(scope, receive, send) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    whole = await timed(lambda: server_floor._call(app, BODY))
    harness = await timed(lambda: server_floor._call(noop_app, BODY))
    layers = [
        ("auth: the bearer token, the tenant", lambda: server.keys.authorize(bearer(request_headers(scope)[0]))),
        (
            "media type, body read",
            lambda: (check_content_type("application/json"), read_body(receive, "18", 1 << 24))[1],
        ),
        ("body: JSON decode, bounds, validation", lambda: parse_body(BODY, model, turns.bounds)),
        ("turn: acceptance, tenancy, sealing, skeleton", lambda: turns.prepare(dict(data), body)),
        ("the handler: the demo model's steps", provider),
        ("emitter: the steps made a response", emit),
        ("cap on non-streamed creates: take, release", lambda: server.pending.take("owner")()),
        ("shutdown scope", scope_only),
        ("client watch (the response never waits)", lambda: app_module.unless_gone(receive, done())),
        ("serialise the response", lambda: dumps(finished)),
        (
            "store: the record, put",
            lambda: store.put(StoredResponse(finished["id"], None, own_input, [], finished, encoded)),
        ),
        ("response writing", lambda: JSONAnswer(encoded, ())(scope, receive, send)),
    ]
    rows = [("the whole app, observability off", whole - harness)]
    total = 0.0
    for label, call in layers:
        cost = await timed(call)
        total += cost
        rows.append((f"  {label}", cost))
    rows.append(("  the rest: calls between them, their data out of cache", whole - harness - total))
    observed_app = make(True)
    observed = await timed(lambda: server_floor._call(observed_app, BODY)) - harness
    rows.append(("observer: request id, metrics, store timing (on - off)", observed - (whole - harness)))
    with tempfile.TemporaryDirectory() as folder, (Path(folder) / "access.log").open("w") as log:
        configure_logging("json", stream=log)
        logged_app = make(True)
        logged = await timed(lambda: server_floor._call(logged_app, BODY)) - harness
        for handler in logging.getLogger("openresponses_runtime").handlers:
            handler.flush()
    rows.append(("JSON access log (on with logs - on)", logged - observed))
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
