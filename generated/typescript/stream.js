// What openai-node users reach for first: `responses.stream()`'s `ResponseStream`, with
// `finalResponse()`, `finalText()`, listeners by event type, and `output_text` on a response.

/** The text of a response's output: its messages' `output_text` parts, joined. */
export function outputText(response) {
  const texts = [];
  for (const item of response?.output ?? []) {
    if (item?.type !== "message" || !Array.isArray(item.content)) continue;
    for (const part of item.content) {
      if (part?.type === "output_text" && typeof part.text === "string")
        texts.push(part.text);
    }
  }
  return texts.join("");
}

/**
 * `response` with an `output_text` property, as openai-node's responses have; it is not
 * enumerable, so the response serializes as the server sent it.
 */
export function withOutputText(response) {
  if (response !== null && typeof response === "object") {
    Object.defineProperty(response, "output_text", {
      get: () => outputText(response),
      enumerable: false,
      configurable: true,
    });
  }
  return response;
}

/**
 * A streamed response, as `responses.stream()` gives it before the server has answered: iterate
 * it with `for await`, listen with `on(type, listener)` ("event" for every event), or wait with
 * `finalResponse()`, `finalText()` or `done()`. Errors (the request's included) come out of
 * whichever of these is used.
 */
export class ResponseStream {
  #events;
  #controller;
  #listeners = new Map();
  #stream = null;

  constructor(events, controller) {
    this.#events = events.then((stream) => (this.#stream = stream));
    this.#events.catch(() => {}); // rejections surface where the stream is used
    this.#controller = controller;
  }

  /** Call `listener` with each event of type `type` ("event": every event), as it is read. */
  on(type, listener) {
    const listeners = this.#listeners.get(type) ?? [];
    this.#listeners.set(type, [...listeners, listener]);
    return this;
  }

  async *[Symbol.asyncIterator]() {
    const stream = await this.#events;
    for await (const event of stream) {
      for (const listener of this.#listeners.get("event") ?? [])
        listener(event);
      for (const listener of this.#listeners.get(event.type) ?? [])
        listener(event);
      yield event;
    }
  }

  /** The text of the output as it arrives, delta by delta. */
  async *textDeltas() {
    for await (const event of this) {
      if (event.type === "response.output_text.delta") yield event.delta;
    }
  }

  /** Read the stream to its end (calling the listeners). */
  async done() {
    for await (const _ of this);
  }

  /** Read the stream to its end; the response its events built, with `output_text`. */
  async finalResponse() {
    await this.done();
    return this.#stream.finalResponse();
  }

  /** Read the stream to its end; the text of the response's output. */
  async finalText() {
    return outputText(await this.finalResponse());
  }

  /** Stop: the request, or the reading of its events. */
  abort() {
    this.#controller.abort();
  }

  /** The events that broke the schema so far (see `EventStream.issues`). */
  get issues() {
    return this.#stream?.issues ?? [];
  }

  /** Whether the stream ended with `data: [DONE]`. */
  get sawDone() {
    return this.#stream?.sawDone ?? false;
  }

  /** The `EventStream` underneath, once the server has answered. */
  get eventStream() {
    return this.#stream;
  }
}
