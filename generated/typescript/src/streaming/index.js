// The stream checker, the response accumulator and the SSE reader, with the protocol tables they read.

import { ResponseAccumulator as Accumulator } from "./accumulator.js";
import { validateResponse } from "./schemas.js";

export { checkSse, StreamChecker, Violation } from "./checker.js";
export { summarizeIssues, validateEvent, validateResponse } from "./schemas.js";

/** Builds the response of a stream from its events; `result()` validates it with the zod schema of the spec's response object. */
export class ResponseAccumulator extends Accumulator {
  constructor(options = {}) {
    super({ validate: validateResponse, ...options });
  }
}
export { DONE, iterSse, readEvents, readSSE, SSEDecoder } from "./sse.js";
export {
  CUSTOM_EVENT_PATTERN,
  EVENT_PROTOCOL,
  ITEM_STATUS_TYPES,
  OPAQUE_FIELDS,
  RESPONSE_STATUSES,
  RULES,
  TERMINAL_EVENT_TYPES,
  TEXT_PARTS,
  WARNING_RULES,
} from "./protocol.js";
