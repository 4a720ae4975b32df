"""The capacity benchmark runs end to end, on orspec's side: the fake upstream, `orspec serve
--gateway chat-completions` from its command line, the load generator's streams, the stream
checker on what came back, and a goal line that `bench/goals.py` reads.

The peer is left out here by choice (`--no-peer`), not skipped: installing litellm's proxy takes
minutes and hundreds of megabytes, and the comparison is a measurement, not a property a test can
hold. What the test proves is that the command works and that its figures are measured: streams
completed, events counted, CPU and memory read from the gateway's processes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ..conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))  # the benchmarks are scripts, not a package

import goals  # noqa: E402

pytestmark = [pytest.mark.process, pytest.mark.slow]


def test_the_capacity_bench_measures_orspec_serve_as_a_gateway():
    command = [sys.executable, str(ROOT / "bench" / "capacity_bench.py"), "--no-peer", "--no-profile",
               "--rounds", "1", "--seconds", "1", "--warmup", "0.5", "--events", "50", "--streams", "10",
               "--window", "1"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    figures = json.loads(next(line for line in lines if line.startswith(goals.RESULTS_LINE))[len(goals.RESULTS_LINE) :])
    orspec = figures["gateways"]["orspec"]
    assert orspec["requests_per_second"] > 0 and 0 < orspec["cpu_per_event_us"] < 10_000
    assert orspec["peak_rss_mib"] > 10
    assert orspec["violations_per_stream"] == [0, 0, 0]  # each kept stream checked, none with a violation
    assert orspec["sse_events_per_response"] >= 50 + 8  # the deltas, and the events around them
    [step] = figures["concurrency"]
    assert step["streams"] == step["completed"] == 10 and step["errors"] == 0
    assert step["gap_p50_ms"] >= 10  # paced by the upstream at 20 ms: the gaps are real waits
    [goal] = [match for line in lines if (match := goals.GOAL_LINE.match(line))]
    assert goal["value"] == f"{figures['held']} streams" and goal["verdict"] == "NOT MET"  # 10 < 1,000
