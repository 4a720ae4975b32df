// A small fake Anthropic Messages upstream for the tests: an echo model, streamed like Anthropic's. It
// answers the last user text with `You said: ...`, calls the tools the text names (each input in two
// `input_json_delta` pieces), honours tool_choice (auto, any, tool, disable_parallel_tool_use) and
// max_tokens (stop_reason "max_tokens"), reports a tool's result after a `tool_result`, and carries usage
// in message_start and message_delta. count_tokens counts one token per four characters of the body.
import { createServer } from "node:http";

export const UPSTREAM_KEY = "sk-ant-upstream-test";

const blocks = (content) =>
  typeof content === "string"
    ? [{ type: "text", text: content }]
    : (content ?? []);

function called(body, said) {
  const names = (body.tools ?? []).map((tool) => tool.name);
  const choice = body.tool_choice ?? { type: "auto" };
  if (!names.length || choice.type === "none") return [];
  if (choice.type === "tool") return [choice.name];
  let calls = names.filter((name) => new RegExp(`\\b${name}\\b`).test(said));
  if (!calls.length && choice.type === "any") calls = names.slice(0, 1);
  return choice.disable_parallel_tool_use ? calls.slice(0, 1) : calls;
}

function* answer(body) {
  const event = (data) =>
    `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
  const messages = body.messages ?? [];
  const result = blocks(messages.at(-1)?.content).find(
    (b) => b.type === "tool_result",
  );
  const asked = [...messages]
    .reverse()
    .map((m) => m.role === "user" && blocks(m.content))
    .find(
      (found) =>
        found && found.some((b) => b.type === "text" || b.type === "image"),
    );
  const said = (asked || [])
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join(" ");
  const images = (asked || []).filter((b) => b.type === "image").length;
  const prompt = Math.max(1, Math.floor(JSON.stringify(messages).length / 4));
  let used = 0;
  let stop = "end_turn";
  const message = {
    id: "msg_test",
    type: "message",
    role: "assistant",
    model: body.model,
    content: [],
  };
  yield event({
    type: "message_start",
    message: { ...message, usage: { input_tokens: prompt, output_tokens: 1 } },
  });
  const calls = result ? [] : called(body, said);
  for (const [index, name] of calls.entries()) {
    const block = {
      type: "tool_use",
      id: `toolu_${index}_${name}`,
      name,
      input: {},
    };
    yield event({ type: "content_block_start", index, content_block: block });
    for (const piece of ['{"city": ', '"Paris"}']) {
      yield event({
        type: "content_block_delta",
        index,
        delta: { type: "input_json_delta", partial_json: piece },
      });
      used += 1;
    }
    yield event({ type: "content_block_stop", index });
    stop = "tool_use";
  }
  if (!calls.length) {
    const seen = images
      ? ` (and ${images} image${images === 1 ? "" : "s"})`
      : "";
    const content = result?.content;
    const reply = result
      ? `The function returned: ${typeof content === "string" ? content : JSON.stringify(content)}`
      : said
        ? `You said${seen}: ${said}`
        : "Hello!";
    yield event({
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "" },
    });
    for (const word of reply.match(/\S+\s*|\s+/g)) {
      if (used >= body.max_tokens) {
        stop = "max_tokens";
        break;
      }
      yield event({
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text: word },
      });
      used += 1;
    }
    yield event({ type: "content_block_stop", index: 0 });
  }
  yield event({
    type: "message_delta",
    delta: { stop_reason: stop },
    usage: { output_tokens: used },
  });
  yield event({ type: "message_stop" });
}

/** The fake on a free loopback port: its server and its root URL (the gateway adds /v1/messages). */
export async function startUpstream(key = UPSTREAM_KEY) {
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const raw = Buffer.concat(chunks).toString("utf8");
    const send = (status, value) =>
      res
        .writeHead(status, { "content-type": "application/json" })
        .end(JSON.stringify(value));
    const refuse = (status, type, message) =>
      send(status, { type: "error", error: { type, message } });
    if (req.headers["x-api-key"] !== key)
      return refuse(401, "authentication_error", "invalid x-api-key");
    if (!req.headers["anthropic-version"])
      return refuse(
        400,
        "invalid_request_error",
        "anthropic-version: header is required",
      );
    if (req.url === "/v1/messages/count_tokens")
      return send(200, {
        input_tokens: Math.max(1, Math.floor(raw.length / 4)),
      });
    if (req.url !== "/v1/messages")
      return refuse(404, "not_found_error", "no such route");
    const body = JSON.parse(raw);
    if (!body.stream)
      return refuse(
        400,
        "invalid_request_error",
        "this fake upstream only streams",
      );
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const piece of answer(body)) res.write(piece);
    res.end();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}
