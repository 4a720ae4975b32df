// Driven by ts_events_bench.py: times each way of parsing the same `data:` payloads, alternating
// the ways round after round so machine load hits them alike; prints the best time of each.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [payloadFile, kubbIndex, repeat] = process.argv.slice(2);
const payloads = JSON.parse(readFileSync(payloadFile, "utf8"));
const { parseEvent } = await import("openresponses-runtime");
const kubb = await import(pathToFileURL(kubbIndex).href);
const { z } = await import("zod/v4");

// Kubb writes no event union (only the JSON answers of operations); its users write the union of
// the event schemas the spec's stream lists, as upstream's own `oneOf` does.
const camel = (name) => name[0].toLowerCase() + name.slice(1) + "Schema";
const events = JSON.parse(process.env.EVENT_SCHEMAS); // [[type, schema name], ...]
const byType = new Map(events.map(([type, name]) => [type, kubb[camel(name)]]));
if ([...byType.values()].includes(undefined))
  throw new Error("a Kubb event schema is missing");
const union = z.union([...new Set(byType.values())]);

const ways = {
  "JSON.parse": (s) => JSON.parse(s),
  parseEvent: (s) => parseEvent(s),
  "Kubb union": (s) => union.safeParse(JSON.parse(s)),
  "Kubb dispatch on type": (s) => {
    const value = JSON.parse(s);
    return byType.get(value.type).safeParse(value);
  },
};
const failures = {};
for (const [name, way] of Object.entries(ways)) {
  failures[name] = payloads.filter((s) => way(s)?.success === false).length;
}
const best = Object.fromEntries(
  Object.keys(ways).map((name) => [name, Infinity]),
);
for (let round = 0; round < Number(repeat); round++) {
  for (const [name, way] of Object.entries(ways)) {
    const started = process.hrtime.bigint();
    for (const s of payloads) way(s);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    best[name] = Math.min(best[name], seconds);
  }
}
console.log(JSON.stringify({ events: payloads.length, best, failures }));
