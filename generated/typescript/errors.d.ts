/** Anything the Open Responses client throws. */
export declare class OpenResponsesError extends Error {}

/** The client cannot send a request as configured; thrown before sending. */
export declare class ConfigurationError extends OpenResponsesError {}

/** The server could not be reached, or the connection broke mid-answer. */
export declare class APIConnectionError extends OpenResponsesError {}

/** The server did not answer within the timeout. */
export declare class APITimeoutError extends APIConnectionError {}

/** The caller's `AbortSignal` cancelled the request. */
export declare class APIUserAbortError extends OpenResponsesError {}

/** Where a value breaks the spec's schema, and how: `path` dotted (`response.output.0.status`). */
export interface SchemaIssue {
  readonly path: string;
  readonly message: string;
}

/**
 * The server answered 2xx with a body, or an event, that breaks the spec's schema (thrown with
 * `validate: "strict"`, or when the answer is not JSON at all).
 */
export declare class APIResponseValidationError extends OpenResponsesError {
  constructor(
    message: string,
    details?: {
      body?: unknown;
      issues?: readonly SchemaIssue[];
      eventType?: string | null;
      status?: number | null;
      requestId?: string | null;
      cause?: unknown;
    },
  );
  /** The answer or event as it came. */
  readonly body: unknown;
  readonly issues: readonly SchemaIssue[];
  /** The type of the event that broke the schema; null for a whole answer. */
  readonly eventType: string | null;
  /** The answer's HTTP status. */
  readonly status: number | null;
  /** The id the server gave the request (`x-request-id`), when it sent one. */
  readonly requestId: string | null;
}

/** The server answered with an HTTP error; `type`, `code` and `param` come from the spec's error object. */
export declare class APIStatusError extends OpenResponsesError {
  constructor(
    message: string,
    details?: { status?: number; body?: unknown; headers?: Headers },
  );
  readonly status: number;
  readonly body: unknown;
  readonly headers: Headers | undefined;
  /** The id the server gave the request (`x-request-id`), when it sent one. */
  readonly requestId: string | null;
  readonly type: string | null;
  readonly code: string | null;
  readonly param: string | null;
}

/** 400: the request is invalid; `param` names the offending field when the server says. */
export declare class BadRequestError extends APIStatusError {}
/** 401: the API key is missing or wrong. */
export declare class AuthenticationError extends APIStatusError {}
/** 403: the key may not do this. */
export declare class PermissionDeniedError extends APIStatusError {}
/** 404: no such response (or route). */
export declare class NotFoundError extends APIStatusError {}
/** 409: the request conflicts with the response's state. */
export declare class ConflictError extends APIStatusError {}
/** 422: the request is well formed but cannot be processed. */
export declare class UnprocessableEntityError extends APIStatusError {}
/** 429: too many requests; retried after the server's `Retry-After`. */
export declare class RateLimitError extends APIStatusError {}
/** 5xx: the server failed. */
export declare class InternalServerError extends APIStatusError {}

/** The typed error of an HTTP error answer. */
export declare function statusError(
  status: number,
  body: unknown,
  headers?: Headers,
): APIStatusError;

/** The id the server gave the request (`x-request-id`), when it sent one. */
export declare function requestIdOf(headers?: Headers | null): string | null;

/** What a `ZodError` says of `value`, one `SchemaIssue` per issue. */
export declare function schemaIssues(
  error: {
    readonly issues: readonly {
      path: readonly PropertyKey[];
      code: string;
      message: string;
    }[];
  },
  value: unknown,
): SchemaIssue[];

/** `issues` in one line: up to `limit` of them, `path: message`. */
export declare function describeIssues(
  issues: readonly SchemaIssue[],
  limit?: number,
): string;
