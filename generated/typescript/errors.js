/** Anything the Open Responses client throws. */
export class OpenResponsesError extends Error {
  get name() {
    return this.constructor.name;
  }
}

/** The id the server gave the request (`x-request-id`), when it sent one. */
export function requestIdOf(headers) {
  return headers?.get?.("x-request-id") ?? null;
}

/** The client cannot send a request as configured; thrown before sending. */
export class ConfigurationError extends OpenResponsesError {}

/** The server could not be reached, or the connection broke mid-answer. */
export class APIConnectionError extends OpenResponsesError {}

/** The server did not answer within the timeout. */
export class APITimeoutError extends APIConnectionError {}

/** The caller's `AbortSignal` cancelled the request. */
export class APIUserAbortError extends OpenResponsesError {}

/**
 * The server answered 2xx with a body, or an event, that breaks the spec's schema. `issues` says
 * where and what (`path`, `message`); `eventType` names the event, when an event broke it.
 */
export class APIResponseValidationError extends OpenResponsesError {
  constructor(
    message,
    {
      body,
      issues = [],
      eventType = null,
      status = null,
      requestId = null,
      cause,
    } = {},
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.body = body;
    this.issues = issues;
    this.eventType = eventType;
    this.status = status;
    this.requestId = requestId;
  }
}

/** The server answered with an HTTP error; `type`, `code` and `param` come from the spec's error object. */
export class APIStatusError extends OpenResponsesError {
  constructor(message, { status, body, headers } = {}) {
    super(message);
    this.status = status;
    this.body = body;
    this.headers = headers;
    this.requestId = requestIdOf(headers);
    const error =
      body !== null &&
      typeof body === "object" &&
      typeof body.error === "object"
        ? (body.error ?? {})
        : {};
    this.type = typeof error.type === "string" ? error.type : null;
    this.code = typeof error.code === "string" ? error.code : null;
    this.param = typeof error.param === "string" ? error.param : null;
  }
}

/** 400: the request is invalid; `param` names the offending field when the server says. */
export class BadRequestError extends APIStatusError {}
/** 401: the API key is missing or wrong. */
export class AuthenticationError extends APIStatusError {}
/** 403: the key may not do this. */
export class PermissionDeniedError extends APIStatusError {}
/** 404: no such response (or route). */
export class NotFoundError extends APIStatusError {}
/** 409: the request conflicts with the response's state. */
export class ConflictError extends APIStatusError {}
/** 422: the request is well formed but cannot be processed. */
export class UnprocessableEntityError extends APIStatusError {}
/** 429: too many requests; retried after the server's `Retry-After`. */
export class RateLimitError extends APIStatusError {}
/** 5xx: the server failed. */
export class InternalServerError extends APIStatusError {}

const BY_STATUS = new Map([
  [400, BadRequestError],
  [401, AuthenticationError],
  [403, PermissionDeniedError],
  [404, NotFoundError],
  [409, ConflictError],
  [422, UnprocessableEntityError],
  [429, RateLimitError],
]);

/** The typed error of an HTTP error answer, its message from the spec's error object. */
export function statusError(status, body, headers) {
  const error =
    body !== null && typeof body === "object" ? body.error : undefined;
  const told =
    error !== null &&
    typeof error === "object" &&
    typeof error.message === "string"
      ? error.message
      : typeof body === "string" && body.length > 0
        ? body.slice(0, 500)
        : "no error message";
  const Kind =
    BY_STATUS.get(status) ??
    (status >= 500 ? InternalServerError : APIStatusError);
  return new Kind(`${status}: ${told}`, { status, body, headers });
}

/**
 * What a `ZodError` says of `value`, readably: one `{ path, message }` per issue, the path dotted
 * (`response.output.0.status`), a missing field said as pydantic says it rather than as `undefined`.
 */
export function schemaIssues(error, value) {
  return (error?.issues ?? []).map((issue) => {
    const path = issue.path.map(String).join(".");
    const missing =
      issue.code === "invalid_type" && valueAt(value, issue.path) === undefined;
    return {
      path,
      message: missing ? "Field required" : issue.message, // as pydantic says it
    };
  });
}

/** `issues` in one line: up to `limit` of them, `path: message`. */
export function describeIssues(issues, limit = 3) {
  const shown = issues
    .slice(0, limit)
    .map(({ path, message }) => `${path || "/"}: ${message}`);
  const more = issues.length > limit ? ` (+${issues.length - limit} more)` : "";
  return shown.join("; ") + more;
}

function valueAt(value, path) {
  let at = value;
  for (const key of path) {
    if (at === null || typeof at !== "object" || !Object.hasOwn(at, key))
      return undefined;
    at = at[key];
  }
  return at;
}
