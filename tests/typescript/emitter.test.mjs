// node --test: the TypeScript package's emitter, checked event by event by the stream checker.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  emitEvents,
  Emitter,
  ProviderError,
  responseSkeleton,
  StreamViolation,
  ToolPolicy,
} from "openresponses-runtime/server";
import { ResponseAccumulator } from "openresponses-runtime/streaming";

const WEATHER = { type: "function", name: "get_weather", parameters: {} };

async function* from(steps, failAfter = Infinity) {
  for (const [i, step] of steps.entries()) {
    if (i === failAfter) throw new Error("upstream went away");
    yield step;
  }
}

async function run(steps, { policy = ToolPolicy.fromRequest([WEATHER], "auto"), failAfter } = {}) {
  const emitter = new Emitter(responseSkeleton({ model: "m", tools: [WEATHER] }), { policy, check: true });
  const events = [];
  for await (const event of emitEvents(emitter, from(steps, failAfter))) events.push(event);
  emitter.verify(); // the checker saw every event, [DONE] included: no violation
  return { emitter, events, types: events.map((e) => e.type) };
}

const EVERY_STEP = [
  { type: "accepted" },
  { type: "reasoning_summary", text: "Thinking.", encryptedContent: "opaque" },
  { type: "reasoning", text: "raw " },
  { type: "reasoning", text: "thought" },
  { type: "reasoning_end", encryptedContent: "sig" },
  { type: "message_start", phase: "final_answer" },
  { type: "text", text: "Hel" },
  { type: "text", text: "lo" },
  { type: "refusal", text: "No." },
  { type: "message_end" },
  { type: "function_call_start", name: "get_weather", callId: "call_1" },
  { type: "arguments", delta: '{"city":' },
  { type: "arguments", delta: '"Paris"}' },
  { type: "function_call_end" },
  { type: "vendor_item", item: { type: "openai:web_search_call", action: { type: "search", query: "q" } } },
  { type: "usage", inputTokens: 3, outputTokens: 5 },
];

test("every step makes a valid stream, numbered from 0 without a gap", async () => {
  const { emitter, events, types } = await run(EVERY_STEP);
  assert.deepEqual(
    events.map((e) => e.sequence_number),
    events.map((_, i) => i),
  );
  assert.equal(types[0], "response.created");
  assert.equal(types.at(-1), "response.completed");
  const response = emitter.response;
  assert.deepEqual(
    response.output.map((item) => item.type),
    ["reasoning", "reasoning", "message", "function_call", "openai:web_search_call"],
  );
  assert.deepEqual(response.output[2].content, [
    { type: "output_text", text: "Hello", annotations: [], logprobs: [] },
    { type: "refusal", refusal: "No." },
  ]);
  assert.equal(response.output[3].arguments, '{"city":"Paris"}');
  assert.equal(response.usage.total_tokens, 8);
  // What a client rebuilds from the events is the response the server kept.
  assert.deepEqual(
    new ResponseAccumulator().feedSse(events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("")).asObject(),
    response,
  );
});

test("a provider failing once the stream has begun ends it with error and response.failed", async () => {
  const { emitter, types, events } = await run(EVERY_STEP, { failAfter: 8 });
  assert.deepEqual(types.slice(-2), ["error", "response.failed"]);
  assert.equal(events.at(-2).error.type, "server_error");
  assert.equal(emitter.response.status, "failed");
  const message = emitter.response.output.at(-1);
  assert.equal(message.status, "in_progress"); // as far as it was streamed, left open
  assert.equal(message.content[0].text, "Hello");
});

test("a provider failing before its first step throws before any event", async () => {
  const emitter = new Emitter(responseSkeleton({}), { check: true });
  const events = emitEvents(emitter, from(EVERY_STEP, 0));
  await assert.rejects(events.next(), /upstream went away/);
});

test("steps out of order are a ProviderError, ended like any failure", async () => {
  const { types, events } = await run([
    { type: "text", text: "a" },
    { type: "arguments", delta: "{}" },
  ]);
  assert.deepEqual(types.slice(-2), ["error", "response.failed"]);
  assert.match(events.at(-2).error.message, /arguments needs an open function_call, but message is open/);
  const emitter = new Emitter(responseSkeleton({}));
  assert.throws(() => emitter.step({ type: "poem" }), ProviderError);
});

test("tool_choice: calls outside the policy are suppressed; a required call never made fails the response", async () => {
  const none = ToolPolicy.fromRequest([WEATHER], "none");
  const call = [
    { type: "function_call_start", name: "get_weather" },
    { type: "arguments", delta: "{}" },
  ];
  const suppressed = await run([...call, { type: "text", text: "ok" }], { policy: none });
  assert.deepEqual(
    suppressed.emitter.response.output.map((i) => i.type),
    ["message"],
  );
  const required = ToolPolicy.fromRequest([WEATHER], "required");
  const failed = await run([{ type: "text", text: "no call" }], { policy: required });
  assert.equal(failed.types.at(-1), "response.failed");
  assert.equal(failed.emitter.response.error.code, "tool_choice_violation");
  const forced = ToolPolicy.fromRequest([WEATHER, { type: "function", name: "t" }], { type: "function", name: "t" });
  assert.deepEqual([...forced.allowed], ["t"]);
});

test("incomplete ends the open item and the response incomplete", async () => {
  const { emitter, types } = await run([{ type: "text", text: "cut" }, { type: "incomplete" }]);
  assert.equal(types.at(-1), "response.incomplete");
  assert.equal(emitter.response.output[0].status, "incomplete");
  assert.deepEqual(emitter.response.incomplete_details, { reason: "max_output_tokens" });
});

test("the checker catches an emitter misused into a broken stream", () => {
  const emitter = new Emitter(responseSkeleton({}), { check: true });
  assert.throws(() => emitter.step({ type: "text", text: "before start" }), StreamViolation);
});
