// A small fake Chat Completions upstream for the tests: an echo model, streamed like OpenAI's. It answers
// the last user text with `You said: ...`, calls the tools the text names (each call's arguments in two
// pieces), honours tool_choice, parallel_tool_calls and max_tokens (finish_reason "length"), reports a
// tool's result after a `tool` message, and ends with a usage chunk and `data: [DONE]`.
import { createServer } from "node:http";

export const UPSTREAM_KEY = "sk-upstream-test";
export const API_ROOT = "/v1";

function text(content) {
  if (typeof content === "string") return [content, 0];
  const parts = content ?? [];
  const words = parts.filter((p) => p.type === "text").map((p) => p.text);
  return [words.join(" "), parts.filter((p) => p.type === "image_url").length];
}

function called(body, said) {
  const names = (body.tools ?? []).map((tool) => tool.function.name);
  const choice = body.tool_choice ?? "auto";
  if (!names.length || choice === "none") return [];
  if (typeof choice === "object") return [choice.function.name];
  let calls = names.filter((name) => new RegExp(`\\b${name}\\b`).test(said));
  if (!calls.length && choice === "required") calls = names.slice(0, 1);
  return body.parallel_tool_calls === false ? calls.slice(0, 1) : calls;
}

function* answer(body) {
  const chunk = (delta, finish = null, usage) =>
    `data: ${JSON.stringify({
      id: "chatcmpl-test",
      object: "chat.completion.chunk",
      model: "fake",
      choices: delta ? [{ index: 0, delta, finish_reason: finish }] : [],
      ...(usage ? { usage } : {}),
    })}\n\n`;
  const messages = body.messages ?? [];
  const last = messages.at(-1) ?? {};
  const [said, images] = text(
    [...messages].reverse().find((m) => m.role === "user")?.content ?? "",
  );
  const budget = body.max_tokens ?? body.max_completion_tokens ?? Infinity;
  let used = 0;
  let finish = "stop";
  yield chunk({ role: "assistant", content: "" });
  const calls = last.role === "tool" ? [] : called(body, said);
  for (const [index, name] of calls.entries()) {
    const id = `call_${index}_${name}`;
    yield chunk({
      tool_calls: [
        { index, id, type: "function", function: { name, arguments: "" } },
      ],
    });
    for (const piece of ['{"city": ', '"Paris"}']) {
      yield chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
      used += 1;
    }
    finish = "tool_calls";
  }
  if (!calls.length) {
    const seen = images
      ? ` (and ${images} image${images === 1 ? "" : "s"})`
      : "";
    const reply =
      last.role === "tool"
        ? `The function returned: ${last.content}`
        : said
          ? `You said${seen}: ${said}`
          : "Hello!";
    for (const word of reply.match(/\S+\s*|\s+/g)) {
      if (used >= budget) {
        finish = "length";
        break;
      }
      yield chunk({ content: word });
      used += 1;
    }
  }
  yield chunk({}, finish);
  const prompt = Math.max(1, Math.floor(JSON.stringify(messages).length / 4));
  yield chunk(null, null, {
    prompt_tokens: prompt,
    completion_tokens: used,
    total_tokens: prompt + used,
  });
  yield "data: [DONE]\n\n";
}

/** The fake on a free loopback port: its server and its API root URL. */
export async function startUpstream(key = UPSTREAM_KEY) {
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const send = (status, value) =>
      res
        .writeHead(status, { "content-type": "application/json" })
        .end(JSON.stringify(value));
    if (req.url !== `${API_ROOT}/chat/completions`)
      return send(404, { error: { message: "no such route" } });
    if (req.headers.authorization !== `Bearer ${key}`) {
      return send(401, {
        error: {
          message: "Incorrect API key provided.",
          type: "invalid_request_error",
          code: "invalid_api_key",
        },
      });
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    if (!body.stream)
      return send(400, {
        error: { message: "this fake upstream only streams" },
      });
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const piece of answer(body)) res.write(piece);
    res.end();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    server,
    url: `http://127.0.0.1:${server.address().port}${API_ROOT}`,
  };
}
