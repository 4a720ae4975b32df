"""The runtime finds its classes by their place on the wire, whatever the spec names them
(`generate/bindings.py`), and `orspec build --self-check` refuses an output that does not load.

The builds of upstream's releases and OpenAI's whole spec are here too: each imports, type-checks
and serves create (streamed and not), retrieve and delete."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from orspec.generate.bindings import generate_bindings
from orspec.pipeline import load_spec
from orspec.selfcheck import stage, type_failures, typescript_tools

from ..conftest import RELEASES, ROOT, SHARED, run_orspec, run_python

OPENAI = SHARED / "upstream" / "openai" / "openapi.json"
RELEASE = RELEASES["2026-04-24"]  # one file, with the names this project's runtime was written around


def _renamed(tmp_path: Path, names: dict[str, str]) -> Path:
    """Upstream's release with component schemas renamed, as another author might name them."""
    text = RELEASE.read_text()
    for old, new in names.items():
        text = text.replace(f'"#/components/schemas/{old}"', f'"#/components/schemas/{new}"')
        text = text.replace(f'\n      "{old}": {{', f'\n      "{new}": {{')
    path = tmp_path / "openapi.json"
    path.write_text(text)
    return path


def _bindings(path: Path):
    spec = load_spec(path, lenient=True)
    return spec.model, spec.bindings


def test_roles_are_found_by_wire_shape_not_by_name(tmp_path, shared):
    renamed = {"ResponseResource": "Answer", "CreateResponseBody": "Ask", "ItemField": "OutItem"}
    renamed |= {"FunctionToolParam": "Fn", "ResponseCreatedStreamingEvent": "Began"}
    model, found = _bindings(_renamed(tmp_path, renamed))
    assert "Answer" in model.schemas and "ResponseResource" not in model.schemas  # the renaming took
    assert (found.response, found.create_body, found.output_item, found.function_tool) == (
        "Answer",
        "Ask",
        "OutItem",
        "Fn",
    )
    assert found.events["created"] == "response.created"  # found by its `type`, the model renamed
    assert found.problems == ()
    code = generate_bindings(model, found)["python/openresponses_runtime/bindings.py"].decode()
    assert "ResponseObject: Any = models.Answer" in code and "CreateBody: Any = models.Ask" in code


def test_a_spec_without_streaming_events_says_so_in_one_located_line(tmp_path, shared):
    document = json.loads(RELEASE.read_text())
    del document["paths"]["/responses"]["post"]["responses"]["200"]["content"]["text/event-stream"]
    path = tmp_path / "openapi.json"
    path.write_text(json.dumps(document, indent=2))
    model, found = _bindings(path)
    assert found.events == {}
    (problem,) = found.problems
    assert re.fullmatch(
        r".*openapi\.json:\d+: /paths/~1responses/post: warning: the streaming events lack .*", str(problem)
    )
    assert problem.line > 0
    missing = generate_bindings(model, found)["python/openresponses_runtime/bindings.py"].decode()
    assert "the streaming events lack response.created" in missing


@pytest.mark.process
def test_a_package_without_streaming_events_imports_and_refuses_to_serve(tmp_path, shared):
    document = json.loads(RELEASE.read_text())
    del document["paths"]["/responses"]["post"]["responses"]["200"]["content"]["text/event-stream"]
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(document, indent=2))
    out = tmp_path / "out"
    built = run_orspec("build", "--spec", str(spec), "--out", str(out), "--lenient", "--self-check")
    assert built.returncode == 0, built.stderr  # the self-check imported every module
    lines = [line for line in built.stderr.splitlines() if "streaming events lack" in line]
    assert len(lines) == 1 and re.match(r".*openapi\.json:\d+: /paths/~1responses/post: warning: ", lines[0])
    code = (
        "import openresponses_runtime.server as s\n"
        "try:\n    s.create_app(s.DemoProvider(delay=0), store=s.MemoryStore(), api_keys='k')\n"
        "except ValueError as exc:\n    print(exc)\n"
    )
    refused = run_python(code, path=out / "python", cwd=tmp_path)
    assert refused.returncode == 0, refused.stderr
    assert "cannot serve responses" in refused.stdout and "streaming events lack response.created" in refused.stdout


@pytest.mark.process
def test_self_check_names_the_module_that_breaks_and_leaves_the_output_as_it_was(tmp_path):
    out = tmp_path / "out"
    assert run_orspec("build", "--spec", str(ROOT / "spec"), "--out", str(out)).returncode == 0
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    templates = tmp_path / "templates" / "server"
    templates.mkdir(parents=True)
    skeleton = (ROOT / "templates" / "server" / "skeleton.py.jinja").read_text()
    (templates / "skeleton.py.jinja").write_text(skeleton + '\nraise RuntimeError("broken at import")\n')
    failed = run_orspec(
        "build",
        "--spec",
        str(ROOT / "spec"),
        "--out",
        str(out),
        "--self-check",
        "--templates",
        str(tmp_path / "templates"),
    )
    assert failed.returncode == 1
    shown = [line for line in failed.stderr.splitlines() if "does not load" in line]
    assert shown == [
        "orspec: the build output does not load: openresponses_runtime.server.skeleton: RuntimeError: broken at import"
    ]
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before


@pytest.mark.process
def test_type_check_names_the_declaration_that_fails(tmp_path):
    tools = typescript_tools(ROOT)
    if tools is None:
        pytest.skip("node or .cache/typescript is missing (bash .ci/run sets it up through .ci/services)")
    outputs = {
        "typescript/package.json": b'{"name": "p", "type": "module"}',
        "typescript/models.d.ts": b"export interface Answer { id: string }\n",
        "typescript/uses.d.ts": b'import type { ResponseResource } from "./models.js";\nexport type X = ResponseResource;\n',
    }
    stage(outputs, {}, tmp_path)
    (failure,) = type_failures(tmp_path / "typescript", tools)
    assert failure.startswith("typescript/uses.d.ts:1: TS2305: ") and "ResponseResource" in failure


SERVE = """
import json
import openresponses_runtime.server as server
from openresponses_runtime import bindings
from openresponses_runtime.events import EVENT_TYPES, iter_sse
from starlette.testclient import TestClient

assert server.__file__.startswith({out!r}), server.__file__  # the built package, not the checkout's
app = server.create_app(server.DemoProvider(delay=0), store=server.MemoryStore(), api_keys="k")
auth = {{"Authorization": "Bearer k"}}
with TestClient(app) as client:
    made = client.post("/v1/responses", json={{"model": "m", "input": "hello"}}, headers=auth)
    streamed = client.post("/v1/responses", json={{"model": "m", "input": "hello", "stream": True}}, headers=auth)
    rid = made.json()["id"]
    got = client.get(f"/v1/responses/{{rid}}", headers=auth)
    gone = client.delete(f"/v1/responses/{{rid}}", headers=auth)
    again = client.get(f"/v1/responses/{{rid}}", headers=auth)
    other = client.get("/v1/models", headers=auth) if {other!r} else None
bindings.ResponseObject.model_validate(made.json())  # the spec's own model of a response
events = [json.loads(message.data) for message in iter_sse(streamed.content) if not message.is_done]
for event in events:
    EVENT_TYPES[event["type"]].model.model_validate(event)  # each event by its spec's model
print(json.dumps({{"made": made.status_code, "streamed": streamed.status_code, "got": got.status_code,
                  "same": got.json() == made.json(), "gone": gone.status_code, "again": again.status_code,
                  "types": [e["type"] for e in events],
                  "other": [other.status_code, other.json()["error"]["code"]] if other is not None else None, "text": made.json()["output"][0]["content"][0]["text"]}}))
"""


def _build_and_serve(tmp_path: Path, spec: Path, *, stored: bool = True, other: bool = False) -> dict:
    """Build `spec` with the self-check and ask the server it makes; `stored`: the spec declares
    retrieve and delete (upstream's releases declare create and compact alone); `other`: it declares
    `GET /models`, which the runtime leaves to the provider (a 501 stub)."""
    out = tmp_path / "out"
    built = run_orspec("build", "--spec", str(spec), "--out", str(out), "--lenient", "--self-check")
    assert built.returncode == 0, built.stderr[-3000:]
    assert "does not load" not in built.stderr
    served = run_python(SERVE.format(out=str(out), other=other), path=out / "python", cwd=tmp_path)
    assert served.returncode == 0, served.stderr[-3000:]
    result = json.loads(served.stdout.splitlines()[-1])
    assert (result["made"], result["streamed"]) == (200, 200)
    if stored:
        assert (result["got"], result["gone"], result["again"]) == (200, 200, 404) and result["same"]
    assert result["text"]
    assert result["types"][:2] == ["response.created", "response.in_progress"]
    assert result["types"][-1] == "response.completed"
    return result


@pytest.mark.slow
@pytest.mark.process
def test_openai_whole_spec_builds_imports_type_checks_and_serves(tmp_path, shared):
    result = _build_and_serve(tmp_path, OPENAI, other=True)
    assert "response.output_text.delta" in result["types"]
    assert result["other"] == [501, "not_implemented"]  # one of OpenAI's other operations, a stub


@pytest.mark.slow
@pytest.mark.process
@pytest.mark.parametrize("release", ["2026-01-15", "2026-04-24"])
def test_upstream_release_builds_imports_and_type_checks(tmp_path, shared, release):
    out = tmp_path / "out"
    built = run_orspec("build", "--spec", str(RELEASES[release]), "--out", str(out), "--lenient", "--self-check")
    assert built.returncode == 0, built.stderr[-3000:]
    assert "does not load" not in built.stderr


@pytest.mark.slow
@pytest.mark.process
@pytest.mark.parametrize("release", ["2026-01-15", "2026-04-24"])  # 2026-01-15 names create `Createresponse`
def test_upstream_release_serves(tmp_path, shared, release):
    _build_and_serve(tmp_path, RELEASES[release], stored=False)


def test_a_spec_without_the_responses_api_binds_nothing_and_says_so_once(tmp_path):
    pets = {
        "openapi": "3.1.0",
        "info": {"title": "Pets", "version": "1.0.0"},
        "paths": {"/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}}}},
        "components": {"schemas": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}}},
    }
    path = tmp_path / "openapi.json"
    path.write_text(json.dumps(pets, indent=1))
    model, found = _bindings(path)
    assert (found.response, found.create_body, found.events) == (None, None, {})
    assert [f"{p.pointer}: {p.message}" for p in found.problems] == [
        "/paths: no `POST /responses` operation: the runtime cannot serve or call create"
    ]
    outputs = generate_bindings(model, found)
    assert "ResponseObject: Any = None" in outputs["python/openresponses_runtime/bindings.py"].decode()
    assert "export declare const ResponseObject: null;" in outputs["typescript/bindings.d.ts"].decode()
