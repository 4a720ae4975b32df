"""Two tenants on one server: what key A makes, key B reaches nothing of, and A loses nothing.

On every store (memory, a SQLite file, PostgreSQL at `ORSPEC_TEST_POSTGRES`, skipped saying why
when nothing answers there), on two instances sharing one SQLite file (A on one, B on the other),
and after a restart on that file. Each refusal is compared with the answer for an id that never
existed: the same status and the same body, the id aside.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from contextlib import ExitStack, contextmanager

import httpx
import pytest
from openresponses_runtime.server import DemoProvider, MemoryStore, MessageStart, TextDelta, create_app
from openresponses_runtime.server.auth import Keys, read_keys_file
from openresponses_runtime.server.sealing import Sealer
from orspec.scaffold import scaffold
from websockets.sync.client import connect

from ..server_helpers import free_port, live_server, served_process
from .test_lifecycle import _postgres_url

KEY_A, KEY_B = "sk-tenant-a-0123456789", "sk-tenant-b-9876543210"
KEYS = [("alpha", KEY_A), ("beta", KEY_B)]
REASONING_KEY = "the servers' shared reasoning key"
MISSING = "resp_0000000000000000000000000000000000000000"


class SlowOrDemo:
    """The demo model, except for the input `forever`: text until cancelled."""

    def __init__(self) -> None:
        self.demo = DemoProvider()

    async def respond(self, request):
        if request.input and "forever" in json.dumps(request.input[-1]):
            yield MessageStart()
            while True:
                await asyncio.sleep(0.01)
                yield TextDelta("tick ")
        else:
            async for step in self.demo.respond(request):
                yield step


def _app(store):
    return create_app(SlowOrDemo(), store=store, api_keys=KEYS, reasoning_key=REASONING_KEY)


@contextmanager
def _served(store):
    with live_server(_app(store), lifespan="on") as base:
        yield base


@pytest.fixture(params=["memory", "sqlite", "postgres", "two instances", "restart"])
def bases(request, tmp_path):
    """The base URL key A speaks to, and a function giving the one B speaks to once A is done
    (for the restart: A's server stopped and another started on the same file)."""
    with ExitStack() as stack:
        if request.param in ("memory", "postgres"):
            base = stack.enter_context(_served(MemoryStore() if request.param == "memory" else _postgres_url()))
            yield base, lambda: base
            return
        path = str(tmp_path / "responses.sqlite3")
        first = ExitStack()
        stack.enter_context(first)
        base = first.enter_context(_served(path))

        def other() -> str:
            if request.param == "sqlite":
                return base
            if request.param == "restart":
                first.close()
            return stack.enter_context(_served(path))

        yield base, other


def _headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _create(base: str, key: str, **body) -> httpx.Response:
    return httpx.post(base + "/responses", json={"model": "demo", **body}, headers=_headers(key), timeout=30)


def _same_as_missing(given: httpx.Response, missing: httpx.Response, response_id: str) -> None:
    """`given` (about `response_id`) answers exactly as `missing` (about `MISSING`) does."""
    assert given.status_code == missing.status_code == 404, given.text
    assert given.text.replace(response_id, "ID") == missing.text.replace(MISSING, "ID")
    assert {k: v for k, v in given.headers.items() if k not in ("date", "content-length")} == {
        k: v for k, v in missing.headers.items() if k not in ("date", "content-length")
    }


def _a_conversation(base: str) -> tuple[str, str]:
    """Two turns of A's, stored; their ids."""
    first = _create(base, KEY_A, input="A's secret prompt").json()
    second = _create(base, KEY_A, input="and more", previous_response_id=first["id"]).json()
    assert second["status"] == "completed", second
    return first["id"], second["id"]


def test_b_reaches_nothing_of_a_and_a_loses_nothing(bases):
    base_a, other = bases
    first, second = _a_conversation(base_a)
    base_b = other()
    b = _headers(KEY_B)

    for path in ("/responses/{}", "/responses/{}/input_items"):
        given = httpx.get(base_b + path.format(second), headers=b, timeout=30)
        assert "secret" not in given.text
        _same_as_missing(given, httpx.get(base_b + path.format(MISSING), headers=b, timeout=30), second)
    for body in ({"input": "go on"}, {"input": "go on", "stream": True}, {"input": "go on", "background": True}):
        given = _create(base_b, KEY_B, previous_response_id=second, **body)
        _same_as_missing(given, _create(base_b, KEY_B, previous_response_id=MISSING, **body), second)
    compact = {"model": "demo", "input": [], "previous_response_id": second}
    given = httpx.post(base_b + "/responses/compact", json=compact, headers=b, timeout=30)
    missing = httpx.post(
        base_b + "/responses/compact", json={**compact, "previous_response_id": MISSING}, headers=b, timeout=30
    )
    assert "secret" not in given.text
    _same_as_missing(given, missing, second)
    for method, path in (("DELETE", "/responses/{}"), ("POST", "/responses/{}/cancel")):
        given = httpx.request(method, base_b + path.format(first), headers=b, timeout=30)
        _same_as_missing(given, httpx.request(method, base_b + path.format(MISSING), headers=b, timeout=30), first)

    # A's conversation is whole: read, listed, continued from its first turn through the second.
    a = _headers(KEY_A)
    for response_id in (first, second):
        assert httpx.get(base_b + f"/responses/{response_id}", headers=a, timeout=30).json()["id"] == response_id
    listed = httpx.get(base_b + f"/responses/{first}/input_items", headers=a, timeout=30).json()
    assert "A's secret prompt" in json.dumps(listed)
    assert _create(base_b, KEY_A, input="still mine", previous_response_id=second).json()["status"] == "completed"


def test_b_cannot_cancel_or_resume_a_background_run_of_a(tmp_path):
    path = str(tmp_path / "responses.sqlite3")
    with _served(path) as base_a, _served(path) as base_b:
        run = _create(base_a, KEY_A, input="forever", background=True, stream=False).json()
        b = _headers(KEY_B)
        for method, where in (("POST", "/responses/{}/cancel"), ("GET", "/responses/{}?stream=true")):
            given = httpx.request(method, base_b + where.format(run["id"]), headers=b, timeout=30)
            missing = httpx.request(method, base_b + where.format(MISSING), headers=b, timeout=30)
            _same_as_missing(given, missing, run["id"])
        assert httpx.get(base_a + f"/responses/{run['id']}", headers=_headers(KEY_A)).json()["status"] == "in_progress"
        cancelled = httpx.post(base_b + f"/responses/{run['id']}/cancel", headers=_headers(KEY_A), timeout=60)
        assert cancelled.json()["status"] == "cancelled"


def test_a_websocket_of_b_cannot_continue_a_response_of_a():
    with _served(MemoryStore()) as base:
        first, _ = _a_conversation(base)
        url = base.replace("http://", "ws://") + "/responses"
        with connect(url, additional_headers=_headers(KEY_B), open_timeout=10) as ws:
            ws.send(
                json.dumps({"type": "response.create", "model": "demo", "input": "hi", "previous_response_id": first})
            )
            given = json.loads(ws.recv(timeout=10))
            ws.send(
                json.dumps({"type": "response.create", "model": "demo", "input": "hi", "previous_response_id": MISSING})
            )
            missing = json.loads(ws.recv(timeout=10))
        assert given["status"] == 404 and given["error"]["code"] == "previous_response_not_found"
        assert json.dumps(given).replace(first, "ID") == json.dumps(missing).replace(MISSING, "ID")
        with connect(url, additional_headers=_headers(KEY_A), open_timeout=10) as ws:
            ws.send(
                json.dumps({"type": "response.create", "model": "demo", "input": "hi", "previous_response_id": first})
            )
            events = [json.loads(ws.recv(timeout=10)) for _ in range(3)]
        assert events[0]["type"] == "response.created"


def test_reasoning_sealed_for_a_is_refused_from_b():
    with _served(MemoryStore()) as base:
        body = {"input": "Say hello", "reasoning": {"effort": "low", "summary": "auto"}}
        body.update(include=["reasoning.encrypted_content"], store=False)
        first = _create(base, KEY_A, **body).json()
        items = [item for item in first["output"] if item["type"] == "reasoning"]
        assert items and items[0]["encrypted_content"]
        follow = {"input": [*items, {"role": "user", "content": "again"}], "store": False}
        refused = _create(base, KEY_B, **follow)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["code"] == "invalid_encrypted_content"
        assert refused.json()["error"]["param"] == "input[0].encrypted_content"
        assert _create(base, KEY_A, **follow).json()["status"] == "completed"


def test_a_blob_sealed_for_one_tenant_opens_for_it_only():
    sealer = Sealer("k")
    blob = sealer.seal("rs_1", {"x": 1}, tenant="owner-a")
    assert sealer.unseal("rs_1", blob, tenant="owner-a") == {"x": 1}
    for other in ("owner-b", None):
        with pytest.raises(ValueError, match="another API key"):
            sealer.unseal("rs_1", blob, tenant=other)


def test_owners_are_keyed_hashes_and_names_never_the_key():
    keys = Keys(KEYS, secret="a tenant secret")
    alpha, beta = keys.tenants
    assert (alpha.name, beta.name) == ("alpha", "beta")
    assert KEY_A not in alpha.owner and alpha.owner != beta.owner
    assert Keys(KEYS, secret="another secret").tenants[0].owner != alpha.owner  # keyed, not a plain hash
    assert keys.authorize(KEY_B) == beta


def test_an_unnamed_tenant_s_name_says_nothing_of_its_key():
    """`tenant-N` by its place among the keys: the same for any key, so a name seen in /metrics or a log
    confirms no guess (a name from the key's hash, under the public default secret, would)."""
    assert [t.name for t in Keys([KEY_A, ("beta", KEY_B), "sk-third"]).tenants] == ["tenant-1", "beta", "tenant-3"]
    assert Keys([KEY_A]).tenants[0].name == Keys([KEY_B]).tenants[0].name == "tenant-1"
    with pytest.raises(ValueError, match="same tenant name"):
        Keys([KEY_A, ("tenant-1", KEY_B)])
    with pytest.raises(ValueError, match="given twice"):
        Keys([("alpha", KEY_A), ("beta", KEY_A)])


def test_a_keys_file_names_tenants(tmp_path):
    path = tmp_path / "keys"
    path.write_text("# the team keys\n  # indented, a comment too\nalpha\tsk-a\n\nsk-lone\nbeta   sk-clé-ключ\n")
    assert read_keys_file(path) == [("alpha", "sk-a"), (None, "sk-lone"), ("beta", "sk-clé-ключ")]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("carol #Xk9secret", "a # after the start of a line"),  # was: `carol` accepted as a key
        ("dave sk-dave#tail", "a # after the start of a line"),  # was: `sk-dave` accepted, the real key refused
        ("sk-a  # a comment", "a # after the start of a line"),
        ("sk-half\u00a0other-half", "a U+00A0 character"),  # was: split into TENANT KEY
        ("erin sk-erin\u2003x", "a U+2003 character"),
        ("sk-bell\x07", "a U+0007 character"),
        ("one two three", "not 3 words"),
        ("al/ice sk-secret-alice", "a tenant name is letters"),
        ("tenant-1 sk-secret-alice", "`tenant-N` names are the unnamed keys'"),
    ],
)
def test_every_ambiguous_keys_file_line_is_an_error_naming_its_line_never_its_key(tmp_path, line, said):
    path = tmp_path / "keys"
    path.write_text(f"# first\nfrank sk-frank\n{line}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 3: ") as refused:
        read_keys_file(path)
    assert said in str(refused.value)
    assert not any(secret in str(refused.value) for secret in ("Xk9", "tail", "half", "sk-erin", "bell", "alice"))


def test_a_keys_file_refuses_a_tenant_named_twice_and_a_key_given_twice(tmp_path):
    path = tmp_path / "keys"
    path.write_text("alpha sk-a\nalpha sk-b\n")
    with pytest.raises(ValueError, match="line 2: tenant 'alpha' is named twice") as refused:
        read_keys_file(path)
    assert "sk-b" not in str(refused.value)
    path.write_text("alpha sk-shared\nbeta sk-other\ngamma sk-shared\n")  # was: merged silently
    with pytest.raises(ValueError, match="line 3: this key is given on line 1 too") as refused:
        read_keys_file(path)
    assert "sk-shared" not in str(refused.value)


def test_a_utf8_key_logs_in():
    """A key with non-ASCII letters, sent as its UTF-8 bytes, as clients send it (was: read as Latin-1, never equal)."""
    key = "sk-clé-ключ-🔑"
    header = {"Authorization": b"Bearer " + key.encode()}
    with live_server(create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys=[("intl", key)])) as base:
        made = httpx.post(base + "/responses", json={"input": "hi"}, headers=header, timeout=10)
        assert made.status_code == 200, made.text
        assert httpx.get(base + f"/responses/{made.json()['id']}", headers=header, timeout=10).status_code == 200
        latin = {"Authorization": b"Bearer " + key.encode("utf-8").decode("latin-1").encode("utf-8")}
        assert httpx.get(base + f"/responses/{made.json()['id']}", headers=latin, timeout=10).status_code == 401


def test_metrics_take_their_own_key_and_are_not_served_without_one():
    from openresponses_runtime.server import Observability

    def served(**settings):
        app = create_app(
            DemoProvider(delay=0), store=MemoryStore(), api_keys=KEYS, observability=Observability(**settings)
        )
        return live_server(app)

    with served(metrics_key="sk-metrics") as base:
        root = base.removesuffix("/v1")
        assert _create(base, KEY_A, input="hi").status_code == 200
        for token in (None, KEY_A, KEY_B, "sk-metricz"):
            headers = _headers(token) if token else {}
            refused = httpx.get(root + "/metrics", headers=headers, timeout=10)
            assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
            assert "alpha" not in refused.text
        shown = httpx.get(root + "/metrics", headers=_headers("sk-metrics"), timeout=10)
        assert shown.status_code == 200 and 'tenant="alpha"' in shown.text
    with served() as base:
        for token in (None, KEY_A):
            unserved = httpx.get(base.removesuffix("/v1") + "/metrics", headers=_headers(token) if token else {})
            assert unserved.status_code == 404 and "--metrics-key" in unserved.json()["error"]["message"]
            assert "alpha" not in unserved.text


def test_responses_stored_before_tenants_belong_to_no_key(tmp_path):
    """A row without an owner (written before this change) answers 404 to every key."""
    import sqlite3

    path = tmp_path / "responses.sqlite3"
    with _served(str(path)) as base:
        response_id = _create(base, KEY_A, input="old").json()["id"]
    with sqlite3.connect(path) as db:
        (data,) = db.execute("SELECT data FROM responses WHERE id = ?", (response_id,)).fetchone()
        record = json.loads(data)
        del record["owner"]
        db.execute("UPDATE responses SET data = ? WHERE id = ?", (json.dumps(record), response_id))
    with _served(str(path)) as base:
        for key in (KEY_A, KEY_B):
            assert httpx.get(base + f"/responses/{response_id}", headers=_headers(key)).status_code == 404


@pytest.mark.process
@pytest.mark.parametrize("command", ["orspec serve", "a scaffold's python -m"])
def test_a_keys_file_serves_its_tenants_apart(command, tmp_path):
    keys = tmp_path / "keys"
    keys.write_text(f"# two teams\nalpha {KEY_A}\n# unnamed\n{KEY_B}\n")
    port = free_port()
    env = {}
    if command == "orspec serve":
        argv = [sys.executable, "-m", "orspec", "serve", "--delay", "0"]
    else:
        scaffold("tenancy-check", tmp_path / "provider", force=True)
        argv, env = [sys.executable, "-m", "tenancy_check"], {"PYTHONPATH": str(tmp_path / "provider" / "src")}
    argv += ["--port", str(port), "--api-keys-file", str(keys), "--store", "memory:"]
    with served_process(argv, port=port, env=env) as base:
        made = _create(base, KEY_A, input="mine")
        assert made.status_code == 200, made.text
        response_id = made.json()["id"]
        assert httpx.get(base + f"/responses/{response_id}", headers=_headers(KEY_A)).status_code == 200
        assert httpx.get(base + f"/responses/{response_id}", headers=_headers(KEY_B)).status_code == 404
        assert httpx.get(base + f"/responses/{response_id}", headers=_headers("sk-other")).status_code == 401


@pytest.mark.process
def test_a_bad_keys_file_is_a_usage_error_naming_the_line(tmp_path):
    keys = tmp_path / "keys"
    keys.write_text("alpha sk-secret-one\nalpha sk-secret-two\n")
    done = subprocess.run(
        [sys.executable, "-m", "orspec", "serve", "--api-keys-file", str(keys), "--store", "memory:"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "line 2" in done.stderr and "named twice" in done.stderr
    assert "sk-secret" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.process
def test_an_api_key_beside_a_keys_file_is_refused_or_said(tmp_path):
    keys = tmp_path / "keys"
    keys.write_text(f"alpha {KEY_A}\n")
    serve = [sys.executable, "-m", "orspec", "serve", "--api-keys-file", str(keys), "--store", "memory:"]
    both = subprocess.run([*serve, "--api-key", "sk-flag"], capture_output=True, text=True, timeout=60)
    assert both.returncode == 2 and "--api-key and --api-keys-file: give one" in both.stderr
    port = free_port()
    log = tmp_path / "serve.log"
    env = {"ORSPEC_API_KEY": "sk-from-the-environment"}
    with (
        log.open("w") as stderr,
        served_process([*serve, "--port", str(port)], port=port, env=env, stderr=stderr) as base,
    ):
        assert _create(base, KEY_A, input="hi").status_code == 200
        assert _create(base, "sk-from-the-environment", input="hi").status_code == 401  # was: one more tenant
    assert "$ORSPEC_API_KEY is set but not accepted: --api-keys-file gives the keys" in log.read_text()


def test_logs_metrics_and_spans_name_the_tenant_never_the_key():
    from openresponses_runtime.server import Observability
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from .test_server_observability import METRICS_KEY, access_records, metrics

    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    app = create_app(
        DemoProvider(),
        store=MemoryStore(),
        api_keys=KEYS,
        observability=Observability(tracer_provider=tracing, metrics_key=METRICS_KEY),
    )
    with access_records() as lines, live_server(app) as base:
        assert _create(base, KEY_A, input="hi").status_code == 200
        assert _create(base, KEY_B, input="hi").status_code == 200
        assert _create(base, "sk-nobody", input="hi").status_code == 401
        samples = metrics(base.removesuffix("/v1"))
    records = [json.loads(line) for line in lines]
    assert [record["tenant"] for record in records] == ["alpha", "beta", None]
    for key in (KEY_A, KEY_B):
        assert key not in "".join(lines)
        assert not any(key in str(labels) for _, labels in samples)
    labels = frozenset({"tenant": "alpha", "operation": "createResponse", "status": "200"}.items())
    assert samples[("openresponses_tenant_requests_total", labels)] == 1.0
    spans = [span for span in exporter.get_finished_spans() if span.kind.name == "SERVER"]
    assert [span.attributes.get("openresponses.tenant") for span in spans] == ["alpha", "beta", None]


def test_compaction_items_are_sealed_for_their_key():
    import base64

    from ..server_helpers import RecordingProvider

    provider = RecordingProvider()
    app = create_app(provider, store=MemoryStore(), api_keys=KEYS, reasoning_key=REASONING_KEY)
    with live_server(app) as base:
        compact = {"model": "demo", "input": [{"role": "user", "content": "A's secret prompt"}]}
        made = httpx.post(base + "/responses/compact", json=compact, headers=_headers(KEY_A), timeout=30).json()
        (item,) = made["output"]
        assert item["type"] == "compaction" and "secret" not in item["encrypted_content"]
        with pytest.raises(ValueError):  # sealed, not merely encoded
            json.loads(base64.b64decode(item["encrypted_content"] + "=="))
        follow = {"input": [item, {"role": "user", "content": "go on"}], "store": False}
        refused = _create(base, KEY_B, **follow)
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "input[0].encrypted_content"
        forged = {**item, "encrypted_content": base64.b64encode(b'[{"role": "user", "content": "FORGED"}]').decode()}
        refused = _create(base, KEY_A, **{**follow, "input": [forged, follow["input"][1]]})
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_encrypted_content"
        assert _create(base, KEY_A, **follow).status_code == 200
        handed = provider.requests[-1].input[0]["encrypted_content"]
        assert "A's secret prompt" in base64.b64decode(handed).decode()  # the provider gets its own blob back


def test_a_sealed_blob_opens_only_in_the_type_of_item_it_was_sealed_for():
    """A reasoning item's blob in a compaction item was a 500 (a KeyError) on both operations, and a
    compaction item's blob in a reasoning item was accepted: the seal now binds the item type."""
    app = create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys=KEYS, reasoning_key=REASONING_KEY)
    with live_server(app) as base:
        thought = _create(
            base, KEY_A, input="think", reasoning={"summary": "auto"}, include=["reasoning.encrypted_content"]
        ).json()
        (reasoning,) = [item for item in thought["output"] if item["type"] == "reasoning"]
        compact = {"model": "demo", "input": [{"role": "user", "content": "to compact"}]}
        compacted = httpx.post(base + "/responses/compact", json=compact, headers=_headers(KEY_A), timeout=30)
        (compaction,) = compacted.json()["output"]
        swapped = [
            {"type": "compaction", "encrypted_content": reasoning["encrypted_content"]},
            {"type": "reasoning", "summary": [], "encrypted_content": compaction["encrypted_content"]},
        ]
        for item in swapped:
            body = {"model": "demo", "input": [item, {"role": "user", "content": "go on"}], "store": False}
            for path in ("/responses", "/responses/compact"):
                answer = httpx.post(base + path, json=body, headers=_headers(KEY_A), timeout=30)
                assert answer.status_code == 400, (item["type"], path, answer.text)
                error = answer.json()["error"]
                assert (error["code"], error["param"]) == ("invalid_encrypted_content", "input[0].encrypted_content")


def test_what_is_sealed_is_stored_and_listed_sealed(tmp_path):
    """A carried compaction item and a reasoning item with a provider's own state, sent back: the
    stored input and `input_items` keep the blobs the client sent, never the provider's opened state
    (was: the demo's compaction blob, the conversation in base64, and the state, in the clear)."""
    import base64
    import sqlite3

    from openresponses_runtime.server import ReasoningSummary, SQLiteStore

    from ..server_helpers import RecordingProvider, StepsProvider

    path = tmp_path / "responses.sqlite3"
    steps = [ReasoningSummary("Thinking.", encrypted_content="upstream-signature-SECRET"), TextDelta("Hi")]
    provider = RecordingProvider(StepsProvider(steps))
    app = create_app(provider, store=SQLiteStore(path), api_keys=KEYS, reasoning_key=REASONING_KEY)
    with live_server(app) as base:
        compact = {"model": "demo", "input": [{"role": "user", "content": "the CONFIDENTIAL plan"}]}
        (compaction,) = httpx.post(
            base + "/responses/compact", json=compact, headers=_headers(KEY_A), timeout=30
        ).json()["output"]
        first = _create(base, KEY_A, input="think", include=["reasoning.encrypted_content"], store=False).json()
        (reasoning,) = [item for item in first["output"] if item["type"] == "reasoning"]
        sent = [compaction, reasoning, {"type": "message", "role": "user", "content": "go on"}]
        made = _create(base, KEY_A, input=sent)
        assert made.status_code == 200, made.text
        handed = provider.requests[-1].input
        assert "CONFIDENTIAL" in base64.b64decode(handed[0]["encrypted_content"]).decode()  # the provider's own
        assert handed[1]["encrypted_content"] == "upstream-signature-SECRET"
        listed = httpx.get(base + f"/responses/{made.json()['id']}/input_items", headers=_headers(KEY_A)).json()
        by_type = {item["type"]: item for item in listed["data"]}
        assert by_type["compaction"]["encrypted_content"] == compaction["encrypted_content"]
        assert by_type["reasoning"]["encrypted_content"] == reasoning["encrypted_content"]
        then = _create(base, KEY_A, input="and then", previous_response_id=made.json()["id"])
        assert then.status_code == 200, then.text  # the history opens again for the provider
        assert provider.requests[-1].input[0]["encrypted_content"] == handed[0]["encrypted_content"]
        assert provider.requests[-1].input[1]["encrypted_content"] == "upstream-signature-SECRET"
    with sqlite3.connect(path) as db:
        rows = " ".join(str(row) for row in db.execute("SELECT * FROM responses"))
    assert "upstream-signature-SECRET" not in rows and "CONFIDENTIAL" not in rows
    assert base64.b64encode(b"CONFIDENTIAL").decode()[:12] not in rows
