// node --test over the package: the union helper, the SSE reader, parseEvent and the client's
// retries, against a node:http server of the test's own.
import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";

import {
  APIUserAbortError,
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
  const unknown = { type: "zeta:progress", sequence_number: 4, extra: { a: [1] } };
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
  assert.throws(() => ItemParam.parse({ type: "message", role: "robot", content: "hi" }));
  const custom = { type: "zeta:thing", payload: 1 };
  assert.deepEqual(ItemParam.parse(custom), custom);
});

test("the SSE reader splits on any line end, joins data lines and drops comments", async () => {
  const decoder = new SSEDecoder();
  const bytes = new TextEncoder().encode(
    "\ufeff: hello\r\nevent: a\r\ndata: 1\rdata:2\n\ndata: [DONE]\n\ndata: cut",
  );
  const out = [];
  for (let i = 0; i < bytes.length; i += 3) out.push(...decoder.feed(bytes.slice(i, i + 3)));
  out.push(...decoder.end());
  assert.deepEqual(
    out.map((m) => [m.event, m.data]),
    [
      ["a", "1\n2"],
      ["message", "[DONE]"],
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
          error: { message: "no", type: "invalid_request_error", param: "id", code: "bad_id" },
        }),
      );
      return;
    }
    if (calls === 1) {
      res.writeHead(429, { "retry-after-ms": "20", "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "slow down", type: "rate_limit" } }));
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ id: "r", object: "response.deleted", deleted: true }));
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
    const limited = new OpenResponses({ baseURL: base, apiKey: "k", maxRetries: 0 });
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
