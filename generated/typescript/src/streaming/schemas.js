// Schema validation for the stream checker: each core event through the zod schema `parseEvent`
// uses for its type, and the accumulated response through the spec's response object (found by
// the build as the create operation's answer, see bindings.js).

import { MISSING, ResponseObject } from "../../bindings.js";
import { describeIssues, schemaIssues } from "../../errors.js";
import { EVENT_TYPES } from "../../events.js";

/**
 * What went wrong, as the Python checker summarizes it: up to `limit` issues, `path: message`;
 * given the `value` checked, a missing field says "Field required", as pydantic does.
 */
export function summarizeIssues(error, limit = 3, value = undefined) {
  return describeIssues(schemaIssues(error, value), limit);
}

// Each type's schema in a Map: a lookup by a type string read from JSON costs less there than on
// the registry's object.
const SCHEMAS = new Map(
  Object.values(EVENT_TYPES).map(({ type, schema }) => [type, schema]),
);

/**
 * Checks one core event against its type's zod schema (`safeParse`, so nothing is thrown):
 * `{ ok: true, event }` with the parsed event, or `{ ok: false, message }`. A type without a
 * schema here is left as it is (null). Pass it to `StreamChecker` as `{ validate: validateEvent }`.
 */
export function validateEvent(event, type) {
  const schema = SCHEMAS.get(type);
  if (schema === undefined) return null;
  const outcome = schema.safeParse(event);
  return outcome.success
    ? { ok: true, event: outcome.data }
    : { ok: false, message: summarizeIssues(outcome.error, 3, event) };
}

/**
 * The response as a validated response object; throws a `ZodError` if it breaks the schema, and an
 * `Error` if the spec the package was built from defines no response object.
 */
export function validateResponse(response) {
  if (ResponseObject === null) throw new Error(MISSING.join("; "));
  return ResponseObject.parse(response);
}
