"""`orspec report DIR`: the proxy's records as one self-contained HTML page, or Markdown."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from openresponses_runtime.streaming import StreamChecker
from orspec.proxy.recorder import Exchange, Recorder
from orspec.report import load_records, percentile, summarize

from ..conftest import run_orspec


def _exchange(i: int, *, transport: str = "sse", ttfb: float = 5.0) -> Exchange:
    exchange = Exchange("POST", "/v1/responses", transport=transport)
    exchange.status = exchange.upstream_status = 200
    exchange.model = "demo"
    exchange.ttfb_ms, exchange.total_ms = ttfb, ttfb * 10
    exchange.events = {"response.created": 1, "response.output_text.delta": 4 + i}
    return exchange


@pytest.fixture
def recorded(tmp_path: Path, shared) -> Path:
    """Records as the proxy writes them: clean exchanges, a real broken recording, a stall, a bad request."""
    recorder = Recorder(tmp_path, console=None)
    for i in range(20):
        recorder.record(_exchange(i, ttfb=float(i + 1)))
    broken = _exchange(99)
    checker = StreamChecker()
    capture = (shared / "recordings" / "streams" / "openai_responses_stream.0.sse").read_bytes()
    lines = capture.split(b"\n")
    # Drop the first output_item.done: a real stream with one skipped event.
    skip = next(i for i, line in enumerate(lines) if b'"response.output_item.done"' in line)
    checker.check_sse(b"\n".join(lines[: skip - 1] + lines[skip + 1 :]))
    broken.violations = [
        {"rule": v.rule, "sequence_number": v.sequence_number, "message": v.message} for v in checker.violations
    ]
    broken.events = dict(checker.counts)
    recorder.record(broken)
    stalled = _exchange(3)
    stalled.diagnose("tool-args-stall", "function call fc_1 streamed arguments but no .done within 30 s")
    recorder.record(stalled)
    bad = _exchange(0, transport="json")
    bad.status = 400
    bad.request_problems = ["Invalid value for 'temperature': Input should be a valid number."]
    recorder.record(bad)
    recorder.close()
    return tmp_path


def test_the_html_report_shows_rules_diagnoses_timings_and_event_mix(recorded):
    result = run_orspec("report", str(recorded))
    assert result.returncode == 0, result.stderr
    html = (recorded / "report.html").read_text()
    records = load_records(recorded)
    broken = next(r for r in records if r["violations"])
    rules = {v["rule"] for v in broken["violations"]}
    assert "item-closed" in rules
    for rule in rules:
        assert f"<code>{rule}</code>" in html
    assert broken["id"] in html  # the example exchange
    assert "tool-args-stall" in html and "Invalid value for &#39;temperature&#39;" in html
    assert html.count("<svg") >= 2  # exchanges over time, and the timing percentiles
    assert "response.output_text.delta" in html
    # Self-contained: nothing is fetched from anywhere.
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "<script" not in html


def test_the_markdown_report_to_stdout(recorded):
    result = run_orspec("report", str(recorded), "--format", "md", "--out", "-")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith("# orspec proxy report")
    assert "| `item-closed` |" in text
    assert "| time to first byte | 23 |" in text
    assert "`tool-args-stall`" in text


def test_summary_figures():
    records = [_exchange(i, ttfb=float(i)).as_record(bodies=False) for i in range(1, 101)]  # ttfb 1..100 ms
    assert [t["name"] for t in summarize(records).timings] == ["time to first byte", "total time"]
    for record in records:
        record["upstream_ttfb_ms"] = record["ttfb_ms"] - 0.25
    summary = summarize(records)
    ttfb, own = summary.timings[0], summary.timings[1]
    assert (ttfb["p50"], ttfb["p90"], ttfb["p99"], ttfb["max"]) == (50.0, 90.0, 99.0, 100.0)
    assert own["name"] == "the proxy's own share of it" and own["p50"] == own["max"] == 0.25
    assert summary.with_problems == 0
    assert sum(n for _, n, _ in summary.events) == sum(1 + 4 + i for i in range(1, 101))
    assert percentile([], 50) is None and percentile([3.0], 99) == 3.0


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "no such directory"),
        ("empty", "no *.jsonl records"),
        ("garbage", "proxy-x.jsonl:2: not a JSON line"),
        ("not-a-record", "proxy-x.jsonl:1: not an exchange record"),
        ("not-utf8", "proxy-x.jsonl: cannot read it (not UTF-8 text at byte 3); records are the JSON lines"),
    ],
)
def test_bad_record_directories_get_a_clear_error(tmp_path, setup, message):
    directory = tmp_path / "records"
    if setup != "missing":
        directory.mkdir()
    if setup == "garbage":
        (directory / "proxy-x.jsonl").write_text(json.dumps(_exchange(1).as_record(bodies=False)) + "\n{oops\n")
    if setup == "not-a-record":
        (directory / "proxy-x.jsonl").write_text("[1, 2]\n")
    if setup == "not-utf8":
        (directory / "proxy-x.jsonl").write_bytes(b"{}\n\xff\n")
    result = run_orspec("report", str(directory))
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_report_that_cannot_be_written_is_one_line(recorded):
    out = recorded / "no-such-folder" / "report.html"
    result = run_orspec("report", str(recorded), "--out", str(out))
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"orspec: cannot write {out}: ") and line.endswith(
        "; pass another file to --out (- for stdout)"
    )


@pytest.mark.parametrize(
    ("ttfbs", "p50"),
    [((80.3, 36.7), "36.7"), (tuple(float(n) for n in range(20, 0, -1)), "10.0")],
    ids=["two exchanges", "twenty"],
)
def test_the_console_summary_and_the_report_give_the_same_figures(tmp_path, ttfbs, p50):
    """One percentile for both: the proxy's summary at exit and `orspec report` of its records."""
    recorder = Recorder(tmp_path, console=None)
    for ttfb in ttfbs:
        recorder.record(_exchange(1, ttfb=ttfb))
    recorder.close()
    console = {}
    for name in ("time to first byte", "total time"):
        (row,) = [line for line in recorder.summary().splitlines() if line.strip().startswith(name)]
        console[name] = re.findall(r"(p50|p95|max) (\d+\.\d)ms", row)
    done = run_orspec("report", str(tmp_path), "--format", "md", "--out", "-")
    assert done.returncode == 0, done.stderr
    report = {}
    for name in console:
        (row,) = [line for line in done.stdout.splitlines() if line.startswith(f"| {name} |")]
        cells = [cell.strip().removesuffix(" ms") for cell in row.strip("|").split("|")]  # name, n, p50 ... max
        report[name] = [("p50", cells[2]), ("p95", cells[4]), ("max", cells[6])]
    assert console == report
    assert console["time to first byte"][0] == ("p50", p50)
