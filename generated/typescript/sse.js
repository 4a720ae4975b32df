/**
 * Server-sent events from a byte stream, as the HTML standard parses them: lines end in CRLF, LF
 * or CR; `data` lines join with LF; a blank line dispatches; `:` starts a comment; a message left
 * without its blank line when the stream ends is dropped.
 */
export class SSEDecoder {
  #decoder = new TextDecoder();
  #buffer = "";
  #data = [];
  #event = "";
  #id = undefined;
  #retry = undefined;
  #started = false;

  /** The messages completed by `chunk` (bytes or text). */
  feed(chunk) {
    let text =
      typeof chunk === "string"
        ? chunk
        : this.#decoder.decode(chunk, { stream: true });
    if (!this.#started && text.length > 0) {
      this.#started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    this.#buffer += text;
    const out = [];
    let start = 0;
    for (let i = 0; i < this.#buffer.length; i++) {
      const ch = this.#buffer.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      if (ch === 13 && i + 1 === this.#buffer.length) break; // a CR may be half of CRLF
      const message = this.#line(this.#buffer.slice(start, i));
      if (message !== undefined) out.push(message);
      if (ch === 13 && this.#buffer.charCodeAt(i + 1) === 10) i++;
      start = i + 1;
    }
    this.#buffer = this.#buffer.slice(start);
    return out;
  }

  /** The messages the end of the stream completes (a last line without its line end). */
  end() {
    const rest = this.#buffer + this.#decoder.decode();
    this.#buffer = "";
    if (rest.length === 0) return [];
    const message = this.#line(rest.replace(/\r$/, ""));
    return message === undefined ? [] : [message];
  }

  #line(line) {
    if (line === "") {
      if (this.#data.length === 0) {
        this.#event = "";
        return undefined;
      }
      const message = {
        event: this.#event || "message",
        data: this.#data.join("\n"),
        id: this.#id,
        retry: this.#retry,
      };
      this.#data = [];
      this.#event = "";
      return message;
    }
    if (line.charCodeAt(0) === 58) return undefined; // ":" starts a comment
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === "data") this.#data.push(value);
    else if (field === "event") this.#event = value;
    else if (field === "id" && !value.includes("\0")) this.#id = value;
    else if (field === "retry" && /^\d+$/.test(value))
      this.#retry = Number(value);
    return undefined;
  }
}

/**
 * The messages of a server-sent event stream: a fetch `Response`, its `body`, or any (async)
 * iterable of byte or text chunks.
 */
export async function* readSSE(source) {
  const body =
    source !== null && typeof source === "object" && "body" in source
      ? source.body
      : source;
  if (body === null || body === undefined) return;
  const decoder = new SSEDecoder();
  for await (const chunk of body) yield* decoder.feed(chunk);
  yield* decoder.end();
}
