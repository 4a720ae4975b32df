"""The server observed (`create_app(observability=...)`): its metrics move with what it serves,
`/readyz` follows the store through an outage, each request is one access record with its id
and never the prompt or the key, and each request is a trace span with the GenAI attributes."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import subprocess
import sys
import time
from contextlib import contextmanager

import httpx
import pytest
from openresponses_runtime.server import DemoProvider, MemoryStore, Observability, SQLiteStore, create_app
from openresponses_runtime.server.observability import LOGGER, JSONFormatter, configure_logging
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from .. import cpu_time
from ..conftest import run_orspec
from ..server_helpers import API_KEY, METRICS_KEY, free_port, live_server, observed, served_process

PROMPT = "my secret prompt, never logged"
HEADERS = {"Authorization": f"Bearer {API_KEY}"}


def observed_app(store=None, **settings):
    return create_app(
        DemoProvider(delay=0),
        store=MemoryStore() if store is None else store,
        api_keys=API_KEY,
        observability=Observability(**{"metrics_key": METRICS_KEY, **settings}),
    )


def metrics(root: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of `/metrics` (fetched with the metrics key), by name and labels."""
    answer = httpx.get(root + "/metrics", headers={"Authorization": f"Bearer {METRICS_KEY}"}, timeout=10)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def requests_of(samples, status: str, code: str = "", operation: str = "createResponse") -> float:
    labels = frozenset({"operation": operation, "status": status, "code": code}.items())
    return samples.get(("openresponses_requests_total", labels), 0.0)


@contextmanager
def access_records():
    """The access logger's records as JSON lines, as `configure_logging("json")` writes them."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JSONFormatter())
    logger = logging.getLogger(LOGGER)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    lines: list[str] = []
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        lines.extend(out.getvalue().splitlines())


def test_counters_move_with_requests_streams_errors_and_tokens():
    app = observed_app()
    with live_server(app) as base:
        root = base.removesuffix("/v1")
        before = metrics(root)
        assert requests_of(before, "200") == 0
        done = httpx.post(base + "/responses", json={"input": PROMPT}, headers=HEADERS, timeout=10).json()
        streamed = httpx.post(base + "/responses", json={"input": "hi", "stream": True}, headers=HEADERS, timeout=10)
        assert streamed.status_code == 200 and streamed.text.endswith("data: [DONE]\n\n")
        bad = httpx.post(base + "/responses", content=b"{", headers={**HEADERS, "Content-Type": "application/json"})
        assert bad.status_code == 400
        assert httpx.post(base + "/responses", json={"input": "x"}).status_code == 401
        missing = httpx.get(base + "/responses/resp_nothing", headers=HEADERS)
        assert missing.status_code == 404
        after = metrics(root)
    assert requests_of(after, "200") == 2
    assert requests_of(after, "400", "invalid_json") == 1
    assert requests_of(after, "401", "missing_api_key") == 1
    assert requests_of(after, "404", missing.json()["error"]["code"], "getResponse") == 1
    durations = [v for (name, _), v in after.items() if name == "openresponses_request_duration_seconds_count"]
    assert sum(durations) == 5
    assert after["openresponses_time_to_first_byte_seconds_count", frozenset({("operation", "createResponse")})] == 4
    assert after["openresponses_active_streams", frozenset()] == 0
    assert after["openresponses_active_connections", frozenset({("kind", "http")})] == 0
    stream_usage = json.loads(streamed.text.split("\n\n")[-3].split("data: ", 1)[1])["response"]["usage"]
    tokens = {kind: after["openresponses_tokens_total", frozenset({("type", kind)})] for kind in ("input", "output")}
    assert tokens == {
        kind: done["usage"][f"{kind}_tokens"] + stream_usage[f"{kind}_tokens"] for kind in ("input", "output")
    }
    assert tokens["input"] > 0 and tokens["output"] > 0
    store_ops = {
        dict(labels)["operation"]: value
        for (name, labels), value in after.items()
        if name == "openresponses_store_operation_seconds_count"
    }
    assert store_ops == {"put": 2, "get": 1, "chain": 0, "delete": 0}  # two responses saved, one looked up


@pytest.mark.slow
def test_active_streams_while_a_stream_runs():
    app = create_app(DemoProvider(delay=0.2), store=MemoryStore(), api_keys=API_KEY, observability=observed())
    with live_server(app) as base:
        root = base.removesuffix("/v1")
        body = {"input": "one two three four five", "stream": True}
        with httpx.stream("POST", base + "/responses", json=body, headers=HEADERS, timeout=30) as stream:
            chunks = stream.iter_bytes()
            next(chunks)
            during = metrics(root)
            rest = b"".join(chunks)
        assert rest.endswith(b"data: [DONE]\n\n")
        after = metrics(root)
    assert during["openresponses_active_streams", frozenset()] == 1
    assert during["openresponses_active_connections", frozenset({("kind", "http")})] == 1
    assert after["openresponses_active_streams", frozenset()] == 0


def test_probes_need_no_key_and_readyz_is_503_while_the_store_is_down(tmp_path):
    path = tmp_path / "responses.sqlite3"
    app = observed_app(SQLiteStore(path))
    with live_server(app) as base:
        root = base.removesuffix("/v1")
        assert httpx.post(base + "/responses", json={"input": PROMPT}, headers=HEADERS).status_code == 200
        assert httpx.get(root + "/healthz").json() == {"status": "ok"}
        assert httpx.get(root + "/readyz").json() == {"status": "ready"}
        healthy = path.read_bytes()
        for suffix in ("-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        path.write_bytes(b"this is no longer a database " * 200)  # the outage: SQLITE_NOTADB
        down = httpx.get(root + "/readyz")
        assert down.status_code == 503 and down.headers["retry-after"] == "5"
        assert down.json()["error"]["code"] == "store_unavailable"
        assert httpx.get(root + "/healthz").status_code == 200  # the process still lives
        path.write_bytes(healthy)
        assert httpx.get(root + "/readyz").status_code == 200  # back without a restart


class FrozenStore(MemoryStore):
    """A store whose reads never come back (a database stopped with SIGSTOP)."""

    async def get(self, response_id):
        await asyncio.sleep(3600)


def test_readyz_gives_a_frozen_store_its_deadline_only():
    app = observed_app(FrozenStore(), readiness_timeout=0.2)
    with live_server(app) as base:
        answer = httpx.get(base.removesuffix("/v1") + "/readyz", timeout=10)
    assert answer.status_code == 503 and answer.elapsed.total_seconds() < cpu_time.scaled(2)
    error = answer.json()["error"]
    assert error["code"] == "store_unavailable" and "0.2 s" in error["message"]


def test_one_json_access_record_per_request_with_its_id_and_no_prompt_or_key():
    app = observed_app()
    with access_records() as lines, live_server(app) as base:
        given = httpx.post(
            base + "/responses", json={"input": PROMPT}, headers={**HEADERS, "X-Request-Id": "trace-42.a:b"}
        )
        hostile = "bad id; <script>/{}" + "x" * 300  # nothing a log or a header would take as syntax
        sanitized = httpx.post(
            base + "/responses", json={"input": PROMPT, "stream": True}, headers={**HEADERS, "X-Request-Id": hostile}
        )
        made = httpx.post(base + "/responses", json={"input": PROMPT}, headers={"Authorization": "Bearer wrong-key"})
    assert given.headers["x-request-id"] == "trace-42.a:b"
    assert sanitized.headers["x-request-id"] == ("badid" + "script" + "x" * 300)[:128]
    assert made.headers["x-request-id"].startswith("req_") and made.status_code == 401
    assert len(lines) == 3
    records = [json.loads(line) for line in lines]
    for line in lines:
        assert PROMPT not in line and "wrong-key" not in line and API_KEY not in line
    first, second, third = records
    assert first["request_id"] == "trace-42.a:b" and first["operation"] == "createResponse"
    assert (first["transport"], first["status"], first["code"], first["stream"]) == ("http", 200, None, False)
    assert first["response_id"] == given.json()["id"] and first["model"] == given.json()["model"]
    assert first["input_tokens"] == given.json()["usage"]["input_tokens"] > 0
    assert first["output_tokens"] == given.json()["usage"]["output_tokens"] > 0
    assert 0 < first["ttfb_ms"] <= first["duration_ms"]
    assert second["request_id"] == sanitized.headers["x-request-id"] and second["stream"] is True
    assert (third["status"], third["code"]) == (401, "invalid_api_key")
    assert third["request_id"] == made.headers["x-request-id"]
    assert all(r["level"] == "info" and r["logger"] == LOGGER for r in records)


def test_a_trace_per_request_with_the_genai_attributes_and_child_spans():
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = observed_app(tracer_provider=tracer_provider)
    with live_server(app) as base:
        body = {"input": PROMPT, "model": "demo-model", "stream": True}
        streamed = httpx.post(base + "/responses", json=body, headers=HEADERS, timeout=10)
    completed = json.loads(streamed.text.split("\n\n")[-3].split("data: ", 1)[1])["response"]
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"chat demo-model", "provider demo-model", "store put"}
    server = spans["chat demo-model"]
    assert {k: server.attributes[k] for k in server.attributes if k.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "demo-model",
        "gen_ai.response.model": "demo-model",
        "gen_ai.response.id": completed["id"],
        "gen_ai.usage.input_tokens": completed["usage"]["input_tokens"],
        "gen_ai.usage.output_tokens": completed["usage"]["output_tokens"],
    }
    assert server.attributes["http.response.status_code"] == 200
    assert server.attributes["openresponses.request_id"] == streamed.headers["x-request-id"]
    for child in ("provider demo-model", "store put"):
        assert spans[child].parent.span_id == server.context.span_id
        assert spans[child].context.trace_id == server.context.trace_id
    assert PROMPT not in json.dumps([dict(span.attributes) for span in spans.values()])


def test_pool_stats_of_a_store_are_gauges():
    class PooledStore(MemoryStore):
        def pool_stats(self):
            return {"size": 4, "idle": 3, "waiting": 0}

    app = observed_app(PooledStore())
    with live_server(app) as base:
        samples = metrics(base.removesuffix("/v1"))
    pool = {
        dict(labels)["state"]: value
        for (name, labels), value in samples.items()
        if name == "openresponses_store_pool_connections"
    }
    assert pool == {"size": 4, "idle": 3, "waiting": 0}


@pytest.mark.process
def test_without_the_extra_nothing_is_imported_and_asking_for_it_says_which_extra():
    script = """
import sys
sys.modules["prometheus_client"] = None  # as if the extra were not installed
sys.modules["opentelemetry"] = None
from openresponses_runtime.server import DemoProvider, MemoryStore, create_app
create_app(DemoProvider(), store=MemoryStore(), api_keys="k")
try:
    create_app(DemoProvider(), store=MemoryStore(), api_keys="k", observability=True)
except ImportError as exc:
    print(exc)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "observability needs the observability extra: pip install 'openresponses-runtime[observability]'"
    )
    plain = "import sys; from openresponses_runtime.server import create_app; print(sorted(m for m in sys.modules if m.startswith(('prometheus', 'opentelemetry'))))"
    assert subprocess.run([sys.executable, "-c", plain], capture_output=True, text=True, timeout=60).stdout == "[]\n"


def test_configure_logging_refuses_an_unknown_format():
    with pytest.raises(ValueError, match="unknown log format 'xml': use text or json"):
        configure_logging("xml")


@pytest.mark.process
def test_orspec_serve_log_format_json_metrics_and_readyz(tmp_path):
    port = free_port()
    log_file = tmp_path / "serve.log"
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY]
    command += ["--store", "memory:", "--delay", "0", "--log-format", "json", "--metrics-key", METRICS_KEY]
    with log_file.open("w") as stderr, served_process(command, port=port, stderr=stderr) as base:
        root = base.removesuffix("/v1")
        answer = httpx.post(base + "/responses", json={"input": PROMPT}, headers=HEADERS, timeout=10)
        assert answer.status_code == 200
        assert httpx.get(root + "/readyz").status_code == 200
        assert requests_of(metrics(root), "200") == 1
    records = [json.loads(line) for line in log_file.read_text().splitlines() if line.startswith("{")]
    (access,) = [r for r in records if r["logger"] == LOGGER and r["operation"] == "createResponse"]
    assert access["request_id"] == answer.headers["x-request-id"] and access["status"] == 200
    assert PROMPT not in log_file.read_text() and API_KEY not in log_file.read_text()


@pytest.mark.process
def test_a_scaffolded_provider_observes_and_logs_json(tmp_path):
    out = tmp_path / "proj"
    done = run_orspec("scaffold", "provider", "Watched Demo", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert '"openresponses-runtime[observability]' in (out / "pyproject.toml").read_text()
    code = """
from openresponses_runtime.server import serving
from starlette.testclient import TestClient
import watched_demo.__main__ as entry

served = []
serving.serve = lambda app, **options: served.append(app)
assert entry.main(["--api-key", "k", "--store", "memory:", "--log-format", "json", "--metrics-key", "m"]) == 0
client = TestClient(served[-1])
answer = client.post("/v1/responses", json={"input": "PROMPT"}, headers={"Authorization": "Bearer k"})
print(answer.status_code, answer.headers["x-request-id"])
metrics = client.get("/metrics", headers={"Authorization": "Bearer m"}).text
print(client.get("/readyz").status_code, "openresponses_requests_total" in metrics)
""".replace("PROMPT", PROMPT)
    env = os.environ | {"PYTHONPATH": str(out / "src")}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    answered, probed = result.stdout.splitlines()
    status, request_id = answered.split()
    assert status == "200" and probed == "200 True"
    (access,) = [json.loads(line) for line in result.stderr.splitlines() if LOGGER in line]
    assert access["request_id"] == request_id and access["operation"] == "createResponse"
    assert PROMPT not in result.stderr


def test_a_websocket_is_an_active_connection_and_its_turns_are_stored_through_the_watched_store():
    from websockets.sync.client import connect

    from ..server_helpers import ws_turn

    app = observed_app()
    with live_server(app) as base:
        root = base.removesuffix("/v1")
        with connect(base.replace("http://", "ws://") + "/responses", additional_headers=HEADERS) as ws:
            assert ws_turn(ws, input="hi")[-1]["type"] == "response.completed"
            during = metrics(root)
        websockets = ("openresponses_active_connections", frozenset({("kind", "websocket")}))
        deadline = time.monotonic() + 5  # the server ends its side of the closing handshake on its own time
        while metrics(root)[websockets] != 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert metrics(root)[websockets] == 0
    assert during[websockets] == 1
    assert during["openresponses_store_operation_seconds_count", frozenset({("operation", "put")})] == 1


def test_each_websocket_turn_is_one_access_record_a_count_and_a_span():
    from websockets.sync.client import connect

    from ..server_helpers import ws_turn

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = observed_app(tracer_provider=tracer_provider)
    with access_records() as lines, live_server(app) as base:
        with connect(base.replace("http://", "ws://") + "/responses", additional_headers=HEADERS) as ws:
            first = ws_turn(ws, input=PROMPT, model="demo-model")[-1]["response"]
            second = ws_turn(ws, input=PROMPT, model="demo-model", previous_response_id=first["id"])[-1]["response"]
            (unknown,) = ws_turn(ws, input=PROMPT, previous_response_id="resp_nothing")
        samples = metrics(base.removesuffix("/v1"))
    assert unknown["status"] == 404
    records = [json.loads(line) for line in lines]
    assert len(records) == 3  # one per turn; the connection itself is no request
    for line in lines:
        assert PROMPT not in line and API_KEY not in line
    for record, response in zip(records, (first, second), strict=False):
        assert record["request_id"].startswith("req_") and record["operation"] == "createResponse"
        assert (record["transport"], record["status"], record["code"], record["stream"]) == (
            "websocket",
            200,
            None,
            True,
        )
        assert record["response_id"] == response["id"] and record["model"] == "demo-model"
        assert record["input_tokens"] == response["usage"]["input_tokens"] > 0
        assert record["output_tokens"] == response["usage"]["output_tokens"] > 0
        assert 0 < record["ttfb_ms"] <= record["duration_ms"]
    assert records[0]["request_id"] != records[1]["request_id"]
    refused = records[2]
    assert (refused["transport"], refused["status"], refused["code"], refused["stream"]) == (
        "websocket",
        404,
        unknown["error"]["code"],
        False,
    )
    assert requests_of(samples, "200") == 2
    assert requests_of(samples, "404", unknown["error"]["code"]) == 1
    assert samples["openresponses_time_to_first_byte_seconds_count", frozenset({("operation", "createResponse")})] == 3
    assert samples["openresponses_active_streams", frozenset()] == 0
    tokens = {kind: samples["openresponses_tokens_total", frozenset({("type", kind)})] for kind in ("input", "output")}
    assert tokens == {kind: first["usage"][f"{kind}_tokens"] + second["usage"][f"{kind}_tokens"] for kind in tokens}
    turns = [span for span in exporter.get_finished_spans() if span.attributes.get("openresponses.operation")]
    assert [span.name for span in turns] == ["chat demo-model", "chat demo-model", "createResponse"]
    for span, record, response in zip(turns, records, (first, second), strict=False):
        assert {k: span.attributes[k] for k in span.attributes if k.startswith("gen_ai.")} == {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "demo-model",
            "gen_ai.response.model": "demo-model",
            "gen_ai.response.id": response["id"],
            "gen_ai.usage.input_tokens": response["usage"]["input_tokens"],
            "gen_ai.usage.output_tokens": response["usage"]["output_tokens"],
        }
        assert span.attributes["openresponses.request_id"] == record["request_id"]
        assert span.attributes["network.protocol.name"] == "websocket"
    assert turns[2].attributes["error.type"] == unknown["error"]["code"]
    store_spans = [span for span in exporter.get_finished_spans() if span.name == "store put"]
    assert {span.parent.span_id for span in store_spans} == {span.context.span_id for span in turns[:2]}
    assert PROMPT not in json.dumps([dict(span.attributes) for span in exporter.get_finished_spans()])


def test_a_loop_turns_log_lines_are_written_together_at_its_end_in_order():
    """`configure_logging` writes the records of one event-loop turn in one write, after the turn;
    a record from another thread first writes the lines pending before it, so the order holds."""
    from openresponses_runtime.server.observability import TurnBatchedHandler

    out = io.StringIO()
    handler = TurnBatchedHandler(out)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("orspec.test.batched")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False

    async def turn() -> list[str]:
        logger.info("one")
        logger.info("two")
        during = out.getvalue()
        await asyncio.sleep(0)  # the turn ends: its lines are written
        after = out.getvalue()
        logger.info("three")
        await asyncio.to_thread(logger.info, "from a thread")  # writes "three" first, then itself
        return [during, after, out.getvalue()]

    try:
        during, after, threaded = asyncio.run(turn())
        assert during == ""
        assert after == "one\ntwo\n"
        assert threaded == "one\ntwo\nthree\nfrom a thread\n"
        logger.info("no loop")  # outside a loop: at once
        assert out.getvalue().endswith("from a thread\nno loop\n")
    finally:
        logger.removeHandler(handler)


def test_an_access_record_takes_any_standard_format():
    """Access records skip `LogRecord`'s frame search, yet carry every attribute a `%`-format names."""
    from openresponses_runtime.server.observability import _AccessRecord, _Request

    request = _Request("req_1", "createResponse", 0.0, status=200)
    record = _AccessRecord(request, 0.002, {"request_id": "req_1"})
    formatted = logging.Formatter(
        "%(asctime)s %(name)s %(levelname)s %(process)d %(thread)d %(module)s:%(lineno)d %(message)s"
    ).format(record)
    assert f"{LOGGER} INFO {os.getpid()} " in formatted
    assert formatted.endswith("req_1 createResponse 200 in 2.0 ms")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_request_ids_made_in_a_forked_worker_differ_from_its_parents():
    from openresponses_runtime.server.observability import _new_request_id

    parent = [_new_request_id() for _ in range(2)]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one id, then out at once
        os.write(write, _new_request_id().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 100).decode()
    os.waitpid(pid, 0)
    assert len({*parent, child}) == 3
    assert child[:20] != parent[0][:20]  # drawn afresh in the child, not the parent's next bytes
