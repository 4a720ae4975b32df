"""The npm package `openresponses-runtime` (generated/typescript) on Node: its own tests, `tsc --strict`,
Prettier, the recordings, a packed tarball installed into a fresh folder, and the client against a
live `orspec serve`.

Node and npm come from the system; zod, TypeScript and Prettier from `.cache/typescript`, pinned by
`.ci/services`. Without them these tests skip and say so, and fail under CI (CI=true).
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
from openresponses_runtime import models
from openresponses_runtime.events import iter_sse, parse_event

from ..conftest import ROOT, SHARED
from ..server_helpers import API_KEY, free_port, start, stop, wait_answering

pytestmark = pytest.mark.process

PACKAGE = ROOT / "generated" / "typescript"
HERE = ROOT / "tests" / "typescript"
TOOLS = Path(os.environ.get("ORSPEC_TYPESCRIPT_TOOLS", ROOT / ".cache" / "typescript")) / "node_modules"
RECORDINGS = SHARED / "recordings"
EXAMPLES = SHARED / "examples"


def need(what: str, found: bool) -> None:
    if found:
        return
    message = f"{what} is missing (bash .ci/run sets it up through .ci/services)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def run(args: list, cwd: Path, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A folder where `import "openresponses-runtime"` finds the package as built, beside the pinned tools."""
    need("node", shutil.which("node") is not None)
    for name in ("zod", "typescript", "prettier", "@types/node"):
        need(f"{name} in {TOOLS}", (TOOLS / name).is_dir())
    root = tmp_path_factory.mktemp("ts")
    modules = root / "node_modules"
    shutil.copytree(PACKAGE, modules / "openresponses-runtime")
    for name in ("zod", "typescript", "prettier", "@types"):
        (modules / name).symlink_to(TOOLS / name, target_is_directory=True)
    for path in HERE.iterdir():
        shutil.copy(path, root / path.name)
    return root


def tsc(
    project: Path, *files: str, out_dir: str | None = None, flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """`tsc --strict` on `files`, with `flags`; with `out_dir`, the JavaScript it emits goes there."""
    config = {
        "compilerOptions": {
            "strict": True,
            **({"outDir": out_dir} if out_dir else {"noEmit": True}),
            "module": "nodenext",
            "moduleResolution": "nodenext",
            "target": "es2022",
            "lib": ["es2022", "dom", "dom.asynciterable"],
            "types": ["node"],
        },
        "files": list(files),
    }
    (project / "tsconfig.json").write_text(json.dumps(config))
    return run([project / "node_modules/typescript/bin/tsc", "-p", ".", *flags], project)


def test_node_tests(project):
    result = run(["node", "--test", "runtime.test.mjs"], project)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "# fail 0" in result.stdout


def test_tsc_strict_package_and_consumer(project):
    declarations = sorted(f"node_modules/openresponses-runtime/{p.name}" for p in PACKAGE.glob("*.d.ts"))
    result = tsc(project, *declarations, "consumer.ts")
    assert result.returncode == 0, result.stdout[-4000:]


SCHEMAS_CONSUMER = """
import * as z from "zod";
import { FunctionCall, ResponseResource } from "openresponses-runtime/schemas";
import type { ItemField } from "openresponses-runtime";

export const TimedCall = FunctionCall.extend({ elapsed_ms: z.number() });
export const callId: z.ZodType<string> = FunctionCall.shape.call_id;
export const items: ItemField[] = ResponseResource.parse({}).output;
"""


def read_by_tsc(project: Path, *files: str) -> list[str]:
    result = tsc(project, *files, flags=("--listFiles",))
    assert result.returncode == 0, result.stdout[-4000:]
    return [line for line in result.stdout.splitlines() if "/node_modules/zod/" in line]


def test_only_the_schemas_subpath_makes_tsc_read_zod(project):
    """A consumer of the root reads none of zod's declarations (most of a check's types with
    `skipLibCheck` off, bench/ts_load_bench.py); one of `openresponses-runtime/schemas` gets zod's
    types, `.shape` and `.extend`, whose types are the root's."""
    assert read_by_tsc(project, "consumer.ts") == []
    (project / "schemas_consumer.ts").write_text(SCHEMAS_CONSUMER)
    assert read_by_tsc(project, "schemas_consumer.ts")


def test_route_table_is_the_python_servers(project):
    from openresponses_runtime.server.routes import ROUTES

    (project / "routes.mjs").write_text(
        'import { ROUTES } from "openresponses-runtime";\n'
        "console.log(JSON.stringify(ROUTES.map((r) => [r.method, r.path, r.operationId, r.handler, r.implement, "
        "r.pathParams, r.request === null, typeof r.response?.parse])));\n"
    )
    result = run(["node", "routes.mjs"], project)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout) == [
        [op.method, op.path, op.operation_id, op.handler, op.implement, [key for key, _ in op.path_params]]
        + [op.request_model is None, "function"]
        for op in ROUTES
    ]


def test_type_is_a_string_that_still_narrows(project):
    """`const t: string = value.type` compiles for every open union, and `switch (value.type)` still
    types each case as its member alone (type_string.ts)."""
    declared = {
        name
        for path in PACKAGE.glob("*.d.ts")
        if path.name != "schemas.d.ts"  # its aliases restate models.d.ts's types
        for name, members in re.findall(r"^export type (\w+) =([^;]*);", path.read_text(), flags=re.M)
        if re.search(r"\bUnknown\w+\s*$", members)
    }
    listed = (HERE / "type_string.ts").read_text().split("type OPEN_UNIONS = [", 1)[1].split("];", 1)[0]
    assert declared and {name.strip() for name in listed.split(",") if name.strip()} == declared
    result = tsc(project, "type_string.ts")
    assert result.returncode == 0, result.stdout[-4000:]


VENDOR_PARSE = """
import { ItemField, ResponseResource, isKnownEvent, parseEvent } from "openresponses-runtime";
const progress = { type: "acme:response.search.progress", sequence_number: 4, item_id: "ws_1", output_index: 0, pages_read: 3 };
const event = parseEvent(JSON.stringify(progress));
let refused = false;
try { parseEvent({ ...progress, pages_read: "many" }); } catch { refused = true; }
const item = ItemField.parse({ type: "acme:web_search_call", id: "ws_1", status: "completed", query: "tides" });
const missing = ItemField.safeParse({ type: "acme:web_search_call", id: "ws_1", status: "completed" });
const hit = ResponseResource.shape["acme:cache_hit"].parse(true);
console.log(JSON.stringify([isKnownEvent(event), event, refused, item.query, missing.success, hit]));
"""


def test_a_fragment_of_every_kind_is_typed_and_parsed(project, vendor_build, tmp_path):
    """The npm package built with the `acme` fixture fragment: its item, input item, content part,
    tool, event and response field are typed members of their unions, and its schemas check them."""
    root = tmp_path / "vendor"
    modules = root / "node_modules"
    shutil.copytree(vendor_build / "typescript", modules / "openresponses-runtime")
    for name in ("zod", "typescript", "@types"):
        (modules / name).symlink_to(TOOLS / name, target_is_directory=True)
    shutil.copy(HERE / "vendor_kinds.ts", root / "vendor_kinds.ts")
    result = tsc(root, "vendor_kinds.ts")
    assert result.returncode == 0, result.stdout[-4000:]
    (root / "parse.mjs").write_text(VENDOR_PARSE)
    done = run(["node", "parse.mjs"], root)
    assert done.returncode == 0, done.stderr[-2000:]
    known, event, refused, query, missing_ok, hit = json.loads(done.stdout)
    assert known and event["pages_read"] == 3 and refused
    assert query == "tides" and not missing_ok and hit is True


def test_tsc_refuses_a_field_read_before_narrowing(project):
    result = tsc(project, "unnarrowed.ts")
    assert result.returncode != 0
    assert "Property 'delta' does not exist" in result.stdout, result.stdout[-2000:]


def test_generated_files_are_prettier_formatted(project):
    result = run([project / "node_modules/prettier/bin/prettier.cjs", "--check", "."], PACKAGE)
    assert result.returncode == 0, result.stdout + result.stderr


def _cases() -> tuple[list[list], list[tuple[str, bool]]]:
    """Every body of the recordings and examples, and every event of the recorded streams, with
    whether the Python models accept it."""
    cases, verdicts = [], []

    def add(label: str, schema: str, value, check) -> None:
        try:
            check(value)
            ok = True
        except ValueError:
            ok = False
        cases.append([schema, value])
        verdicts.append((label, ok))

    for path in sorted((RECORDINGS / "responses").glob("*.json")):
        add(path.name, "ResponseResource", json.loads(path.read_text()), models.ResponseResource.model_validate)
    for path in sorted(EXAMPLES.glob("*.json")):
        schema = path.name.split(".")[0]
        add(path.name, schema, json.loads(path.read_text()), getattr(models, schema).model_validate)
    for path in sorted((RECORDINGS / "streams").glob("*.sse")):
        for i, message in enumerate(iter_sse(path.read_bytes())):
            if message.data != "[DONE]":
                add(f"{path.name}#{i}", "event", json.loads(message.data), parse_event)
    return cases, verdicts


@pytest.mark.skipif(not RECORDINGS.is_dir(), reason="../shared/recordings is not beside the project")
def test_recordings_parse_as_in_python_and_round_trip(project):
    """What the Python models accept, the zod models accept and give back as the same JSON value
    (key order aside); what Python refuses (old recordings lacking required fields), zod refuses."""
    cases, verdicts = _cases()
    result = run(["node", "roundtrip.mjs"], project, input=json.dumps(cases))
    assert result.returncode == 0, result.stderr[-2000:]
    results = json.loads(result.stdout)
    wrong = [
        (label, ok, got)
        for (label, ok), got in zip(verdicts, results, strict=True)
        if got["ok"] != ok or (ok and not got["same"])
    ]
    assert not wrong, wrong[:5]
    accepted = sum(ok for _, ok in verdicts)
    assert accepted >= 700 and accepted < len(verdicts), (accepted, len(verdicts))


def test_packed_tarball_installs_and_imports_in_a_fresh_folder(project, tmp_path):
    packed = run(["npm", "pack", "--json", "--pack-destination", tmp_path], PACKAGE, timeout=120)
    assert packed.returncode == 0, packed.stderr
    listing = json.loads(packed.stdout)[0]
    names = {f["path"] for f in listing["files"]}
    assert {"package.json", "index.js", "index.d.ts", "models.js", "client.js", "sse.js"} <= names
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "package.json").write_text('{"name": "fresh", "private": true, "type": "module"}')
    zod = next(TOOLS.glob("zod/package.json"))
    version = json.loads(zod.read_text())["version"]
    installed = run(
        [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--prefer-offline",
            tmp_path / listing["filename"],
            f"zod@{version}",
        ],
        fresh,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    script = (
        'import { parseEvent, ResponseResource } from "openresponses-runtime";\n'
        'const e = parseEvent(\'{"type":"response.output_text.delta","sequence_number":1,"item_id":"i",'
        '"output_index":0,"content_index":0,"delta":"hi","logprobs":[]}\');\n'
        "console.log(e.delta, typeof ResponseResource.parse);\n"
    )
    (fresh / "check.mjs").write_text(script)
    result = run(["node", "check.mjs"], fresh)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["hi", "function"]


@pytest.fixture
def server():
    port = free_port()
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY, "--store", "memory:"]
    proc = start(command)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        wait_answering(proc, base)
        yield base
    finally:
        stop(proc)


def test_client_against_orspec_serve(project, server):
    result = run(["node", "client.mjs", server, API_KEY], project, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["status"] == "completed"
    assert report["streamed"][0] == "response.created" and report["streamed"][-1] == "response.completed"
    assert report["retrieved"] is True and report["inputItems"] == 1
    sequence = report["background"]
    assert sequence == list(range(len(sequence))) and len(sequence) > 4
    assert report["replayed"] == sequence[3:]
    assert report["missing"] == [True, 404, "response_not_found"]
    assert report["wrongKey"] is True and report["deleted"] is True
    # A clean live stream checks OK as it is: the stream says that `[DONE]` came.
    assert report["streamSawDone"] is True and report["liveViolations"] == [] and report["liveEvents"] > 5
    helped = report["helped"]
    assert helped["text"] == helped["deltas"] == helped["outputText"] != ""
    assert (helped["status"], helped["sawDone"], helped["issues"]) == ("completed", True, 0)
    assert report["createdOutputText"] and report["outputTextEnumerable"] is False
    assert report["counted"] == ["response.input_tokens", report["createdInputTokens"]]  # the same body's usage


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["openresponses/2026-01-15", "openresponses/2026-04-24", "openai"])
def test_other_specs_build_into_a_clean_package(project, tmp_path, shared, spec):
    """Upstream's releases and OpenAI's whole spec (1 400 schemas): the package imports, Prettier and
    `tsc --strict` find nothing."""
    out = tmp_path / "out"
    built = run(
        [sys.executable, "-m", "orspec", "build", "--spec", shared / "upstream" / spec / "openapi.json"]
        + ["--lenient", "--out", out],
        ROOT,
        timeout=900,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    package = project / "node_modules" / "openresponses-runtime"
    shutil.rmtree(package)
    shutil.copytree(out / "typescript", package)
    try:
        imported = run(
            ["node", "-e", 'import("openresponses-runtime").then(m => console.log(Object.keys(m.EVENT_TYPES).length))'],
            project,
        )
        assert imported.returncode == 0 and int(imported.stdout) > 20, imported.stderr[-2000:]
        pretty = run([project / "node_modules/prettier/bin/prettier.cjs", "--check", "."], package)
        assert pretty.returncode == 0, pretty.stdout[-2000:]
        checked = tsc(project, "node_modules/openresponses-runtime/index.d.ts")
        assert checked.returncode == 0, checked.stdout[-3000:]
    finally:
        shutil.rmtree(package)
        shutil.copytree(PACKAGE, package)


GUIDE = ROOT / "docs" / "guides" / "typescript.md"


def test_guide_examples_type_check_and_run(project, server):
    """Every example of docs/guides/typescript.md is TypeScript (a ```ts block, no ```js): all pass
    `tsc --strict` against the installed package, then each runs as the JavaScript tsc emits (the
    client's against `orspec serve`, the others on their own) and prints what its comments say."""
    text = GUIDE.read_text()
    assert not re.search(r"^```(js|javascript)$", text, flags=re.M)
    blocks = re.findall(r"^```ts\n(.*?)^```", text, flags=re.S | re.M)
    assert len(blocks) >= 8
    for i, source in enumerate(blocks):
        (project / f"guide{i}.mts").write_text(source)  # .mts: a module, so top-level await is allowed
    checked = tsc(project, *(f"guide{i}.mts" for i in range(len(blocks))), out_dir="guide-js")
    assert checked.returncode == 0, checked.stdout[-3000:]
    env = {**os.environ, "OPENRESPONSES_BASE_URL": server, "OPENRESPONSES_API_KEY": API_KEY}
    outputs = []
    for i, source in enumerate(blocks):
        result = run(["node", f"guide-js/guide{i}.mjs"], project, timeout=120, env=env)
        assert result.returncode == 0, f"block {i}:\n{source}\n{result.stderr[-2000:]}"
        outputs.append(result.stdout)
    models, describe, extend, events, client, abort, checker, bin_ = outputs
    assert "{ anything: true }" in models and "false" in models
    assert describe == extend == ""  # declarations only
    assert "text: Hel delta" in events and "unknown, kept: 40" in events
    assert "404 not_found response_not_found" in client and "1 input item" in client
    assert abort.strip() == "true"
    # The checker on the emitter's stream, then on it broken; the bin on a capture cut short.
    assert checker.splitlines() == [
        "0 10 completed",
        "completed Hello, world.",
        "schema 2",
        "output-index 2",
        "sequence-gap 6",
        "delta-equals-done 6",
    ]
    assert bin_.startswith("1\nseq 0: [schema] response.created does not match its schema: ")
    assert "seq ?: [done-marker]" in bin_ and bin_.rstrip().endswith("3 violations in 1 events")
