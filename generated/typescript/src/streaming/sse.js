// Server-sent events: byte chunks in, split anywhere (mid-line, mid-UTF-8 character), messages
// out. The package's one SSE reader (the root `sse.js` re-exports it). The same field rules as the
// Python runtime's `iter_sse`: CR, LF and CRLF all end lines, comment lines are skipped, several
// `data:` lines join with newlines. At the end of the stream, `close` (and `iterSse`, which the
// checker reads with, and `readSSE` with `keepUnfinished`) delivers a message still open, as
// Python does; `end` (and `readSSE`, which the client reads with) drops it, as the HTML standard does.

/** The data of the SSE message that ends an Open Responses stream. */
export const DONE = "[DONE]";

const LINE_END = /\r\n|\r|\n/;

function splitLines(text) {
  return text.includes("\r") ? text.split(LINE_END) : text.split("\n");
}

function message(event, data, id) {
  return { event: event || null, data: data.join("\n"), id };
}

/** Incremental SSE decoding: `feed` each chunk, then `close` (or `end`) for what the end completes. */
export class SSEDecoder {
  #decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  #pending = "";
  #event = null;
  #data = [];
  #id = null;

  /** The messages that `chunk` (bytes or text) completes. */
  feed(chunk) {
    const decoded =
      typeof chunk === "string"
        ? chunk
        : this.#decoder.decode(chunk, { stream: true });
    const text = this.#pending + decoded;
    const held = text.endsWith("\r"); // maybe the first half of a CRLF split across chunks
    const lines = splitLines(held ? text.slice(0, -1) : text);
    this.#pending = lines.pop() + (held ? "\r" : "");
    return lines.length ? this.#lines(lines) : [];
  }

  /** The messages still open at the end of the stream. */
  close() {
    let pending = this.#pending + this.#decoder.decode();
    this.#pending = "";
    if (pending.endsWith("\r")) pending = pending.slice(0, -1);
    const out = pending ? this.#lines(splitLines(pending)) : [];
    if (this.#data.length) out.push(message(this.#event, this.#data, this.#id));
    this.#event = null;
    this.#data = [];
    return out;
  }

  /**
   * The messages the end of the stream completes as the HTML standard reads it: a line the stream
   * cut off is dropped, and so is a message without its blank line.
   */
  end() {
    const pending = this.#pending + this.#decoder.decode();
    this.#pending = "";
    // What is pending is one unfinished line, unless a CR ended it.
    const out = pending.endsWith("\r")
      ? this.#lines([pending.slice(0, -1)])
      : [];
    this.#event = null;
    this.#data = [];
    return out;
  }

  #lines(lines) {
    const out = [];
    for (const line of lines) {
      if (line.startsWith("data: ")) {
        this.#data.push(line.slice(6));
      } else if (!line) {
        if (this.#data.length) {
          out.push(message(this.#event, this.#data, this.#id));
          this.#data = [];
        }
        this.#event = null;
      } else if (line.startsWith("event: ")) {
        this.#event = line.slice(7);
      } else if (line[0] === ":") {
        continue; // a comment, such as a keep-alive
      } else {
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (name === "data") this.#data.push(value);
        else if (name === "event") this.#event = value;
        else if (name === "id" && !value.includes("\0")) this.#id = value;
      }
    }
    return out;
  }
}

/** The SSE messages of a whole capture (bytes or text) or of an iterable of chunks. */
export function* iterSse(source) {
  const decoder = new SSEDecoder();
  const chunks =
    typeof source === "string" || source instanceof Uint8Array
      ? [source]
      : source;
  for (const chunk of chunks) yield* decoder.feed(chunk);
  yield* decoder.close();
}

// The chunks of a ReadableStream (released when the consumer stops early) or of any iterable.
async function* chunksOf(body) {
  if (typeof body.getReader !== "function") {
    yield* body;
    return;
  }
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * The SSE messages of a fetch `Response`, its `body`, or any (async) iterable of byte or text
 * chunks, as they arrive; a message the end of the stream cut off is dropped (`end`), as the HTML
 * standard says, or with `keepUnfinished` delivered (`close`), as the checker reads a capture.
 * Stops early, releasing the stream, when the consumer breaks out of its loop.
 */
export async function* readSSE(source, { keepUnfinished = false } = {}) {
  const body =
    source !== null &&
    typeof source === "object" &&
    "body" in source &&
    !("getReader" in source)
      ? source.body
      : source;
  if (body === null || body === undefined) return;
  const decoder = new SSEDecoder();
  for await (const chunk of chunksOf(body)) yield* decoder.feed(chunk);
  yield* keepUnfinished ? decoder.close() : decoder.end();
}

/**
 * The events of an Open Responses stream (a fetch `Response` or its body), up to `[DONE]`.
 * Each event's data goes through `parse` (`JSON.parse` unless given, e.g. the package's
 * `parseEvent`).
 */
export async function* readEvents(source, { parse = JSON.parse } = {}) {
  const body =
    "body" in source && !("getReader" in source) ? source.body : source;
  if (!body)
    throw new TypeError("the response has no body to read events from");
  for await (const sse of readSSE(body, { keepUnfinished: true })) {
    if (sse.data === DONE) return;
    yield parse(sse.data);
  }
}
