"""Every performance goal in one run: each benchmark runs in turn (its full output is shown as it
goes), then the goal lines they printed are gathered into one table, MET or NOT MET.

    python bench/goals.py            # every benchmark below, its defaults; writes bench/results.json
    python bench/goals.py --only events build

A benchmark that fails, or prints no goal, is a NOT MET row of its own: nothing is dropped. A full
run writes `bench/results.json` (the goals, each benchmark's command and output, the machine) and
the performance page made from it, `docs/guides/performance.md` (`bench/performance_page.py`);
a run of `--only` some writes neither, unless `--results PATH` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import performance_page

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.json"

BENCHMARKS = {
    "default": ["default_store_bench.py", "--repeat", "3", "--seconds", "4"],
    "server": ["server_bench.py", "--repeat", "3", "--seconds", "4"],
    "proxy": ["proxy_bench.py"],
    "memory": ["request_memory.py"],
    "observability": ["observability_bench.py", "--repeat", "7", "--seconds", "3"],
    "events": ["events_bench.py", "--repeat", "9"],
    "build": ["build_bench.py", "--repeat", "5"],
    "scale": ["scale_bench.py", "--sizes", "0"],
    "gateway": ["gateway_bench.py", "--rounds", "7"],
    "background": ["background_bench.py", "--repeat", "3"],
    "chain": ["chain_bench.py", "--repeat", "3"],
    "typescript": ["ts_events_bench.py", "--repeat", "7"],
    "capacity": ["capacity_bench.py"],
}
TIMEOUT_SECONDS = 1800  # one benchmark, at most
PACKAGES = ("uvicorn", "h11", "starlette", "pydantic", "fastapi", "openresponses-types", "datamodel-code-generator")

# "  <figure>[:] 0.94x  (goal >= 0.9x)  MET", with or without a leading "goal:"; a time is "0.42 ms",
# a count of streams "500 streams".
GOAL_LINE = re.compile(
    r"^\s*(?:goal:\s*)?(?P<figure>.+?):?\s+(?P<value>[\d.]+(?:x| ms| streams))\s+"
    r"\(goal (?P<goal>[<>]=\s*[\d.]+(?:x| ms| streams))\)\s+(?P<verdict>NOT MET|MET)\s*$"
)
RESULTS_LINE = "results: "  # a benchmark's figures as one JSON line, kept in the results file


def run(name: str, argv: list[str]) -> tuple[list[dict], dict]:
    """The goal rows `bench/<argv>` printed, and what it did (its command, output, time)."""
    command = [sys.executable, str(HERE / argv[0]), *argv[1:]]
    shown = f"python bench/{' '.join(argv)}"
    print(f"\n$ {shown}", flush=True)
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
        stdout, stderr, code = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        stdout, stderr, code = _text(exc.stdout), f"timed out after {TIMEOUT_SECONDS} s", -1
    seconds = time.monotonic() - started
    print("".join(line + "\n" for line in stdout.splitlines() if not line.startswith(RESULTS_LINE)), end="")
    if code != 0:
        print(stderr[-3000:], end="", file=sys.stderr)
    print(f"({name}: {seconds:.0f} s)", flush=True)
    rows, figures = [], None
    for line in stdout.splitlines():
        if line.startswith(RESULTS_LINE):
            figures = json.loads(line[len(RESULTS_LINE) :])
        elif match := GOAL_LINE.match(line):
            rows.append({"benchmark": name, **match.groupdict()})
        elif line.endswith(" NOT MET"):  # a goal it could not measure, e.g. a peer not installed
            figure = line.strip().removeprefix("goal:").strip().removesuffix(" NOT MET")
            rows.append({"benchmark": name, "figure": figure, "value": "-", "goal": "-", "verdict": "NOT MET"})
    if code != 0 or not rows:
        failed = f"bench/{argv[0]} {'failed' if code else 'printed no goal'}"
        rows.append({"benchmark": name, "figure": failed, "value": "-", "goal": "-", "verdict": "NOT MET"})
    output = [line for line in stdout.splitlines() if not line.startswith(RESULTS_LINE)]
    return rows, {"command": shown, "seconds": round(seconds), "returncode": code, "output": output, "figures": figures}


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""


def machine() -> dict:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "system": f"{platform.system()} {platform.release()}",
        "packages": versions,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, default=list(BENCHMARKS))
    parser.add_argument("--results", type=Path, help=f"where to write the results (default, on a full run: {RESULTS})")
    args = parser.parse_args()
    full = args.only == list(BENCHMARKS)
    started = datetime.now(UTC)
    load_before = os.getloadavg()[0]
    rows, runs = [], {}
    for name in args.only:
        found, runs[name] = run(name, BENCHMARKS[name])
        rows += found
    width = max(len(row["figure"]) for row in rows)
    print("\nall goals:")
    for row in rows:
        print(
            f"  {row['benchmark']:13} {row['figure']:{width}}  {row['value']:>8}  ({row['goal']:>9})  {row['verdict']}"
        )
    met = sum(row["verdict"] == "MET" for row in rows)
    print(f"{met} of {len(rows)} goals MET")
    target = args.results or (RESULTS if full else None)
    if target is not None:
        results = {
            "command": "python bench/goals.py" + ("" if full else " --only " + " ".join(args.only)),
            "started": started.strftime("%Y-%m-%d %H:%M UTC"),
            "minutes": round((datetime.now(UTC) - started).total_seconds() / 60),
            "machine": {**machine(), "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]},
            "goals": rows,
            "benchmarks": runs,
        }
        target.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {target}")
        if target == RESULTS:
            performance_page.PAGE.write_text(performance_page.render(results))
            print(f"wrote {performance_page.PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
