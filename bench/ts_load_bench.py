"""What the TypeScript package costs its user, beside openai-node doing the same, in one run: the load
on `tsc` of one consumer (types created, memory, check time, from `--extendedDiagnostics`, with
`skipLibCheck` as `tsc --init` sets it and without, which checks every declaration too), the time
to import the package's root in a fresh Node, and the size of the consumer bundled and minified with
esbuild (raw and gzipped).

The consumer is the same program for both, what a user of either reaches for: a client from the
environment, one `responses.create` and its `output_text`, one streamed response read with
`for await` narrowing on `response.output_text.delta`, `responses.stream()` with a listener and
`finalResponse()`, its function calls picked by type, one event parsed from JSON text (`parseEvent`
for ours, a cast for openai-node's, which has none), and a `NotFoundError` caught. Three more rows import zod alone, which the package depends on, through
its root and through its narrower entry points `zod/mini` and `zod/v4/core`: what zod's own
declarations cost a check without `skipLibCheck`, whichever the package declared its schemas with.
A last line gives what the standard library and @types/node alone cost, which every row includes.
openai-node comes from `.cache/clients` (the client matrix's pin), zod, TypeScript and @types/node
from `.cache/typescript`; esbuild, pinned, is installed from npm into `.cache/ts-load-bench`.
Import time is the best of `--repeat` alternating rounds.

    python bench/ts_load_bench.py [--repeat N] [--package FOLDER]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "generated" / "typescript"
TOOLS = ROOT / ".cache" / "typescript" / "node_modules"
CLIENTS = ROOT / ".cache" / "clients" / "node_modules"
WORK = ROOT / ".cache" / "ts-load-bench"
ESBUILD = "esbuild@0.28.2"

CONSUMERS = {
    "openresponses-runtime": """\
import {
  NotFoundError,
  OpenResponses,
  parseEvent,
  type FunctionCall,
  type StreamingEvent,
} from "openresponses-runtime";

const client = new OpenResponses();
const response = await client.responses.create({ model: "m", input: "Hi" });
let text: string = response.output_text;
const stream = await client.responses.create({ model: "m", input: "Hi", stream: true });
for await (const event of stream) {
  if (event.type === "response.output_text.delta") text += event.delta;
}
const helper = client.responses.stream({ model: "m", input: "Hi" });
helper.on("response.output_text.delta", (event) => (text += event.delta));
const final = await helper.finalResponse();
const describe = (call: FunctionCall): string => `${call.name}(${call.arguments})`;
const calls: string[] = [];
for (const item of final.output) if (item.type === "function_call") calls.push(describe(item));
const event: StreamingEvent = parseEvent('{"type": "response.output_text.delta", "delta": "x"}');
if (event.type === "response.output_text.delta") text += event.delta;
try {
  await client.responses.retrieve(final.id);
} catch (error) {
  if (!(error instanceof NotFoundError)) throw error;
}
console.log(text, calls);
""",
    "openai": """\
import OpenAI, { NotFoundError } from "openai";
import type {
  ResponseFunctionToolCall,
  ResponseStreamEvent,
} from "openai/resources/responses/responses";

const client = new OpenAI();
const response = await client.responses.create({ model: "m", input: "Hi" });
let text: string = response.output_text;
const stream = await client.responses.create({ model: "m", input: "Hi", stream: true });
for await (const event of stream) {
  if (event.type === "response.output_text.delta") text += event.delta;
}
const helper = client.responses.stream({ model: "m", input: "Hi" });
helper.on("response.output_text.delta", (event) => (text += event.delta));
const final = await helper.finalResponse();
const describe = (call: ResponseFunctionToolCall): string => `${call.name}(${call.arguments})`;
const calls: string[] = [];
for (const item of final.output) if (item.type === "function_call") calls.push(describe(item));
const event = JSON.parse('{"type": "response.output_text.delta", "delta": "x"}') as ResponseStreamEvent;
if (event.type === "response.output_text.delta") text += event.delta;
try {
  await client.responses.retrieve(final.id);
} catch (error) {
  if (!(error instanceof NotFoundError)) throw error;
}
console.log(text, calls);
""",
    "zod": """\
import * as z from "zod";

export const text: z.ZodType<string> = z.string();
""",
    "zod/mini": """\
import * as z from "zod/mini";

export const text: z.ZodMiniType<string> = z.string();
""",
    "zod/v4/core": """\
import * as z from "zod/v4/core";

export const text: z.$ZodType<string> = new z.$ZodString({ type: "string" });
""",
}
# zod's narrower entry points, which the package could declare its schemas with: what each costs a
# check without `skipLibCheck` (zod/v4/core is the narrowest path zod exports).
ZOD_ONLY = ("zod", "zod/mini", "zod/v4/core")
TSCONFIG = {
    "compilerOptions": {
        "strict": True,
        "noEmit": True,
        "skipLibCheck": True,
        "module": "nodenext",
        "moduleResolution": "nodenext",
        "target": "es2022",
        "lib": ["es2022", "dom", "dom.asynciterable"],
        "types": ["node"],
    },
    "files": ["consumer.ts"],
}
DIAGNOSTICS = {"Types": "types", "Memory used": "memory_kb", "Check time": "check_s", "Total time": "total_s"}


def run(args: list, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, args))} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done


def setup(package: Path) -> dict[str, Path]:
    """One folder a package, each with its package, zod, TypeScript and @types/node; esbuild in WORK."""
    WORK.mkdir(parents=True, exist_ok=True)
    if not (WORK / "node_modules" / "esbuild").is_dir():
        (WORK / "package.json").write_text('{"name": "ts-load-bench", "private": true}')
        run(["npm", "install", "--no-audit", "--no-fund", ESBUILD], WORK)
    folders = {}
    for name, source in CONSUMERS.items():
        folder = WORK / name.replace("/", "-")
        shutil.rmtree(folder, ignore_errors=True)
        modules = folder / "node_modules"
        modules.mkdir(parents=True)
        if name == "openai":
            (modules / "openai").symlink_to(CLIENTS / "openai", target_is_directory=True)
        elif name not in ZOD_ONLY:
            shutil.copytree(package, modules / name)
        for tool in ("zod", "typescript", "@types"):
            (modules / tool).symlink_to(TOOLS / tool, target_is_directory=True)
        (folder / "package.json").write_text('{"name": "consumer", "private": true, "type": "module"}')
        (folder / "consumer.ts").write_text(source)
        (folder / "tsconfig.json").write_text(json.dumps(TSCONFIG))
        folders[name] = folder
    return folders


def type_load(folder: Path, skip_lib_check: bool) -> dict[str, float]:
    tsc = folder / "node_modules/typescript/bin/tsc"
    done = run(["node", tsc, "-p", ".", "--extendedDiagnostics", "--skipLibCheck", str(skip_lib_check).lower()], folder)
    suffix = "" if skip_lib_check else "_full"
    found = {}
    for line in done.stdout.splitlines():
        label, _, value = line.partition(":")
        if label.strip() in DIAGNOSTICS:
            found[DIAGNOSTICS[label.strip()] + suffix] = float(re.sub(r"[^0-9.]", "", value))
    return found


def import_ms(folder: Path, name: str) -> float:
    script = f'const t = performance.now(); await import("{name}"); console.log(performance.now() - t);'
    return float(run(["node", "--input-type=module", "-e", script], folder).stdout)


def bundle(folder: Path) -> dict[str, int]:
    """The consumer bundled for the browser and minified: its bytes, raw and gzipped."""
    out = folder / "bundle.js"
    esbuild = WORK / "node_modules" / ".bin" / "esbuild"
    run(
        [esbuild, "consumer.ts", "--bundle", "--minify", "--format=esm", "--platform=browser", f"--outfile={out}"],
        folder,
    )
    data = out.read_bytes()
    return {"bytes": len(data), "gzip": len(gzip.compress(data, 9))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--package", type=Path, default=PACKAGE, help="the npm package's folder (another build's)")
    args = parser.parse_args()
    folders = setup(args.package.resolve())
    rows = {
        name: {**type_load(folder, True), **type_load(folder, False), **bundle(folder)}
        for name, folder in folders.items()
    }
    for name in rows:
        rows[name]["import_ms"] = float("inf")
    for _ in range(args.repeat):
        for name, folder in folders.items():
            rows[name]["import_ms"] = min(rows[name]["import_ms"], import_ms(folder, name))
    alone = WORK / "baseline"
    shutil.rmtree(alone, ignore_errors=True)
    (alone / "node_modules").mkdir(parents=True)
    for name in ("typescript", "@types"):
        (alone / "node_modules" / name).symlink_to(TOOLS / name, target_is_directory=True)
    (alone / "consumer.ts").write_text("export {};\n")
    (alone / "tsconfig.json").write_text(json.dumps(TSCONFIG))
    baseline = type_load(alone, False)
    ours, peer = rows["openresponses-runtime"], rows["openai"]
    print("skipLibCheck: true | false (every declaration checked)")
    header = ("types", "memory MB", "check s", "types", "memory MB", "check s", "import ms", "bundle KB", "gzip KB")
    print(f"{'':22}" + "".join(f"{h:>10}" for h in header))
    for name, row in rows.items():
        cells = [row["types"], row["memory_kb"] / 1024, row["check_s"], row["types_full"], row["memory_kb_full"] / 1024]
        cells += [row["check_s_full"], row["import_ms"], row["bytes"] / 1024, row["gzip"] / 1024]
        print(f"{name:22}" + "".join(f"{c:>10.0f}" if c >= 100 else f"{c:>10.2f}" for c in cells))
    keys = (
        "types",
        "memory_kb",
        "check_s",
        "types_full",
        "memory_kb_full",
        "check_s_full",
        "import_ms",
        "bytes",
        "gzip",
    )
    print(
        f"{'lib + @types/node alone':22}{'':30}{baseline['types_full']:>10.0f}{baseline['memory_kb_full'] / 1024:>10.0f}"
    )
    ratios = {key: ours[key] / peer[key] for key in keys}
    print("ours / openai-node: " + ", ".join(f"{key} {value:.2f}x" for key, value in ratios.items()))
    print(json.dumps({"rows": rows, "baseline": baseline, "ratios": ratios}))


if __name__ == "__main__":
    main()
