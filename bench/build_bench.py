"""Cold `orspec build` against plain `datamodel-codegen` on the same bundled spec, and a no-op rebuild.

Both run as fresh processes, as a user would run them, alternating in one run so machine load
affects them alike. Prints medians and the ratios to the peer.

    python bench/build_bench.py [--spec PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=ROOT / "spec")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--lenient", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="orspec-bench-"))
    try:
        lenient = ["--lenient"] if args.lenient else []
        orspec = [sys.executable, "-m", "orspec", "build", "--spec", str(args.spec), *lenient]
        subprocess.run([*orspec, "--out", str(work / "ref")], check=True, capture_output=True)
        bundled = work / "ref" / "openapi.json"
        peer = [sys.executable, "-m", "datamodel_code_generator", "--input", str(bundled),
                "--input-file-type", "openapi", "--output-model-type", "pydantic_v2.BaseModel",
                "--formatters", "ruff-format", "--disable-timestamp", "--output"]
        cold, plain, noop = [], [], []
        for i in range(args.repeat):
            out = work / f"cold{i}"
            cold.append(timed([*orspec, "--out", str(out)]))
            plain.append(timed([*peer, str(work / f"plain{i}.py")]))
            noop.append(timed([*orspec, "--out", str(out)]))
        c, p, n = (statistics.median(x) for x in (cold, plain, noop))
        print(f"spec: {args.spec}  (median of {args.repeat} runs, fresh process each)")
        print(f"{'run':<42}{'seconds':>10}{'ratio to peer':>16}")
        print(f"{'datamodel-codegen, plain (the peer)':<42}{p:>10.2f}{1:>16.2f}")
        print(f"{'orspec build, cold':<42}{c:>10.2f}{c / p:>16.2f}")
        print(f"{'orspec build, no-op rebuild':<42}{n:>10.2f}{n / p:>16.2f}")
        print(f"no-op / cold: {n / c:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
