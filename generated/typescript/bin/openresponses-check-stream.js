#!/usr/bin/env node
// openresponses-check-stream FILE|- [--allow-missing-done]: check an SSE capture against the state
// machines. The same lines and exit codes as `orspec check-stream`: every violation, or `OK` with
// counts; exit 1 on any violation but warnings, 2 on a usage error.

import { readFileSync } from "node:fs";
import { StreamChecker } from "../src/streaming/checker.js";
import { validateEvent } from "../src/streaming/schemas.js";

const NAME = "openresponses-check-stream";
const USAGE = `usage: ${NAME} [-h] [--allow-missing-done] FILE`;
const HELP = `${USAGE}

Check an SSE capture against the schemas and state machines.

positional arguments:
  FILE                  the SSE capture, or - for standard input

options:
  -h, --help            show this help message and exit
  --allow-missing-done  report a missing \`data: [DONE]\` but do not fail on it (OpenAI never sends it)
`;
// What the C library calls the errors a read can end with, as Python says them.
const STRERROR = {
  ENOENT: "No such file or directory",
  EACCES: "Permission denied",
  EISDIR: "Is a directory",
  ENOTDIR: "Not a directory",
  ELOOP: "Too many levels of symbolic links",
  ENAMETOOLONG: "File name too long",
  EIO: "Input/output error",
};

function usageError(message) {
  process.stderr.write(`${USAGE}\n${NAME}: error: ${message}\n`);
  return 2;
}

function main(argv) {
  let file = null;
  let allowMissingDone = false;
  for (const arg of argv) {
    if (arg === "-h" || arg === "--help") {
      process.stdout.write(HELP);
      return 0;
    }
    if (arg === "--allow-missing-done") allowMissingDone = true;
    else if (arg.startsWith("-") && arg !== "-")
      return usageError(`unrecognized arguments: ${arg}`);
    else if (file === null) file = arg;
    else return usageError(`unrecognized arguments: ${arg}`);
  }
  if (file === null)
    return usageError("the following arguments are required: FILE");
  let data;
  try {
    data = readFileSync(file === "-" ? 0 : file);
  } catch (error) {
    process.stderr.write(
      `${NAME}: cannot read ${file}: ${STRERROR[error.code] ?? error.message}\n`,
    );
    return 2;
  }
  // Every core event through its zod schema, as `orspec check-stream` validates it with pydantic.
  const checker = new StreamChecker({ validate: validateEvent });
  const violations = checker.checkSse(data);
  const lines = violations.map(String);
  const failing = allowMissingDone
    ? checker.withoutMissingDone(checker.errors)
    : checker.errors;
  if (failing.length) {
    process.stdout.write(lines.map((line) => `${line}\n`).join(""));
    process.stderr.write(
      `${failing.length} violations in ${checker.events} events\n`,
    );
    return 1;
  }
  const counts = [...checker.counts]
    .map(([kind, n]) => `${kind} ${n}`)
    .join(", ");
  const noted = violations.length
    ? `; ${violations.length} findings tolerated above`
    : "";
  lines.push(`OK: ${checker.events} events (${counts})${noted}`);
  process.stdout.write(lines.map((line) => `${line}\n`).join(""));
  return 0;
}

process.exitCode = main(process.argv.slice(2));
