// Turn a provider's steps into spec-exact events: sequence numbers, ids, the added/delta/done
// brackets, the terminal event, and the `error` + `response.failed` ending of a provider that
// fails once the stream has begun. The contract of the Python runtime's `server.emitter`.
//
// A provider never deals with sequence numbers, indexes, item ids or the order of bracket
// events: it yields steps (see emitter.d.ts), such as
//
//   { type: "text", text: "Hello" }                      opens a message and a part when needed
//   { type: "function_call_start", name: "get_weather" } closes the open item, opens a call
//   { type: "arguments", delta: '{"city": "Paris"}' }
//
// Starting an item closes the one before it, and the end closes whatever is still open.

import { EVENTS } from "../../bindings.js";
import { StreamChecker } from "../streaming/checker.js";
import { pyRepr } from "../streaming/pyvalues.js";

/** A provider yielded steps in an order that cannot be turned into a valid stream. */
export class ProviderError extends Error {
  name = "ProviderError";
}

/** An error in the spec's terms (`type`, `code`, `param`): a provider throws it to end the response with it. */
export class OpenResponsesError extends Error {
  name = "OpenResponsesError";
  constructor(
    message,
    { type = "server_error", code = null, param = null } = {},
  ) {
    super(message);
    this.type = type;
    this.code = code;
    this.param = param;
  }
}

/** The emitter produced a stream the checker rejects: a bug in the provider glue or the emitter. */
export class StreamViolation extends Error {
  name = "StreamViolation";
  constructor(violations) {
    super(violations.map(String).join("; "));
    this.violations = violations;
  }
}

/** A fresh opaque id such as `msg_3f2a...`: 16 random bytes (Web Crypto: Node, Deno, Bun and browsers). */
export function newId(prefix) {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `${prefix}_${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** One event as its SSE frame. */
export function sseFrame(event) {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** The frame that ends a stream. */
export const DONE_FRAME = "data: [DONE]\n\n";

/** Which function calls `tool_choice` lets through, and whether one is required. */
export class ToolPolicy {
  constructor(allowed = new Set(), required = false) {
    this.allowed = allowed;
    this.required = required;
  }

  static fromRequest(tools, toolChoice) {
    const names = new Set(
      (Array.isArray(tools) ? tools : [])
        .filter((t) => t && t.type === "function" && typeof t.name === "string")
        .map((t) => t.name),
    );
    if (toolChoice == null || toolChoice === "auto")
      return new ToolPolicy(names, false);
    if (toolChoice === "none") return new ToolPolicy(new Set(), false);
    if (toolChoice === "required") return new ToolPolicy(names, true);
    if (toolChoice.type === "function") {
      return new ToolPolicy(
        new Set([...names].filter((n) => n === toolChoice.name)),
        true,
      );
    }
    if (toolChoice.type === "allowed_tools") {
      const listed = new Set((toolChoice.tools ?? []).map((t) => t?.name));
      const mode = toolChoice.mode || "auto";
      if (mode === "none") return new ToolPolicy(new Set(), false);
      return new ToolPolicy(
        new Set([...names].filter((n) => listed.has(n))),
        mode === "required",
      );
    }
    return new ToolPolicy(names, false);
  }
}

// The text parts: the item that holds them, the part type, the field of the text, and the events.
const PARTS = {
  text: ["message", "output_text", "text", EVENTS.text_delta, EVENTS.text_done],
  refusal: [
    "message",
    "refusal",
    "refusal",
    EVENTS.refusal_delta,
    EVENTS.refusal_done,
  ],
  reasoning: [
    "reasoning",
    "reasoning_text",
    "text",
    EVENTS.reasoning_delta,
    EVENTS.reasoning_done,
  ],
};
const FINISHED = {
  completed: EVENTS.completed,
  incomplete: EVENTS.incomplete,
};
const copy = (value) => structuredClone(value);

/**
 * Builds the events of one response from its skeleton and the provider's steps.
 *
 * `response` is a complete `ResponseResource` object in status `in_progress` (see
 * `responseSkeleton`). Each method returns the events it produced. `check: true` runs every event
 * through the stream checker and throws `StreamViolation` at the first broken rule.
 */
export class Emitter {
  constructor(response, { policy = new ToolPolicy(), check = false } = {}) {
    this.response = response;
    this.output = response.output;
    this.policy = policy;
    this.checker = check ? new StreamChecker() : null;
    this.seq = 0;
    this.open = null; // { index, item, kind, partIndex, partField, chunks }
    this.suppressing = false;
    this.calls = 0;
    this.suppressed = [];
    this.finished = false;
    this.started = false;
    this.usage = null;
    this.incomplete = null;
  }

  #emit(out, event) {
    event.sequence_number = this.seq++;
    if (this.checker !== null) {
      const before = this.checker.violations.length;
      this.checker.feedEvent(event, event.type);
      if (this.checker.violations.length > before) {
        throw new StreamViolation(this.checker.violations.slice(before));
      }
    }
    out.push(event);
  }

  #snapshot() {
    return { ...copy(this.response), output: copy(this.output) };
  }

  /** `response.created` then `response.in_progress`. */
  start() {
    const out = [];
    this.started = true;
    this.#emit(out, { type: EVENTS.created, response: this.#snapshot() });
    this.#emit(out, {
      type: EVENTS.in_progress,
      response: this.#snapshot(),
    });
    return out;
  }

  /** The events for one provider step (none for a suppressed tool call). */
  step(step) {
    if (this.finished || this.incomplete !== null) {
      throw new ProviderError(`${step?.type} after the response ended`);
    }
    const out = [];
    const kind = step?.type;
    if (
      this.suppressing &&
      kind !== "arguments" &&
      kind !== "function_call_end"
    )
      this.suppressing = false;
    switch (kind) {
      case "text":
        this.#text(out, step.text, "text");
        break;
      case "refusal":
        this.#text(out, step.text, "refusal");
        this.#closePart(out);
        break;
      case "reasoning":
        this.#text(out, step.text, "reasoning");
        break;
      case "message_start": {
        this.#close(out);
        const item = {
          id: newId("msg"),
          type: "message",
          status: "in_progress",
          role: "assistant",
          content: [],
        };
        if (step.phase != null) item.phase = step.phase;
        this.#openItem(out, item);
        break;
      }
      case "message_end":
        this.#need("message", step);
        this.#close(out);
        break;
      case "function_call_start":
        this.#close(out);
        if (!this.policy.allowed.has(step.name)) {
          this.suppressing = true;
          this.suppressed.push(step.name);
          break;
        }
        this.calls += 1;
        this.#openItem(out, {
          id: newId("fc"),
          type: "function_call",
          status: "in_progress",
          call_id: step.callId || newId("call"),
          name: step.name,
          arguments: "",
        });
        break;
      case "arguments": {
        if (this.suppressing) break;
        const item = this.#need("function_call", step);
        item.chunks.push(step.delta);
        this.#emit(out, {
          type: EVENTS.arguments_delta,
          item_id: item.item.id,
          output_index: item.index,
          delta: step.delta,
        });
        break;
      }
      case "function_call_end":
        if (this.suppressing) {
          this.suppressing = false;
          break;
        }
        this.#need("function_call", step);
        this.#close(out);
        break;
      case "reasoning_end": {
        let item = this.open;
        if (item === null || item.kind !== "reasoning") {
          // Reasoning with no text (kept hidden by the model).
          this.#close(out);
          const empty = {
            id: newId("rs"),
            type: "reasoning",
            status: "in_progress",
            summary: [],
            content: [],
          };
          item = this.#openItem(out, empty);
        }
        this.#closePart(out);
        if (step.encryptedContent != null)
          item.item.encrypted_content = step.encryptedContent;
        this.#close(out);
        break;
      }
      case "reasoning_summary":
        this.#summary(out, step);
        break;
      case "vendor_item":
        this.#vendor(out, step.item);
        break;
      case "usage":
        this.usage = step;
        break;
      case "accepted":
        break; // no event: it only lets the stream begin
      case "incomplete":
        this.incomplete = step.reason ?? "max_output_tokens";
        break;
      default:
        throw new ProviderError(`not a step: ${JSON.stringify(step)}`);
    }
    return out;
  }

  /** Close what is open and end the response: completed, incomplete, or failed (tool_choice). */
  finish() {
    const out = [];
    if (this.finished) return out;
    if (this.policy.required && this.calls === 0 && this.incomplete === null) {
      const suppressed = this.suppressed.length
        ? ` (suppressed calls to: ${this.suppressed.join(", ")})`
        : "";
      const allowed = pyRepr([...this.policy.allowed].sort());
      return this.fail({
        type: "model_error",
        code: "tool_choice_violation",
        param: "tool_choice",
        message: `tool_choice requires a call to one of ${allowed} but the model made none${suppressed}`,
      });
    }
    const status = this.incomplete !== null ? "incomplete" : "completed";
    this.#close(out, status);
    this.finished = true;
    this.response.status = status;
    this.response.completed_at = Math.floor(Date.now() / 1000);
    if (this.incomplete !== null)
      this.response.incomplete_details = { reason: this.incomplete };
    this.response.usage = this.#usage();
    this.#emit(out, { type: FINISHED[status], response: this.#snapshot() });
    return out;
  }

  /**
   * An `error` event, then `response.failed` carrying the error: how a stream that has begun
   * ends when the provider fails. `error` is the spec's error object (type, code, param, message).
   */
  fail(error) {
    const out = [];
    if (this.finished) return out;
    this.finished = true;
    this.#soFar();
    const payload = {
      type: error.type ?? "server_error",
      code: error.code ?? null,
      param: error.param ?? null,
      message: error.message ?? "the model failed",
    };
    this.#emit(out, { type: EVENTS.error, error: payload });
    this.response.status = "failed";
    this.response.completed_at = Math.floor(Date.now() / 1000);
    this.response.error = {
      code: payload.code ?? payload.type,
      message: payload.message,
    };
    this.response.usage = this.#usage();
    this.#emit(out, { type: EVENTS.failed, response: this.#snapshot() });
    return out;
  }

  /** With `check: true`: the end of the stream (`[DONE]` sent) must leave no violation. */
  verify() {
    if (this.checker === null) return;
    this.checker.feed(null, "[DONE]");
    const violations = this.checker.finish();
    if (violations.length) throw new StreamViolation(violations);
  }

  // The open item as far as it was streamed, left open: a failed response holds what was sent.
  #soFar() {
    const item = this.open;
    if (item !== null && item.partField !== null) {
      item.item.content[item.partIndex][PARTS[item.partField][2]] =
        item.chunks.join("");
    } else if (item !== null && item.kind === "function_call") {
      item.item.arguments = item.chunks.join("");
    }
  }

  #need(kind, step) {
    if (this.open === null || this.open.kind !== kind) {
      const what = this.open ? this.open.kind : "nothing";
      throw new ProviderError(
        `${step.type} needs an open ${kind}, but ${what} is open`,
      );
    }
    return this.open;
  }

  #openItem(out, item) {
    const index = this.output.length;
    this.output.push(item);
    this.open = {
      index,
      item,
      kind: item.type,
      partIndex: null,
      partField: null,
      chunks: [],
    };
    this.#emit(out, {
      type: EVENTS.item_added,
      output_index: index,
      item: copy(item),
    });
    return this.open;
  }

  #text(out, text, field) {
    const [kind, partType, key, deltaType] = PARTS[field];
    if (this.open === null || this.open.kind !== kind) {
      this.#close(out);
      const item =
        kind === "message"
          ? {
              id: newId("msg"),
              type: "message",
              status: "in_progress",
              role: "assistant",
            }
          : {
              id: newId("rs"),
              type: "reasoning",
              status: "in_progress",
              summary: [],
            };
      this.#openItem(out, { ...item, content: [] });
    }
    const item = this.open;
    if (item.partField !== field) {
      this.#closePart(out);
      const part = { type: partType, [key]: "" };
      if (field === "text")
        Object.assign(part, { annotations: [], logprobs: [] });
      item.partIndex = item.item.content.length;
      item.partField = field;
      item.item.content.push(part);
      this.#emit(out, {
        type: EVENTS.part_added,
        ...this.#partIds(item),
        part: copy(part),
      });
    }
    item.chunks.push(text);
    const event = { type: deltaType, ...this.#partIds(item), delta: text };
    if (field === "text") event.logprobs = [];
    this.#emit(out, event);
  }

  #partIds(item) {
    return {
      item_id: item.item.id,
      output_index: item.index,
      content_index: item.partIndex,
    };
  }

  #closePart(out) {
    const item = this.open;
    if (item === null || item.partField === null) return;
    const field = item.partField;
    const [, , key, , doneType] = PARTS[field];
    const text = item.chunks.join("");
    item.chunks = [];
    const part = item.item.content[item.partIndex];
    part[key] = text;
    const ids = this.#partIds(item);
    const event = { type: doneType, ...ids, [key]: text };
    if (field === "text") event.logprobs = [];
    this.#emit(out, event);
    this.#emit(out, {
      type: EVENTS.part_done,
      ...ids,
      part: copy(part),
    });
    item.partField = null;
    item.partIndex = null;
  }

  #close(out, status = "completed") {
    const item = this.open;
    if (item === null) return;
    if (item.kind === "message" || item.kind === "reasoning") {
      this.#closePart(out);
    } else if (item.kind === "function_call") {
      const args = item.chunks.join("");
      item.item.arguments = args;
      this.#emit(out, {
        type: EVENTS.arguments_done,
        item_id: item.item.id,
        output_index: item.index,
        arguments: args,
      });
    }
    item.item.status = status;
    this.#emit(out, {
      type: EVENTS.item_done,
      output_index: item.index,
      item: copy(item.item),
    });
    this.open = null;
  }

  #summary(out, step) {
    this.#close(out);
    const item = {
      id: newId("rs"),
      type: "reasoning",
      status: "in_progress",
      summary: [],
    };
    if (step.encryptedContent != null)
      item.encrypted_content = step.encryptedContent;
    const part = { type: "summary_text", text: step.text };
    const index = this.output.length;
    this.output.push(item);
    this.#emit(out, {
      type: EVENTS.item_added,
      output_index: index,
      item: copy(item),
    });
    const ids = { item_id: item.id, output_index: index, summary_index: 0 };
    this.#emit(out, {
      type: EVENTS.summary_part_added,
      ...ids,
      part: { type: "summary_text", text: "" },
    });
    this.#emit(out, {
      type: EVENTS.summary_delta,
      ...ids,
      delta: step.text,
    });
    this.#emit(out, {
      type: EVENTS.summary_done,
      ...ids,
      text: step.text,
    });
    this.#emit(out, {
      type: EVENTS.summary_part_done,
      ...ids,
      part: copy(part),
    });
    item.summary.push(part);
    item.status = "completed";
    this.#emit(out, {
      type: EVENTS.item_done,
      output_index: index,
      item: copy(item),
    });
  }

  #vendor(out, given) {
    const item = { ...given };
    const kind = item.type;
    if (typeof kind !== "string" || !kind.includes(":")) {
      throw new ProviderError(
        `a vendor item's type must be vendor-prefixed (\`myco:thing\`), not ${JSON.stringify(kind)}`,
      );
    }
    this.#close(out);
    if (!Object.hasOwn(item, "id")) item.id = newId(kind.split(":", 1)[0]);
    const finalStatus = item.status || "completed";
    item.status = "in_progress";
    const index = this.output.length;
    this.output.push(item);
    this.#emit(out, {
      type: EVENTS.item_added,
      output_index: index,
      item: copy(item),
    });
    item.status = finalStatus;
    this.#emit(out, {
      type: EVENTS.item_done,
      output_index: index,
      item: copy(item),
    });
  }

  #usage() {
    const u = this.usage;
    if (u === null) return null; // the provider reported none: unknown, which zeros would misstate
    return {
      input_tokens: u.inputTokens,
      output_tokens: u.outputTokens,
      total_tokens: u.inputTokens + u.outputTokens,
      input_tokens_details: { cached_tokens: u.cachedTokens ?? 0 },
      output_tokens_details: { reasoning_tokens: u.reasoningTokens ?? 0 },
    };
  }
}

/**
 * The events of one response, as the provider's steps arrive. The provider's first step is
 * awaited before any event: a provider that fails before it throws to the caller, which answers
 * with an HTTP error. Once the stream has begun, a failure ends it with `error` and
 * `response.failed` (`toError` turns what was thrown into the spec's error object).
 */
export async function* emitEvents(
  emitter,
  steps,
  { toError = defaultError } = {},
) {
  const iterator = steps[Symbol.asyncIterator]();
  let next = await iterator.next();
  yield* emitter.start();
  try {
    while (!next.done) {
      yield* emitter.step(next.value);
      if (next.value?.type === "incomplete") break; // the response ends here
      next = await iterator.next();
    }
  } catch (error) {
    if (error instanceof StreamViolation) throw error;
    yield* emitter.fail(toError(error));
    return;
  }
  yield* emitter.finish();
}

// What a provider's failure ends the response with, as the Python server says it.
function defaultError(error) {
  if (error instanceof OpenResponsesError) {
    return {
      type: error.type,
      code: error.code,
      param: error.param,
      message: error.message,
    };
  }
  if (error instanceof ProviderError) {
    return {
      type: "server_error",
      code: "provider_error",
      param: null,
      message: `The provider failed: ${error.message}`,
    };
  }
  const name = error instanceof Error ? error.name : typeof error;
  return {
    type: "server_error",
    code: "server_error",
    param: null,
    message: `The provider failed: ${name}`,
  };
}

/** The response of a request that sets nothing, in the response's field order. */
const UNSET = {
  id: null,
  object: "response",
  created_at: null,
  completed_at: null,
  status: "in_progress",
  incomplete_details: null,
  model: null,
  previous_response_id: null,
  instructions: null,
  output: null,
  error: null,
  tools: null,
  tool_choice: "auto",
  truncation: "disabled",
  parallel_tool_calls: true,
  text: null,
  top_p: 1.0,
  presence_penalty: 0.0,
  frequency_penalty: 0.0,
  top_logprobs: 0,
  temperature: 1.0,
  reasoning: null,
  usage: null,
  max_output_tokens: null,
  max_tool_calls: null,
  store: true,
  background: false,
  service_tier: "default",
  metadata: null,
  safety_identifier: null,
  prompt_cache_key: null,
};

const ECHO = {
  previous_response_id: (v) => v,
  instructions: (v) => v,
  tools: (tools) =>
    (Array.isArray(tools) ? tools : [])
      .filter((t) => t && typeof t === "object")
      .map((t) =>
        t.type === "function"
          ? {
              type: "function",
              name: t.name ?? null,
              description: t.description ?? null,
              parameters: t.parameters ?? null,
              strict: t.strict ?? null,
            }
          : { ...t },
      ),
  tool_choice: (choice) => {
    if (choice?.type === "function")
      return { type: "function", name: choice.name ?? null };
    if (choice?.type === "allowed_tools") {
      const tools = (choice.tools ?? []).map((t) => ({
        type: "function",
        name: t?.name ?? null,
      }));
      return { type: "allowed_tools", tools, mode: choice.mode || "auto" };
    }
    return choice;
  },
  truncation: (v) => v,
  parallel_tool_calls: (v) => v,
  text: (text) => ({
    format: echoFormat(text?.format),
    verbosity: text?.verbosity ?? "medium",
  }),
  top_p: Number,
  presence_penalty: Number,
  frequency_penalty: Number,
  top_logprobs: (v) => v,
  temperature: Number,
  reasoning: (r) =>
    r && typeof r === "object"
      ? { effort: r.effort ?? null, summary: r.summary ?? null }
      : null,
  max_output_tokens: (v) => v,
  max_tool_calls: (v) => v,
  store: (v) => v,
  background: (v) => v,
  service_tier: (tier) => (tier === "auto" ? "default" : tier),
  metadata: (v) => v,
  safety_identifier: (v) => v,
  prompt_cache_key: (v) => v,
};

function echoFormat(format) {
  if (
    !format ||
    typeof format !== "object" ||
    Array.isArray(format) ||
    format.type == null ||
    format.type === "text"
  ) {
    return { type: "text" };
  }
  if (format.type === "json_schema") {
    const schema = format.schema;
    return {
      type: "json_schema",
      name: format.name || "response",
      description: format.description ?? null,
      schema:
        schema && typeof schema === "object" && !Array.isArray(schema)
          ? schema
          : {},
      strict: Boolean(format.strict),
    };
  }
  return { ...format };
}

/** A complete `ResponseResource` in status `in_progress`, echoing the request's settings. */
export function responseSkeleton(
  body,
  { id = newId("resp"), model = body?.model ?? "unknown" } = {},
) {
  const response = {
    ...UNSET,
    id,
    created_at: Math.floor(Date.now() / 1000),
    model,
    output: [],
    tools: [],
    text: { format: { type: "text" }, verbosity: "medium" },
    metadata: {},
  };
  for (const [name, value] of Object.entries(body ?? {})) {
    if (Object.hasOwn(ECHO, name) && value != null)
      response[name] = ECHO[name](value);
  }
  return response;
}
