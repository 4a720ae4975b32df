import type { EventStream, WithOutputText } from "./client.js";
import type { EventType, StreamingEvent } from "./events.js";
import type { CreateAnswer } from "./operations.js";

/** The text of a response's output: its messages' `output_text` parts, joined. */
export declare function outputText(response: {
  readonly output?: readonly unknown[];
}): string;

/** `response` with a (not enumerable) `output_text` property. */
export declare function withOutputText<T extends object>(
  response: T,
): WithOutputText<T>;

/**
 * A streamed response, as `responses.stream()` gives it: iterate it with `for await`, listen with
 * `on(type, listener)`, or wait with `finalResponse()`, `finalText()` or `done()`.
 */
export declare class ResponseStream implements AsyncIterable<StreamingEvent> {
  constructor(events: Promise<EventStream>, controller: AbortController);
  /** Call `listener` with each event of type `type`, as it is read. */
  on<T extends EventType>(
    type: T,
    listener: (event: Extract<StreamingEvent, { type: T }>) => void,
  ): this;
  /** Call `listener` with every event, as it is read. */
  on(type: "event", listener: (event: StreamingEvent) => void): this;
  [Symbol.asyncIterator](): AsyncIterator<StreamingEvent>;
  /** The text of the output as it arrives, delta by delta. */
  textDeltas(): AsyncGenerator<string, void, undefined>;
  /** Read the stream to its end (calling the listeners). */
  done(): Promise<void>;
  /** Read the stream to its end; the response its events built. */
  finalResponse(): Promise<WithOutputText<CreateAnswer>>;
  /** Read the stream to its end; the text of the response's output. */
  finalText(): Promise<string>;
  /** Stop: the request, or the reading of its events. */
  abort(): void;
  /** The events that broke the schema so far. */
  readonly issues: EventStream["issues"];
  /** Whether the stream ended with `data: [DONE]`. */
  readonly sawDone: boolean;
  /** The `EventStream` underneath, once the server has answered. */
  readonly eventStream: EventStream | null;
}
