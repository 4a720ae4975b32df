// Check an Open Responses event stream against the state machines.
//
// `StreamChecker` is fed one SSE message at a time (`feed(eventName, data)`) or a whole capture
// (`checkSse(data)`) and collects every violation it finds, each with the id of the rule it
// breaks (see `RULES` in protocol.js), rather than stopping at the first. Unknown event types are
// ignored, as clients must ignore them. Rules, ids and messages are those of the Python runtime's
// `openresponses_runtime.streaming.StreamChecker`; the tables come from the spec (protocol.js).

import {
  EVENT_PROTOCOL,
  ITEM_STATUS_TYPES,
  OPAQUE_FIELDS,
  RESPONSE_STATUSES,
  TERMINAL_EVENT_TYPES,
  TEXT_PARTS,
  WARNING_RULES,
} from "./protocol.js";
import {
  byCodePoint,
  get,
  isObject,
  pyEqual,
  pyRepr,
  pyStr,
  pyTruthy,
  short,
} from "./pyvalues.js";
import { DONE, iterSse } from "./sse.js";

const IN_PROGRESS = "in_progress";
const DONE_FIELD = new Map(
  Object.values(TEXT_PARTS).map(({ done, field }) => [done, field]),
);
const TEXT_FIELD = new Map(
  Object.entries(TEXT_PARTS).map(([part, { field }]) => [part, field]),
);

// The states of the response each event needs; a spec without state machines streams by the rule
// that only the lifecycle events and `error` may come before `response.in_progress`.
const RESPONSE_STATES = (() => {
  const required = Object.entries(EVENT_PROTOCOL).filter(([, info]) =>
    Object.hasOwn(info.requires, "response"),
  );
  if (required.length)
    return new Map(
      required.map(([kind, info]) => [kind, info.requires.response]),
    );
  const lifecycle = (kind) =>
    kind === "error" || Object.hasOwn(RESPONSE_STATUSES, kind);
  return new Map(
    Object.keys(EVENT_PROTOCOL)
      .filter((kind) => !lifecycle(kind))
      .map((kind) => [kind, [IN_PROGRESS]]),
  );
})();

/** One broken rule: its id, the `sequence_number` of the event (null if unknown) and what is wrong. */
export class Violation {
  constructor(rule, sequenceNumber, message) {
    this.rule = rule;
    this.sequenceNumber = sequenceNumber;
    this.message = message;
    Object.freeze(this);
  }

  /** A finding worth knowing that leaves the stream valid (see `WARNING_RULES`). */
  get isWarning() {
    return WARNING_RULES.has(this.rule);
  }

  toString() {
    const seq = this.sequenceNumber === null ? "?" : this.sequenceNumber;
    return `seq ${seq}: ${this.isWarning ? "warning " : ""}[${this.rule}] ${this.message}`;
  }
}

// Ids and indexes as Python dict keys: 1, 1.0 and True are one key; a list or object is its repr.
function asKey(value) {
  if (value === undefined || value === null || typeof value === "string")
    return value ?? null;
  if (typeof value === "number" || typeof value === "boolean") return value;
  return pyRepr(value);
}

// A Map key with Python's dict semantics for `asKey` values: a Map tells "1" from 1 and takes
// 1.0 as 1 already; True is 1.
function mapKey(value) {
  return typeof value === "boolean" ? Number(value) : (value ?? null);
}

/** A Python dict keyed by `asKey` values, in insertion order. */
class KeyedMap {
  #map = new Map();
  get(key) {
    return this.#map.get(mapKey(key));
  }
  has(key) {
    return this.#map.has(mapKey(key));
  }
  set(key, value) {
    this.#map.set(mapKey(key), value);
  }
  get size() {
    return this.#map.size;
  }
  values() {
    return this.#map.values();
  }
}

class Part {
  constructor(index, part) {
    this.index = index;
    this.state = "open";
    this.part = isObject(part) ? part : {};
    this.kind = get(this.part, "type");
    this.deltas = [];
    this.text = null; // the text of the part's own `.done` event
  }
}

class Item {
  constructor(id, index, item) {
    this.id = id;
    this.index = index;
    this.type = get(item, "type");
    this.status = IN_PROGRESS;
    this.parts = new KeyedMap();
    this.summary = new KeyedMap();
    this.args = [];
    this.argsDone = null;
    this.done = null;
  }
}

// How many events of one type a stream carried, and what the rules do with that type (null for a
// type the protocol does not know).
class Tally {
  constructor(kind) {
    this.kind = kind;
    this.count = 0;
    this.rules = KIND_RULES.get(kind) ?? null;
  }
}

// What pydantic says of a `sequence_number` it cannot read as an integer, as leniently as it
// reads one ("7" and 7.0 pass); null when it can.
function integerProblem(value) {
  if (value === null || value === undefined) return null;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return "Input should be a finite number";
    if (!Number.isInteger(value))
      return "Input should be a valid integer, got a number with a fractional part";
    // A float beyond the 64-bit range; a JSON integer that large reads the same once parsed.
    if (Math.abs(value) >= 2 ** 63)
      return "Unable to parse input string as an integer, exceeded maximum size";
    return null;
  }
  if (typeof value === "boolean") return null;
  if (typeof value === "string") {
    return /^\s*[+-]?\d+(_\d+)*(\.0*)?\s*$/.test(value)
      ? null
      : "Input should be a valid integer, unable to parse string as an integer";
  }
  return "Input should be a valid integer";
}

/**
 * Collects every violation of the streaming rules in one stream.
 *
 * Feed it SSE messages in order, then call `finish()` (or use `checkSse` for a whole capture).
 * `validate`, when given, checks each core event against its schema (the package's zod
 * validation, say); `schema: false` turns every schema check off.
 */
export class StreamChecker {
  constructor({ validate = null, schema = true } = {}) {
    this.validate = validate;
    this.schema = schema;
    this.violations = [];
    this.tallies = new Map(); // a `Tally` of each type seen
    this.lastTally = null; // of the last event's type
    this.untyped = 0; // events that are not JSON objects with a string `type`
    this.known = 0;
    this.done = false;
    this.state = null; // the response's state
    this.terminal = null;
    this.responseId = null;
    this.errorSeq = null;
    this.items = new KeyedMap();
    this.order = [];
    this.incompleteItem = null;
    this.lastSeq = null; // of the last known event
    this.prevSeq = null; // of the last event of any type
    this.seq = null;
    this.finished = false;
    this.earlyState = "unset";
    this.nextIndex = 0;
  }

  /** Every event so far, known or not. */
  get events() {
    let total = this.untyped;
    for (const tally of this.tallies.values()) total += tally.count;
    return total;
  }

  /** How many events of each type the stream carried, by type in code point order. */
  get counts() {
    return new Map(
      [...this.tallies.values()]
        .map((tally) => [tally.kind, tally.count])
        .sort(([a], [b]) => byCodePoint(a, b)),
    );
  }

  /** The violations that make the stream invalid: all but the warnings. */
  get errors() {
    return this.violations.filter((v) => !v.isWarning);
  }

  get ok() {
    return this.errors.length === 0;
  }

  #add(rule, message) {
    this.violations.push(new Violation(rule, this.seq, message));
  }

  /** Check a whole SSE capture (bytes, text, or an iterable of chunks). */
  checkSse(source) {
    for (const message of iterSse(source))
      this.feed(message.event, message.data);
    return this.finish();
  }

  /**
   * One SSE message: its `event:` header (null if absent) and its data. Returns the event (as the
   * validator gave it, when there is one), or null for `[DONE]`, data that is not a JSON object
   * with a `type`, and an event that breaks its schema.
   */
  feed(eventName, data) {
    this.seq = null;
    if (data === DONE) {
      this.#onDoneMarker();
      return null;
    }
    if (typeof data !== "string") return this.feedEvent(data, eventName);
    let event;
    try {
      event = JSON.parse(data);
    } catch (error) {
      this.untyped += 1;
      this.#add("sse-json", `data is not valid JSON (${error.message})`);
      return null;
    }
    return this.#check(event, eventName ?? null);
  }

  /** One event already parsed; returns what `feed` does. */
  feedEvent(event, eventName = null) {
    this.seq = null;
    return this.#check(event, eventName);
  }

  #check(event, eventName) {
    // The fields the checker reads on every event are read directly (`get` checks that a key is
    // the object's own): none is a name Object.prototype has, so for a JSON object that is the same.
    const kind = isObject(event) ? event.type : null;
    if (typeof kind !== "string") {
      this.untyped += 1;
      this.#add("sse-json", "data is not a JSON object with a string `type`");
      return null;
    }
    // Streams come in long runs of one type: the last event's tally spares a lookup by type.
    let tally = this.lastTally;
    if (tally === null || tally.kind !== kind) {
      tally = this.tallies.get(kind);
      if (tally === undefined) {
        tally = new Tally(kind);
        this.tallies.set(kind, tally);
      }
      this.lastTally = tally;
    }
    tally.count += 1;
    const rules = tally.rules;
    const seq = Number.isInteger(event.sequence_number)
      ? event.sequence_number
      : null;
    this.seq = seq;
    if (eventName !== null && eventName !== kind) {
      this.#add(
        "sse-header",
        `SSE event header ${pyRepr(eventName)} differs from the body's type ${pyRepr(kind)}`,
      );
    }
    if (rules === null) {
      // Unknown event types are ignored, but share the numbering, so a gap is measured across them.
      if (seq !== null) {
        if (this.prevSeq !== null && seq > this.prevSeq + 1) {
          this.#add(
            "sequence-gap",
            `sequence_number jumps from ${this.prevSeq} to ${seq}`,
          );
        }
        this.prevSeq = seq;
      }
      if (!this.schema) return null;
      const problem = integerProblem(event.sequence_number);
      if (problem !== null) {
        this.#add(
          "schema",
          `${kind} does not match what every event carries: sequence_number: ${problem}`,
        );
        return null;
      }
      return event;
    }
    this.known += 1;
    if (seq !== null) {
      const prev = this.prevSeq;
      if (prev !== null && seq !== prev + 1) {
        if (this.lastSeq !== null && seq <= this.lastSeq) {
          this.#add(
            "sequence",
            `sequence_number ${seq} does not increase (previous ${this.lastSeq})`,
          );
        } else if (seq > prev + 1) {
          this.#add(
            "sequence-gap",
            `sequence_number jumps from ${prev} to ${seq}`,
          );
        }
      }
      this.lastSeq = this.prevSeq = seq;
    }
    let result = event;
    if (this.schema && this.validate) {
      result = this.#validated(event, kind);
    }
    if (this.known === 1 && kind !== "response.created") {
      this.#add(
        "created-first",
        `the stream starts with ${kind}, not response.created`,
      );
    }
    if (this.done) {
      this.#add("after-terminal", `${kind} after \`[DONE]\``);
      return result;
    }
    if (this.terminal !== null && !rules.terminal) {
      this.#add(
        "after-terminal",
        `${kind} after the terminal event ${this.terminal}`,
      );
      return result;
    }
    const required = rules.requires;
    // Reported once per state, not for every event that follows.
    if (
      required !== null &&
      !required.includes(this.state) &&
      this.earlyState !== this.state
    ) {
      this.earlyState = this.state;
      this.#add(
        "in-progress-first",
        `${kind} while the response is ${this.state || "not created"}; it needs response.in_progress first`,
      );
    }
    if (rules.handler !== null) rules.handler.call(this, event);
    return result;
  }

  #validated(event, kind) {
    let outcome;
    try {
      outcome = this.validate(event, kind);
    } catch (error) {
      // A validator tripping over odd input is still a finding.
      this.#add(
        "schema",
        `${kind} could not be validated: ${error?.name ?? "Error"}: ${error?.message ?? error}`,
      );
      return null;
    }
    if (outcome && outcome.ok === false) {
      this.#add(
        "schema",
        `${kind} does not match its schema: ${outcome.message}`,
      );
      return null;
    }
    return outcome && "event" in outcome ? outcome.event : event;
  }

  /**
   * Check a stream of parsed events to its end, such as the client's `EventStream`, whose
   * `sawDone` says whether `data: [DONE]` came; returns every violation.
   */
  async checkEvents(events) {
    for await (const event of events) this.feedEvent(event);
    if (events.sawDone === true) this.feed(null, DONE);
    return this.finish();
  }

  /** End of stream: report what never happened, and return every violation. */
  finish() {
    if (this.finished) return this.violations;
    this.finished = true;
    this.seq = null;
    if (this.known === 0) {
      this.#add("created-first", "the stream has no Open Responses events");
    } else if (this.terminal === null) {
      this.#add(
        "one-terminal",
        "the stream has no terminal event (response.completed, response.incomplete or response.failed)",
      );
    }
    if (!this.done)
      this.#add("done-marker", "the stream does not end with `data: [DONE]`");
    if (this.errorSeq !== null && this.terminal === null) {
      this.seq = this.errorSeq;
      this.#add(
        "error-then-failed",
        "an error event is not followed by response.failed",
      );
    }
    return this.violations;
  }

  /**
   * `violations` less the end-of-stream report of a missing `[DONE]` (OpenAI never sends one);
   * a `[DONE]` sent twice or too early is still reported.
   */
  withoutMissingDone(violations) {
    if (this.done) return [...violations];
    return violations.filter(
      (v) => !(v.rule === "done-marker" && v.sequenceNumber === null),
    );
  }

  #onDoneMarker() {
    if (this.done) this.#add("done-marker", "`[DONE]` sent twice");
    else if (this.terminal === null)
      this.#add("done-marker", "`[DONE]` before any terminal event");
    this.done = true;
  }

  // -- the response ----------------------------------------------------------------------------

  #checkResponse(event, kind) {
    const response = get(event, "response");
    if (!isObject(response)) return null;
    const status = get(response, "status");
    const allowed = RESPONSE_STATUSES[kind];
    if (!allowed.some((s) => pyEqual(s, status))) {
      this.#add(
        "response-status",
        `${kind} carries response.status ${pyRepr(status)}, expected ${allowed.map(pyRepr).join(" or ")}`,
      );
    }
    const rid = get(response, "id");
    if (this.responseId === null) this.responseId = rid;
    else if (!pyEqual(rid, this.responseId)) {
      this.#add(
        "response-status",
        `${kind} is about response ${pyRepr(rid)}, not ${pyRepr(this.responseId)}`,
      );
    }
    return response;
  }

  onCreated(event) {
    if (this.known !== 1) {
      this.#add(
        "created-first",
        this.state
          ? "response.created sent again"
          : "response.created is not the first event",
      );
    }
    this.#checkResponse(event, "response.created");
    if (this.state === null) this.state = "created";
  }

  onQueued(event) {
    if (this.state !== "created") {
      this.#add(
        "queued",
        `response.queued while the response is ${this.state || "not created"}; it may only follow response.created`,
      );
    }
    this.#checkResponse(event, "response.queued");
    if (this.terminal === null) this.state = "queued";
  }

  onInProgress(event) {
    if (
      this.state !== "created" &&
      this.state !== "queued" &&
      this.terminal === null
    ) {
      this.#add(
        "in-progress-first",
        `response.in_progress while the response is ${this.state || "not created"}`,
      );
    }
    this.#checkResponse(event, "response.in_progress");
    if (this.terminal === null) this.state = IN_PROGRESS;
  }

  onTerminal(event) {
    const kind = event.type;
    if (this.terminal !== null) {
      this.#add(
        "one-terminal",
        `a second terminal event ${kind} (first ${this.terminal})`,
      );
      return;
    }
    if (kind !== "response.failed" && this.state !== IN_PROGRESS) {
      this.#add(
        "in-progress-first",
        `${kind} while the response is ${this.state || "not created"}`,
      );
    }
    this.terminal = kind;
    this.state = kind.startsWith("response.")
      ? kind.slice("response.".length)
      : kind;
    const response = this.#checkResponse(event, kind);
    if (kind !== "response.failed") {
      for (const item of this.order) {
        if (item.status === IN_PROGRESS) {
          this.#add(
            "item-closed",
            `${kind} while item ${pyRepr(item.id)} is still in progress`,
          );
        }
      }
    }
    if (this.incompleteItem !== null && kind !== "response.incomplete") {
      this.#add(
        "incomplete-item",
        `item ${pyRepr(this.incompleteItem.id)} ended incomplete, but the response ends with ${kind}`,
      );
    }
    if (this.errorSeq !== null && kind !== "response.failed") {
      this.#add(
        "error-then-failed",
        `the error event at seq ${pyStr(this.errorSeq)} is followed by ${kind}, not response.failed`,
      );
    }
    if (response !== null && kind !== "response.failed")
      this.#checkOutput(get(response, "output"), kind);
  }

  #checkOutput(output, kind) {
    if (!Array.isArray(output)) return;
    if (output.length !== this.order.length) {
      this.#add(
        "terminal-output",
        `${kind} lists ${output.length} output items, but ${this.order.length} were streamed`,
      );
      return;
    }
    output.forEach((given, i) => {
      const item = this.order[i];
      if (item.done === null) return; // never finished: `item-closed` has said so
      const final = comparable(given);
      const built = comparable(item.done);
      if (!pyEqual(final, built)) {
        this.#add(
          "terminal-output",
          `${kind} output[${i}] differs from the item streamed at output_index ${i} (${difference(final, built)})`,
        );
      }
    });
  }

  onError() {
    if (this.errorSeq === null) this.errorSeq = this.seq;
  }

  // -- items -----------------------------------------------------------------------------------

  onItemAdded(event) {
    const item = get(event, "item");
    if (!isObject(item)) return;
    const itemId = asKey(get(item, "id"));
    let index = get(event, "output_index");
    if (this.items.has(itemId)) {
      this.#add(
        "item-added-first",
        `item ${pyRepr(itemId)} added a second time`,
      );
      return;
    }
    if (!pyEqual(index, this.nextIndex)) {
      this.#add(
        "output-index",
        `item ${pyRepr(itemId)} added at output_index ${pyStr(index)}; the next index is ${this.nextIndex}`,
      );
    }
    if (!isInt(index)) index = this.nextIndex;
    this.nextIndex = Number(index) + 1;
    const status = Object.hasOwn(item, "status") ? item.status : IN_PROGRESS;
    if (!pyEqual(status, IN_PROGRESS)) {
      this.#add(
        "item-in-progress",
        `item ${pyRepr(itemId)} is added with status ${pyRepr(get(item, "status"))}, not 'in_progress'`,
      );
    }
    if (this.incompleteItem !== null) {
      this.#add(
        "incomplete-item",
        `item ${pyRepr(itemId)} added after item ${pyRepr(this.incompleteItem.id)} ended incomplete; an incomplete item must be the last`,
      );
    }
    const tracked = new Item(itemId, index, item);
    this.items.set(itemId, tracked);
    this.order.push(tracked);
  }

  /** The open item an event refers to, reporting unknown, finished or mis-indexed items. */
  #item(event, id = null) {
    const kind = event.type;
    const itemId = asKey(id === null ? event.item_id : id);
    const item = this.items.get(itemId);
    if (item === undefined) {
      this.#add(
        "item-added-first",
        `${kind} for item ${pyRepr(itemId)}, which was never added`,
      );
      return null;
    }
    const index = event.output_index;
    if (!pyEqual(index, item.index)) {
      this.#add(
        "output-index",
        `${kind} for item ${pyRepr(itemId)} has output_index ${pyStr(index)}; the item was added at ${pyStr(item.index)}`,
      );
    }
    if (item.status !== IN_PROGRESS) {
      this.#add(
        "item-in-progress",
        `${kind} for item ${pyRepr(itemId)}, which is already ${item.status}`,
      );
      return null;
    }
    return item;
  }

  onItemDone(event) {
    const final = get(event, "item");
    if (!isObject(final)) return;
    const item = this.#item(event, get(final, "id"));
    if (item === null) return;
    for (const part of item.parts.values()) {
      if (part.state !== "closed") {
        this.#add(
          "part-bracket",
          `item ${pyRepr(item.id)} done while content part ${pyStr(part.index)} is still open`,
        );
      }
    }
    for (const part of item.summary.values()) {
      if (part.state !== "closed") {
        this.#add(
          "summary-part-bracket",
          `item ${pyRepr(item.id)} done while summary part ${pyStr(part.index)} is still open`,
        );
      }
    }
    const status = get(final, "status");
    const finished = status === "completed" || status === "incomplete";
    // Items without a status in their schema (reasoning, unknown types) finish as completed.
    if (!finished && (status !== null || ITEM_STATUS_TYPES.has(item.type))) {
      this.#add(
        "item-in-progress",
        `item ${pyRepr(item.id)} done with status ${pyRepr(status)}, not 'completed' or 'incomplete'`,
      );
    }
    item.status = finished ? status : "completed";
    if (status === "incomplete" && this.incompleteItem === null)
      this.incompleteItem = item;
    item.done = { ...final };
    this.#checkBuilt(item, final);
  }

  /** The finished item holds what its deltas built. */
  #checkBuilt(item, final) {
    if (item.args.length || item.argsDone !== null) {
      const built = item.argsDone !== null ? item.argsDone : item.args.join("");
      if (!pyEqual(get(final, "arguments"), built)) {
        this.#add(
          "item-equals-built",
          `item ${pyRepr(item.id)} arguments ${short(get(final, "arguments"))} differ from the streamed ${short(built)}`,
        );
      }
    }
    for (const [name, parts] of [
      ["content", item.parts],
      ["summary", item.summary],
    ]) {
      if (!parts.size) continue;
      const listed = get(final, name);
      if (!Array.isArray(listed)) {
        this.#add(
          "item-equals-built",
          `item ${pyRepr(item.id)} has no \`${name}\` list, but ${parts.size} ${name} parts were streamed`,
        );
        continue;
      }
      for (const part of parts.values()) {
        const index = part.index;
        const got =
          isInt(index) && index >= 0 && index < listed.length
            ? listed[Number(index)]
            : null;
        if (!isObject(got)) {
          this.#add(
            "item-equals-built",
            `item ${pyRepr(item.id)} ${name}[${pyStr(index)}] is missing, but it was streamed`,
          );
          continue;
        }
        const field = textField(
          pyTruthy(get(got, "type")) ? get(got, "type") : part.kind,
        );
        const built = part.text !== null ? part.text : part.deltas.join("");
        if (
          (part.deltas.length || part.text !== null) &&
          !pyEqual(get(got, field), built)
        ) {
          this.#add(
            "item-equals-built",
            `item ${pyRepr(item.id)} ${name}[${pyStr(index)}].${field} ${short(get(got, field))} differs from the streamed ${short(built)}`,
          );
        }
      }
    }
  }

  // -- content parts ---------------------------------------------------------------------------

  openPart(event, { key, where, rule, what }) {
    const item = this.#item(event);
    if (item === null) return;
    const parts = item[where];
    const index = asKey(get(event, key));
    if (parts.has(index)) {
      this.#add(
        rule,
        `${what} ${pyStr(index)} of item ${pyRepr(item.id)} added a second time`,
      );
      return;
    }
    for (const other of parts.values()) {
      if (other.state !== "closed") {
        this.#add(
          rule,
          `${what} ${pyStr(index)} of item ${pyRepr(item.id)} added while ${what} ${pyStr(other.index)} is still open`,
        );
      }
    }
    if (!pyEqual(index, parts.size)) {
      this.#add(
        rule,
        `${what} of item ${pyRepr(item.id)} added at index ${pyStr(index)}; the next index is ${parts.size}`,
      );
    }
    parts.set(index, new Part(index, get(event, "part")));
  }

  part(event, { key, where, rule, what }, states = OPEN) {
    const item = this.#item(event);
    if (item === null) return null;
    const index = asKey(event[key]);
    let part = item[where].get(index);
    const kind = event.type;
    if (part === undefined) {
      this.#add(
        rule,
        `${kind} for ${what} ${pyStr(index)} of item ${pyRepr(item.id)}, which was never added`,
      );
      if (kind.endsWith(".delta")) {
        // Report once, then track the part as if it had been added.
        part = new Part(index, null);
        item[where].set(index, part);
        return part;
      }
      return null;
    }
    if (!states.includes(part.state)) {
      const after = part.state === "text_done" ? "done event" : "close";
      this.#add(
        rule,
        `${kind} for ${what} ${pyStr(index)} of item ${pyRepr(item.id)} after its ${after}`,
      );
      return null;
    }
    return part;
  }

  addDelta(part, event) {
    const delta = event.delta;
    if (part !== null && typeof delta === "string") part.deltas.push(delta);
  }

  closeText(part, event, field) {
    const text = get(event, field);
    const joined = part.deltas.join("");
    if (typeof text === "string" && text !== joined) {
      this.#add(
        "delta-equals-done",
        `${event.type} ${field} ${short(text)} differs from the ${part.deltas.length} deltas joined ${short(joined)}`,
      );
    }
    part.text = typeof text === "string" ? text : joined;
    part.state = "text_done";
  }

  closePart(event, area) {
    const part = this.part(event, area, OPEN_OR_TEXT_DONE);
    if (part === null) return;
    if (
      part.state !== "text_done" &&
      typeof part.kind === "string" &&
      Object.hasOwn(TEXT_PARTS, part.kind)
    ) {
      this.#add(
        "text-done",
        `${event.type} for ${area.what} ${pyStr(part.index)} of item ${pyRepr(get(event, "item_id"))} before its ${TEXT_PARTS[part.kind].done}`,
      );
    }
    const final = get(event, "part");
    if (isObject(final) && (part.deltas.length || part.text !== null)) {
      const field = textField(
        pyTruthy(get(final, "type")) ? get(final, "type") : part.kind,
      );
      const built = part.text !== null ? part.text : part.deltas.join("");
      if (!pyEqual(get(final, field), built)) {
        this.#add(
          "delta-equals-done",
          `${event.type} part.${field} ${short(get(final, field))} differs from the streamed ${short(built)}`,
        );
      }
    }
    part.state = "closed";
  }

  // -- function call arguments -----------------------------------------------------------------

  onArgsDelta(event) {
    const item = this.#item(event);
    if (item === null) return;
    if (item.argsDone !== null) {
      this.#add(
        "item-in-progress",
        `arguments delta for item ${pyRepr(item.id)} after its arguments were done`,
      );
      return;
    }
    if (typeof get(event, "delta") === "string") item.args.push(event.delta);
  }

  onArgsDone(event) {
    const item = this.#item(event);
    if (item === null) return;
    const args = get(event, "arguments");
    const joined = item.args.join("");
    if (typeof args === "string" && args !== joined) {
      this.#add(
        "delta-equals-done",
        `response.function_call_arguments.done arguments ${short(args)} differ from the ${item.args.length} deltas joined ${short(joined)}`,
      );
    }
    item.argsDone = typeof args === "string" ? args : joined;
  }
}

function isInt(value) {
  return Number.isInteger(value) || typeof value === "boolean";
}

function textField(kind) {
  const key = asKey(kind);
  return (typeof key === "string" && TEXT_FIELD.get(key)) || "text";
}

// The parts of an item: the field of the event that names one, where the item keeps them, the
// rule their brackets break, and what a message calls one.
const CONTENT = Object.freeze({
  key: "content_index",
  where: "parts",
  rule: "part-bracket",
  what: "content part",
});
const SUMMARY = Object.freeze({
  key: "summary_index",
  where: "summary",
  rule: "summary-part-bracket",
  what: "summary part",
});
// The states of a part an event may find it in.
const OPEN = Object.freeze(["open"]);
const OPEN_OR_TEXT_DONE = Object.freeze(["open", "text_done"]);

// The handler of each event type the rules read; other known types only go through the ordering checks.
const HANDLERS = {
  "response.created": StreamChecker.prototype.onCreated,
  "response.queued": StreamChecker.prototype.onQueued,
  "response.in_progress": StreamChecker.prototype.onInProgress,
  "response.completed": StreamChecker.prototype.onTerminal,
  "response.incomplete": StreamChecker.prototype.onTerminal,
  "response.failed": StreamChecker.prototype.onTerminal,
  "response.output_item.added": StreamChecker.prototype.onItemAdded,
  "response.output_item.done": StreamChecker.prototype.onItemDone,
  "response.content_part.added"(event) {
    this.openPart(event, CONTENT);
  },
  "response.content_part.done"(event) {
    this.closePart(event, CONTENT);
  },
  "response.reasoning_summary_part.added"(event) {
    this.openPart(event, SUMMARY);
  },
  "response.reasoning_summary_part.done"(event) {
    this.closePart(event, SUMMARY);
  },
  "response.output_text.annotation.added"(event) {
    this.part(event, CONTENT);
  },
  "response.reasoning_summary_text.delta"(event) {
    this.addDelta(this.part(event, SUMMARY), event);
  },
  "response.reasoning_summary_text.done"(event) {
    const part = this.part(event, SUMMARY);
    if (part !== null) this.closeText(part, event, "text");
  },
  "response.function_call_arguments.delta": StreamChecker.prototype.onArgsDelta,
  "response.function_call_arguments.done": StreamChecker.prototype.onArgsDone,
  error: StreamChecker.prototype.onError,
};
for (const [kind, info] of Object.entries(EVENT_PROTOCOL)) {
  // The text of a content part: its deltas, and the `.done` event that closes it.
  if (Object.hasOwn(HANDLERS, kind) || info.appliesTo !== "content_part")
    continue;
  if (DONE_FIELD.has(kind)) {
    HANDLERS[kind] = function (event) {
      const part = this.part(event, CONTENT);
      if (part !== null) this.closeText(part, event, DONE_FIELD.get(kind));
    };
  } else if (info.accumulates && DONE_FIELD.has(info.accumulates.done)) {
    HANDLERS[kind] = function (event) {
      this.addDelta(this.part(event, CONTENT), event);
    };
  }
}

// What the checker does with each event type the protocol knows, looked up once per run of a type.
const KIND_RULES = new Map(
  Object.keys(EVENT_PROTOCOL).map((kind) => {
    const requires = RESPONSE_STATES.get(kind);
    const rules = {
      handler: HANDLERS[kind] ?? null,
      requires: requires && requires.length ? requires : null,
      terminal: TERMINAL_EVENT_TYPES.has(kind),
    };
    return [kind, Object.freeze(rules)];
  }),
);

/** Every violation in a whole SSE capture. */
export function checkSse(source, options) {
  return new StreamChecker(options).checkSse(source);
}

/** An item without its opaque fields (which a server may re-encode) and its null fields. */
function comparable(item) {
  if (isObject(item)) {
    item = Object.fromEntries(
      Object.entries(item).filter(([key]) => !OPAQUE_FIELDS.has(key)),
    );
  }
  return stripNone(item);
}

function stripNone(value) {
  if (Array.isArray(value)) return value.map(stripNone);
  if (isObject(value)) {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== null)
        .map(([k, v]) => [k, stripNone(v)]),
    );
  }
  return value;
}

/** Where two JSON values first differ, for a readable message. */
function difference(a, b, path = "") {
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort(
      byCodePoint,
    );
    for (const key of keys) {
      const x = get(a, key);
      const y = get(b, key);
      if (!pyEqual(stripNone(x), stripNone(y)))
        return difference(x, y, `${path}.${key}`);
    }
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    for (let i = 0; i < a.length; i++) {
      if (!pyEqual(stripNone(a[i]), stripNone(b[i])))
        return difference(a[i], b[i], `${path}[${i}]`);
    }
  }
  return `${path.replace(/^\.+/, "") || "value"}: ${short(a)} != ${short(b)}`;
}
