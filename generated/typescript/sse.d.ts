/** One server-sent event. */
export interface SSEMessage {
  /** The `event` field, `"message"` when the server sent none. */
  event: string;
  /** The `data` lines, joined with line feeds. */
  data: string;
  /** The last `id` field seen, if any. */
  id: string | undefined;
  /** The `retry` field of this message, in milliseconds, if any. */
  retry: number | undefined;
}

/** An incremental server-sent event parser: feed it chunks, get complete messages. */
export declare class SSEDecoder {
  /** The messages completed by `chunk` (bytes or text). */
  feed(chunk: Uint8Array | string): SSEMessage[];
  /** The messages the end of the stream completes. */
  end(): SSEMessage[];
}

/** The messages of a server-sent event stream. */
export declare function readSSE(
  source:
    | Response
    | ReadableStream<Uint8Array>
    | AsyncIterable<Uint8Array | string>
    | Iterable<Uint8Array | string>,
): AsyncGenerator<SSEMessage>;
