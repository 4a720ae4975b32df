"""The stream rules page: every rule of the state machines has a stream that breaks it, and both
stream checkers (Python's, and the generated TypeScript one under node) report that rule for it,
and nothing for the valid stream the examples start from."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from openresponses_runtime.streaming import check_sse
from orspec.generate.rules import breaking_streams, changed_lines, frames, sse, valid_events
from orspec.pipeline import load_spec

from ..conftest import ROOT

# The checker module alone: it needs no zod (the streaming index, with the zod validation, does).
CHECKER = ROOT / "generated" / "typescript" / "src" / "streaming" / "checker.js"


@pytest.fixture(scope="module")
def spec():
    return load_spec(ROOT / "spec")


@pytest.fixture(scope="module")
def streams(spec):
    return breaking_streams(spec.document, spec.state_machines.rules)


def test_every_rule_has_a_breaking_stream_on_the_page(spec, streams):
    assert set(streams) == set(spec.state_machines.rules)
    page = (ROOT / "generated" / "docs" / "stream-rules.md").read_text()
    for rule, (_, stream) in streams.items():
        assert f"{{ #rule-{rule} }}" in page
        assert stream.strip() in page


def test_the_valid_stream_is_valid(spec):
    assert check_sse(sse(frames(valid_events(spec.document)))) == []


def test_python_checker_reports_each_rule_for_its_stream(streams):
    for rule, (_, stream) in streams.items():
        assert rule in [v.rule for v in check_sse(stream)], rule


@pytest.mark.process
def test_typescript_checker_reports_each_rule_for_its_stream(spec, streams, tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH (.ci/services installs it)")
    cases = {rule: stream for rule, (_, stream) in streams.items()}
    cases["(valid)"] = sse(frames(valid_events(spec.document)))
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    script = tmp_path / "check.mjs"
    script.write_text(
        f"import {{ checkSse }} from {json.dumps(CHECKER.as_uri())};\n"
        "import { readFileSync } from 'node:fs';\n"
        "const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));\n"
        "const out = {};\n"
        "for (const [rule, stream] of Object.entries(cases)) out[rule] = checkSse(stream).map((v) => v.rule);\n"
        "console.log(JSON.stringify(out));\n"
    )
    done = subprocess.run([node, str(script), str(tmp_path / "cases.json")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    # Without a schema validator the TypeScript checker does not check schemas; every other rule it does.
    assert found.pop("(valid)") == []
    for rule, reported in found.items():
        if rule != "schema":
            assert rule in reported, (rule, reported)


def test_the_page_marks_the_events_each_example_changed(spec, streams):
    valid = sse(frames(valid_events(spec.document)))
    page = (ROOT / "generated" / "docs" / "stream-rules.md").read_text()
    marks = {}
    for rule, (_, stream) in streams.items():
        marks[rule] = changed_lines(valid, stream)
        assert marks[rule], rule
        assert f'```text hl_lines="{" ".join(map(str, marks[rule]))}"\n{stream.strip()}' in page, rule
    line = {rule: [streams[rule][1].splitlines()[n - 1] for n in marks[rule]] for rule in streams}
    assert line["sse-json"] == ['data: {"delta": "Hi"}']  # the event that is not one
    assert line["sse-header"][0] == "event: response.output_text.done"  # the header that lies
    assert line["done-marker"][0] == "event: response.completed"  # the last event, with nothing after it
    assert '"sequence_number":3' in line["sequence"][-1]  # the number given twice, not those after it
    assert (
        line["item-in-progress"][:2]
        == [  # the event moved
            "event: response.output_item.done",
            line["item-in-progress"][1],
        ]
        and '"type":"response.output_item.done"' in line["item-in-progress"][1]
    )
