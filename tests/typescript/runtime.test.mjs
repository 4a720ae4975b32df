// node --test over the package: the union helper, the SSE reader, parseEvent and the client's
// retries, against a node:http server of the test's own.
import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";

import {
  APIConnectionError,
  APIResponseValidationError,
  APIUserAbortError,
  EventStream,
  BadRequestError,
  EVENT_TYPES,
  ItemParam,
  OpenResponses,
  RateLimitError,
  SSEDecoder,
  UnknownEvent,
  isKnownEvent,
  parseEvent,
  readSSE,
  retryDelay,
} from "openresponses-runtime";

test("every event type is in the registry, with its schema", () => {
  assert.ok(Object.keys(EVENT_TYPES).length >= 24);
  for (const [type, entry] of Object.entries(EVENT_TYPES)) {
    assert.equal(entry.type, type);
    assert.equal(typeof entry.schema.parse, "function");
  }
  assert.ok(EVENT_TYPES["response.completed"].terminal);
  assert.ok(!EVENT_TYPES["response.output_text.delta"].terminal);
});

test("an unknown event keeps every field; a broken known one is refused", () => {
  const unknown = {
    type: "zeta:progress",
    sequence_number: 4,
    extra: { a: [1] },
  };
  const parsed = parseEvent(JSON.stringify(unknown));
  assert.deepEqual(parsed, unknown);
  assert.ok(!isKnownEvent(parsed));
  assert.deepEqual(UnknownEvent.parse(unknown), unknown);
  assert.throws(() =>
    parseEvent({ type: "response.output_text.delta", sequence_number: 1 }),
  );
  assert.throws(() => parseEvent("[1, 2]"));
});

test("message params are told apart by type, then role; a typeless message is a message", () => {
  const user = ItemParam.parse({ role: "user", content: "hi" });
  assert.deepEqual(user, { role: "user", content: "hi" });
  const reference = ItemParam.parse({ type: "item_reference", id: "x" });
  assert.equal(reference.id, "x");
  assert.throws(() =>
    ItemParam.parse({ type: "message", role: "robot", content: "hi" }),
  );
  const custom = { type: "zeta:thing", payload: 1 };
  assert.deepEqual(ItemParam.parse(custom), custom);
});

test("the SSE reader splits on any line end, joins data lines and drops comments", async () => {
  const decoder = new SSEDecoder();
  const bytes = new TextEncoder().encode(
    "\ufeff: hello\r\nevent: a\r\ndata: 1\rdata:2\n\ndata: [DONE]\n\ndata: cut",
  );
  const out = [];
  for (let i = 0; i < bytes.length; i += 3)
    out.push(...decoder.feed(bytes.slice(i, i + 3)));
  out.push(...decoder.end());
  assert.deepEqual(
    out.map((m) => [m.event, m.data]),
    [
      ["a", "1\n2"],
      [null, "[DONE]"], // no \`event:\` field: null, as in the Python runtime's messages
    ],
  );
  const chunks = ["data: x\n", "\n"];
  const read = [];
  for await (const m of readSSE(chunks)) read.push(m.data);
  assert.deepEqual(read, ["x"]);
});

test("retryDelay follows Retry-After and retry-after-ms, and backs off without them", () => {
  assert.equal(retryDelay(0, new Headers({ "retry-after": "2" })), 2000);
  assert.equal(retryDelay(0, new Headers({ "retry-after-ms": "150" })), 150);
  assert.equal(retryDelay(0, new Headers({ "retry-after": "3600" })), null);
  const backoff = retryDelay(3, new Headers());
  assert.ok(backoff > 2000 && backoff <= 4000, String(backoff));
});

function serve(handler) {
  return new Promise((resolve) => {
    const server = http.createServer(handler);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({ server, base: `http://127.0.0.1:${port}/v1` });
    });
  });
}

test("a 429 is retried after its Retry-After; a 400 is thrown at once, typed", async () => {
  let calls = 0;
  const { server, base } = await serve((req, res) => {
    calls++;
    if (req.url.startsWith("/v1/responses/bad")) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          error: {
            message: "no",
            type: "invalid_request_error",
            param: "id",
            code: "bad_id",
          },
        }),
      );
      return;
    }
    if (calls === 1) {
      res.writeHead(429, {
        "retry-after-ms": "20",
        "content-type": "application/json",
      });
      res.end(
        JSON.stringify({ error: { message: "slow down", type: "rate_limit" } }),
      );
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({ id: "r", object: "response.deleted", deleted: true }),
    );
  });
  try {
    const client = new OpenResponses({ baseURL: base, apiKey: "k" });
    const deleted = await client.responses.delete("r");
    assert.equal(deleted.deleted, true);
    assert.equal(calls, 2);
    calls = 10;
    await assert.rejects(client.responses.retrieve("bad"), (error) => {
      assert.ok(error instanceof BadRequestError);
      assert.equal(error.param, "id");
      assert.equal(error.code, "bad_id");
      return true;
    });
    assert.equal(calls, 11);
    const limited = new OpenResponses({
      baseURL: base,
      apiKey: "k",
      maxRetries: 0,
    });
    calls = 0;
    await assert.rejects(limited.responses.delete("r"), RateLimitError);
  } finally {
    server.close();
  }
});

test("an AbortSignal cancels a request that is waiting", async () => {
  const { server, base } = await serve(() => {}); // never answers
  try {
    const client = new OpenResponses({ baseURL: base, apiKey: "k" });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(
      client.responses.retrieve("r", {}, { signal: controller.signal }),
      APIUserAbortError,
    );
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

const RESPONSE = {
  id: "resp_bg",
  object: "response",
  created_at: 1719900000,
  completed_at: null,
  status: "in_progress",
  incomplete_details: null,
  model: "m",
  previous_response_id: null,
  instructions: null,
  output: [],
  error: null,
  tools: [],
  tool_choice: "auto",
  truncation: "disabled",
  parallel_tool_calls: true,
  text: { format: { type: "text" } },
  top_p: 1,
  presence_penalty: 0,
  frequency_penalty: 0,
  top_logprobs: 0,
  temperature: 1,
  reasoning: null,
  usage: null,
  max_output_tokens: null,
  max_tool_calls: null,
  store: true,
  background: true,
  service_tier: "default",
  metadata: {},
  safety_identifier: null,
  prompt_cache_key: null,
};

function backgroundEvents() {
  const delta = (n) => ({
    type: "response.output_text.delta",
    sequence_number: n,
    item_id: "msg_1",
    output_index: 0,
    content_index: 0,
    delta: `d${n}`,
    logprobs: [],
  });
  return [
    { type: "response.created", sequence_number: 0, response: RESPONSE },
    { type: "response.in_progress", sequence_number: 1, response: RESPONSE },
    delta(2),
    delta(3),
    delta(4),
    {
      type: "response.completed",
      sequence_number: 5,
      response: { ...RESPONSE, status: "completed", completed_at: 1719900001 },
    },
  ];
}

const frame = (event) =>
  `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

test("a background stream whose connection breaks resumes after the last event read", async () => {
  const events = backgroundEvents();
  const asked = [];
  const { server, base } = await serve((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (req.method === "POST") {
      res.write(events.slice(0, 4).map(frame).join(""));
      setTimeout(() => res.destroy(), 50); // the connection breaks mid-response
      return;
    }
    const after = Number(
      new URL(req.url, base).searchParams.get("starting_after"),
    );
    res.end(
      events
        .slice(after + 1)
        .map(frame)
        .join("") + "data: [DONE]\n\n",
    );
  });
  try {
    const client = new OpenResponses({ baseURL: base, apiKey: "k" });
    const stream = await client.responses.create({
      model: "m",
      input: "hi",
      stream: true,
      background: true,
    });
    const seen = [];
    for await (const event of stream) seen.push(event.sequence_number);
    assert.deepEqual(seen, [0, 1, 2, 3, 4, 5]);
    assert.deepEqual(asked, [
      "POST /v1/responses",
      "GET /v1/responses/resp_bg?stream=true&starting_after=3",
    ]);
    assert.equal(stream.responseId, "resp_bg");
    assert.ok(stream.ended);
  } finally {
    server.close();
  }
});

test("a foreground stream whose connection breaks is an APIConnectionError", async () => {
  const events = backgroundEvents();
  const { server, base } = await serve((req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(events.slice(0, 3).map(frame).join(""));
    setTimeout(() => res.destroy(), 50);
  });
  try {
    const client = new OpenResponses({ baseURL: base, apiKey: "k" });
    const stream = await client.responses.create({
      model: "m",
      input: "hi",
      stream: true,
    });
    const seen = [];
    await assert.rejects(async () => {
      for await (const event of stream) seen.push(event.sequence_number);
    }, APIConnectionError);
    assert.deepEqual(seen, [0, 1, 2]);
  } finally {
    server.close();
  }
});

test("an EventStream releases its body when left, ended, or stopped by a strict error", async () => {
  const delta = (n, extra = {}) =>
    `data: ${JSON.stringify({ type: "response.output_text.delta", sequence_number: n, item_id: "m", output_index: 0, content_index: 0, delta: "x", logprobs: [], ...extra })}\n\n`;
  const answer = (text) =>
    new Response(text, { headers: { "x-request-id": "req_1" } });
  const left = answer(delta(0) + delta(1) + "data: [DONE]\n\n");
  for await (const _ of new EventStream(left)) break;
  assert.equal(left.body.locked, false);
  const ended = new EventStream(answer(delta(0) + "data: [DONE]\n\n"));
  for await (const _ of ended);
  assert.equal(ended.response.body.locked, false);
  assert.equal(ended.sawDone, true);
  const broken = answer(delta(0, { delta: 5 }) + delta(1));
  const reported = new EventStream(broken);
  const read = [];
  for await (const event of reported) read.push(event.delta);
  assert.deepEqual(read, [5, "x"]); // passed on as it came
  assert.equal(
    reported.issues[0].message,
    "event response.output_text.delta (sequence_number 0) breaks the spec's schema: delta: Invalid input: expected string, received number",
  );
  assert.equal(reported.sawDone, false);
  const strictAnswer = answer(delta(0, { delta: 5 }) + delta(1));
  const strict = new OpenResponses({
    baseURL: "http://127.0.0.1:9/v1",
    apiKey: "sk",
    validate: "strict",
    fetch: async () => strictAnswer,
  });
  const stream = await strict.responses.create({
    model: "m",
    input: "x",
    stream: true,
  });
  await assert.rejects(
    async () => {
      for await (const _ of stream);
    },
    (error) =>
      error instanceof APIResponseValidationError &&
      error.requestId === "req_1" &&
      error.status === 200 &&
      error.issues[0].path === "delta",
  );
  assert.equal(strictAnswer.body.locked, false);
});
