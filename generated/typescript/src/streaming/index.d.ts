export {
  checkSse,
  StreamChecker,
  Violation,
  type EventValidator,
  type StreamCheckerOptions,
  type ValidationResult,
} from "./checker.js";
export { ResponseAccumulator } from "./accumulator.js";
export { summarizeIssues, validateEvent, validateResponse } from "./schemas.js";
export {
  DONE,
  iterSse,
  readEvents,
  readSSE,
  SSEDecoder,
  type SSEMessage,
} from "./sse.js";
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
  type EventProtocol,
} from "./protocol.js";
