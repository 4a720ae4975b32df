import { EVENT_TYPES, parseEvent } from "./events.js";
import {
  APIConnectionError,
  APIResponseValidationError,
  APITimeoutError,
  APIUserAbortError,
  ConfigurationError,
  describeIssues,
  requestIdOf,
  schemaIssues,
  statusError,
} from "./errors.js";
import { CREATE_RESPONSE, OPERATIONS } from "./operations.js";
import { ResponseAccumulator } from "./src/streaming/accumulator.js";
import { DONE, readSSE } from "./src/streaming/sse.js";
import { ResponseStream, withOutputText } from "./stream.js";

export * from "./errors.js";
export { outputText, ResponseStream } from "./stream.js";

export const BASE_URL_ENV = "OPENRESPONSES_BASE_URL";
export const API_KEY_ENV = "OPENRESPONSES_API_KEY";
const DEFAULT_TIMEOUT = 60_000;
const DEFAULT_MAX_RETRIES = 2;
const RETRYABLE_STATUS = new Set([408, 409, 429, 500, 502, 503, 504]);
const INITIAL_DELAY = 500;
const MAX_DELAY = 8_000;
const MAX_RETRY_AFTER = 60_000; // a longer `Retry-After` is not waited out: the error is thrown
const TERMINAL = new Set(
  Object.values(EVENT_TYPES)
    .filter((entry) => entry.terminal)
    .map((entry) => entry.type),
);

/**
 * Milliseconds to wait before retry `attempt + 1`, or null when the server asks for too long a
 * wait: its `retry-after-ms` or `Retry-After` (seconds or an HTTP date) wins, else exponential
 * backoff with jitter, so that many clients retrying do not arrive together.
 */
export function retryDelay(attempt, headers) {
  const asked = headers ? retryAfter(headers) : null;
  if (asked !== null) return asked <= MAX_RETRY_AFTER ? asked : null;
  const delay = Math.min(INITIAL_DELAY * 2 ** attempt, MAX_DELAY);
  return delay * (1 - 0.25 * Math.random());
}

function retryAfter(headers) {
  const millis = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(millis)) return Math.max(millis, 0);
  const value = headers.get("retry-after");
  if (!value) return null;
  const seconds = Number(value);
  if (value.trim() !== "" && Number.isFinite(seconds)) {
    return Math.max(seconds * 1000, 0);
  }
  const when = Date.parse(value);
  return Number.isNaN(when) ? null : Math.max(when - Date.now(), 0);
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new APIUserAbortError("aborted"));
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(new APIUserAbortError("aborted"));
    };
    signal?.addEventListener("abort", stop, { once: true });
  });
}

/** A client of an Open Responses server, over `fetch`. */
export class OpenResponses {
  constructor(options = {}) {
    const env = globalThis.process?.env ?? {};
    const baseURL = options.baseURL ?? env[BASE_URL_ENV];
    const apiKey = options.apiKey ?? env[API_KEY_ENV];
    if (!baseURL) {
      throw new ConfigurationError(
        `no base URL: pass baseURL (the root /responses hangs off, e.g. http://127.0.0.1:8000/v1) or set $${BASE_URL_ENV}`,
      );
    }
    if (!apiKey) {
      throw new ConfigurationError(
        `no API key: pass apiKey or set $${API_KEY_ENV}`,
      );
    }
    const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    if (!Number.isInteger(maxRetries) || maxRetries < 0) {
      throw new ConfigurationError(
        "maxRetries must be a whole number, 0 or more",
      );
    }
    this.baseURL = String(baseURL).replace(/\/+$/, "");
    this.timeout = options.timeout ?? DEFAULT_TIMEOUT;
    this.maxRetries = maxRetries;
    this.headers = {
      Authorization: `Bearer ${apiKey}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      ...options.headers,
    };
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.validate = checkedMode(options.validate);
    this.onInvalid = options.onInvalid ?? null;
    this.responses = new Responses(this);
  }

  /**
   * Send one request, retrying what may be retried (connection failures, 408, 409, 429, 5xx);
   * resolves to the 2xx `Response`, or rejects with a typed error. `timeout` bounds the wait for
   * the answer's headers; `signal` cancels at any time.
   */
  async request(method, path, { body, signal, timeout, maxRetries } = {}) {
    const retries = maxRetries ?? this.maxRetries;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    for (let attempt = 0; ; attempt++) {
      const { response, failure, retryable } = await this.#attempt(
        method,
        path,
        payload,
        signal,
        timeout ?? this.timeout,
      );
      if (response !== undefined) return response;
      const delay = retryable ? retryDelay(attempt, failure.headers) : null;
      if (delay === null || attempt >= retries) throw failure;
      await sleep(delay, signal);
    }
  }

  async #attempt(method, path, payload, signal, timeout) {
    if (signal?.aborted) throw new APIUserAbortError("aborted before sending");
    const timer = new AbortController();
    const clock = setTimeout(() => timer.abort(), timeout);
    const combined = signal
      ? AbortSignal.any([signal, timer.signal])
      : timer.signal;
    let response;
    try {
      response = await this.fetch(this.baseURL + path, {
        method,
        headers: this.headers,
        body: payload,
        signal: combined,
      });
    } catch (error) {
      if (signal?.aborted) {
        throw new APIUserAbortError("the request was aborted", {
          cause: error,
        });
      }
      const failure = timer.signal.aborted
        ? new APITimeoutError(`no answer within ${timeout} ms`, {
            cause: error,
          })
        : new APIConnectionError(
            `cannot reach ${this.baseURL}: ${error.message}`,
            {
              cause: error,
            },
          );
      return { failure, retryable: true };
    } finally {
      clearTimeout(clock);
    }
    if (response.ok) return { response };
    const text = await response.text().catch(() => "");
    let body = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: the error keeps the text
    }
    return {
      failure: statusError(response.status, body, response.headers),
      retryable: RETRYABLE_STATUS.has(response.status),
    };
  }
}

const MODES = new Set(["report", "strict"]);

function checkedMode(mode = "report") {
  if (!MODES.has(mode)) {
    throw new ConfigurationError(
      `validate must be "report" or "strict", not ${JSON.stringify(mode)}`,
    );
  }
  return mode;
}

/**
 * What to do with an answer or event that breaks the spec's schema: `validate` "report" (the
 * default) passes it on as it came and tells `onInvalid`; "strict" throws.
 */
class Validation {
  constructor(client, options, reply) {
    this.mode = checkedMode(options.validate ?? client.validate);
    this.onInvalid = options.onInvalid ?? client.onInvalid;
    this.status = reply.status;
    this.requestId = requestIdOf(reply.headers);
    this.reports = [];
  }

  /** `value` checked by `schema`: what zod gave, or in report mode `value` itself, reported. */
  check(schema, value, what) {
    if (schema === null) return value; // a spec without a create answer: nothing to check against
    const result = schema.safeParse(value);
    if (result.success) return result.data;
    this.invalid(value, what, schemaIssues(result.error, value), result.error);
    return value;
  }

  /** Report, or in strict mode throw, that `value` breaks the schema. */
  invalid(value, what, issues, cause) {
    const type = what.type ?? null;
    const sequenceNumber = what.sequenceNumber ?? null;
    const subject =
      type === null
        ? what.subject
        : `event ${type}${sequenceNumber === null ? "" : ` (sequence_number ${sequenceNumber})`}`;
    const message = `${subject} breaks the spec's schema: ${describeIssues(issues)}`;
    if (this.mode === "strict") {
      throw new APIResponseValidationError(message, {
        body: value,
        issues,
        eventType: type,
        status: this.status,
        requestId: this.requestId,
        cause,
      });
    }
    const report = { type, sequenceNumber, issues, message, value };
    this.reports.push(report);
    this.onInvalid?.(report);
  }
}

async function parseAnswer(schema, response, validation, request) {
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new APIResponseValidationError(
      `the answer is not JSON: ${error.message}`,
      {
        body: text,
        status: response.status,
        requestId: requestIdOf(response.headers),
        cause: error,
      },
    );
  }
  const value = validation.check(schema, body, {
    subject: `the answer to ${request}`,
  });
  return schema === CREATE_RESPONSE ? withOutputText(value) : value;
}

function fillPath(path, names, values) {
  return names.reduce(
    (out, name, i) =>
      out.replace(`{${name}}`, encodeURIComponent(String(values[i]))),
    path,
  );
}

function queryString(names, given) {
  const pairs = new URLSearchParams();
  for (const name of names) {
    const value = given?.[name];
    for (const one of Array.isArray(value) ? value : [value]) {
      if (one !== undefined && one !== null) pairs.append(name, String(one));
    }
  }
  const text = pairs.toString();
  return text ? `?${text}` : "";
}

/**
 * The events of one streamed answer, typed by `parseEvent`; iterate it with `for await`. An event
 * that breaks the spec's schema comes as it was sent and is reported (`issues`, `onInvalid`), or
 * with `validate: "strict"` throws. When the connection breaks before the response ends and the
 * stream can be resumed (a background response, or a replay), it reconnects with `starting_after`
 * the last event read.
 */
export class EventStream {
  #resume;
  #retries;
  #signal;
  #validation;
  #accumulator = new ResponseAccumulator();
  #read = false; // whether the stream was read to its end

  constructor(response, { resume, retries = 0, signal, validation } = {}) {
    this.response = response;
    this.lastSequence = null;
    this.responseId = null;
    this.ended = false;
    this.sawDone = false;
    this.#resume = resume;
    this.#retries = retries;
    this.#signal = signal;
    this.#validation =
      validation ?? new Validation({ validate: "report" }, {}, response);
  }

  /** The events that broke the schema so far, each as `onInvalid` was told of it. */
  get issues() {
    return this.#validation.reports;
  }

  /** The id the server gave the request (`x-request-id`), when it sent one. */
  get requestId() {
    return this.#validation.requestId;
  }

  async *[Symbol.asyncIterator]() {
    if (this.#read) return; // read to its end already: nothing more will come
    let attempts = 0;
    for (;;) {
      const messages = readSSE(this.response.body);
      try {
        for (;;) {
          let next;
          try {
            next = await messages.next();
          } catch (error) {
            if (this.#signal?.aborted) {
              throw new APIUserAbortError("the stream was aborted", {
                cause: error,
              });
            }
            if (this.ended || !this.#resume || attempts >= this.#retries) {
              throw new APIConnectionError(
                `the stream broke: ${error.message}`,
                {
                  cause: error,
                },
              );
            }
            break; // resume below
          }
          if (next.done || next.value.data === DONE) {
            this.sawDone ||= !next.done;
            this.#read = true;
            return;
          }
          const event = this.#parse(next.value.data);
          if (event !== undefined) yield event;
        }
      } finally {
        await messages.return(); // releases the body: the stream ended, broke, threw or was left
      }
      attempts++;
      this.response = await this.#resume(this);
    }
  }

  /**
   * Read the rest of the stream; the response its events built, checked as a `ResponseResource`
   * (reported or thrown as an event would be), with its `output_text`.
   */
  async finalResponse() {
    if (!this.#read) for await (const _ of this);
    const built = this.#accumulator.asObject();
    return withOutputText(
      this.#validation.check(CREATE_RESPONSE, built, {
        subject: "the response the stream built",
      }),
    );
  }

  #parse(data) {
    let raw;
    try {
      raw = JSON.parse(data);
    } catch (error) {
      this.#validation.invalid(
        data,
        { subject: "an event" },
        [{ path: "", message: `not JSON: ${error.message}` }],
        error,
      );
      return undefined;
    }
    let event = raw;
    try {
      event = parseEvent(raw);
    } catch (error) {
      const type = typeof raw?.type === "string" ? raw.type : "without type";
      const sequence = raw?.sequence_number;
      this.#validation.invalid(
        raw,
        {
          type,
          sequenceNumber: typeof sequence === "number" ? sequence : null,
        },
        schemaIssues(error, raw),
        error,
      );
    }
    this.#accumulator.feed(raw);
    if (typeof event.sequence_number === "number") {
      this.lastSequence = event.sequence_number;
    }
    const id = event.response?.id;
    if (this.responseId === null && typeof id === "string")
      this.responseId = id;
    if (TERMINAL.has(event.type)) this.ended = true;
    return event;
  }

  /** The text of the output as it arrives, delta by delta. */
  async *textDeltas() {
    for await (const event of this) {
      if (event.type === "response.output_text.delta") yield event.delta;
    }
  }
}

/** `client.responses`: create, and the operations on one stored response. */
class Responses {
  #client;

  constructor(client) {
    this.#client = client;
    for (const op of OPERATIONS) {
      const method = (...args) => this.#call(op, args);
      if (op.group === "") this[op.name] = method;
      else (this[op.group] ??= {})[op.name] = method;
    }
  }

  /** `POST /responses`: the response, or with `stream: true` an `EventStream` of its events. */
  async create(body, options = {}) {
    const client = this.#client;
    const reply = await client.request("POST", "/responses", {
      ...options,
      body,
    });
    const validation = new Validation(client, options, reply);
    if (body?.stream !== true)
      return parseAnswer(CREATE_RESPONSE, reply, validation, "POST /responses");
    // Only a background response keeps its events, to be replayed after the last one read.
    const resume =
      body.background === true && this.retrieve
        ? async (stream) => {
            const again = await this.retrieve(
              stream.responseId,
              {
                stream: true,
                starting_after: stream.lastSequence ?? undefined,
              },
              options,
            );
            return again.response;
          }
        : undefined;
    return new EventStream(reply, {
      resume,
      retries: options.maxRetries ?? client.maxRetries,
      signal: options.signal,
      validation,
    });
  }

  /**
   * `POST /responses` streamed, as openai-node's `responses.stream`: a `ResponseStream` at once,
   * to iterate, to listen to with `on`, or to wait on with `finalResponse()` and `finalText()`.
   */
  stream(body, options = {}) {
    const controller = new AbortController();
    const signal = options.signal
      ? AbortSignal.any([options.signal, controller.signal])
      : controller.signal;
    const events = this.create(
      { ...body, stream: true },
      { ...options, signal },
    );
    return new ResponseStream(events, controller);
  }

  async #call(op, args) {
    const ids = args.slice(0, op.pathParams.length);
    const rest = args.slice(op.pathParams.length);
    const body = op.body ? rest.shift() : undefined; // a JSON body comes before the options
    const [query = {}, options = {}] = op.body ? [{}, ...rest] : rest;
    const client = this.#client;
    const path = fillPath(op.path, op.pathParams, ids);
    const reply = await client.request(
      op.method,
      path + queryString(op.query, query),
      op.body ? { ...options, body } : options,
    );
    const validation = new Validation(client, options, reply);
    if (op.stream === null || query[op.stream] !== true) {
      return parseAnswer(op.returns, reply, validation, `${op.method} ${path}`);
    }
    const resume = op.query.includes("starting_after")
      ? (stream) =>
          client.request(
            op.method,
            path +
              queryString(op.query, {
                ...query,
                starting_after: stream.lastSequence ?? undefined,
              }),
            options,
          )
      : undefined;
    return new EventStream(reply, {
      resume,
      retries: options.maxRetries ?? client.maxRetries,
      signal: options.signal,
      validation,
    });
  }
}
