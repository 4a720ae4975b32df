import type { ResponseObject } from "../../bindings.js";
import type { ValidationResult } from "./checker.js";

/**
 * Up to `limit` issues of a zod error as `path: message`, joined by `; `, as the Python checker
 * says them; given the `value` checked, a missing field says "Field required".
 */
export declare function summarizeIssues(
  error: {
    readonly issues: readonly {
      path: readonly PropertyKey[];
      code: string;
      message: string;
    }[];
  },
  limit?: number,
  value?: unknown,
): string;

/**
 * Checks one core event against its type's zod schema (the one `parseEvent` uses), without
 * throwing. Pass it to `StreamChecker` as `{ validate: validateEvent }`.
 */
export declare function validateEvent(
  event: Record<string, unknown>,
  type: string,
): ValidationResult | null;

/** The response as a validated response object; throws a `ZodError` if it breaks the schema. */
export declare function validateResponse(response: unknown): ResponseObject;
