// A small fake Gemini upstream for the tests: an echo model, streamed like Gemini's SSE endpoint. It
// answers the last user text with `You said: ...`, calls the functions the text names (each a
// `functionCall` part with an id), honours toolConfig.functionCallingConfig (AUTO, ANY, NONE,
// allowedFunctionNames) and generationConfig.maxOutputTokens (finishReason MAX_TOKENS), reports a
// function's result after a `functionResponse`, and carries usage in every chunk. A wrong key is answered
// as Gemini answers it (400 API_KEY_INVALID); countTokens counts one token per four characters.
import { createServer } from "node:http";

export const UPSTREAM_KEY = "AIza-upstream-test";
export const API_ROOT = "/v1beta";

function called(body, said) {
  const config = body.toolConfig?.functionCallingConfig ?? { mode: "AUTO" };
  let names = (body.tools ?? []).flatMap((tool) =>
    (tool.functionDeclarations ?? []).map((d) => d.name),
  );
  names = names.filter((name) =>
    (config.allowedFunctionNames ?? names).includes(name),
  );
  if (!names.length || config.mode === "NONE") return [];
  const calls = names.filter((name) => new RegExp(`\\b${name}\\b`).test(said));
  return calls.length ? calls : config.mode === "ANY" ? names.slice(0, 1) : [];
}

function* answer(body) {
  const contents = body.contents ?? [];
  const prompt = Math.max(1, Math.floor(JSON.stringify(contents).length / 4));
  const chunk = (parts, used, finish) => {
    const candidate = {
      content: { parts, role: "model" },
      index: 0,
      ...(finish ? { finishReason: finish } : {}),
    };
    const usageMetadata = {
      promptTokenCount: prompt,
      candidatesTokenCount: used,
      totalTokenCount: prompt + used,
    };
    return `data: ${JSON.stringify({ candidates: [candidate], usageMetadata })}\r\n\r\n`;
  };
  const result = (contents.at(-1)?.parts ?? []).find(
    (p) => p.functionResponse,
  )?.functionResponse;
  const asked = [...contents]
    .reverse()
    .find(
      (c) =>
        c.role === "user" &&
        c.parts.some((p) => "text" in p || p.inlineData || p.fileData),
    );
  const said = (asked?.parts ?? [])
    .filter((p) => "text" in p)
    .map((p) => p.text)
    .join(" ");
  const images = (asked?.parts ?? []).filter(
    (p) => p.inlineData || p.fileData,
  ).length;
  const budget = body.generationConfig?.maxOutputTokens ?? 8192;
  const calls = result ? [] : called(body, said);
  if (calls.length) {
    const parts = calls.map((name, index) => ({
      functionCall: {
        name,
        args: { city: "Paris" },
        id: `call_${index}_${name}`,
      },
    }));
    yield chunk(parts, calls.length, "STOP");
    return;
  }
  const response = result?.response ?? {};
  const keys = Object.keys(response);
  const seen = images ? ` (and ${images} image${images === 1 ? "" : "s"})` : "";
  const reply = result
    ? `The function returned: ${keys.length === 1 && keys[0] === "output" ? response.output : JSON.stringify(response)}`
    : said
      ? `You said${seen}: ${said}`
      : "Hello!";
  let used = 0;
  for (const word of reply.match(/\S+\s*|\s+/g)) {
    if (used >= budget) {
      yield chunk([{ text: "" }], used, "MAX_TOKENS");
      return;
    }
    used += 1;
    yield chunk([{ text: word }], used);
  }
  yield chunk([{ text: "" }], used, "STOP");
}

/** The fake on a free loopback port: its server and its API root URL. */
export async function startUpstream(key = UPSTREAM_KEY) {
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const raw = Buffer.concat(chunks).toString("utf8");
    const send = (status, value) =>
      res
        .writeHead(status, { "content-type": "application/json" })
        .end(JSON.stringify(value));
    const refuse = (message, details) =>
      send(400, {
        error: { code: 400, message, status: "INVALID_ARGUMENT", details },
      });
    const url = new URL(req.url, "http://localhost");
    if (!url.pathname.startsWith(`${API_ROOT}/models/`))
      return send(404, { error: { code: 404, message: "no such route" } });
    if (req.headers["x-goog-api-key"] !== key) {
      return refuse("API key not valid.", [
        {
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason: "API_KEY_INVALID",
        },
      ]);
    }
    if (url.pathname.endsWith(":countTokens"))
      return send(200, {
        totalTokens: Math.max(1, Math.floor(raw.length / 4)),
      });
    if (
      !url.pathname.endsWith(":streamGenerateContent") ||
      url.searchParams.get("alt") !== "sse"
    ) {
      return refuse("this fake upstream only streams");
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const piece of answer(JSON.parse(raw))) res.write(piece);
    res.end();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    server,
    url: `http://127.0.0.1:${server.address().port}${API_ROOT}`,
  };
}
