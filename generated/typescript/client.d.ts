import type { SchemaIssue } from "./errors.js";
import type { StreamingEvent } from "./events.js";
import type { CreateAnswer, Responses } from "./operations.js";

export * from "./errors.js";
export * from "./stream.js";

/**
 * What to do with an answer or event that breaks the spec's schema: "report" (the default) passes
 * it on as it came and tells `onInvalid` (and the stream's `issues`); "strict" throws
 * `APIResponseValidationError`.
 */
export type ValidationMode = "report" | "strict";

/** An answer or event that broke the spec's schema, as `onInvalid` is told of it. */
export interface InvalidData {
  /** The event's type; null for a whole answer. */
  readonly type: string | null;
  readonly sequenceNumber: number | null;
  readonly issues: readonly SchemaIssue[];
  /** Subject, paths and messages in one line. */
  readonly message: string;
  /** The event or answer as it came. */
  readonly value: unknown;
}

/** What decides how answers are checked; on the client, or on one call. */
export interface ValidationOptions {
  /** "report" (the default) or "strict". */
  validate?: ValidationMode;
  /** Told of every answer or event that breaks the schema (in report mode). */
  onInvalid?: (invalid: InvalidData) => void;
}

/** The environment variable read when no `baseURL` is given. */
export declare const BASE_URL_ENV: "OPENRESPONSES_BASE_URL";
/** The environment variable read when no `apiKey` is given. */
export declare const API_KEY_ENV: "OPENRESPONSES_API_KEY";

/** How a client connects. */
export interface ClientOptions extends ValidationOptions {
  /** The root `/responses` hangs off, e.g. `http://127.0.0.1:8000/v1`. */
  baseURL?: string;
  apiKey?: string;
  /** Milliseconds to wait for an answer's headers (default 60 000). */
  timeout?: number;
  /** Retries of a failed request (default 2). */
  maxRetries?: number;
  headers?: Record<string, string>;
  fetch?: typeof fetch;
}

/** Per-call settings. */
export interface RequestOptions extends ValidationOptions {
  signal?: AbortSignal;
  timeout?: number;
  maxRetries?: number;
}

/** Milliseconds to wait before retry `attempt + 1`, or null when the server asks for too long a wait. */
export declare function retryDelay(
  attempt: number,
  headers?: Headers,
): number | null;

/**
 * The events of one streamed answer, typed; an event that breaks the schema comes as it was sent
 * and is reported in `issues` (or thrown, in strict mode). Resumes a background stream after a
 * broken connection.
 */
export declare class EventStream implements AsyncIterable<StreamingEvent> {
  constructor(
    response: Response,
    options?: {
      resume?: (stream: EventStream) => Promise<Response>;
      retries?: number;
      signal?: AbortSignal;
    },
  );
  /** The events (and the built response) that broke the schema so far. */
  readonly issues: readonly InvalidData[];
  /** Whether the stream ended with `data: [DONE]`. */
  readonly sawDone: boolean;
  /** The id the server gave the request (`x-request-id`), when it sent one. */
  readonly requestId: string | null;
  /** The HTTP answer being read (the latest, after a reconnection). */
  readonly response: Response;
  /** The `sequence_number` of the last event read. */
  readonly lastSequence: number | null;
  /** The id of the response the events are about, once an event has carried it. */
  readonly responseId: string | null;
  /** Whether a terminal event has been read. */
  readonly ended: boolean;
  [Symbol.asyncIterator](): AsyncIterator<StreamingEvent>;
  /** The text of the output as it arrives, delta by delta. */
  textDeltas(): AsyncGenerator<string, void, undefined>;
  /** Read the rest of the stream; the response its events built. */
  finalResponse(): Promise<WithOutputText<CreateAnswer>>;
}

/** A response with the text of its output, as openai-node gives it (not enumerable). */
export type WithOutputText<T> = T & { readonly output_text: string };

/** A client of an Open Responses server, over `fetch`. */
export declare class OpenResponses {
  constructor(options?: ClientOptions);
  readonly baseURL: string;
  readonly timeout: number;
  readonly maxRetries: number;
  readonly validate: ValidationMode;
  readonly onInvalid: ((invalid: InvalidData) => void) | null;
  readonly responses: Responses;
  /** Send one request with retries; the 2xx answer or a typed error. */
  request(
    method: string,
    path: string,
    options?: RequestOptions & { body?: unknown },
  ): Promise<Response>;
}
