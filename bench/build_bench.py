"""A cold `orspec build` against plain `datamodel-codegen` on the same bundled spec, then the
incremental cases: a no-op rebuild and a rebuild after one docs template changed.

Every run is a fresh process, as a user would run it, alternating with the peer in one run so
machine load affects both alike. The peer formats with ruff-format, as orspec does. The build
runs from a copy of tools/, templates/ and spec/, so the template edit never touches the
checkout. Prints medians; the cold build is compared with the peer (like work: all models from
the same bundle), the incremental builds with the cold build only. The goal (cold build at most
1.5x the peer) is printed MET or NOT MET. orspec's copied sources are compiled to bytecode first, as
an installed package's are (the peer's always are): with PYTHONDONTWRITEBYTECODE set, every run
would otherwise compile orspec's modules again (~0.07 s). No build output is reused: each cold run
writes into a new directory. The output self-check (`--self-check`) is timed apart, as a cold build
with it: it is behind that flag, which CI sets, and outside the goal.

    python bench/build_bench.py [--repeat N]
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL = 1.5


def timed(cmd: list[str], env: dict | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="orspec-bench-"))
    try:
        # the build reads the hand-written runtime modules from generated/ beside tools/
        for part in ("tools", "templates", "spec", "generated"):
            shutil.copytree(ROOT / part, work / part, ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
        compileall.compile_dir(work / "tools", quiet=1)
        env = {**os.environ, "PYTHONPATH": str(work / "tools")}
        orspec = [sys.executable, "-m", "orspec", "build", "--spec", str(work / "spec")]
        subprocess.run([*orspec, "--out", str(work / "ref")], check=True, capture_output=True, env=env)
        peer = [
            sys.executable,
            "-m",
            "datamodel_code_generator",
            "--input",
            str(work / "ref" / "openapi.json"),
            "--input-file-type",
            "openapi",
            "--output-model-type",
            "pydantic_v2.BaseModel",
            "--formatters",
            "ruff-format",
            "--disable-timestamp",
            "--output",
        ]
        template = work / "templates" / "docs" / "http-api.md.jinja"
        original = template.read_text()
        cold, plain, noop, docs, checked = [], [], [], [], []
        for i in range(args.repeat):
            out = work / f"cold{i}"
            cold.append(timed([*orspec, "--out", str(out)], env))
            plain.append(timed([*peer, str(work / f"plain{i}.py")]))
            checked.append(timed([*orspec, "--out", str(work / f"checked{i}"), "--self-check"], env))
            noop.append(timed([*orspec, "--out", str(out)], env))
            template.write_text(original + f"\n<!-- edit {i} -->\n")
            docs.append(timed([*orspec, "--out", str(out)], env))
            template.write_text(original)
        c, p, n, d, k = (statistics.median(x) for x in (cold, plain, noop, docs, checked))
        print(f"spec: spec/ of this checkout  (median of {args.repeat} runs, fresh process each)")
        print(f"{'run':<54}{'seconds':>9}{'to peer':>10}{'to cold':>10}")
        print(f"{'datamodel-codegen + ruff-format on the bundle (the peer)':<54}{p:>9.2f}{1:>10.2f}{'':>10}")
        print(f"{'orspec build, cold (models, registry, server, docs)':<54}{c:>9.2f}{c / p:>10.2f}{1:>10.2f}")
        print(f"{'orspec build --self-check, cold (CI sets the flag)':<54}{k:>9.2f}{k / p:>10.2f}{k / c:>10.2f}")
        print(f"{'orspec build, no-op':<54}{n:>9.2f}{'':>10}{n / c:>10.2f}")
        print(f"{'orspec build, one docs template changed':<54}{d:>9.2f}{'':>10}{d / c:>10.2f}")
        verdict = "MET" if c / p <= GOAL else "NOT MET"
        print(
            f"\ngoal: cold orspec build / datamodel-codegen on the same bundle {c / p:.2f}x (goal <= {GOAL}x) {verdict}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
