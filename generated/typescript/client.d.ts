import type { StreamingEvent } from "./events.js";
import type { Responses } from "./operations.js";

export * from "./errors.js";

/** The environment variable read when no `baseURL` is given. */
export declare const BASE_URL_ENV: "OPENRESPONSES_BASE_URL";
/** The environment variable read when no `apiKey` is given. */
export declare const API_KEY_ENV: "OPENRESPONSES_API_KEY";

/** How a client connects. */
export interface ClientOptions {
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
export interface RequestOptions {
  signal?: AbortSignal;
  timeout?: number;
  maxRetries?: number;
}

/** Milliseconds to wait before retry `attempt + 1`, or null when the server asks for too long a wait. */
export declare function retryDelay(
  attempt: number,
  headers?: Headers,
): number | null;

/** The events of one streamed answer, typed; resumes a background stream after a broken connection. */
export declare class EventStream implements AsyncIterable<StreamingEvent> {
  constructor(
    response: Response,
    options?: {
      resume?: (stream: EventStream) => Promise<Response>;
      retries?: number;
      signal?: AbortSignal;
    },
  );
  /** The HTTP answer being read (the latest, after a reconnection). */
  readonly response: Response;
  /** The `sequence_number` of the last event read. */
  readonly lastSequence: number | null;
  /** The id of the response the events are about, once an event has carried it. */
  readonly responseId: string | null;
  /** Whether a terminal event has been read. */
  readonly ended: boolean;
  [Symbol.asyncIterator](): AsyncIterator<StreamingEvent>;
}

/** A client of an Open Responses server, over `fetch`. */
export declare class OpenResponses {
  constructor(options?: ClientOptions);
  readonly baseURL: string;
  readonly timeout: number;
  readonly maxRetries: number;
  readonly responses: Responses;
  /** Send one request with retries; the 2xx answer or a typed error. */
  request(
    method: string,
    path: string,
    options?: RequestOptions & { body?: unknown },
  ): Promise<Response>;
}
