"""Every performance goal in one run: each benchmark runs in turn (its full output is shown as it
goes), then the goal lines they printed are gathered into one table, MET or NOT MET.

    python bench/goals.py            # every benchmark below, its defaults
    python bench/goals.py --only events build

A benchmark that fails, or prints no goal, is a NOT MET row of its own: nothing is dropped.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

BENCHMARKS = {
    "server": ["server_bench.py", "--repeat", "3", "--seconds", "4"],
    "events": ["events_bench.py", "--repeat", "9"],
    "build": ["build_bench.py", "--repeat", "5"],
    "scale": ["scale_bench.py", "--sizes", "0"],
    "gateway": ["gateway_bench.py", "--rounds", "7"],
    "observability": ["observability_bench.py", "--repeat", "7", "--seconds", "3"],
    "background": ["background_bench.py", "--repeat", "3"],
    "chain": ["chain_bench.py", "--repeat", "3"],
    "typescript": ["ts_events_bench.py", "--repeat", "7"],
}

# "  <figure>[:] 0.94x  (goal >= 0.9x)  MET", with or without a leading "goal:".
GOAL_LINE = re.compile(
    r"^\s*(?:goal:\s*)?(?P<figure>.+?):?\s+(?P<ratio>[\d.]+x)\s+\(goal (?P<goal>[<>]=\s*[\d.]+x)\)\s+(?P<verdict>NOT MET|MET)\s*$"
)


def run(name: str, argv: list[str]) -> list[tuple[str, str, str, str, str]]:
    command = [sys.executable, str(HERE / argv[0]), *argv[1:]]
    print(f"\n$ python bench/{' '.join(argv)}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    print(done.stdout, end="")
    if done.returncode != 0:
        print(done.stderr[-3000:], end="", file=sys.stderr)
    print(f"({name}: {time.monotonic() - started:.0f} s)", flush=True)
    rows = []
    for line in done.stdout.splitlines():
        if match := GOAL_LINE.match(line):
            rows.append((name, *match.group("figure", "ratio", "goal", "verdict")))
        elif line.endswith(" NOT MET"):  # a goal it could not measure, e.g. a peer not installed
            rows.append((name, line.strip().removesuffix(" NOT MET"), "-", "-", "NOT MET"))
    if done.returncode != 0 or not rows:
        rows.append(
            (name, f"bench/{argv[0]} {'failed' if done.returncode else 'printed no goal'}", "-", "-", "NOT MET")
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, default=list(BENCHMARKS))
    args = parser.parse_args()
    rows = [row for name in args.only for row in run(name, BENCHMARKS[name])]
    width = max(len(row[1]) for row in rows)
    print("\nall goals:")
    for name, figure, ratio, goal, verdict in rows:
        print(f"  {name:7} {figure:{width}}  {ratio:>6}  ({goal:>8})  {verdict}")
    met = sum(row[4] == "MET" for row in rows)
    print(f"{met} of {len(rows)} goals MET")
    return 0


if __name__ == "__main__":
    sys.exit(main())
