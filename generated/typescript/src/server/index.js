// What a TypeScript provider needs to serve Open Responses: the emitter and its steps.

export {
  DONE_FRAME,
  emitEvents,
  Emitter,
  newId,
  OpenResponsesError,
  ProviderError,
  responseSkeleton,
  sseFrame,
  StreamViolation,
  ToolPolicy,
} from "./emitter.js";
