"""The TypeScript package's `parseEvent` against the zod schemas Kubb generates from the same upstream
release, and against bare `JSON.parse`, on Node, in one run.

The stream is `../shared/bench/make_stream.py N` (20 000 text deltas by default). Kubb, zod and
TypeScript are installed from npm, pinned, into `.cache/ts-bench`; Kubb is configured as upstream's
`kubb.config.ts` is (the OAS plugin with no generators and `discriminator: "inherit"`, the zod plugin
keeping the fields of documented references) and run on upstream's
`openapi.json`; its TypeScript output is compiled to JavaScript with tsc. Kubb writes no event union,
so its row is `z.union` of the event schemas the spec's stream lists (upstream's own `oneOf`), and a
second row dispatches on `type` by hand. Parse + check runs the package's stream checker over the
whole stream, one checker a pass: after `parseEvent` (the goal's row), validating with zod itself
(`validateEvent`, one validation for both uses), and after `parseEvent` validating again; for these
`refused` counts the checker's findings. Every way parses the same list of `data:` strings; the best
of `--repeat` alternating rounds counts.

    python bench/ts_events_bench.py [--deltas N] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ORSPEC_SHARED", ROOT.parent / "shared"))  # ../shared beside the project
MAKE_STREAM = SHARED / "bench" / "make_stream.py"
UPSTREAM = SHARED / "upstream" / "openresponses" / "2026-04-24" / "openapi.json"
WORK = ROOT / ".cache" / "ts-bench"
KUBB = "4.39.3"  # upstream pins Kubb ^4.15
PACKAGES = [f"@kubb/{p}@{KUBB}" for p in ("cli", "core", "plugin-oas", "plugin-zod")] + [
    "zod@4.6.7",
    "typescript@5.9.3",
]
GOAL = 2.0
CHECK_GOAL = 0.8  # parse + check against parseEvent alone

# Upstream's kubb.config.ts, in our words: the same plugins and options.
KUBB_CONFIG = """\
import { defineConfig } from "@kubb/core";
import { isKeyword, pluginOas } from "@kubb/plugin-oas";
import { pluginZod } from "@kubb/plugin-zod";

// A documented property that references a schema keeps its input's fields: the reference is
// intersected with `unknown`, also inside a nullable `anyOf` of a reference and null.
const keepFields = (node) =>
  isKeyword(node, "ref") ? { keyword: "and", args: [node, { keyword: "unknown" }] } : node;

export default defineConfig({
  root: ".",
  input: { path: "./openapi.json" },
  output: { path: "./gen", clean: true },
  plugins: [
    pluginOas({ generators: [], discriminator: "inherit" }),
    pluginZod({
      output: { path: "./zod" },
      transformers: {
        schema({ schema, parentName }, defaults) {
          if (!schema?.description || parentName === null) return defaults;
          if ("$ref" in schema) return defaults.map(keepFields);
          const branches = schema.anyOf ?? [];
          const nullableRef =
            branches.length === 2 && branches.some((b) => "$ref" in b) && branches.some((b) => b.type === "null");
          if (!nullableRef) return defaults;
          return defaults.map((node) =>
            isKeyword(node, "union") ? { ...node, args: node.args.map(keepFields) } : node,
          );
        },
      },
    }),
  ],
});
"""


def run(args: list, cwd: Path, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, args))} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
    return done


def setup() -> Path:
    """Kubb's zod schemas of the upstream release, compiled to JavaScript; returns their index."""
    WORK.mkdir(parents=True, exist_ok=True)
    stamp = WORK / ".installed"
    if not stamp.is_file() or stamp.read_text() != " ".join(PACKAGES):
        (WORK / "package.json").write_text('{"name": "ts-bench", "private": true, "type": "module"}\n')
        run(["npm", "install", "--no-audit", "--no-fund", "-q", "--save-exact", *PACKAGES], WORK)
        stamp.write_text(" ".join(PACKAGES))
    shutil.copy(UPSTREAM, WORK / "openapi.json")
    (WORK / "kubb.config.js").write_text(KUBB_CONFIG)
    run([WORK / "node_modules/.bin/kubb", "generate", "--config", "kubb.config.js"], WORK)
    options = ["--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext"]
    options += ["--rewriteRelativeImportExtensions", "--skipLibCheck", "--outDir", "kubb-js"]
    run([WORK / "node_modules/.bin/tsc", *options, *sorted((WORK / "gen" / "zod").glob("*.ts"))], WORK)
    package = WORK / "node_modules" / "openresponses-runtime"
    shutil.rmtree(package, ignore_errors=True)
    shutil.copytree(ROOT / "generated" / "typescript", package)
    return WORK / "kubb-js" / "index.js"


def event_schemas() -> list[tuple[str, str]]:
    """(type, schema name) of every event of upstream's stream union."""
    document = json.loads(UPSTREAM.read_text())
    stream = document["paths"]["/responses"]["post"]["responses"]["200"]["content"]["text/event-stream"]["schema"]
    out = []
    for member in stream["oneOf"]:
        name = member["$ref"].rsplit("/", 1)[1]
        tag = document["components"]["schemas"][name]["properties"]["type"]
        out.append((tag.get("const") or tag["enum"][0], name))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deltas", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if shutil.which("node") is None or shutil.which("npm") is None:
        print(f"  parseEvent vs Kubb's union parse: node or npm is missing  (goal >= {GOAL}x)  NOT MET")
        return 1
    index = setup()
    made = run([sys.executable, MAKE_STREAM, args.deltas], ROOT)
    payloads = [line[6:] for line in made.stdout.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]
    (WORK / "payloads.json").write_text(json.dumps(payloads))
    env = {**os.environ, "EVENT_SCHEMAS": json.dumps(event_schemas())}
    script = ROOT / "bench" / "ts_events_bench.js"
    shutil.copy(script, WORK / script.name)  # beside node_modules, so its imports resolve there
    done = run(["node", script.name, "payloads.json", index, args.repeat], WORK, env=env)
    result = json.loads(done.stdout)
    best, failures, n = result["best"], result["failures"], result["events"]
    print(f"$ python bench/ts_events_bench.py --deltas {args.deltas} --repeat {args.repeat}")
    print(
        f"{n} events, node {run(['node', '--version'], ROOT).stdout.strip()}, Kubb {KUBB}, zod 4.6.7; best of {args.repeat}"
    )
    print(f"{'way':30} {'events/s':>12} {'us/event':>9} {'refused':>8}")
    for name, seconds in best.items():
        print(f"{name:30} {n / seconds:12,.0f} {seconds / n * 1e6:9.2f} {failures[name]:8}")
    ratio = best["Kubb union"] / best["parseEvent"]
    verdict = "MET" if ratio >= GOAL else "NOT MET"
    print(f"  parseEvent vs Kubb's union parse: {ratio:.2f}x  (goal >= {GOAL}x)  {verdict}")
    print(
        f"  parseEvent vs Kubb dispatching on type by hand: {best['Kubb dispatch on type'] / best['parseEvent']:.2f}x"
    )
    print(f"  parseEvent speed as a fraction of bare JSON.parse: {best['JSON.parse'] / best['parseEvent']:.2f}x")
    for way, figure in (
        ("parseEvent + check", "parse + check (parseEvent, then the checker) vs parseEvent alone"),
        ("check validating (zod)", "parse + check (the checker validating with zod) vs parseEvent alone"),
    ):
        ratio = best["parseEvent"] / best[way]
        verdict = "MET" if ratio >= CHECK_GOAL else "NOT MET"
        print(f"  {figure}: {ratio:.2f}x  (goal >= {CHECK_GOAL}x)  {verdict}")
    print(
        "  parseEvent, then the checker validating again, vs parseEvent alone: "
        f"{best['parseEvent'] / best['parseEvent + check validating']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
