// The Open Responses server around a provider, on node:http: it routes every operation of the spec
// by method and path (the package's ROUTES), authenticates, validates bodies with the package's zod
// models, turns the provider's steps into the spec's events (the package's emitter), and keeps
// responses in memory for retrieve, delete, cancel, input items, previous_response_id, background
// runs, compaction and input token counts, and serves WebSocket mode on the create path. Operations it
// has no handler for answer 501.
import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { Duplex } from "node:stream";
import {
  ROUTES,
  type CreateAnswer,
  type CreateBody,
  type Route,
} from "openresponses-runtime";
import {
  acceptUpgrade,
  refuseUpgrade,
  WebSocketConnection,
} from "./websocket.js";
import {
  DONE_FRAME,
  emitEvents,
  Emitter,
  newId,
  OpenResponsesError,
  responseSkeleton,
  sseFrame,
  ToolPolicy,
  type ErrorObject,
  type Step,
} from "openresponses-runtime/server";

/** An input or output item, as the wire has it. */
export type Item = {
  type?: string;
  id?: string;
  role?: string;
  content?: unknown;
  [field: string]: unknown;
};

/** The fields of a create request the server reads; the rest pass to the provider as sent. */
export interface CreateRequest {
  model?: string | null;
  input?: string | Item[];
  instructions?: string | null;
  tools?: unknown[] | null;
  tool_choice?: unknown;
  previous_response_id?: string | null;
  stream?: boolean | null;
  background?: boolean | null;
  store?: boolean | null;
  max_output_tokens?: number | null;
  parallel_tool_calls?: boolean | null;
  [field: string]: unknown;
}

/** What the provider gets for one turn. */
export interface ProviderRequest {
  body: CreateRequest;
  /** The context: earlier turns (previous_response_id), then this request's input, as items. */
  items: Item[];
  /** The function tools `tool_choice` allows, and whether one must be called. */
  policy: ToolPolicy;
  /** Aborted when the response is cancelled (background) or the client goes away. */
  signal: AbortSignal;
}

/** The one thing to implement: a model that answers a turn with steps. */
export interface Provider {
  /** The model's answer as steps: text, function calls, reasoning, usage (see `Step`). */
  respond(request: ProviderRequest): AsyncIterable<Step>;
  /** The tokens `request` would take as input; without it, input_tokens answers 501. */
  countInputTokens?(request: ProviderRequest): number | Promise<number>;
  /** The conversation `items` shortened; without it, compaction answers 501. */
  compact?(items: Item[]): Item[] | Promise<Item[]>;
}

export interface ServerOptions {
  /** The bearer key every request must carry. */
  apiKey: string;
  /** How many stored responses to keep (the oldest go first). */
  keep?: number;
}

interface Stored {
  response: CreateAnswer;
  input: Item[];
  /** Earlier turns and this input: what a continuation of this response starts from. */
  context: Item[];
  /** Set while a background response runs. */
  run?: AbortController;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly error: ErrorObject,
  ) {
    super(error.message);
  }
}

const notFound = (
  what: string,
  param: string | null = null,
  code = "not_found",
) =>
  new HttpError(404, {
    type: "not_found",
    code,
    param,
    message: `${what} not found`,
  });
const unauthorized = () =>
  new HttpError(401, {
    type: "invalid_request",
    code: "invalid_api_key",
    param: null,
    message: "a valid bearer API key is required",
  });
/** How many `store: false` responses a WebSocket connection keeps for continuations. */
const CONNECTION_CACHE = 32;
const invalid = (
  message: string,
  param: string | null = null,
  code = "invalid_request",
) => new HttpError(400, { type: "invalid_request", code, param, message });

/** Each route's path template as a pattern whose groups are its parameters. */
const MATCHERS = ROUTES.map((route) => ({
  route,
  pattern: new RegExp(`^${route.path.replace(/\{[^}]+\}/g, "([^/]+)")}$`),
}));

/** The input of a request as items, each with an id (a string is one user message). */
export function inputItems(input: CreateRequest["input"]): Item[] {
  const items: Item[] =
    typeof input === "string"
      ? [{ type: "message", role: "user", content: input }]
      : (input ?? []);
  return items.map((item) => ({
    ...item,
    type: item.type ?? "message",
    id: item.id ?? newId(item.type === "function_call_output" ? "fco" : "msg"),
  }));
}

export function createProviderServer(
  provider: Provider,
  options: ServerOptions,
): Server {
  const stored = new Map<string, Stored>();
  const keep = options.keep ?? 1000;

  function remember(entry: Stored): void {
    stored.set(String(entry.response.id), entry);
    if (stored.size > keep) stored.delete(stored.keys().next().value!);
  }

  function find(id: string): Stored {
    const entry = stored.get(id);
    if (!entry) throw notFound(`response ${id}`);
    return entry;
  }

  /** The provider's request for `body`: its context from previous_response_id (looked up in a WebSocket
   * connection's own responses first), then its input. */
  function turn(
    body: CreateRequest,
    signal: AbortSignal,
    local?: Map<string, Stored>,
  ): ProviderRequest {
    let history: Item[] = [];
    if (body.previous_response_id != null) {
      const id = body.previous_response_id;
      const previous = local?.get(id) ?? stored.get(id);
      if (!previous)
        throw notFound(
          `previous response ${id}`,
          "previous_response_id",
          "previous_response_not_found",
        );
      // Output items go back into the context as the wire has them; an item type the package does not
      // know is typed by a brand that no plain string matches, hence the widening through unknown.
      const output = previous.response.output as unknown as Item[];
      history = [...previous.context, ...output];
    }
    const policy = ToolPolicy.fromRequest(body.tools, body.tool_choice);
    return {
      body,
      items: [...history, ...inputItems(body.input)],
      policy,
      signal,
    };
  }

  /** One turn under way: its emitter, its events as the provider's steps arrive, and what it stores. */
  function begin(
    body: CreateRequest,
    run: AbortController,
    local?: Map<string, Stored>,
  ) {
    const request = turn(body, run.signal, local);
    const emitter = new Emitter(
      // The body passed the create schema on its way in (`validated`), so it is a CreateBody.
      responseSkeleton(body as CreateBody, { model: body.model ?? "demo" }),
      { policy: request.policy },
    );
    const events = emitEvents(emitter, provider.respond(request));
    const input = request.items.slice(
      request.items.length - inputItems(body.input).length,
    );
    const entry: Stored = {
      response: emitter.response,
      input,
      context: request.items,
    };
    return { emitter, events, entry };
  }

  async function create(
    body: CreateRequest,
    res: ServerResponse,
  ): Promise<void> {
    const run = new AbortController();
    const { emitter, events, entry } = begin(body, run);
    if (body.background) {
      if (body.store === false)
        throw invalid("background responses must be stored", "store");
      entry.run = run;
      entry.response.status = "queued";
      remember(entry);
      sendJson(res, 200, emitter.response);
      void (async () => {
        try {
          entry.response.status = "in_progress";
          for await (const _ of events) if (run.signal.aborted) break;
        } catch (error) {
          // A provider that fails before its first step (an upstream's refusal) fails the response.
          if (!run.signal.aborted) emitter.fail(asHttpError(error).error);
        } finally {
          entry.response = run.signal.aborted
            ? { ...emitter.response, status: "cancelled" }
            : emitter.response;
          delete entry.run;
        }
      })();
      return;
    }
    res.on("close", () => run.abort());
    if (!body.stream) {
      for await (const _ of events); // the events are not sent: the response is built all the same
      if (body.store !== false) remember(entry);
      return sendJson(res, 200, emitter.response);
    }
    // The first event waits for the provider's first step, so that a provider failing before it (an
    // upstream's refusal) answers with its error's status rather than a stream.
    const iterator = events[Symbol.asyncIterator]();
    let next = await iterator.next();
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
    });
    for (; !next.done; next = await iterator.next()) {
      if (res.destroyed) return;
      res.write(sseFrame(next.value));
    }
    if (body.store !== false) remember(entry);
    res.end(DONE_FRAME);
  }

  /** The handlers of the runtime's operations, by the route table's handler names. */
  const handlers: Record<string, (call: Call) => Promise<void> | void> = {
    create_response: ({ body, res }) => create(body as CreateRequest, res),
    get_response: ({ params, res }) =>
      sendJson(res, 200, find(params.response_id!).response),
    delete_response: ({ params, res }) => {
      find(params.response_id!);
      stored.delete(params.response_id!);
      sendJson(res, 200, {
        id: params.response_id,
        object: "response.deleted",
        deleted: true,
      });
    },
    cancel_response: ({ params, res }) => {
      const entry = find(params.response_id!);
      if (!entry.run)
        throw invalid(
          "only a background response that is still running can be cancelled",
        );
      entry.run.abort();
      entry.response = { ...entry.response, status: "cancelled" };
      sendJson(res, 200, entry.response);
    },
    list_input_items: ({ params, query, res }) => {
      const items = find(params.response_id!).input;
      const order = query.get("order") ?? "desc";
      const limit = Math.min(
        Math.max(Number(query.get("limit") ?? 20) || 20, 1),
        100,
      );
      const ordered = order === "asc" ? items : [...items].reverse();
      const after = query.get("after");
      const start = after
        ? ordered.findIndex((item) => item.id === after) + 1
        : 0;
      const data = ordered.slice(start, start + limit);
      sendJson(res, 200, {
        object: "list",
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: start + limit < ordered.length,
      });
    },
    count_input_tokens: async ({ body, res }) => {
      if (!provider.countInputTokens)
        throw notImplemented("counting input tokens");
      const count = await provider.countInputTokens(
        turn(body as CreateRequest, new AbortController().signal),
      );
      sendJson(res, 200, {
        object: "response.input_tokens",
        input_tokens: count,
      });
    },
    compact_response: async ({ body, res }) => {
      if (!provider.compact) throw notImplemented("compaction");
      const request = turn(body as CreateRequest, new AbortController().signal);
      sendJson(res, 200, {
        id: newId("cmp"),
        object: "response.compaction",
        output: await provider.compact(request.items),
        created_at: Math.floor(Date.now() / 1000),
        usage: {
          input_tokens: 0,
          output_tokens: 0,
          total_tokens: 0,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens_details: { reasoning_tokens: 0 },
        },
      });
    },
  };

  /** One `response.create` message on a WebSocket: its events as messages, or one error message. */
  async function wsTurn(
    connection: WebSocketConnection,
    text: string,
    local: Map<string, Stored>,
  ): Promise<void> {
    let previous: string | null = null;
    try {
      let message: unknown;
      try {
        message = JSON.parse(text);
      } catch {
        throw invalid("the message is not JSON", null, "invalid_json");
      }
      const { type, ...body } = (message ?? {}) as CreateRequest;
      if (type !== "response.create")
        throw invalid(`unknown message type ${JSON.stringify(type)}`, "type");
      validated(CREATE, body);
      previous = body.previous_response_id ?? null;
      const { events, entry } = begin(body, new AbortController(), local);
      let failed = false;
      for await (const event of events) {
        connection.send(event);
        failed ||= event.type === "response.failed" || event.type === "error";
      }
      if (failed && previous) local.delete(previous); // a failed continuation forgets what it continued
      local.set(String(entry.response.id), entry);
      if (local.size > CONNECTION_CACHE)
        local.delete(local.keys().next().value!);
      if (body.store !== false) remember(entry);
    } catch (error) {
      if (previous) local.delete(previous);
      const failure = asHttpError(error);
      connection.send({
        type: "error",
        status: failure.status,
        error: failure.error,
      });
    }
  }

  const server = createServer((req, res) => {
    serve(req, res).catch((error: unknown) => {
      const failure = asHttpError(error);
      if (res.headersSent) return void res.end();
      sendJson(res, failure.status, { error: failure.error });
    });
  });

  server.on("upgrade", (req: IncomingMessage, socket: Duplex) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    const refusal =
      path !== CREATE.path
        ? notFound(`WebSocket route ${path}`)
        : req.headers.authorization !== `Bearer ${options.apiKey}`
          ? unauthorized()
          : null;
    if (refusal)
      return refuseUpgrade(socket, refusal.status, refusal.error.type, {
        error: refusal.error,
      });
    if (!acceptUpgrade(req, socket)) {
      return refuseUpgrade(socket, 400, "Bad Request", {
        error: invalid("not a WebSocket upgrade").error,
      });
    }
    const local = new Map<string, Stored>(); // this connection's responses, store: false ones included
    let turns = Promise.resolve(); // one turn after another
    const connection: WebSocketConnection = new WebSocketConnection(
      socket,
      (text) => {
        turns = turns.then(() => wsTurn(connection, text, local));
      },
      () => local.clear(),
    );
  });
  return server;

  async function serve(
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const url = new URL(req.url ?? "/", "http://localhost");
    const matches = MATCHERS.map(({ route, pattern }) => ({
      route,
      match: pattern.exec(url.pathname),
    })).filter(({ match }) => match);
    if (!matches.length) throw notFound(`route ${url.pathname}`);
    const found = matches.find(({ route }) => route.method === req.method);
    if (!found)
      throw new HttpError(405, {
        type: "invalid_request",
        code: "method_not_allowed",
        param: null,
        message: `${req.method} is not allowed on ${url.pathname}`,
      });
    if (req.headers.authorization !== `Bearer ${options.apiKey}`)
      throw unauthorized();
    const { route, match } = found;
    const params = Object.fromEntries(
      route.pathParams.map((name, i) => [
        name,
        decodeURIComponent(match![i + 1]!),
      ]),
    );
    const handler = route.handler ? handlers[route.handler] : undefined;
    if (!handler) throw notImplemented(route.implement ?? route.operationId);
    const body = route.request
      ? validated(route, await readJson(req))
      : undefined;
    await handler({ body, params, query: url.searchParams, res });
  }
}

/** The create operation: its path also takes WebSocket upgrades. */
const CREATE = ROUTES.find((route) => route.handler === "create_response")!;

/** Any error as the spec's error object and status; what is not one is logged and becomes a 500. */
function asHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof OpenResponsesError) {
    // A provider's error may carry its HTTP status (a gateway's upstream errors do); else it is the client's.
    const status = (error as { status?: unknown }).status;
    return new HttpError(typeof status === "number" ? status : 400, {
      type: error.type,
      code: error.code,
      param: error.param,
      message: error.message,
    });
  }
  console.error(error);
  return new HttpError(500, {
    type: "server_error",
    code: "server_error",
    param: null,
    message: "internal error",
  });
}

interface Call {
  body: unknown;
  params: Record<string, string | undefined>;
  query: URLSearchParams;
  res: ServerResponse;
}

function notImplemented(what: string): HttpError {
  return new HttpError(501, {
    type: "server_error",
    code: "not_implemented",
    param: null,
    message: `${what} is not implemented by this server`,
  });
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw invalid("the body is not JSON", null, "invalid_json");
  }
}

/** `body` checked by the operation's model: a 400 naming the first bad field. */
function validated(route: Route, body: unknown): unknown {
  try {
    route.request!.parse(body);
    return body; // as sent: the model's defaults are the emitter's to echo
  } catch (error) {
    const issue = (
      error as { issues?: { path: PropertyKey[]; message: string }[] }
    ).issues?.[0];
    if (!issue) throw error;
    const param = issue.path.map(String).join(".") || null;
    throw invalid(param ? `${param}: ${issue.message}` : issue.message, param);
  }
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}
