"""The performance page (docs/guides/performance.md) says what the last `python bench/goals.py` run
measured: its numbers equal the committed results file, bench/results.json, which that run wrote
from the benchmarks' own output."""

from __future__ import annotations

import json
import re
import sys

import pytest
import yaml

from ..conftest import ROOT

BENCH = ROOT / "bench"
PAGE = ROOT / "docs" / "guides" / "performance.md"
sys.path.insert(0, str(BENCH))  # the benchmarks are scripts, not a package

import goals  # noqa: E402
import performance_page  # noqa: E402


@pytest.fixture(scope="module")
def results() -> dict:
    return json.loads((BENCH / "results.json").read_text())


@pytest.fixture(scope="module")
def page() -> str:
    return PAGE.read_text()


def _table(page: str, heading: str) -> list[list[str]]:
    """The cells of the first table under `heading`, its header and rule left out."""
    section = page.split(f"\n{heading}\n", 1)[1]
    rows = []
    for line in section.splitlines():
        if line.startswith("|"):
            rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
        elif rows:
            break
    return rows[2:]


def test_the_page_is_made_from_the_results_file(results, page):
    assert page == performance_page.render(results), "stale: run python bench/performance_page.py"


def test_the_goals_table_shows_every_goal_as_measured(results, page):
    rows = _table(page, "## The goals")
    expected = [[g["benchmark"], g["figure"], g["value"], g["goal"], g["verdict"]] for g in results["goals"]]
    assert [[cell.replace("\\|", "|") for cell in row] for row in rows] == expected
    met = sum(row[4] == "MET" for row in rows)
    assert f"\n{met} of {len(rows)} goals MET.\n" in page


def test_every_goal_came_from_its_benchmarks_output(results):
    for goal in results["goals"]:
        output = results["benchmarks"][goal["benchmark"]]["output"]
        if goal["value"] == "-":
            continue
        assert any(
            goals.GOAL_LINE.match(line) and goals.GOAL_LINE.match(line).group("value") == goal["value"]
            and line.rstrip().endswith(goal["verdict"]) and goal["figure"] in line
            for line in output
        ), goal  # fmt: skip


def test_the_server_table_shows_the_measured_figures(results, page):
    servers = results["benchmarks"]["server"]["figures"]["servers"]
    rows = _table(page, "## The servers side by side")
    assert len(rows) == len(servers)
    for row, figures in zip(rows, servers.values(), strict=True):
        for cell, (_, key, shown) in zip(row[1:], performance_page.SERVER_COLUMNS, strict=True):
            decimals = int(shown.split(".")[1].split("f")[0]) if "." in shown else 0
            assert float(cell.replace(",", "")) == pytest.approx(figures[key], abs=0.5 * 10**-decimals), (row[0], key)


def test_the_capacity_table_shows_the_measured_figures(results, page):
    gateways = results["benchmarks"]["capacity"]["figures"]["gateways"]
    rows = _table(page, "## Gateways in front of a Chat Completions model")
    assert len(rows) == len(gateways) == 2  # orspec and its peer, litellm
    for row, figures in zip(rows, gateways.values(), strict=True):
        for cell, (_, key, shown) in zip(row[1:-1], performance_page.CAPACITY_COLUMNS, strict=True):
            decimals = int(shown.split(".")[1].split("f")[0]) if "." in shown else 0
            assert float(cell.replace(",", "")) == pytest.approx(figures[key], abs=0.5 * 10**-decimals), (row[0], key)
        assert row[-1].startswith(", ".join(map(str, figures["violations_per_stream"]))), row[0]


def test_a_chart_per_goal_and_nothing_loaded_from_another_host(results, page):
    charts = re.findall(r"<svg .*?</svg>", page)
    goal_charts = [chart for chart in charts if chart.startswith('<svg class="goal-chart"')]
    assert len(goal_charts) == len(results["goals"])
    for goal, chart in zip(results["goals"], goal_charts, strict=True):
        assert f">{goal['value']}  {goal['verdict']}<" in chart or goal["value"] == "-"
    assert not re.search(r"https?://|src=|href=|@import|url\(", "".join(charts))


def test_the_page_names_the_machine_and_the_command(results, page):
    machine = results["machine"]
    assert f"| cores | {machine['cores']} |" in page and f"| CPU | {machine['cpu']} |" in page
    assert f"| Python | {machine['python']} |" in page
    assert f"`{results['command']}`" in page and "shared" in page
    for run in results["benchmarks"].values():
        assert f"`{run['command']}`" in page


def test_the_page_is_in_the_docs_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python/name:", ""))
    assert "guides/performance.md" in json.dumps(config["nav"])


@pytest.mark.parametrize(
    ("line", "value", "verdict"),
    [
        ("  non-streaming req/s, orspec serve / minimal Starlette app   0.67x  (goal >= 0.8x)  NOT MET", "0.67x", "NOT MET"),
        ("goal: cold orspec build / datamodel-codegen 1.41x (goal <= 1.5x) MET", "1.41x", "MET"),
        ("  time to first byte p50, added by the proxy  0.42 ms  (goal <= 1 ms)  MET", "0.42 ms", "MET"),
        ("  concurrent streams at 50 events/s held by one orspec process: 500 streams  (goal >= 1000 streams)  NOT MET",
         "500 streams", "NOT MET"),
    ],
)  # fmt: skip
def test_goals_reads_each_way_a_benchmark_prints_a_goal(line, value, verdict):
    match = goals.GOAL_LINE.match(line)
    assert match and match.group("value") == value and match.group("verdict") == verdict


def test_the_chain_table_shows_each_store_turn_by_turn():
    row = {"per_second": 366.0, "p50_ms": 20.15, "p99_ms": 43.47, "server_cpu_ms": 0.611, "database_cpu_ms": 0.443}
    chain = {
        "command": "orspec serve --api-key bench-key --delay 0 --store URL",
        "settings": {"turns": 100, "connections": 8, "repeat": 3, "seconds": 3.0},
        "stores": {"postgres": {"first": row, "last": {**row, "per_second": 171.0}}},
    }
    page = "\n" + "\n".join(performance_page._chain(chain))
    assert _table(page, "## Continuing a chain") == [
        ["postgres", "1", "366", "20.15", "43.47", "0.611", "0.443"],
        ["postgres", "100", "171", "20.15", "43.47", "0.611", "0.443"],
    ]
    assert "`orspec serve --api-key bench-key --delay 0 --store URL`" in page
