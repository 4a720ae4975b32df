"""Operations the runtime does not implement: a strict build of the spec plus one new operation passes
and lists it, its route answers the spec's error object with 501 `not_implemented`, and a provider
serves it by defining the method the build named, with the typed body, path and query it declares."""

from __future__ import annotations

import json
import shutil

import pytest

from ..conftest import ROOT, run_orspec, run_python

NEW_OPERATION = """
  /responses/{id}/archive:
    post:
      operationId: archiveResponse
      summary: Archive a response
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
        - {name: until, in: query, schema: {type: string}}
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/ArchiveBody"}
      responses:
        "201":
          description: The archive entry.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/ArchiveEntry"}
        "501": {$ref: "#/components/responses/NotImplemented"}
"""
NEW_SCHEMAS = """
    ArchiveBody:
      type: object
      required: [reason]
      properties:
        reason: {type: string}
    ArchiveEntry:
      type: object
      required: [id, reason]
      properties:
        id: {type: string}
        reason: {type: string}
        until: {type: [string, "null"]}
"""

SERVE = """
import json
import openresponses_runtime.server as server
from openresponses_runtime import models
from openresponses_runtime.server import stubs
from starlette.testclient import TestClient

assert server.__file__.startswith({out!r}), server.__file__


class Archiving(server.DemoProvider):
    async def archive_response(self, *, body: models.ArchiveBody, id: str, until: str | None = None) -> models.ArchiveEntry:
        return models.ArchiveEntry(id=id, reason=body.reason, until=until)


results = {{"stubs": stubs.STUBS}}
key = {{"Authorization": "Bearer k"}}
for name, provider in (("demo", server.DemoProvider(delay=0)), ("archiving", Archiving(delay=0))):
    app = server.create_app(provider, store=server.MemoryStore(), api_keys="k")
    with TestClient(app) as client:
        url = "/v1/responses/resp_1/archive?until=2027"
        answers = [
            client.post(url, json={{"reason": "done"}}, headers=key),
            client.post(url, json={{"reason": 3}}, headers=key),
            client.post(url, json={{"reason": "done"}}),
        ]
    results[name] = [[a.status_code, a.json()] for a in answers]
print(json.dumps(results))
"""


@pytest.mark.process
@pytest.mark.slow
def test_a_new_operation_builds_strictly_as_a_stub_that_a_provider_implements(tmp_path):
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    root = spec / "openapi.yaml"
    text = root.read_text()
    assert "\ncomponents:\n" in text and "\n  schemas:\n" in text
    text = text.replace("\ncomponents:\n", NEW_OPERATION + "components:\n", 1)
    root.write_text(text.replace("\n  schemas:\n", "\n  schemas:" + NEW_SCHEMAS, 1))
    out = tmp_path / "out"

    built = run_orspec("build", "--spec", str(spec), "--out", str(out))  # strict: no --lenient

    assert built.returncode == 0, built.stderr[-3000:]
    assert [line for line in built.stdout.splitlines() if line.startswith("stub:")] == [
        "stub: POST /v1/responses/{id}/archive (archiveResponse) answers 501 until the provider defines "
        "archive_response()"
    ]
    served = run_python(SERVE.format(out=str(out)), path=out / "python", cwd=tmp_path)
    assert served.returncode == 0, served.stderr[-3000:]
    result = json.loads(served.stdout.splitlines()[-1])
    assert result["stubs"] == {"archive_response": "POST /v1/responses/{id}/archive (archiveResponse)"}
    (status, body), (bad_status, _), (anonymous, _) = result["demo"]
    assert status == 501 and body["error"]["type"] == "server_error" and body["error"]["code"] == "not_implemented"
    assert "archive" in body["error"]["message"]
    assert (bad_status, anonymous) == (501, 401)  # the key first, then the missing method; no body is read
    (status, body), (bad_status, bad), (anonymous, _) = result["archiving"]
    assert (status, body) == (201, {"id": "resp_1", "reason": "done", "until": "2027"})
    assert bad_status == 400 and bad["error"]["param"] == "reason"
    assert anonymous == 401
    page = (out / "docs" / "http-api.md").read_text()
    at = page.index("{ #op-archiveResponse }")
    stub_note = page[at : page.index("| Parameter |", at)]
    assert '!!! note "Stub"' in stub_note and "answers 501 `not_implemented`" in stub_note
    assert r"<code>archive\_response()</code>" in stub_note
    assert '!!! note "Stub"' not in page[:at]  # the runtime's own operations carry no mark


def test_the_scaffold_names_the_methods_that_implement_the_stubs(monkeypatch):
    from openresponses_runtime.server import stubs
    from orspec import scaffold
    from orspec.scaffold import names_for, render

    assert scaffold.runtime_stubs() == stubs.STUBS  # read from the runtime's source, as it imports
    archive = {"archive_response": "POST /v1/responses/{id}/archive (archiveResponse)"}
    monkeypatch.setattr(scaffold, "runtime_stubs", lambda: archive)
    provider = render(names_for("Archiver"))["src/archiver/provider.py"][0].decode()
    assert "- `archive_response`: POST /v1/responses/{id}/archive (archiveResponse)" in provider
    assert "stubs.Stubs" in provider


def test_a_stub_takes_its_json_body_path_and_query_by_keyword(monkeypatch):
    from openresponses_runtime.server import DemoProvider, MemoryStore, create_app
    from openresponses_runtime.server import app as app_module
    from openresponses_runtime.server.routes import Operation
    from starlette.testclient import TestClient

    put_thing = Operation(
        path="/v1/things/{thing_id}",
        method="PUT",
        operation_id="putThing",
        handler=None,
        request_model=None,  # a body the spec names no model for: its JSON
        websocket=False,
        websocket_model=None,
        implement="put_thing",
        status=202,
        body=True,
        path_params=(("thing_id", "thing_id"),),
        query_params=(("dry-run", "dry_run"),),
    )
    monkeypatch.setattr(app_module, "ROUTES", (*app_module.ROUTES, put_thing))

    class Things(DemoProvider):
        async def put_thing(self, *, body: dict, thing_id: str, dry_run: str | None = None) -> dict:
            return {"id": thing_id, "body": body, "dry_run": dry_run}

    key = {"Authorization": "Bearer k"}
    with TestClient(create_app(Things(delay=0), store=MemoryStore(), api_keys="k")) as client:
        put = client.put("/v1/things/t1?dry-run=yes", json={"a": [1]}, headers=key)
        not_json = client.put("/v1/things/t1", content=b"[1]", headers={**key, "Content-Type": "application/json"})
    with TestClient(create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys="k")) as client:
        missing = client.put("/v1/things/t1", json={"a": [1]}, headers=key)
    assert (put.status_code, put.json()) == (202, {"id": "t1", "body": {"a": [1]}, "dry_run": "yes"})
    assert not_json.status_code == 400 and not_json.json()["error"]["code"] == "invalid_json"
    assert missing.status_code == 501 and missing.json()["error"]["code"] == "not_implemented"
    assert "PUT /v1/things/{thing_id} (putThing)" in missing.json()["error"]["message"]
