// What every gateway shares: the POST to its upstream, the upstream's errors in the spec's terms, its
// streamed answer read as JSON events (the package's SSE reader), and compaction. The gateway in
// src/provider.ts brings only its mappings: the body it sends for a turn, where, and how the
// upstream's events become steps.
import { readSSE } from "openresponses-runtime/sse";
import { newId, OpenResponsesError } from "openresponses-runtime/server";
import type { Item } from "./server.js";

/** An error in the spec's terms with the HTTP status it answers with (the server reads `status`). */
export class GatewayError extends OpenResponsesError {
  constructor(
    readonly status: number,
    message: string,
    type: string,
    code: string,
    param: string | null = null,
  ) {
    super(message, { type, code, param });
  }
}

/** How an upstream's error status is answered: [status, type, code, what the message begins with]. */
const REFUSED = [
  400,
  "invalid_request",
  "upstream_invalid_request",
  "The upstream refused the request",
] as const;
// The upstream's words about the gateway's own key are not the client's business, so they are not quoted.
const UNAUTHORIZED = [
  500,
  "server_error",
  "upstream_unauthorized",
  "The gateway's upstream credentials were refused",
] as const;
const ERROR_RULES: Record<number, readonly [number, string, string, string]> = {
  400: REFUSED,
  413: REFUSED, // too large for the upstream: the request must change
  422: REFUSED,
  401: UNAUTHORIZED,
  403: UNAUTHORIZED,
  404: [404, "not_found", "model_not_found", "The upstream has no such model"],
  429: [
    429,
    "too_many_requests",
    "rate_limit_exceeded",
    "The upstream is rate limited",
  ],
  503: [
    503,
    "model_error",
    "upstream_overloaded",
    "The upstream is overloaded",
  ],
};

/** The spec's error for an upstream's error `status` and its own `message`. */
export function upstreamError(status: number, message: string): GatewayError {
  const rule = ERROR_RULES[status];
  if (!rule)
    return new GatewayError(
      502,
      `The upstream failed (${status}): ${message}`,
      "model_error",
      "model_error",
    );
  const [answer, type, code, wording] = rule;
  const text = rule === UNAUTHORIZED ? `${wording}.` : `${wording}: ${message}`;
  return new GatewayError(
    answer,
    text,
    type,
    code,
    code === "model_not_found" ? "model" : null,
  );
}

/** The message of an upstream's error body, whichever way it spells it. */
function errorMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as {
      error?: { message?: unknown } | string;
      message?: unknown;
    };
    const error = Array.isArray(parsed) ? parsed[0]?.error : parsed.error; // Gemini may answer a list
    const message =
      typeof error === "string" ? error : (error?.message ?? parsed.message);
    if (typeof message === "string") return message;
  } catch {
    // not JSON: its text, cut short, says it
  }
  return body.slice(0, 200) || "(no body)";
}

/** POST `body` as JSON to `url`; the answer when it is a 200, else the spec's error for it. */
export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<Response> {
  let reply: Response;
  try {
    reply = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal,
    });
  } catch (error) {
    if (signal.aborted) throw error;
    const reason =
      error instanceof Error
        ? (error.cause ?? error).toString()
        : String(error);
    throw new GatewayError(
      502,
      `The upstream cannot be reached: ${reason}`,
      "model_error",
      "upstream_unreachable",
    );
  }
  if (!reply.ok) {
    const text = await reply.text();
    // Gemini refuses a bad key with a 400 whose reason says so: the gateway's key, not the client's request.
    throw upstreamError(
      reply.status === 400 && text.includes("API_KEY_INVALID")
        ? 401
        : reply.status,
      errorMessage(text),
    );
  }
  return reply;
}

/**
 * The JSON data of each event an upstream streams (up to `[DONE]`, which some send). An upstream that
 * answers whole whatever was asked (a JSON body) gives `whole(body)` as its events.
 */
export async function* jsonEvents<T>(
  reply: Response,
  whole: (body: unknown) => T[] = (body) => [body as T],
): AsyncGenerator<T> {
  const kind = reply.headers.get("content-type") ?? "";
  if (kind.includes("application/json")) {
    let body: unknown;
    try {
      body = await reply.json();
    } catch {
      throw new GatewayError(
        502,
        "The upstream answered with a body that is not JSON",
        "model_error",
        "upstream_bad_response",
      );
    }
    return yield* whole(body);
  }
  if (!kind.includes("text/event-stream")) {
    throw new GatewayError(
      502,
      `The upstream answered ${kind || "without a content type"}, not an event stream`,
      "model_error",
      "upstream_bad_response",
    );
  }
  for await (const message of readSSE(reply)) {
    if (message.data === "[DONE]") return;
    if (!message.data.trim()) continue;
    try {
      yield JSON.parse(message.data) as T;
    } catch {
      throw new GatewayError(
        502,
        `The upstream sent an event that is not JSON: ${message.data.slice(0, 80)}`,
        "model_error",
        "upstream_bad_response",
      );
    }
  }
}

/** The text of an item's content: a string, or its text parts joined. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: { text?: unknown }) =>
      typeof part?.text === "string" ? part.text : "",
    )
    .join("");
}

/** A `data:` URL's media type and base64 data; null for any other URL. */
export function dataUrl(
  url: string,
): { mediaType: string; data: string } | null {
  const found = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return found ? { mediaType: found[1]!, data: found[2]! } : null;
}

/** An `input_file` part as the upstream takes it: its name, media type and base64 data. */
export interface InlineFile {
  filename: string;
  mediaType: string;
  data: string;
}

/** An `input_file` part's inline data; a file by id or URL is refused (400): a gateway has nowhere to read it. */
export function inlineFile(part: {
  filename?: string;
  file_data?: string;
  file_url?: string;
}): InlineFile {
  const filename = part.filename ?? "file";
  if (!part.file_data) {
    throw new GatewayError(
      400,
      "input_file: only inline files (file_data) can go to this upstream",
      "invalid_request",
      "unsupported_content",
      "input",
    );
  }
  const inline = dataUrl(part.file_data);
  const guessed = filename.endsWith(".pdf") ? "application/pdf" : "text/plain";
  return inline
    ? { filename, ...inline }
    : { filename, mediaType: guessed, data: part.file_data };
}

/** Compaction: the conversation in one opaque `compaction` item, which `expandCompactions` opens again. */
export function compact(items: Item[]): Item[] {
  const blob = Buffer.from(JSON.stringify(expandCompactions(items))).toString(
    "base64",
  );
  return [{ type: "compaction", id: newId("cmp"), encrypted_content: blob }];
}

/** Compaction items made by `compact` opened back into the items they hold (others' are dropped). */
export function expandCompactions(items: Item[]): Item[] {
  return items.flatMap((item) => {
    if (item.type !== "compaction") return [item];
    try {
      const held = JSON.parse(
        Buffer.from(String(item.encrypted_content ?? ""), "base64").toString(
          "utf8",
        ),
      );
      return Array.isArray(held) ? expandCompactions(held as Item[]) : [];
    } catch {
      return []; // someone else's compaction: nothing a gateway can read
    }
  });
}
