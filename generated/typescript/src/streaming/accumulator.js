// Build the response of a stream from its events, as the Python runtime's `ResponseAccumulator`.

import {
  EVENT_PROTOCOL,
  RESPONSE_STATUSES,
  TERMINAL_EVENT_TYPES,
  TEXT_PARTS,
} from "./protocol.js";
import { DONE, iterSse } from "./sse.js";

// The events that add to, or finish, a content part's text (its deltas and its `.done`).
const PART_TEXT_EVENTS = new Set(
  Object.values(TEXT_PARTS).map(({ done }) => done),
);
for (const [kind, info] of Object.entries(EVENT_PROTOCOL)) {
  if (info.accumulates && PART_TEXT_EVENTS.has(info.accumulates.done))
    PART_TEXT_EVENTS.add(kind);
}

const copy = (value) => JSON.parse(JSON.stringify(value));
const isObject = (value) =>
  value !== null && typeof value === "object" && !Array.isArray(value);
const text = (value) => (typeof value === "string" ? value : "");

function put(items, index, value) {
  if (
    !Array.isArray(items) ||
    !Number.isInteger(index) ||
    index < 0 ||
    !isObject(value)
  )
    return;
  while (items.length <= index) items.push({});
  items[index] = copy(value);
}

function at(items, index) {
  if (
    Array.isArray(items) &&
    Number.isInteger(index) &&
    index >= 0 &&
    index < items.length
  ) {
    return isObject(items[index]) ? items[index] : null;
  }
  return null;
}

function append(part, field, event, kind) {
  if (kind.endsWith(".delta")) {
    part[field] = text(part[field]) + text(event.delta);
  } else {
    const done = Object.hasOwn(event, field) ? event[field] : event.text;
    if (typeof done === "string") part[field] = done;
  }
}

/**
 * Builds the response of a stream from its events.
 *
 * Feed events (parsed JSON objects) with `feed`; `asObject()` is the response at any point. The
 * snapshot of the latest lifecycle event is the base; output items are assembled from item, part
 * and delta events, and replaced by the finished item of `response.output_item.done`. A terminal
 * event's own `output`, when it lists items, wins.
 *
 * `validate` checks the built response for `result()`: the package's `openresponses-runtime/streaming`
 * passes the zod `ResponseResource`'s. This module itself imports no zod, so a page can load it as is.
 */
export class ResponseAccumulator {
  #validate;

  constructor({ validate } = {}) {
    this.#validate = validate ?? null;
    this.response = {};
    this.output = new Map();
    this.finished = false;
  }

  /** Feed every event of an SSE capture (bytes, text, or chunks), up to `[DONE]`. */
  feedSse(source) {
    for (const message of iterSse(source)) {
      if (message.data === DONE) break;
      this.feed(JSON.parse(message.data));
    }
    return this;
  }

  feed(event) {
    if (!isObject(event)) return;
    const kind = event.type;
    if (typeof kind !== "string") return;
    if (Object.hasOwn(RESPONSE_STATUSES, kind)) {
      if (isObject(event.response)) this.response = copy(event.response);
      if (TERMINAL_EVENT_TYPES.has(kind)) this.finished = true;
      return;
    }
    const index = event.output_index;
    if (
      kind === "response.output_item.added" ||
      kind === "response.output_item.done"
    ) {
      if (isObject(event.item) && Number.isInteger(index))
        this.output.set(index, copy(event.item));
      return;
    }
    const item = Number.isInteger(index) ? this.output.get(index) : undefined;
    if (item === undefined) return;
    if (
      kind === "response.content_part.added" ||
      kind === "response.content_part.done"
    ) {
      if (!Object.hasOwn(item, "content")) item.content = [];
      put(item.content, event.content_index, event.part);
    } else if (
      kind === "response.reasoning_summary_part.added" ||
      kind === "response.reasoning_summary_part.done"
    ) {
      if (!Object.hasOwn(item, "summary")) item.summary = [];
      put(item.summary, event.summary_index, event.part);
    } else if (kind === "response.function_call_arguments.delta") {
      item.arguments = text(item.arguments) + text(event.delta);
    } else if (kind === "response.function_call_arguments.done") {
      if (Object.hasOwn(event, "arguments")) item.arguments = event.arguments;
    } else if (
      kind === "response.reasoning_summary_text.delta" ||
      kind === "response.reasoning_summary_text.done"
    ) {
      const part = at(item.summary, event.summary_index);
      if (part !== null) append(part, "text", event, kind);
    } else if (kind === "response.output_text.annotation.added") {
      const part = at(item.content, event.content_index);
      if (part !== null && event.annotation != null) {
        if (!Array.isArray(part.annotations)) part.annotations = [];
        part.annotations.push(event.annotation);
      }
    } else if (PART_TEXT_EVENTS.has(kind)) {
      const part = at(item.content, event.content_index);
      if (part !== null)
        append(
          part,
          kind.startsWith("response.refusal") ? "refusal" : "text",
          event,
          kind,
        );
    }
  }

  /** The response as a plain object: the latest snapshot, with the streamed items if it lists none. */
  asObject() {
    const response = { ...this.response };
    const listed = Array.isArray(response.output) && response.output.length > 0;
    if (!listed && this.output.size) {
      response.output = [...this.output.keys()]
        .sort((a, b) => a - b)
        .map((i) => this.output.get(i));
    }
    return response;
  }

  /** The response as a validated `ResponseResource`; throws a `ZodError` if it breaks the schema. */
  result() {
    if (this.#validate === null) {
      throw new Error(
        "result() needs a validator: import ResponseAccumulator from openresponses-runtime/streaming",
      );
    }
    return this.#validate(this.asObject());
  }
}
