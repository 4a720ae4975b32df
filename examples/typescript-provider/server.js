// @ts-check
// An Open Responses provider on node:http: an echo model served as JSON and as SSE through the
// emitter of openresponses-runtime. Run: OPENRESPONSES_API_KEY=sk-... node server.js [PORT]
import { createServer } from "node:http";
import { DONE_FRAME, emitEvents, Emitter, responseSkeleton, sseFrame, ToolPolicy } from "openresponses-runtime/server";

/** @typedef {import("openresponses-runtime/server").Step} Step */
const KEY = process.env.OPENRESPONSES_API_KEY;
const stored = new Map(); // response id -> response, the last 1000, for previous_response_id
if (!KEY) throw new Error("set OPENRESPONSES_API_KEY: this server never runs open");

/** The text of the last user message, whether a string or content parts. @param {string | any[]} input */
function lastUserText(input) {
  if (typeof input === "string") return input;
  const message = input.filter((/** @type {any} */ item) => item?.role === "user").at(-1);
  const content = message?.content ?? "";
  return typeof content === "string" ? content : content.map((/** @type {any} */ part) => part?.text ?? "").join(" ");
}

/**
 * The model: it calls the tools the prompt names (or the one it must), else echoes the prompt.
 * @param {Record<string, any>} body @param {ToolPolicy} policy @returns {AsyncGenerator<Step>}
 */
async function* respond(body, policy) {
  const prompt = lastUserText(body.input);
  let names = [...policy.allowed].filter((name) => prompt.includes(name));
  if (!names.length && policy.required) names = [...policy.allowed].slice(0, 1);
  if (body.parallel_tool_calls === false) names = names.slice(0, 1);
  for (const name of names) {
    yield { type: "function_call_start", name };
    yield { type: "arguments", delta: JSON.stringify({ city: "Paris" }) };
  }
  const words = names.length ? [] : `You said: ${prompt}`.split(/(?<= )/);
  const limit = body.max_output_tokens ?? Infinity;
  for (const [i, word] of words.entries()) {
    if (i >= limit) return yield { type: "incomplete", reason: "max_output_tokens" };
    yield { type: "text", text: word };
  }
  yield {
    type: "usage",
    inputTokens: prompt.split(" ").length,
    outputTokens: words.length,
  };
}

/** @param {Record<string, any>} response */
function keep(response) {
  stored.set(response.id, response);
  if (stored.size > 1000) stored.delete(stored.keys().next().value);
}

/** @param {import("node:http").ServerResponse} res @param {number} status @param {string} type
 *  @param {string} code @param {string | null} param @param {string} message */
function sendError(res, status, type, code, param, message) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { type, code, param, message } }));
}

const server = createServer(async (req, res) => {
  if (req.method !== "POST" || req.url !== "/v1/responses") {
    return sendError(res, 404, "not_found", "not_found", null, `no route ${req.method} ${req.url}`);
  }
  if (req.headers.authorization !== `Bearer ${KEY}`) {
    return sendError(res, 401, "invalid_request", "invalid_api_key", null, "a valid bearer API key is required");
  }
  let body;
  try {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return sendError(res, 400, "invalid_request", "invalid_json", null, "the body is not JSON");
  }
  if (typeof body?.input !== "string" && !Array.isArray(body?.input)) {
    return sendError(res, 400, "invalid_request", "invalid_request", "input", "input must be a string or a list");
  }
  if (body.previous_response_id != null && !stored.has(body.previous_response_id)) {
    return sendError(res, 404, "not_found", "not_found", "previous_response_id", "no such response");
  }
  const policy = ToolPolicy.fromRequest(body.tools, body.tool_choice);
  const emitter = new Emitter(responseSkeleton(body, { model: body.model ?? "echo" }), { policy });
  const events = emitEvents(emitter, respond(body, policy));
  if (!body.stream) {
    for await (const _ of events); // the events are not sent: the response is built all the same
    if (body.store !== false) keep(emitter.response);
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify(emitter.response));
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for await (const event of events) res.write(sseFrame(event));
  if (body.store !== false) keep(emitter.response);
  res.end(DONE_FRAME);
});

const PORT = Number(process.argv[2] ?? 8000);
server.listen(PORT, "127.0.0.1", () => console.log(`serving on http://127.0.0.1:${PORT}/v1`));
