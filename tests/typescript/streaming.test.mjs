// node --test: the TypeScript package's SSE reader, stream checker and accumulator.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  checkSse,
  iterSse,
  readEvents,
  readSSE,
  ResponseAccumulator,
  RULES,
  StreamChecker,
  validateEvent,
  WARNING_RULES,
} from "openresponses-runtime/streaming";
import * as rootSse from "openresponses-runtime/sse";
import * as streamingSse from "openresponses-runtime/streaming";

const encoder = new TextEncoder();
const frame = (event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

function stream() {
  const response = (status, output = []) => ({ id: "resp_1", object: "response", status, output });
  const item = { id: "msg_1", type: "message", status: "in_progress", role: "assistant", content: [] };
  const ids = { item_id: "msg_1", output_index: 0, content_index: 0 };
  const part = { type: "output_text", text: "", annotations: [] };
  const done = { ...item, status: "completed", content: [{ ...part, text: "Hello" }] };
  const events = [
    { type: "response.created", response: response("in_progress") },
    { type: "response.in_progress", response: response("in_progress") },
    { type: "response.output_item.added", output_index: 0, item },
    { type: "response.content_part.added", ...ids, part },
    { type: "response.output_text.delta", ...ids, delta: "Hel" },
    { type: "response.output_text.delta", ...ids, delta: "lo" },
    { type: "response.output_text.done", ...ids, text: "Hello" },
    { type: "response.content_part.done", ...ids, part: { ...part, text: "Hello" } },
    { type: "response.output_item.done", output_index: 0, item: done },
    { type: "response.completed", response: response("completed", [done]) },
  ];
  events.forEach((event, i) => (event.sequence_number = i));
  return events;
}

const capture = (events, done = true) => events.map(frame).join("") + (done ? "data: [DONE]\n\n" : "");

test("a valid stream has no violation, fed whole or byte by byte", () => {
  const bytes = encoder.encode(capture(stream()));
  assert.deepEqual(checkSse(bytes), []);
  const chunks = Array.from(bytes, (b) => Uint8Array.of(b));
  assert.deepEqual(checkSse(chunks), []);
});

test("SSE lines end with CR, LF or CRLF, comments are skipped, data lines join", () => {
  const text = ": keep-alive\r\nevent: a\r\ndata: 1\rdata: 2\n\ndata: [DONE]";
  const messages = [...iterSse(text)];
  assert.deepEqual(messages, [
    { event: "a", data: "1\n2", id: null },
    { event: null, data: "[DONE]", id: null },
  ]);
  // A multi-byte character split across chunks decodes whole.
  const bytes = encoder.encode("data: é\n\n");
  assert.equal([...iterSse([bytes.slice(0, 7), bytes.slice(7)])][0].data, "é");
});

test("readEvents reads a fetch Response body up to [DONE]", async () => {
  const body = new ReadableStream({
    start(controller) {
      for (const piece of capture(stream()).match(/[\s\S]{1,7}/g)) controller.enqueue(encoder.encode(piece));
      controller.close();
    },
  });
  const events = [];
  for await (const event of readEvents(new Response(body))) events.push(event);
  assert.deepEqual(events, stream());
  const messages = [];
  for await (const message of readSSE(new Response(capture(stream())).body, { keepUnfinished: true }))
    messages.push(message);
  assert.equal(messages.length, stream().length + 1);
});

test("every violation names a rule of the state machines; warnings leave the stream valid", () => {
  const events = stream();
  events[5].sequence_number = 9; // a gap, then 6 after it: out of order, then in order again
  const checker = new StreamChecker();
  const violations = checker.checkSse(capture(events));
  assert.deepEqual(
    violations.map((v) => v.rule),
    ["sequence-gap", "sequence"],
  );
  assert.ok(violations.every((v) => Object.hasOwn(RULES, v.rule)));
  assert.ok(WARNING_RULES.has("sequence-gap") && violations[0].isWarning);
  assert.equal(String(violations[0]), "seq 9: warning [sequence-gap] sequence_number jumps from 4 to 9");
  assert.equal(checker.ok, false);
});

test("a validator's verdict is a schema violation; a throwing validator is one too", () => {
  const picky = (event, type) =>
    type === "response.output_text.delta" ? { ok: false, message: "delta: too short" } : { ok: true };
  const violations = checkSse(capture(stream()), { validate: picky });
  assert.deepEqual(
    violations.map(String),
    [4, 5].map((seq) => `seq ${seq}: [schema] response.output_text.delta does not match its schema: delta: too short`),
  );
  const broken = () => {
    throw new TypeError("boom");
  };
  const found = checkSse(capture(stream()), { validate: broken });
  assert.equal(found.length, stream().length);
  assert.match(String(found[0]), /could not be validated: TypeError: boom$/);
  assert.deepEqual(checkSse(capture(stream()), { validate: picky, schema: false }), []);
});

test("the checker returns the validator's event", () => {
  const checker = new StreamChecker({ validate: (event) => ({ ok: true, event: { wrapped: event.type } }) });
  assert.deepEqual(checker.feed(null, JSON.stringify(stream()[0])), { wrapped: "response.created" });
  assert.equal(checker.feed(null, "[DONE]"), null);
});

test("the accumulator rebuilds the response from the items when the terminal event lists none", () => {
  const events = stream();
  events.at(-1).response.output = [];
  const built = new ResponseAccumulator().feedSse(capture(events)).asObject();
  assert.equal(built.status, "completed");
  assert.deepEqual(built.output, stream().at(-1).response.output);
});

test("validateEvent checks an event against the schema parseEvent uses for its type", () => {
  const [created, , , , delta] = stream();
  const ok = validateEvent(delta, delta.type);
  assert.equal(ok.ok, true);
  assert.deepEqual(ok.event, delta);
  const broken = validateEvent({ ...delta, delta: 5 }, delta.type);
  assert.equal(broken.ok, false);
  assert.match(broken.message, /^delta: /);
  assert.equal(validateEvent({ type: "acme:trace" }, "acme:trace"), null);
  // The test stream's responses lack fields the schema requires: with the validator, each
  // lifecycle event is a schema violation; without it, none is.
  const checked = checkSse(capture(stream()), { validate: validateEvent });
  assert.deepEqual(
    checked.map((v) => [v.rule, v.sequenceNumber]),
    [["schema", 0], ["schema", 1], ["schema", 9]],
  );
  assert.match(String(checked[0]), /^seq 0: \[schema\] response\.created does not match its schema: response\./);
  assert.equal(created.type, "response.created");
});

test("the accumulator's result() validates the response against ResponseResource", () => {
  const accumulator = new ResponseAccumulator().feedSse(capture(stream()));
  assert.equal(accumulator.asObject().status, "completed");
  assert.throws(() => accumulator.result(), (error) => error.name === "ZodError");
});

test("the package has one SSE reader: the root sse module gives the streaming module's", async () => {
  assert.equal(rootSse.SSEDecoder, streamingSse.SSEDecoder);
  assert.equal(rootSse.readSSE, streamingSse.readSSE);
  const wire = ": keep-alive\r\nevent: a\r\ndata: 1\rdata:2\n\nid: 7\ndata: [DONE]\n\ndata: cut";
  const pairs = (messages) => messages.map((m) => [m.event, m.data, m.id]);
  const complete = [
    ["a", "1\n2", null],
    [null, "[DONE]", "7"],
  ];
  // Fed three bytes at a time: CRLF and UTF-8 split anywhere.
  const bytes = new TextEncoder().encode(wire);
  const chunks = [];
  for (let i = 0; i < bytes.length; i += 3) chunks.push(bytes.slice(i, i + 3));
  // close() (iterSse, readSSE with keepUnfinished: the checker's) delivers the message the end cut
  // off, as Python does; end() (readSSE: the client's) drops it, as the HTML standard does.
  assert.deepEqual(pairs([...iterSse(chunks)]), [...complete, [null, "cut", "7"]]);
  const decoder = new rootSse.SSEDecoder();
  const ended = chunks.flatMap((chunk) => decoder.feed(chunk));
  assert.deepEqual(pairs([...ended, ...decoder.end()]), complete);
  const body = () => new Response(bytes).body;
  const read = [];
  for await (const m of readSSE(body(), { keepUnfinished: true })) read.push(m);
  assert.deepEqual(pairs(read), [...complete, [null, "cut", "7"]]);
  for (const source of [new Response(bytes), body(), chunks, [wire]]) {
    const messages = [];
    for await (const m of rootSse.readSSE(source)) messages.push(m);
    assert.deepEqual(pairs(messages), complete);
  }
  // A stream that ends on its blank line's CR completes its message under either rule.
  const cr = new rootSse.SSEDecoder();
  assert.deepEqual(cr.feed("data: x\n\r"), []);
  assert.deepEqual(pairs(cr.end()), [[null, "x", null]]);
  // Breaking out early releases the body.
  const stream = body();
  for await (const m of rootSse.readSSE(stream)) break;
  assert.equal(stream.locked, false);
});
