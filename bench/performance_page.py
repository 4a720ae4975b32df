"""The performance page, `docs/guides/performance.md`, made from `bench/results.json` (what the last
full `python bench/goals.py` run wrote): the goals, a chart per goal, the servers side by side, the
machine and the commands. The charts are inline SVG made here, so the page loads nothing.

    python bench/performance_page.py          # writes the page again from the results file
    python bench/performance_page.py --check  # exit 1 when the page differs from it
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results.json"
PAGE = ROOT / "docs" / "guides" / "performance.md"

MET_COLOUR, NOT_MET_COLOUR, BAR_COLOUR, GOAL_COLOUR = "#2e7d32", "#c62828", "#5c6bc0", "#ef6c00"
WIDTH, LABEL_WIDTH, ROW, PAD = 680, 250, 26, 8

# The server table's columns: (heading, key in a server's figures, format).
SERVER_COLUMNS = [
    ("req/s", "requests_per_second", "{:,.0f}"),
    ("p50 ms", "loaded_p50_ms", "{:.2f}"),
    ("p99 ms", "loaded_p99_ms", "{:.2f}"),
    ("server µs/req", "server_us_per_request", "{:.0f}"),
    ("alone p50 ms", "latency_p50_ms", "{:.2f}"),
    ("alone p99 ms", "latency_p99_ms", "{:.2f}"),
    ("events/s", "events_per_second", "{:,.0f}"),
    ("1st byte p50 ms", "first_byte_p50_ms", "{:.2f}"),
    ("1st byte p99 ms", "first_byte_p99_ms", "{:.2f}"),
]
SERVER_CHARTS = [
    ("Non-streaming requests/s, 32 keep-alive connections (higher is better)", "requests_per_second", "{:,.0f}"),
    ("p50 latency of one request at a time, ms (lower is better)", "latency_p50_ms", "{:.2f} ms"),
    ("Streamed events/s, one long stream (higher is better)", "events_per_second", "{:,.0f}"),
    ("Time to the first SSE byte, p50, ms (lower is better)", "first_byte_p50_ms", "{:.2f} ms"),
]
SERVER_NAMES = {
    "serve": "`orspec serve`",
    "serve-w2": "`orspec serve --workers 2` (SQLite)",
    "proxy": "`orspec proxy` → `orspec serve`",
    "scaffold": "scaffolded provider",
    "starlette": "minimal Starlette app",
    "fastapi": "FastAPI + openresponses-types",
}


def number(text: str) -> float | None:
    """The number of a goal's value or target (`0.94x`, `>= 0.8x`, `0.42 ms`, `500 streams`), None for `-`."""
    digits = text.lstrip("<>= ").removesuffix("x").removesuffix(" ms").removesuffix(" streams").strip()
    return float(digits) if digits not in ("", "-") else None


def unit(text: str) -> str:
    """What follows a goal value's number: `x`, ` ms` or ` streams`."""
    return text.lstrip("<>= ").lstrip("0123456789.")


def _svg(kind: str, label: str, height: int, body: list[str]) -> str:
    title = html.escape(label)
    return (
        f'<svg class="{kind}" role="img" aria-label="{title}" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" style="max-width: 100%; height: auto" font-family="sans-serif" '
        f'font-size="13"><title>{title}</title>' + "".join(body) + "</svg>"
    )


def goal_chart(goal: dict) -> str:
    """One bar, the measured value, and a mark at the goal; green when MET, red when not."""
    label = f"{goal['benchmark']}: {goal['figure']}"
    value, target = number(goal["value"]), number(goal["goal"])
    height = 2 * ROW + 2 * PAD
    if value is None or target is None:
        text = '<text x="0" y="30" fill="currentColor">not measured: the benchmark failed or printed no figure</text>'
        return _svg("goal-chart", label, height, [text])
    top = max(value, target) * 1.2 or 1.0
    span = WIDTH - LABEL_WIDTH - 70
    bar = value / top * span
    mark = LABEL_WIDTH + target / top * span
    colour = MET_COLOUR if goal["verdict"] == "MET" else NOT_MET_COLOUR
    body = [
        f'<text x="0" y="{PAD + 17}" fill="currentColor">measured</text>',
        f'<rect x="{LABEL_WIDTH}" y="{PAD + 4}" width="{bar:.1f}" height="{ROW - 8}" fill="{colour}"/>',
        f'<text x="{LABEL_WIDTH + bar + 6:.1f}" y="{PAD + 17}" fill="currentColor">{goal["value"]}  {goal["verdict"]}</text>',
        f'<text x="0" y="{PAD + ROW + 17}" fill="currentColor">goal {html.escape(goal["goal"])}</text>',
        f'<line x1="{mark:.1f}" y1="{PAD}" x2="{mark:.1f}" y2="{PAD + 2 * ROW}" stroke="{GOAL_COLOUR}" stroke-width="2" stroke-dasharray="4 3"/>',
        f'<text x="{mark + 4:.1f}" y="{PAD + ROW + 17}" fill="{GOAL_COLOUR}">{target:g}{unit(goal["value"])}</text>',
    ]  # fmt: skip
    return _svg("goal-chart", label, height, body)


def bar_chart(title: str, rows: list[tuple[str, float]], shown: str) -> str:
    """Horizontal bars, one per row, each labelled with its value formatted by `shown`."""
    height = PAD * 2 + ROW * len(rows)
    top = max(value for _, value in rows) * 1.15 or 1.0
    span = WIDTH - LABEL_WIDTH - 90
    body = []
    for i, (name, value) in enumerate(rows):
        y = PAD + i * ROW
        bar = value / top * span
        body += [
            f'<text x="0" y="{y + 17}" fill="currentColor">{html.escape(name)}</text>',
            f'<rect x="{LABEL_WIDTH}" y="{y + 4}" width="{bar:.1f}" height="{ROW - 8}" fill="{BAR_COLOUR}"/>',
            f'<text x="{LABEL_WIDTH + bar + 6:.1f}" y="{y + 17}" fill="currentColor">{shown.format(value)}</text>',
        ]
    return _svg("bar-chart", title, height, body)


def _figure(svg: str) -> list[str]:
    return ['<div class="bench-chart">', svg, "</div>", ""]


def render(results: dict) -> str:
    machine = results["machine"]
    goals = results["goals"]
    met = sum(goal["verdict"] == "MET" for goal in goals)
    load = machine["load_average"]
    lines = [
        "<!-- Made by bench/performance_page.py from bench/results.json, which `python bench/goals.py` writes: do not edit. -->",
        "# Performance",
        "",
        "What the commands users run cost, against the simplest app that serves the same bytes and against",
        "a peer built from other libraries. Every goal is a ratio measured side by side in one run (or, for",
        "the proxy, a difference of two times measured alternately), each printed MET or NOT MET; nothing",
        "is left out when it is not met.",
        "",
        f"The figures below are from one run of `{results['command']}`, started {results['started']}, which",
        f"took {results['minutes']} min, on a **shared {machine['cores']}-core machine**{_neighbours(load, machine['cores'])}",
        f"(the load average was {load[0]:g} when it started and {load[1]:g} when it ended), so absolute",
        "figures move from run to run; the ratios, taken from runs seconds apart, move less.",
        "",
        "## The machine",
        "",
        "| | |",
        "|---|---|",
        f"| cores | {machine['cores']} |",
        f"| CPU | {machine['cpu']} |",
        f"| Python | {machine['python']} |",
        f"| system | {machine['system']} |",
        "| packages | " + ", ".join(f"{name} {version}" for name, version in machine["packages"].items()) + " |",
        "",
        "## The goals",
        "",
        f"{met} of {len(goals)} goals MET.",
        "",
        "| benchmark | figure | measured | goal | |",
        "|---|---|---|---|---|",
    ]
    for goal in goals:
        cells = [goal["benchmark"], goal["figure"], goal["value"], goal["goal"], goal["verdict"]]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    lines.append("")
    lines += ["Each benchmark's command, and a chart per goal (the dashed line is the goal):", ""]
    for name, run in results["benchmarks"].items():
        lines += [f"### {name}", "", f"`{run['command']}` ({run['seconds']} s)", ""]
        for goal in (goal for goal in goals if goal["benchmark"] == name):
            lines += [f"**{goal['figure']}**", ""]
            lines += _figure(goal_chart(goal))
    default = (results["benchmarks"].get("default") or {}).get("figures")
    if default:
        lines += _default_store(default)
    server = (results["benchmarks"].get("server") or {}).get("figures")
    if server:
        lines += _servers(server)
    capacity = (results["benchmarks"].get("capacity") or {}).get("figures")
    if capacity:
        lines += _capacity(capacity)
    chain = (results["benchmarks"].get("chain") or {}).get("figures")
    if chain:
        lines += _chain(chain)
    lines += [
        "## Running it",
        "",
        "```sh",
        "python bench/goals.py                      # every benchmark; writes bench/results.json and this page",
        "python bench/goals.py --only server proxy  # some of them; writes neither",
        "python bench/server_bench.py --help        # each benchmark says what it measures and how",
        "```",
        "",
        "Each benchmark starts its servers as their own processes on loopback, and its load generator",
        "in a process of its own, whose CPU share is printed beside each figure: a load generator near a",
        "full core would measure itself, not the server. `bench/results.json` keeps every benchmark's",
        "whole output from the run above.",
        "",
    ]
    return "\n".join(lines)


def _chain(chain: dict) -> list[str]:
    """The `chain` benchmark's table: each store continuing turn 1 and the last turn, side by side."""
    last = chain["settings"]["turns"]
    lines = [
        "## Continuing a chain",
        "",
        f"From the `chain` benchmark above: `{chain['command']}` on each store, continuing turn 1 and then",
        f"turn {last}, {chain['settings']['connections']} keep-alive connections, the median of"
        f" {chain['settings']['repeat']} runs of {chain['settings']['seconds']:g} s each, with the CPU the",
        "server and its database spent per request.",
        "",
        "| store | turn | req/s | p50 ms | p99 ms | server CPU ms | database CPU ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for store, figures in chain["stores"].items():
        for turn, label in (("first", 1), ("last", last)):
            row = figures[turn]
            lines.append(
                f"| {store} | {label} | {row['per_second']:,.0f} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f}"
                f" | {row['server_cpu_ms']:.3f} | {row['database_cpu_ms']:.3f} |"
            )
    return [*lines, ""]


DEFAULT_NAMES = {
    "default": "`orspec serve` (its default SQLite file)",
    "memory": "`orspec serve --store memory:`",
    "workers-2": "`orspec serve --workers 2` (SQLite file)",
    "full-sync": "`orspec serve --store-sync full` (SQLite file)",
}
DEFAULT_COLUMNS = [
    ("alone p50 ms", "latency_p50_ms", "{:.2f}"),
    ("alone p99 ms", "latency_p99_ms", "{:.2f}"),
    ("req/s", "requests_per_second", "{:,.0f}"),
    ("p50 ms", "loaded_p50_ms", "{:.2f}"),
    ("p99 ms", "loaded_p99_ms", "{:.2f}"),
    ("server µs/req", "server_us_per_request", "{:.0f}"),
]


def _default_store(default: dict) -> list[str]:
    settings, figures = default["settings"], default["servers"]
    lines = [
        "## The default store",
        "",
        "From the `default` benchmark above: `orspec serve` as it starts with no store flag (a SQLite file",
        "in WAL mode, `synchronous=NORMAL`), against the memory store, each storing every response.",
        f"*Alone* is one request at a time on one connection ({settings['count']} of them); req/s and the",
        f"loaded p50 and p99 come from {settings['connections']} keep-alive connections for {settings['seconds']:g} s.",
        f"Medians of {settings['repeat']} rounds.",
        "",
        "| server | " + " | ".join(heading for heading, _, _ in DEFAULT_COLUMNS) + " |",
        "|---|" + "---:|" * len(DEFAULT_COLUMNS),
    ]
    for name, row in figures.items():
        cells = [DEFAULT_NAMES.get(name, name), *(shown.format(row[key]) for _, key, shown in DEFAULT_COLUMNS)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "The commands:", ""]
    lines += [f"- {DEFAULT_NAMES.get(name, name)}: `{row['command']}`" for name, row in figures.items()]
    lines.append("")
    return lines


def _servers(server: dict) -> list[str]:
    settings, figures = server["settings"], server["servers"]
    lines = [
        "## The servers side by side",
        "",
        "From the `server` benchmark above: each server started through its command line, the minimal",
        "app and the peer under the uvicorn settings `orspec serve` uses, all answering the same bytes.",
        f"Requests/s and the loaded p50 and p99 come from {settings['connections']} keep-alive connections",
        f"for {settings['seconds']:g} s; *alone* is one request at a time on one connection",
        f"({settings['count']} of them), as is the first SSE byte; events/s is one stream of",
        f"{settings['events']:,} deltas. Medians of {settings['repeat']} rounds.",
        "",
        "| server | " + " | ".join(heading for heading, _, _ in SERVER_COLUMNS) + " |",
        "|---|" + "---:|" * len(SERVER_COLUMNS),
    ]
    for name, row in figures.items():
        cells = [SERVER_NAMES.get(name, name), *(shown.format(row[key]) for _, key, shown in SERVER_COLUMNS)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "The commands:", ""]
    lines += [f"- {SERVER_NAMES.get(name, name)}: `{row['command']}`" for name, row in figures.items()]
    lines.append("")
    for title, key, shown in SERVER_CHARTS:
        rows = [(SERVER_NAMES.get(name, name).replace("`", ""), row[key]) for name, row in figures.items()]
        lines += [f"**{title}**", ""]
        lines += _figure(bar_chart(title, rows, shown))
    return lines


# The capacity table's columns: (heading, key in a gateway's figures, format).
CAPACITY_COLUMNS = [
    ("CPU µs per event", "cpu_per_event_us", "{:.1f}"),
    ("req/s", "requests_per_second", "{:.1f}"),
    ("1st event p50 ms", "first_event_p50_ms", "{:.1f}"),
    ("1st event p99 ms", "first_event_p99_ms", "{:.1f}"),
    ("peak RSS MiB", "peak_rss_mib", "{:.0f}"),
]


def _capacity(capacity: dict) -> list[str]:
    settings, gateways = capacity["settings"], capacity["gateways"]
    names = {"orspec": "`orspec serve --gateway chat-completions`", "litellm": f"litellm proxy {settings['litellm']}"}
    lines = [
        "## Gateways in front of a Chat Completions model",
        "",
        "From the `capacity` benchmark above: each gateway started through its command line, one worker,",
        f"in front of the same fake Chat Completions upstream, each answer {settings['events']} text deltas;",
        f"{settings['connections']} streams at a time for {settings['seconds']:g} s, medians of {settings['rounds']} rounds.",
        "CPU is the gateway's process tree's, per upstream delta it translated; the first event is a",
        "stream's first SSE event; violations are what the project's stream checker finds in each of the",
        "first streams.",
        "",
        "| gateway | " + " | ".join(heading for heading, _, _ in CAPACITY_COLUMNS) + " | violations per stream |",
        "|---|" + "---:|" * len(CAPACITY_COLUMNS) + "---|",
    ]
    for name, row in gateways.items():
        cells = [names.get(name, name), *(shown.format(row[key]) for _, key, shown in CAPACITY_COLUMNS)]
        cells.append(", ".join(map(str, row["violations_per_stream"])) + _rules(row["violated_rules"]))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "The commands:", ""]
    lines += [f"- {names.get(name, name)}: `{row['command']}`" for name, row in gateways.items()]
    lines += [
        "",
        "Concurrent streams on one `orspec serve --gateway chat-completions` process, each sent a delta",
        f"every {settings['interval'] * 1000:g} ms by the upstream. A count holds when every stream completes",
        "and the p99 gap between events arriving on a stream, while all are open, is under 100 ms; the",
        "steps stop at the first that does not:",
        "",
        "| streams | completed | gap p50 ms | gap p99 ms | gateway CPU | gateway waited for a core | load generator CPU | |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for step in capacity["concurrency"]:
        lines.append(
            f"| {step['streams']} | {step['completed']} | {step['gap_p50_ms']:.1f} | {step['gap_p99_ms']:.1f} | "
            f"{step['gateway_cpu_share']:.0%} | {step['gateway_wait_share']:.0%} | {step['loadgen_cpu_share']:.0%} | "
            f"{'holds' if step['holds'] else 'does not hold'} |"
        )
    lines.append("")
    return lines


def _rules(rules: list[str]) -> str:
    return f" ({', '.join(rules)})" if rules else ""


def _neighbours(load: list[float], cores: int) -> str:
    """What the load average says of other work on the machine during the run."""
    return ": other jobs ran beside it" if max(load) > cores else ", with little else running"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the page differs from the results file")
    args = parser.parse_args()
    page = render(json.loads(RESULTS.read_text()))
    if args.check:
        if not PAGE.is_file() or PAGE.read_text() != page:
            print(f"{PAGE} is stale: run python bench/performance_page.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
