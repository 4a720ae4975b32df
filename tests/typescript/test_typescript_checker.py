"""The TypeScript package's stream checker, bin and emitter, against the Python runtime's.

- `node --test` over `tests/typescript/` (the SSE reader, checker, accumulator and emitter);
- `openresponses-check-stream` against `orspec check-stream`, line for line and exit code for exit
  code, on every SSE capture in `../shared/recordings` and on corrupted streams (the stream
  checker's own corruptions, and each event of a full stream dropped, repeated, moved or broken);
- Python's `repr` as the checker's messages write it;
- the emitter's streams pass the Python checker and models;
- `tsc --strict --noEmit` on the declarations and a consumer; `prettier --check`.

A provider on the package (the scaffold's TypeScript templates) is tested in
`tests/toolchain/test_scaffold_typescript.py`.

Node and the npm tools (`.cache/typescript`, installed by `.ci/services`) are needed: a missing one
skips with its reason, and fails under CI (CI=true).

The bin validates every core event against its zod schema (`validateEvent`), as `orspec check-stream`
does against the pydantic models: a schema finding is compared by its seq, rule and event type, not by
the validator's words, which differ between zod and pydantic. Invalid JSON is compared by rule, not by
the parser's own words.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from openresponses_runtime.streaming import ResponseAccumulator, check_sse
from orspec.cli import main as orspec_main
from orspec.write import is_generated
from pydantic import ValidationError

from ..conftest import ROOT, SHARED
from ..streaming.test_stream_checker import CORRUPTIONS, full
from ..streams import to_sse

PACKAGE = ROOT / "generated" / "typescript"
BIN = PACKAGE / "bin" / "openresponses-check-stream.js"
TOOLS = ROOT / ".cache" / "typescript" / "node_modules"
# A core event's schema finding: its seq, rule and type, then the validator's own words.
SCHEMA_DETAIL = re.compile(r"^(seq [^:]+: \[schema\] \S+) (does not match its schema|could not be validated): .*$")
JSON_DETAIL = re.compile(r"(\[sse-json\] data is not valid JSON) \(.*\)$")
WARNING = re.compile(r"^seq [^:]+: warning \[")
MISSING_DONE = "seq ?: [done-marker] the stream does not end with `data: [DONE]`"


def needed(what: str, path: Path | str | None) -> Path:
    """`path`, or skip (fail under CI) saying what is missing and how to get it."""
    if path and Path(path).exists():
        return Path(path)
    message = f"{what} is missing (bash .ci/run installs it: Node and npm from Debian, the npm tools in {TOOLS})"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def node() -> Path:
    return needed("node", shutil.which("node"))


def project_with_package(folder: Path) -> Path:
    """`folder` as a user's project: the package as built in node_modules/openresponses-runtime (a copy,
    so that its `import "zod"` finds the pinned zod beside it), and the tests' own modules."""
    modules = folder / "node_modules"
    shutil.copytree(PACKAGE, modules / "openresponses-runtime")
    (modules / "@types").mkdir(parents=True)
    (modules / "zod").symlink_to(needed("zod", TOOLS / "zod"), target_is_directory=True)
    node_types = TOOLS / "@types" / "node"
    if node_types.is_dir():
        (modules / "@types" / "node").symlink_to(node_types, target_is_directory=True)
    for path in (ROOT / "tests" / "typescript").glob("*.mjs"):
        shutil.copy(path, folder)
    return folder


@pytest.fixture(scope="module")
def project(node, tmp_path_factory) -> Path:
    return project_with_package(tmp_path_factory.mktemp("project"))


@pytest.fixture(scope="module")
def bin_path(project) -> Path:
    return project / "node_modules" / "openresponses-runtime" / "bin" / BIN.name


def run(args: list, *, cwd: Path = ROOT, stdin: bytes | None = None, timeout: int = 120):
    return subprocess.run([str(a) for a in args], cwd=cwd, input=stdin, capture_output=True, timeout=timeout)


@pytest.mark.process
def test_node_unit_tests(node, project):
    """The checker's and the emitter's own `node --test` files (test_typescript.py runs the package's)."""
    done = run([node, "--test", "streaming.test.mjs", "emitter.test.mjs"], cwd=project, timeout=300)
    assert done.returncode == 0, done.stdout.decode()[-4000:] + done.stderr.decode()[-2000:]
    assert re.search(rb"^# fail 0$", done.stdout, re.M) and not re.search(rb"^# pass 0$", done.stdout, re.M)


# -- the bin against `orspec check-stream` --------------------------------------------------------


def python_cli(path: Path, flags: tuple[str, ...]) -> tuple[list[str], str, int]:
    """`orspec check-stream` run in this process: its stdout lines, stderr and exit code."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = orspec_main(["check-stream", str(path), *flags])
    return out.getvalue().splitlines(), err.getvalue(), code


def normalized(lines: list[str]) -> list[str]:
    """The lines with what only the parsers' own words say left out: a core event's schema finding
    keeps its seq, rule and event type (zod and pydantic word the same fault differently), invalid
    JSON its rule."""
    return [SCHEMA_DETAIL.sub(r"\1 (...)", JSON_DETAIL.sub(r"\1 (...)", line)) for line in lines]


def assert_same_report(node: Path, bin_path: Path, path: Path, flags: tuple[str, ...] = ()) -> None:
    py_out, py_err, py_code = python_cli(path, flags)
    js = run([node, bin_path, path, *flags])
    js_out, js_err = js.stdout.decode().splitlines(), js.stderr.decode()
    assert (normalized(js_out), js_err, js.returncode) == (normalized(py_out), py_err, py_code), path.name


def recordings() -> list[Path]:
    return sorted((SHARED / "recordings").rglob("*.sse")) if SHARED.is_dir() else []


@pytest.mark.process
@pytest.mark.parametrize("path", recordings(), ids=lambda p: str(p.relative_to(SHARED / "recordings")))
@pytest.mark.parametrize("flags", [(), ("--allow-missing-done",)], ids=["strict", "allow-missing-done"])
def test_bin_agrees_with_orspec_check_stream_on_recordings(node, bin_path, path, flags):
    assert_same_report(node, bin_path, path, flags)


def test_recordings_are_there():
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside the project; the recordings are unavailable")
    assert len(recordings()) >= 12


def broken_streams() -> dict[str, bytes]:
    """The checker tests' corruptions, and each event of a full stream dropped, repeated, moved or broken."""
    streams = {
        f"corruption-{name}": to_sse(corrupt(copy.deepcopy(full().events)))
        for name, (corrupt, _) in CORRUPTIONS.items()
    }
    events = full().events
    for i, event in enumerate(events):
        kind = event["type"]
        streams[f"drop-{i}-{kind}"] = to_sse(events[:i] + events[i + 1 :])
        streams[f"repeat-{i}-{kind}"] = to_sse(events[: i + 1] + events[i:])
        streams[f"move-{i}-{kind}"] = to_sse([*events[:i], *events[i + 1 : i + 2], event, *events[i + 2 :]])
        frames = to_sse(events).split(b"\n\n")
        header, data = frames[i].split(b"\n", 1)
        streams[f"header-{i}-{kind}"] = b"\n\n".join([*frames[:i], b"event: other\n" + data, *frames[i + 1 :]])
        streams[f"json-{i}-{kind}"] = b"\n\n".join([*frames[:i], header + b"\n" + data[:-7], *frames[i + 1 :]])
        streams[f"array-{i}-{kind}"] = b"\n\n".join([*frames[:i], b"data: [" + data[6:] + b"]", *frames[i + 1 :]])
        streams[f"early-done-{i}-{kind}"] = b"\n\n".join([*frames[:i], b"data: [DONE]", *frames[i:]])
        edited = copy.deepcopy(events)
        edited[i]["sequence_number"] = edited[i]["sequence_number"] + 5
        streams[f"seq-jump-{i}-{kind}"] = to_sse(edited)
        stripped = copy.deepcopy(events)
        stripped[i] = {"type": kind, "sequence_number": stripped[i]["sequence_number"]}
        streams[f"stripped-{i}-{kind}"] = to_sse(stripped)
        retyped = copy.deepcopy(events)
        retyped[i] = {**retyped[i], **{k: [v] for k, v in retyped[i].items() if k not in ("type", "sequence_number")}}
        streams[f"retyped-{i}-{kind}"] = to_sse(retyped)
        unknown = copy.deepcopy(events)
        unknown.insert(i, {"type": "acme:trace", "sequence_number": "x" if i % 2 else 1.5, "detail": [1, {"a": None}]})
        streams[f"unknown-{i}-{kind}"] = to_sse(unknown)
    streams["no-done"] = to_sse(events, done=False)
    streams["done-twice"] = to_sse(events) + b"data: [DONE]\n\n"
    streams["empty"] = b""
    streams["no-headers-crlf"] = to_sse(events, headers=False).replace(b"\n", b"\r\n")
    streams["nan"] = to_sse(events).replace(b'"delta":"Hel"', b'"delta":NaN', 1)
    return streams


BROKEN = broken_streams()


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("captures")
    for name, data in BROKEN.items():
        (folder / f"{name}.sse").write_bytes(data)
    return folder


@pytest.mark.process
@pytest.mark.parametrize(
    ("name", "flags"),
    [(name, ()) for name in sorted(BROKEN)]
    + [(name, ("--allow-missing-done",)) for name in sorted(BROKEN) if "done" in name or "terminal" in name],
)
def test_bin_agrees_with_orspec_check_stream_on_broken_streams(node, bin_path, captures, name, flags):
    assert_same_report(node, bin_path, captures / f"{name}.sse", flags)


def test_broken_streams_break_every_rule_the_checker_reports(captures):
    """The corrupted streams reach every rule, `schema` of core events included: the comparison covers them."""
    from openresponses_runtime.events import RULES

    found = set()
    for name in BROKEN:
        found |= {v.rule for v in check_sse((captures / f"{name}.sse").read_bytes())}
    assert found == set(RULES)
    core_schema = {
        name
        for name in BROKEN
        if any(SCHEMA_DETAIL.match(str(v)) for v in check_sse((captures / f"{name}.sse").read_bytes()))
    }
    assert {name.split("-", 2)[2] for name in core_schema if name.startswith("stripped-")} > {"response.created"}


@pytest.mark.process
def test_bin_reads_standard_input_and_says_what_it_cannot_read(node, bin_path, tmp_path):
    data = full().sse()
    js = run([node, bin_path, "-"], stdin=data)
    assert js.returncode == 0 and js.stdout.decode().startswith("OK: ")
    missing = run([node, bin_path, tmp_path / "nope.sse"])
    assert missing.returncode == 2
    assert (
        missing.stderr.decode()
        == f"openresponses-check-stream: cannot read {tmp_path / 'nope.sse'}: No such file or directory\n"
    )
    assert run([node, bin_path]).returncode == 2


ACCUMULATE = """
import { readFileSync } from 'node:fs';
import { ResponseAccumulator } from 'openresponses-runtime/streaming';
const paths = JSON.parse(readFileSync(0, 'utf8'));
const valid = (accumulator) => { try { return accumulator.result() && true; } catch (error) { if (error.name !== 'ZodError') throw error; return false; } };
process.stdout.write(JSON.stringify(paths.map((path) => {
  const accumulator = new ResponseAccumulator().feedSse(readFileSync(path));
  return [accumulator.asObject(), valid(accumulator)];
})));
"""


@pytest.mark.process
def test_the_accumulator_builds_what_the_python_one_builds(node, project, captures):
    """On every recording of an Open Responses stream, and on a stream of every kind of item; and
    `result()` accepts the response where the Python one does (ResponseResource through zod, pydantic)."""
    paths = sorted((SHARED / "recordings" / "streams").glob("*.sse")) if SHARED.is_dir() else []
    full_stream = captures / "no-done.sse"
    bare = captures / "bare-output.sse"
    events = full().events
    events[-1]["response"]["output"] = []  # the items come from their own events
    bare.write_bytes(to_sse(events))
    paths += [full_stream, bare]
    done = run(
        [node, "--input-type=module", "-e", ACCUMULATE], cwd=project, stdin=json.dumps([str(p) for p in paths]).encode()
    )
    assert done.returncode == 0, done.stderr.decode()
    built = json.loads(done.stdout)
    verdicts = []
    for path, (js, js_valid) in zip(paths, built, strict=True):
        accumulator = ResponseAccumulator().feed_sse(path.read_bytes())
        assert js == json.loads(json.dumps(accumulator.as_dict())), path.name
        try:
            accumulator.result()
            verdicts.append((path.name, True))
        except ValidationError:
            verdicts.append((path.name, False))
        assert js_valid == verdicts[-1][1], path.name
    assert built[-1][0]["output"] == full().events[-1]["response"]["output"]
    assert {valid for _, valid in verdicts} == {True, False}, verdicts


# -- messages ------------------------------------------------------------------------------------


# JSON numbers lose int-or-float once JavaScript parses them, so an integral float (1.0, 1e16) reads
# as an int; none is listed. Integers beyond 2**53 lose their last digits the same way.
REPR_VALUES = [
    "plain",
    "it's",
    'say "hi"',
    "both ' and \"",
    "tab\tnew\nline\rback\\slash",
    "\x00\x1f\x7f\x80\xa0\xad",
    "wörld ünïcode 中文 😀",
    "\u2028\u200b\ufeff",
    "",
    0,
    -7,
    2**53 - 1,
    0.1,
    -2.5,
    123456.789,
    1.5e-5,
    1e-7,
    0.0001,
    True,
    False,
    None,
    [1, "a", None, [True]],
    {"k": "v", "n": {"x": [0.5]}, "e": {}},
    "x" * 60,
]


@pytest.mark.process
def test_python_repr_is_what_the_messages_write(node, project):
    script = (
        "import { readFileSync } from 'node:fs';"
        "import { pyRepr, short } from './node_modules/openresponses-runtime/src/streaming/pyvalues.js';"
        "const values = JSON.parse(readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(values.map((v) => [pyRepr(v), short(v)])));"
    )
    done = run([node, "--input-type=module", "-e", script], cwd=project, stdin=json.dumps(REPR_VALUES).encode())
    assert done.returncode == 0, done.stderr.decode()
    got = json.loads(done.stdout)
    short = [r if len(r := repr(v)) <= 40 else r[:37] + "..." for v in REPR_VALUES]
    assert got == [[repr(v), s] for v, s in zip(REPR_VALUES, short, strict=True)]


# -- the emitter ---------------------------------------------------------------------------------

EMIT = """
import { readFileSync } from 'node:fs';
import { emitEvents, Emitter, responseSkeleton, ToolPolicy } from 'openresponses-runtime/server';
const { body, scripts } = JSON.parse(readFileSync(0, 'utf8'));
async function* steps(list) {
  for (const step of list) {
    if (step === 'boom') throw new Error('boom');
    yield step;
  }
}
const out = {};
for (const [name, { tool_choice, steps: list }] of Object.entries(scripts)) {
  const request = { ...body, tool_choice };
  const emitter = new Emitter(responseSkeleton(request, { id: 'resp_1' }), { policy: ToolPolicy.fromRequest(request.tools, tool_choice) });
  const events = [];
  for await (const event of emitEvents(emitter, steps(list))) events.push(event);
  out[name] = { events, response: emitter.response };
}
process.stdout.write(JSON.stringify(out));
"""
WEATHER_TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
EMIT_BODY = {
    "model": "m",
    "tools": [WEATHER_TOOL],
    "temperature": 0.5,
    "text": {"format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}}},
    "reasoning": {"effort": "low"},
    "service_tier": "auto",
    "metadata": {"a": "b"},
    "max_output_tokens": 99,
}
CALL = [
    {"type": "function_call_start", "name": "get_weather", "callId": "call_1"},
    {"type": "arguments", "delta": '{"city":'},
    {"type": "arguments", "delta": '"Paris"}'},
]
EMIT_SCRIPTS = {
    "every": (
        "auto",
        [
            {"type": "accepted"},
            {"type": "reasoning_summary", "text": "Thinking.", "encryptedContent": "opaque"},
            {"type": "reasoning", "text": "raw "},
            {"type": "reasoning", "text": "thought"},
            {"type": "reasoning_end", "encryptedContent": "sig"},
            {"type": "reasoning_end"},
            {"type": "message_start", "phase": "final_answer"},
            {"type": "text", "text": "Hel"},
            {"type": "text", "text": "lo"},
            {"type": "refusal", "text": "No."},
            {"type": "message_end"},
            *CALL,
            {"type": "function_call_end"},
            {
                "type": "vendor_item",
                "item": {"type": "openai:web_search_call", "action": {"type": "search", "query": "q"}},
            },
            {"type": "text", "text": "after"},
            {"type": "usage", "inputTokens": 3, "outputTokens": 5, "reasoningTokens": 1, "cachedTokens": 2},
        ],
    ),
    "incomplete": ("auto", [{"type": "text", "text": "cut"}, {"type": "incomplete"}, {"type": "text", "text": "x"}]),
    "fails": ("auto", [{"type": "text", "text": "partial"}, *CALL[:2], "boom"]),
    "misordered": ("auto", [{"type": "text", "text": "a"}, {"type": "arguments", "delta": "{}"}]),
    "suppressed": ("none", [*CALL, {"type": "function_call_end"}, {"type": "text", "text": "ok"}]),
    "required": ("required", [{"type": "text", "text": "no call"}]),
    "forced": ({"type": "function", "name": "get_weather"}, [*CALL]),
}
IDS = re.compile(r"^(msg|fc|call|rs|openai)_[0-9a-f]{32}$")
# A step in a ProviderError's message: its `type` here, its class in Python.
STEP_CLASSES = {
    "accepted": "Accepted",
    "message_start": "MessageStart",
    "text": "TextDelta",
    "message_end": "MessageEnd",
    "refusal": "Refusal",
    "function_call_start": "FunctionCallStart",
    "arguments": "ArgumentsDelta",
    "function_call_end": "FunctionCallEnd",
    "reasoning_summary": "ReasoningSummary",
    "reasoning": "ReasoningDelta",
    "reasoning_end": "ReasoningEnd",
    "vendor_item": "VendorItem",
    "usage": "UsageReport",
    "incomplete": "Incomplete",
}
STEP_NAMED = re.compile(r"^(The provider failed: )(" + "|".join(STEP_CLASSES) + ") ")


def python_steps(steps: list) -> list:
    from openresponses_runtime.server import steps as s

    made = {
        "accepted": lambda d: s.Accepted(),
        "message_start": lambda d: s.MessageStart(d.get("phase")),
        "text": lambda d: s.TextDelta(d["text"]),
        "message_end": lambda d: s.MessageEnd(),
        "refusal": lambda d: s.Refusal(d["text"]),
        "function_call_start": lambda d: s.FunctionCallStart(d["name"], d.get("callId")),
        "arguments": lambda d: s.ArgumentsDelta(d["delta"]),
        "function_call_end": lambda d: s.FunctionCallEnd(),
        "reasoning_summary": lambda d: s.ReasoningSummary(d["text"], d.get("encryptedContent")),
        "reasoning": lambda d: s.ReasoningDelta(d["text"]),
        "reasoning_end": lambda d: s.ReasoningEnd(d.get("encryptedContent")),
        "vendor_item": lambda d: s.VendorItem(d["item"]),
        "usage": lambda d: s.UsageReport(
            d["inputTokens"], d["outputTokens"], d.get("reasoningTokens", 0), d.get("cachedTokens", 0)
        ),
        "incomplete": lambda d: s.Incomplete(d.get("reason", "max_output_tokens")),
    }
    return [step if step == "boom" else made[step["type"]](step) for step in steps]


def python_emit(tool_choice, steps: list) -> dict:
    """What the Python server's emitter makes of the same steps, driven as the server drives it."""
    from openresponses_runtime.server.app import response_skeleton
    from openresponses_runtime.server.emitter import Emitter, ToolPolicy
    from openresponses_runtime.server.errors import ServerError
    from openresponses_runtime.server.steps import Incomplete, ProviderError

    request = {**EMIT_BODY, "tool_choice": tool_choice}
    emitter = Emitter(response_skeleton(request, "resp_1", "m"), ToolPolicy.from_request(request["tools"], tool_choice))
    events = emitter.start()
    try:
        for step in python_steps(steps):
            if step == "boom":
                raise RuntimeError("boom")
            events += emitter.step(step)
            if isinstance(step, Incomplete):
                break
    except ProviderError as exc:
        events += emitter.fail(ServerError(f"The provider failed: {exc}", code="provider_error"))
    except RuntimeError:
        events += emitter.fail(ServerError("The provider failed: Error"))  # JavaScript's name for it
    events += emitter.finish()
    return {"events": events, "response": emitter.response}


def masked(value):
    """Ids as their prefixes, times as 0, and steps by their Python names: what two emitters share."""
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        value = {**value, "message": STEP_NAMED.sub(lambda m: m[1] + STEP_CLASSES[m[2]] + " ", value["message"])}
    if isinstance(value, dict):
        return {k: 0 if k in ("created_at", "completed_at") and v else masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    if isinstance(value, str) and IDS.match(value):
        return value.split("_", 1)[0] + "_ID"
    return value


@pytest.mark.process
def test_the_emitter_makes_what_the_python_emitter_makes(node, project):
    scripts = {name: {"tool_choice": choice, "steps": steps} for name, (choice, steps) in EMIT_SCRIPTS.items()}
    stdin = json.dumps({"body": EMIT_BODY, "scripts": scripts}).encode()
    done = run([node, "--input-type=module", "-e", EMIT], cwd=project, stdin=stdin)
    assert done.returncode == 0, done.stderr.decode()
    made = json.loads(done.stdout)
    ends = {}
    for name, (choice, steps) in EMIT_SCRIPTS.items():
        js, py = made[name], python_emit(choice, steps)
        assert masked(js["events"]) == masked(json.loads(json.dumps(py["events"]))), name
        assert masked(js["response"]) == masked(json.loads(json.dumps(py["response"]))), name
        sse = to_sse(js["events"])
        assert check_sse(sse) == [], name  # the Python checker and models accept every event
        assert ResponseAccumulator().feed_sse(sse).result().status == js["response"]["status"]
        ends[name] = js["events"][-1]["type"]
    assert ends == {
        "every": "response.completed",
        "incomplete": "response.incomplete",
        "fails": "response.failed",
        "misordered": "response.failed",
        "suppressed": "response.completed",
        "required": "response.failed",
        "forced": "response.completed",
    }


# -- types and layout ----------------------------------------------------------------------------


@pytest.mark.process
def test_tsc_strict_on_the_declarations_and_a_consumer(node, tmp_path):
    tsc = needed("tsc", TOOLS / "typescript" / "bin" / "tsc")
    project = project_with_package(tmp_path)
    shutil.copy(ROOT / "tests" / "fixtures" / "typescript" / "consumer.ts", project)
    # The checker's and the emitter's declarations; test_typescript.py checks the whole package with zod beside it.
    installed = project / "node_modules" / "openresponses-runtime"
    declarations = sorted(str(p.relative_to(project)) for p in (installed / "src").rglob("*.d.ts"))
    config = {
        "compilerOptions": {
            "strict": True,
            "noEmit": True,
            "module": "nodenext",
            "moduleResolution": "nodenext",
            "target": "es2022",
            "lib": ["es2023", "dom"],
            "allowJs": True,
            "checkJs": True,
            "types": ["node"],
        },
        "files": ["consumer.ts", *declarations],
    }
    (project / "tsconfig.json").write_text(json.dumps(config))
    done = run([node, tsc, "-p", project], cwd=project, timeout=300)
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()


@pytest.mark.process
def test_prettier_leaves_the_package_as_it_is(node):
    prettier = needed("prettier", TOOLS / "prettier" / "bin" / "prettier.cjs")
    done = run([node, prettier, "--check", PACKAGE], timeout=300)
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()


def test_the_protocol_module_is_generated_and_the_engine_is_source():
    """The build writes the protocol tables; the checker, reader and emitter are hand-written source it leaves alone."""
    streaming = PACKAGE / "src" / "streaming"
    assert is_generated((streaming / "protocol.js").read_bytes())
    assert is_generated((streaming / "protocol.d.ts").read_bytes())
    for path in (streaming / "checker.js", PACKAGE / "src" / "server" / "emitter.js", BIN):
        assert not is_generated(path.read_bytes()), path
