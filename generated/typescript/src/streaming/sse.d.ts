/** One server-sent event: its `event:` name (null if absent), its data lines joined with newlines. */
export interface SSEMessage {
  readonly event: string | null;
  readonly data: string;
  readonly id: string | null;
}

/** The data of the SSE message that ends an Open Responses stream. */
export declare const DONE: "[DONE]";

/** Incremental SSE decoding: `feed` each chunk, then `close` for what the end completes. */
export declare class SSEDecoder {
  /** The messages that `chunk` (bytes or text) completes. */
  feed(chunk: Uint8Array | string): SSEMessage[];
  /** The messages still open at the end of the stream. */
  close(): SSEMessage[];
  /** The messages the end of the stream completes as the HTML standard reads it (an open message is dropped). */
  end(): SSEMessage[];
}

/** The SSE messages of a whole capture (bytes or text) or of an iterable of chunks. */
export declare function iterSse(
  source: Uint8Array | string | Iterable<Uint8Array | string>,
): Generator<SSEMessage, void, undefined>;

/**
 * The SSE messages of a fetch `Response`, its `body`, or any (async) iterable of chunks, as they
 * arrive; a message the end of the stream cut off is dropped, as the HTML standard says, or with
 * `keepUnfinished` delivered.
 */
export declare function readSSE(
  source:
    | Response
    | ReadableStream<Uint8Array>
    | AsyncIterable<Uint8Array | string>
    | Iterable<Uint8Array | string>,
  options?: { keepUnfinished?: boolean },
): AsyncGenerator<SSEMessage, void, undefined>;

/** The events of an Open Responses stream (a fetch `Response` or its body), up to `[DONE]`. */
export declare function readEvents<T = unknown>(
  source:
    | { readonly body: ReadableStream<Uint8Array> | null }
    | ReadableStream<Uint8Array>,
  options?: { parse?: (data: string) => T },
): AsyncGenerator<T, void, undefined>;
