import type * as z from "zod";

/**
 * `schema` with what its types cannot say (`rules`, a part of a JSON Schema) checked at run time
 * on the value as it came; `$ref`s in `rules` name members of `models`. With `keepsProto`, only a
 * value's own keys are read, `__proto__` among them (see keywords.js).
 */
export declare function checked<T extends z.ZodType>(
  schema: T,
  rules: object | null,
  models: Record<string, unknown>,
  keepsProto?: boolean,
): z.ZodType<z.output<T>>;

/** The first way `value` (at JSON pointer `at`) breaks `schema`, or null if it meets it. */
export declare function firstProblem(
  schema: unknown,
  value: unknown,
  models: Record<string, unknown>,
  at: string,
): string | null;
