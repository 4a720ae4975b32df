/** One broken rule: its id, the `sequence_number` of the event (null if unknown) and what is wrong. */
export declare class Violation {
  constructor(rule: string, sequenceNumber: number | null, message: string);
  readonly rule: string;
  readonly sequenceNumber: number | null;
  readonly message: string;
  /** A finding worth knowing that leaves the stream valid (see `WARNING_RULES`). */
  readonly isWarning: boolean;
  /** `seq N: [rule] message`, as `orspec check-stream` prints it. */
  toString(): string;
}

/** What a schema validator says of one event. */
export type ValidationResult =
  | { readonly ok: true; readonly event?: unknown }
  | { readonly ok: false; readonly message: string };

/**
 * Checks one core event against its schema: `{ ok: false, message }` names what is wrong;
 * `{ ok: true, event }` may give the event as the validator parsed it.
 */
export type EventValidator = (
  event: Record<string, unknown>,
  type: string,
) => ValidationResult | null | undefined;

export interface StreamCheckerOptions {
  /** Validates each core event against its schema; without one, no schema is checked. */
  validate?: EventValidator | null;
  /** False turns every schema check off (the validator's and unknown events' `sequence_number`). */
  schema?: boolean;
}

/** Collects every violation of the streaming rules in one stream. */
export declare class StreamChecker {
  constructor(options?: StreamCheckerOptions);
  readonly violations: Violation[];
  /** Whether `[DONE]` was seen. */
  readonly done: boolean;
  /** The response's state: created, queued, in_progress, completed, incomplete or failed. */
  readonly state: string | null;
  /** The terminal event seen, if any. */
  readonly terminal: string | null;
  /** The events so far of a type the protocol knows. */
  readonly known: number;
  /** Every event so far, known or not. */
  readonly events: number;
  /** How many events of each type the stream carried, by type in code point order. */
  readonly counts: Map<string, number>;
  /** The violations that make the stream invalid: all but the warnings. */
  readonly errors: Violation[];
  readonly ok: boolean;
  /** Check a whole SSE capture (bytes, text, or an iterable of chunks). */
  checkSse(
    source: Uint8Array | string | Iterable<Uint8Array | string>,
  ): Violation[];
  /** One SSE message: its `event:` header (null if absent) and its data. */
  feed(eventName: string | null | undefined, data: string | object): unknown;
  /** One event already parsed. */
  feedEvent(event: unknown, eventName?: string | null): unknown;
  /**
   * Check a stream of parsed events to its end, such as the client's `EventStream`, whose
   * `sawDone` says whether `data: [DONE]` came; returns every violation.
   */
  checkEvents(
    events: AsyncIterable<unknown> & { readonly sawDone?: boolean },
  ): Promise<Violation[]>;
  /** End of stream: report what never happened, and return every violation. */
  finish(): Violation[];
  /** `violations` less the end-of-stream report of a missing `[DONE]`. */
  withoutMissingDone(violations: readonly Violation[]): Violation[];
}

/** Every violation in a whole SSE capture. */
export declare function checkSse(
  source: Uint8Array | string | Iterable<Uint8Array | string>,
  options?: StreamCheckerOptions,
): Violation[];
