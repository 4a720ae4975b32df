import type { ResponseObject } from "../../bindings.js";

/** Builds the response of a stream from its events. */
export declare class ResponseAccumulator {
  /** `validate`: what `result()` checks the built response with (the streaming module passes zod's). */
  constructor(options?: {
    validate?: (response: Record<string, unknown>) => ResponseObject;
  });
  /** The latest lifecycle event's response snapshot. */
  response: Record<string, unknown>;
  /** The items streamed so far, by output index. */
  readonly output: Map<number, Record<string, unknown>>;
  /** Whether a terminal event was seen. */
  finished: boolean;
  /** Feed every event of an SSE capture (bytes, text, or chunks), up to `[DONE]`. */
  feedSse(source: Uint8Array | string | Iterable<Uint8Array | string>): this;
  feed(event: unknown): void;
  /** The response as a plain object: the latest snapshot, with the streamed items if it lists none. */
  asObject(): Record<string, unknown>;
  /** The response as a validated response object; throws a `ZodError` if it breaks the schema. */
  result(): ResponseObject;
}
