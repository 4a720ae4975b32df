// Driven by ts_events_bench.py: times each way of parsing the same `data:` payloads, alternating
// the ways round after round so machine load hits them alike; prints the best time of each.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [payloadFile, kubbIndex, repeat] = process.argv.slice(2);
const payloads = JSON.parse(readFileSync(payloadFile, "utf8"));
const { parseEvent } = await import("openresponses-runtime");
const { StreamChecker, validateEvent } =
  await import("openresponses-runtime/streaming");
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

// The checker ways check the whole stream, one checker per pass: `start` makes it, `end` feeds
// `[DONE]` and gives its findings (the stream is valid: none is expected).
const checking = (options, feed) => ({
  start: () => new StreamChecker(options),
  feed,
  end: (checker) => {
    checker.feed(null, "[DONE]");
    return checker.finish().length;
  },
});
const ways = {
  "JSON.parse": (s) => JSON.parse(s),
  parseEvent: (s) => parseEvent(s),
  // parseEvent validates, then the checker applies the state machines to its event.
  "parseEvent + check": checking({}, (checker, s) =>
    checker.feedEvent(parseEvent(s)),
  ),
  // The checker validates with zod itself and returns the parsed event: one validation for both.
  "check validating (zod)": checking(
    { validate: validateEvent },
    (checker, s) => checker.feed(null, s),
  ),
  // parseEvent, then a checker that validates again: two validations of each event.
  "parseEvent + check validating": checking(
    { validate: validateEvent },
    (checker, s) => checker.feedEvent(parseEvent(s)),
  ),
  "Kubb union": (s) => union.safeParse(JSON.parse(s)),
  "Kubb dispatch on type": (s) => {
    const value = JSON.parse(s);
    return byType.get(value.type).safeParse(value);
  },
};
const failures = {};
// A checker way's pass over every payload; another way's call on each.
function pass(way) {
  if (typeof way === "function") {
    for (const s of payloads) way(s);
    return;
  }
  const checker = way.start();
  for (const s of payloads) way.feed(checker, s);
  return way.end(checker);
}
for (const [name, way] of Object.entries(ways)) {
  failures[name] =
    typeof way === "function"
      ? payloads.filter((s) => way(s)?.success === false).length
      : pass(way);
}
const best = Object.fromEntries(
  Object.keys(ways).map((name) => [name, Infinity]),
);
for (let round = 0; round < Number(repeat); round++) {
  for (const [name, way] of Object.entries(ways)) {
    const started = process.hrtime.bigint();
    pass(way);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    best[name] = Math.min(best[name], seconds);
  }
}
console.log(JSON.stringify({ events: payloads.length, best, failures }));
