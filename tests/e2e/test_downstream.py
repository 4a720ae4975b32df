"""The published document (`generated/openapi.json`) as other tools read it, run as their users run them.

- schemathesis' own CLI with `--checks all` against `orspec serve`, seeded: zero failures;
- openapi-python-client generates a client that imports and drops no schema (upstream loses 28);
- openapi-typescript generates types that `tsc --noEmit --strict` accepts, and narrows unions by tag;
- datamodel-code-generator, run plainly, writes tagged unions from the discriminator mappings.

The Python generators' own pins are not ours, so openapi-python-client and the npm tools live in
`.cache/downstream/` (or `$ORSPEC_DOWNSTREAM_TOOLS`), where `.ci/run` installs them; a tool that is
missing there skips its test and says so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT, UPSTREAM
from ..server_helpers import free_port, start, stop, wait_answering

pytestmark = pytest.mark.process

DOCUMENT_PATH = ROOT / "generated" / "openapi.json"
DOCUMENT = json.loads(DOCUMENT_PATH.read_text())
TOOLS = Path(os.environ.get("ORSPEC_DOWNSTREAM_TOOLS", ROOT / ".cache" / "downstream"))
BIN = Path(sys.executable).parent
UPSTREAM_DROPPED = 28  # schemas openapi-python-client 0.29 drops from upstream's 2026-04-24 release
SEED = 20260424
EXAMPLES = int(os.environ.get("ORSPEC_SCHEMATHESIS_CLI_EXAMPLES", "100"))  # per operation and phase


def tool(path: Path, name: str) -> Path:
    found = path if path.exists() else shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed at {path} (bash .ci/run installs it)")
    return Path(found)


def run(args: list, cwd: Path, timeout: int = 600, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)


def discriminators(document: dict) -> list[dict]:
    out, stack = [], [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("discriminator"), dict):
                out.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def test_every_discriminator_maps_every_variant():
    found = discriminators(DOCUMENT)
    assert len(found) >= 20
    for node in found:
        refs = {v["$ref"] for v in node.get("oneOf") or node.get("anyOf")}
        assert set(node["discriminator"]["mapping"].values()) == refs, node["discriminator"]
    items = DOCUMENT["components"]["schemas"]["ItemParam"]["discriminator"]["mapping"]
    assert items["message"] == "#/components/schemas/MessageItemParam"
    assert (
        items["openai:web_search_call"] == "#/components/schemas/OpenaiWebSearchCallParam"
    )  # vendor variants too, in their input form
    roles = DOCUMENT["components"]["schemas"]["MessageItemParam"]["discriminator"]
    assert roles["propertyName"] == "role" and set(roles["mapping"]) == {"user", "system", "developer", "assistant"}


def test_every_operation_documents_its_errors():
    responses = DOCUMENT["components"]["responses"]
    operations = [(path, op) for path, item in DOCUMENT["paths"].items() for op in item.values() if "responses" in op]
    assert len(operations) >= 6  # the core's two, and the four the openai fragment adds
    for path, op in operations:
        body = ("413", "415") if "requestBody" in op else ()  # only a body can be too large or not JSON
        for status in ("400", "401", "404", *body, "429", "500"):
            ref = op["responses"][status]["$ref"]
            target = responses[ref.rsplit("/", 1)[1]]
            schema = target["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorResponse"}, (path, status)
    stream = DOCUMENT["paths"]["/responses"]["post"]["responses"]["200"]["description"]
    assert "data: [DONE]" in stream and "event:" in stream


def test_published_stream_is_framed_as_sse_messages():
    from orspec.bundle import bundle
    from orspec.validate import validate

    schema = DOCUMENT["paths"]["/responses"]["post"]["responses"]["200"]["content"]["text/event-stream"]["schema"]
    event, done = schema["oneOf"]
    data = event["properties"]["data"]
    assert data["contentMediaType"] == "application/json" and set(event["required"]) == {"event", "data"}
    members = {m["$ref"].rsplit("/", 1)[1] for m in data["contentSchema"]["oneOf"]}
    assert {"ResponseCreatedStreamingEvent", "ErrorStreamingEvent", "OpenaiWebSearchCallSearchingEvent"} <= members
    assert done["properties"]["data"]["const"] == "[DONE]"
    # The published document is itself a valid OpenAPI 3.1 document.
    assert [p for p in validate(bundle(DOCUMENT_PATH)) if p.level.value == "error"] == []


# -- schemathesis, as its CLI runs -------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`orspec serve` as it runs by default, in its own process on loopback; yields (base URL, API key).

    Tolerant: it takes parameters and tool types the document does not define, and names them in
    OpenResponses-Ignored. The published document says so (`x-openresponses-ignored`, `IgnoredToolParam`),
    so schemathesis, which holds a server to the letter of the document, finds it accepts nothing the
    document refuses (ST201)."""
    port, key = free_port(), "sk-downstream-test"
    log = (tmp_path_factory.mktemp("serve") / "serve.log").open("w")
    proc = start(
        [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", key, "--store", "memory:"]
        + ["--delay", "0"],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_answering(proc, f"http://127.0.0.1:{port}/v1", log=Path(log.name).read_text)
        yield f"http://127.0.0.1:{port}/v1", key
    finally:
        stop(proc)
        log.close()


@pytest.mark.slow
def test_schemathesis_cli_all_checks_is_clean(served, tmp_path):
    st = tool(BIN / "schemathesis", "schemathesis")
    url, key = served
    result = run(
        [st, "run", DOCUMENT_PATH, "--url", url, "-H", f"Authorization: Bearer {key}", "--checks", "all"]
        + ["--seed", SEED, "--max-examples", EXAMPLES, "--workers", "1", "--no-color"]
        + ["--generation-database", "none", "--report", "junit", "--report-dir", tmp_path],
        cwd=tmp_path,
        env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.schemathesis_hooks", "PYTHONPATH": str(ROOT)},
    )
    output = result.stdout + result.stderr
    cases = re.search(r"(\d+) generated", output)
    assert cases, output[-3000:]
    assert result.returncode == 0, output[-6000:]
    assert int(cases.group(1)) >= 200, output[-2000:]  # a real run, not a vacuous one


# -- openapi-python-client -----------------------------------------------------------------------------


def _opc_dropped(opc: Path, document: Path, out: Path) -> tuple[list[str], subprocess.CompletedProcess]:
    result = run([opc, "generate", "--path", document, "--output-path", out, "--overwrite"], cwd=out.parent)
    dropped = re.findall(r"Unable to process schema (/components/schemas/\S+?):", result.stdout + result.stderr)
    return dropped, result


def test_openapi_python_client_drops_no_schema_and_imports(tmp_path):
    opc = tool(TOOLS / "opc" / "bin" / "openapi-python-client", "openapi-python-client")
    dropped, result = _opc_dropped(opc, DOCUMENT_PATH, tmp_path / "client")
    assert result.returncode == 0, result.stdout + result.stderr
    assert dropped == []
    upstream, _ = _opc_dropped(opc, UPSTREAM / "2026-04-24" / "openapi.json", tmp_path / "upstream")
    assert len(upstream) == UPSTREAM_DROPPED  # the figure we report against
    # The client imports with the generator's own interpreter (its pins: attrs, httpx, dateutil) and
    # reads a real response and a developer message into its typed models.
    example = UPSTREAM.parent.parent / "examples" / "ResponseResource.valid.json"
    code = f"""
import json
from open_responses_client.models import CreateResponseBody, DeveloperMessageItemParam, ResponseResource
from open_responses_client import Client
Client(base_url="http://127.0.0.1:1/v1")
response = ResponseResource.from_dict(json.load(open({str(example)!r})))
assert response.id and response.output, response
body = CreateResponseBody.from_dict({{"model": "m", "input": [{{"type": "message", "role": "developer", "content": "Be brief."}}]}})
assert isinstance(body.input_[0], DeveloperMessageItemParam), body.input_
print("ok")
"""
    imported = run([opc.parent / "python", "-c", code], cwd=tmp_path / "client")
    assert imported.returncode == 0 and "ok" in imported.stdout, imported.stderr[-3000:]


# -- openapi-typescript + tsc -------------------------------------------------------------------------

TS_CHECK = """
import type { components } from "./openapi";
type Schemas = components["schemas"];

const input: Schemas["ItemParam"][] = [
  { type: "message", role: "developer", content: "Be brief." },
  { type: "function_call_output", call_id: "c1", output: "sunny" },
  { type: "item_reference", id: "msg_1" },  // with a discriminator, openapi-typescript requires every tag
];
function describe(event: Schemas["ResponseOutputTextDeltaStreamingEvent"] | Schemas["ErrorStreamingEvent"]): string {
  switch (event.type) {
    case "response.output_text.delta":
      return event.delta;
    case "error":
      return event.error.message;
  }
}
const failure: Schemas["ErrorResponse"] = { error: { type: "invalid_request", code: null, param: "input", message: "bad" } };
export { input, describe, failure };
"""


def test_openapi_typescript_output_type_checks(tmp_path):
    bin_dir = TOOLS / "npm" / "node_modules" / ".bin"
    generate = tool(bin_dir / "openapi-typescript", "openapi-typescript")
    tsc = tool(bin_dir / "tsc", "tsc")
    result = run([generate, DOCUMENT_PATH, "--output", tmp_path / "openapi.d.ts"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    (tmp_path / "check.ts").write_text(TS_CHECK)
    checked = run([tsc, "--noEmit", "--strict", "openapi.d.ts", "check.ts"], cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # tsc does reject what breaks the types, so the check above can fail.
    (tmp_path / "bad.ts").write_text(
        'import type { components } from "./openapi";\n'
        'const x: components["schemas"]["ItemParam"] = { type: "message", role: "robot", content: "x" };\nexport { x };\n'
    )
    rejected = run([tsc, "--noEmit", "--strict", "openapi.d.ts", "bad.ts"], cwd=tmp_path)
    assert rejected.returncode != 0


# -- datamodel-code-generator, plainly ---------------------------------------------------------------


def test_plain_datamodel_codegen_writes_tagged_unions(tmp_path):
    codegen = tool(BIN / "datamodel-codegen", "datamodel-codegen")
    out = tmp_path / "plain_models.py"
    result = run(
        [codegen, "--input", DOCUMENT_PATH, "--input-file-type", "openapi", "--output", out]
        + ["--output-model-type", "pydantic_v2.BaseModel"],
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    source = out.read_text()
    # Every union of two or more members (in components; the stream's is inline in the path) comes out
    # as a block, a class or an alias, that names all of its members and a Field discriminator.
    blocks = [b for b in re.split(r"\n(?=class |\w+ = )", source) if "discriminator=" in b]
    for node in discriminators(DOCUMENT["components"]):
        members = [m["$ref"].rsplit("/", 1)[1] for m in node.get("oneOf") or node.get("anyOf")]
        if len(members) > 1:
            assert any(all(re.search(rf"\b{m}\b", b) for m in members) for b in blocks), members
    code = """
from pydantic import TypeAdapter
import plain_models as m
items = TypeAdapter(list[m.ItemParam]).validate_python([
    {"type": "message", "role": "developer", "content": "Be brief."},
    {"type": "openai:web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
    {"type": "item_reference", "id": "msg_1"},
])
kinds = [type(getattr(i.root, "root", i.root)).__name__ for i in items]
assert kinds == ["DeveloperMessageItemParam", "OpenaiWebSearchCallParam", "ItemReferenceParam"], kinds
try:
    m.ItemParam.model_validate({"type": "message", "role": "robot", "content": "x"})
except Exception as exc:
    assert "role" in str(exc) or "robot" in str(exc), exc
else:
    raise AssertionError("an unknown role was accepted")
print("ok")
"""
    imported = run([sys.executable, "-c", code], cwd=tmp_path)
    assert imported.returncode == 0 and "ok" in imported.stdout, imported.stderr[-3000:]
