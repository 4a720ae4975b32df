import type * as z from "zod";

/**
 * The `type` of a value whose type the spec does not define: at run time, the string the value
 * carried. It is a string (`const t: string = value.type` compiles), but one no known type
 * matches (one that starts with U+0000, as no type of the spec or of a vendor does), so comparing
 * `value.type` with a known type still narrows to that type's member alone. A type the spec
 * does not know is compared as a plain string: `const t: string = value.type; t === "zeta:thing"`.
 */
export type UnknownType = `\u0000${string}`;

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
