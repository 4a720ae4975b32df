// Reads [[schema or "event", value], ...] on stdin; prints, for each, whether it parsed and
// whether what came out is the same JSON value as what went in.
import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";

import * as runtime from "openresponses-runtime";

const cases = JSON.parse(readFileSync(0, "utf8"));
const results = cases.map(([schema, value]) => {
  try {
    const parsed =
      schema === "event"
        ? runtime.parseEvent(value)
        : runtime[schema].parse(value);
    return { ok: true, same: isDeepStrictEqual(parsed, value) };
  } catch (error) {
    return { ok: false, error: String(error.message).slice(0, 500) };
  }
});
console.log(JSON.stringify(results));
