// The stream checker, the response accumulator and the SSE reader, with the protocol tables they read.

export { checkSse, StreamChecker, Violation } from "./checker.js";
export { ResponseAccumulator } from "./accumulator.js";
export { summarizeIssues, validateEvent, validateResponse } from "./schemas.js";
export {
  DONE,
  iterSse,
  readEvents,
  readSse,
  readSSE,
  SSEDecoder,
} from "./sse.js";
export {
  CUSTOM_EVENT_PATTERN,
  EVENT_TYPES,
  ITEM_STATUS_TYPES,
  OPAQUE_FIELDS,
  RESPONSE_STATUSES,
  RULES,
  TERMINAL_EVENT_TYPES,
  TEXT_PARTS,
  WARNING_RULES,
} from "./protocol.js";
