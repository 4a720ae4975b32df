import type * as z from "zod";

/**
 * The schema of an object that parses to `T`: a `z.ZodObject` (its `.shape`, `.extend`, `.pick`,
 * `.omit`) whose `parse` gives `T` itself.
 */
export type ObjectSchema<T> = z.ZodType<T> &
  z.ZodObject<{ [K in keyof T]-?: z.ZodType<T[K]> }, z.core.$loose>;

/** A union told apart by its tag (see union.js). */
export declare function taggedUnion(spec: {
  key: string;
  second?: string;
  defaultTag?: string;
  untagged?: ReadonlyArray<readonly [string, string]>;
  variants: () => Record<string, z.ZodType>;
  fallback?: z.ZodType;
}): z.ZodType;

/** An array schema with at least `min` and at most `max` items. */
export declare function limitItems<T extends z.ZodArray>(
  schema: T,
  min: number,
  max: number,
): T;

/** A record schema with at most `max` keys. */
export declare function limitKeys<T extends z.ZodType>(
  schema: T,
  max: number,
): T;
