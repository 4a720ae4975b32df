"""Typed event parsing and stream checking against raw `orjson.loads`, on the same SSE stream.

The stream is `../shared/bench/make_stream.py N` (20 000 text deltas by default). Every variant
runs over the same list of `data:` payloads (bytes), alternating in one run so machine load
affects them alike; the figure to quote is the ratio of best times to raw `orjson.loads` (speed as a
fraction of it; higher is better), since absolute times swing with the machine.

    python bench/events_bench.py [--deltas N] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from openresponses_runtime.events import iter_sse, parse_event
from openresponses_runtime.streaming import StreamChecker

ROOT = Path(__file__).resolve().parents[1]
MAKE_STREAM = ROOT.parent / "shared" / "bench" / "make_stream.py"


def capture(deltas: int) -> bytes:
    return subprocess.run([sys.executable, str(MAKE_STREAM), str(deltas)], capture_output=True, check=True).stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    raw = capture(args.deltas)
    messages = [(m.event, m.data.encode()) for m in iter_sse(raw)]
    payloads = [data for _, data in messages if data != b"[DONE]"]

    def raw_loads() -> None:
        for data in payloads:
            orjson.loads(data)

    def typed() -> None:
        for data in payloads:
            parse_event(data)

    def checked() -> None:
        checker = StreamChecker()
        for name, data in messages:
            checker.feed(name, data)
        assert not checker.finish()

    def rules_only() -> None:
        checker = StreamChecker(schema=False)
        for name, data in messages:
            checker.feed(name, data)
        assert not checker.finish()

    def framing() -> None:
        for _ in iter_sse(raw):
            pass

    def whole() -> None:
        assert not StreamChecker().check_sse(raw)

    variants: dict[str, Callable[[], None]] = {
        "orjson.loads (raw)": raw_loads,
        "parse_event (typed)": typed,
        "StreamChecker, rules only": rules_only,
        "StreamChecker, schema + rules": checked,
        "iter_sse framing only": framing,
        "check_sse (framing + schema + rules)": whole,
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeat):
        for name, run in variants.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    base = min(times["orjson.loads (raw)"])
    print(
        f"{len(payloads)} events, {len(raw) / 1e6:.1f} MB, {args.repeat} alternating runs; ratio = best raw / best variant"
    )
    print(f"{'variant':40} {'best':>9} {'median':>9} {'events/s':>11} {'ratio to raw':>13}")
    for name, runs in times.items():
        best, median = min(runs), statistics.median(runs)
        print(
            f"{name:40} {best * 1000:7.1f}ms {median * 1000:7.1f}ms {len(payloads) / best:11,.0f} {base / best:13.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
