import * as z from "zod";

/**
 * A union told apart by its tag: the value's `key` (then `second`, where several members share a
 * tag) picks the one member whose schema checks it, so no member is tried in vain. A value
 * without a tag takes the tag an `untagged` rule implies (a field only that member has), else
 * `defaultTag`. An open union sends tags it does not know to `fallback`, which keeps every field.
 * `variants` is a function, called on first use, so members may be defined after the union.
 */
export function taggedUnion({
  key,
  second,
  defaultTag,
  untagged = [],
  variants,
  fallback,
}) {
  let table;
  let shared;
  const pick = (value) => {
    if (table === undefined) {
      table = new Map(Object.entries(variants()));
      shared = new Set([...table.keys()].map((k) => k.split("|")[0]));
    }
    if (typeof value === "string") return table.get("string");
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      return undefined;
    }
    let tag = value[key];
    if (tag === undefined || tag === null) {
      const rule = untagged.find(([field]) => value[field] != null);
      tag = rule ? rule[1] : defaultTag;
    }
    if (typeof tag !== "string") return fallback;
    if (second !== undefined && !table.has(tag) && shared.has(tag)) {
      return table.get(`${tag}|${value[second]}`);
    }
    return table.get(tag) ?? fallback;
  };
  return z.unknown().transform((value, ctx) => {
    const schema = pick(value);
    if (schema === undefined) {
      ctx.addIssue({
        code: "custom",
        message: `no member of the union matches ${describe(value, key, second)}`,
        input: value,
      });
      return z.NEVER;
    }
    const result = schema.safeParse(value);
    if (result.success) return result.data;
    for (const issue of result.error.issues) ctx.addIssue({ ...issue });
    return z.NEVER;
  });
}

function describe(value, key, second) {
  if (value === null || typeof value !== "object") return typeof value;
  const tag = JSON.stringify(value[key] ?? null);
  return second === undefined
    ? `${key} ${tag}`
    : `${key} ${tag}, ${second} ${JSON.stringify(value[second] ?? null)}`;
}

/** An array schema with at least `min` and at most `max` items. */
export function limitItems(schema, min, max) {
  const low = min > 0 ? schema.min(min) : schema;
  return max === Infinity ? low : low.max(max);
}

/** A record schema with at most `max` keys. */
export function limitKeys(schema, max) {
  return schema.refine((value) => Object.keys(value).length <= max, {
    message: `at most ${max} keys`,
  });
}
