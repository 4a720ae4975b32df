"""A package built from an upstream release serves: its server's response skeleton comes from that
release's `ResponseResource` and create request, not from this spec's (whose create request
declares a `tool_choice` default that the 2026-04-24 release does not)."""

from __future__ import annotations

import json

import pytest

from ..conftest import RELEASES, run_orspec, run_python

pytestmark = pytest.mark.process

SERVE_ONE = """
import json
import openresponses_runtime.server as server
from openresponses_runtime import models
from openresponses_runtime.server import skeleton
from starlette.testclient import TestClient

assert server.__file__.startswith({out!r}), server.__file__  # the built package, not the checkout's
app = server.create_app(server.DemoProvider(delay=0), store=server.MemoryStore(), api_keys="k")
with TestClient(app) as client:
    answer = client.post("/v1/responses", json={{"model": "m", "input": "hello"}}, headers={{"Authorization": "Bearer k"}})
body = answer.json()
models.ResponseResource.model_validate(body)  # the release's own model of a response
print(json.dumps({{"status": answer.status_code, "body": body, "fields": list(skeleton.FIELDS),
                  "declared": skeleton.REQUEST_DEFAULTS}}))
"""


# 2026-01-15 names its create operation `Createresponse`: the route is bound by method and path all the same.
@pytest.mark.slow
@pytest.mark.parametrize("release", sorted(RELEASES))
def test_a_server_built_from_an_upstream_release_serves_a_request(tmp_path, shared, release):
    out = tmp_path / "out"
    built = run_orspec("build", "--spec", str(RELEASES[release]), "--out", str(out), "--lenient")
    assert built.returncode == 0, built.stderr
    served = run_python(SERVE_ONE.format(out=str(out)), path=out / "python", cwd=tmp_path)
    assert served.returncode == 0, served.stderr
    result = json.loads(served.stdout.splitlines()[-1])
    assert result["status"] == 200
    body = result["body"]
    assert body["status"] == "completed" and body["output"][0]["content"][0]["text"]
    upstream = json.loads(RELEASES[release].read_text())["components"]["schemas"]["ResponseResource"]
    required = [name for name in upstream["properties"] if name in upstream["required"]]
    assert result["fields"] == required
    assert list(body)[: len(required)] == required  # the release's order
    declared = json.loads(RELEASES[release].read_text())["components"]["schemas"]["CreateResponseBody"]["properties"]
    assert result["declared"] == {k: v["default"] for k, v in declared.items() if "default" in v}
    assert body["tool_choice"] == result["declared"].get("tool_choice", "auto")  # this server's own choice else
