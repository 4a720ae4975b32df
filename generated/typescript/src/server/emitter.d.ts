import type { KnownEvent } from "../../events.js";
import type { CreateAnswer, CreateBody } from "../../operations.js";
import type { Violation } from "../streaming/checker.js";

/** What a provider yields: a few high-level steps, turned into spec-exact events by the emitter. */
export type Step =
  /** The turn is under way: the stream may begin before any output. */
  | { type: "accepted" }
  /** Open an assistant message (closing any open item). */
  | { type: "message_start"; phase?: "commentary" | "final_answer" | null }
  /** More text for the open message's text part; opens a message and a part when needed. */
  | { type: "text"; text: string }
  /** Close the open message. */
  | { type: "message_end" }
  /** The model declines: a `refusal` part in the open message (or in a new one). */
  | { type: "refusal"; text: string }
  /** Open a call to the function tool `name`; `callId` is generated when omitted. */
  | { type: "function_call_start"; name: string; callId?: string }
  /** More of the open call's JSON arguments. */
  | { type: "arguments"; delta: string }
  /** Close the open function call. */
  | { type: "function_call_end" }
  /** A reasoning item whose summary is `text` (one summary part). */
  | {
      type: "reasoning_summary";
      text: string;
      encryptedContent?: string | null;
    }
  /** More of the model's raw reasoning: a `reasoning_text` part of a reasoning item. */
  | { type: "reasoning"; text: string }
  /** Close the open reasoning item (or make one with no text), keeping `encryptedContent`. */
  | { type: "reasoning_end"; encryptedContent?: string | null }
  /** A finished vendor item such as `{ type: "myco:web_search_call", ... }`. */
  | { type: "vendor_item"; item: { type: string; [field: string]: unknown } }
  /** Token counts for the response's `usage` (the last one reported wins). */
  | {
      type: "usage";
      inputTokens: number;
      outputTokens: number;
      reasoningTokens?: number;
      cachedTokens?: number;
    }
  /** Stop here: the open item and the response end `incomplete` with this reason. */
  | { type: "incomplete"; reason?: string };

/** The spec's error object. */
export interface ErrorObject {
  type: string;
  code?: string | null;
  param?: string | null;
  message: string;
}

/** One streaming event as the emitter makes it: an event of a type the spec defines. */
export type StreamEvent = KnownEvent;

export interface EmitterOptions {
  /** Which function calls `tool_choice` lets through; calls to others are suppressed. */
  policy?: ToolPolicy;
  /** Run every event through the stream checker, throwing `StreamViolation` at the first broken rule. */
  check?: boolean;
}

/** A provider yielded steps in an order that cannot be turned into a valid stream. */
export declare class ProviderError extends Error {}

/** An error in the spec's terms: a provider throws it to end the response with it. */
export declare class OpenResponsesError extends Error {
  constructor(
    message: string,
    options?: { type?: string; code?: string | null; param?: string | null },
  );
  readonly type: string;
  readonly code: string | null;
  readonly param: string | null;
}

/** The emitter produced a stream the checker rejects. */
export declare class StreamViolation extends Error {
  constructor(violations: Violation[]);
  readonly violations: Violation[];
}

/** A fresh opaque id such as `msg_3f2a...`. */
export declare function newId(prefix: string): string;
/** One event as its SSE frame. */
export declare function sseFrame(event: { type: string }): string;
/** The frame that ends a stream. */
export declare const DONE_FRAME: "data: [DONE]\n\n";

/** Which function calls `tool_choice` lets through, and whether one is required. */
export declare class ToolPolicy {
  constructor(allowed?: Set<string>, required?: boolean);
  readonly allowed: Set<string>;
  readonly required: boolean;
  static fromRequest(tools: unknown, toolChoice: unknown): ToolPolicy;
}

/** Builds the events of one response from its skeleton and the provider's steps. */
export declare class Emitter {
  constructor(response: CreateAnswer, options?: EmitterOptions);
  /** The response, complete once the emitter finished or failed. */
  readonly response: CreateAnswer;
  /** `response.created` then `response.in_progress`. */
  start(): StreamEvent[];
  /** The events for one provider step (none for a suppressed tool call). */
  step(step: Step): StreamEvent[];
  /** Close what is open and end the response: completed, incomplete, or failed (tool_choice). */
  finish(): StreamEvent[];
  /** An `error` event, then `response.failed` carrying the error. */
  fail(error: ErrorObject): StreamEvent[];
  /** With `check: true`: the end of the stream must leave no violation. */
  verify(): void;
}

/**
 * The events of one response, as the provider's steps arrive: a provider that fails before its
 * first step throws to the caller; once the stream has begun, a failure ends it with `error` and
 * `response.failed`.
 */
export declare function emitEvents(
  emitter: Emitter,
  steps: AsyncIterable<Step>,
  options?: { toError?: (error: unknown) => ErrorObject },
): AsyncGenerator<StreamEvent, void, undefined>;

/** A complete `ResponseResource` in status `in_progress`, echoing the request's settings. */
export declare function responseSkeleton(
  body: CreateBody | null | undefined,
  options?: { id?: string; model?: string },
): CreateAnswer;
