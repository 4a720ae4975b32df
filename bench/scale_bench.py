"""Scale: `orspec build --lenient` against plain `datamodel-codegen` on OpenAI's full API spec.

Both run as fresh processes on the same file, alternating, formatting with the same formatter
(the peer with `--formatters ruff-format`, as orspec formats with ruff), and the table reports wall
time and peak memory side by side, with ratios to the peer, for subsets of about 100 and 400
schemas and for the whole spec (1,422). Memory is the peak RSS of the whole process tree (ruff
subprocesses included), polled (bench/proctree.py). orspec does more than the peer here (it also
validates the spec and writes the registry, server and docs), so the ratio is an upper bound on
its model-generation overhead. The goals (whole spec: time at most 1.3x the peer's, memory at
most 1.2x) are printed MET or NOT MET. orspec's sources are compiled to bytecode first, as an installed
package's are (the peer's always are), so that PYTHONDONTWRITEBYTECODE cannot make orspec compile
its modules on every run. The output self-check (`--self-check`: every Python module imported in a
fresh interpreter, the npm package through `tsc --strict`) is measured apart, as a third run on the
whole spec: it is behind that flag, which CI sets, and outside the goals.

    python bench/scale_bench.py [--spec ../shared/upstream/openai/openapi.json] [--sizes 100,400,0]
"""

from __future__ import annotations

import argparse
import compileall
import json
import shutil
import sys
import tempfile
from pathlib import Path

from proctree import measure

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SPEC = ROOT.parent / "shared" / "upstream" / "openai" / "openapi.json"
PREFIX = "#/components/schemas/"
GOALS = {"time": 1.3, "whole-tree peak memory": 1.2}


def subset(document: dict, size: int) -> dict:
    """The first schemas in document order, each with everything it references, until `size`."""
    schemas = document["components"]["schemas"]
    chosen: dict[str, None] = {}

    def refs(node):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(PREFIX):
                yield ref[len(PREFIX) :]
            for value in node.values():
                yield from refs(value)
        elif isinstance(node, list):
            for value in node:
                yield from refs(value)

    for name in schemas:
        if len(chosen) >= size:
            break
        todo = [name]
        while todo:
            current = todo.pop()
            if current in chosen or current not in schemas:
                continue
            chosen[current] = None
            todo.extend(refs(schemas[current]))
    return {
        "openapi": document["openapi"],
        "info": document["info"],
        "paths": {},
        "components": {"schemas": {name: schemas[name] for name in chosen}},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=DEFAULT_SPEC)
    parser.add_argument("--sizes", default="100,400,0", help="schema counts; 0 means the whole spec")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    document = json.loads(args.spec.read_text())
    compileall.compile_dir(ROOT / "tools", quiet=1)
    work = Path(tempfile.mkdtemp(prefix="orspec-scale-"))
    rows = []
    checked = (0.0, 0.0)
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            spec = args.spec if size == 0 else work / f"subset-{size}.json"
            if size:
                spec.write_text(json.dumps(subset(document, size)))
            count = len(json.loads(spec.read_text())["components"]["schemas"])
            best = {"orspec": (1e9, 0.0), "peer": (1e9, 0.0), "checked": (1e9, 0.0)}
            for i in range(args.repeat):
                runs = {
                    "orspec": [
                        sys.executable,
                        "-m",
                        "orspec",
                        "build",
                        "--spec",
                        str(spec),
                        "--lenient",
                        "--out",
                        str(work / f"out-{size}-{i}"),
                    ],
                    "peer": [
                        sys.executable,
                        "-m",
                        "datamodel_code_generator",
                        "--input",
                        str(spec),
                        "--input-file-type",
                        "openapi",
                        "--output-model-type",
                        "pydantic_v2.BaseModel",
                        "--formatters",
                        "ruff-format",
                        "--disable-timestamp",
                        "--output",
                        str(work / f"peer-{size}-{i}.py"),
                    ],
                }
                if size == 0:
                    runs["checked"] = [*runs["orspec"][:-1], str(work / f"checked-{i}"), "--self-check"]
                for name, cmd in runs.items():
                    seconds, mib = measure(cmd)
                    best[name] = (min(best[name][0], seconds), max(best[name][1], mib))
            rows.append((count, best["peer"], best["orspec"]))
            checked = best["checked"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"spec: {args.spec}  (best of {args.repeat}; fresh process each; peak = whole-tree RSS)")
    print(
        f"{'schemas':>8} {'peer s':>8} {'orspec s':>9} {'time ratio':>11} {'peer MiB':>9} {'orspec MiB':>11} {'mem ratio':>10}"
    )
    for count, (ps, pm), (os_, om) in rows:
        print(f"{count:>8} {ps:>8.1f} {os_:>9.1f} {os_ / ps:>11.2f} {pm:>9.0f} {om:>11.0f} {om / pm:>10.2f}")
    count, (ps, pm), (os_, om) = rows[-1]
    if checked[1]:
        cs, cm = checked
        print(
            f"{'+ check':>8} {'':>8} {cs:>9.1f} {cs / ps:>11.2f} {'':>9} {cm:>11.0f} {cm / pm:>10.2f}"
            f"   orspec build --self-check: the check alone {cs - os_:.1f} s"
        )
    print(f"\ngoals (the largest input, {count} schemas):")
    for label, ratio in (("time", os_ / ps), ("whole-tree peak memory", om / pm)):
        verdict = "MET" if ratio <= GOALS[label] else "NOT MET"
        print(
            f"  orspec build / datamodel-codegen with ruff-format, {label:24} {ratio:5.2f}x  (goal <= {GOALS[label]}x)  {verdict}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
