import * as z from "zod";

/**
 * Schema keywords no TypeScript type can say (`if`/`then`/`else`, `propertyNames`,
 * `patternProperties`, `prefixItems`, ...), checked at run time rather than dropped.
 *
 * The build gives each model that needs it the part of its schema such a check enforces (as the
 * Python runtime's `_keywords.py` does): `checked` runs that on the value as it came, then the
 * model's own schema. A `$ref` to a component schema is checked by that schema's model, found in
 * `models` when first needed. With `keepsProto` (an object that declares a key every object
 * inherits: `constructor`, `toString`, `__proto__`), zod reads only the value's own keys, and the
 * parsed value keeps `__proto__` as its own property, which zod would leave out. What this checks
 * is a subset of JSON Schema 2020-12: the keywords a spec puts under those above.
 */
export function checked(schema, rules, models, keepsProto = false) {
  return z.unknown().transform((value, ctx) => {
    const problem = rules ? firstProblem(rules, value, models, "") : null;
    if (problem !== null) {
      ctx.addIssue({ code: "custom", message: problem, input: value });
      return z.NEVER;
    }
    // Keys that every object inherits (`constructor`, `toString`) must not read as given.
    const own = keepsProto && isObject(value);
    const result = schema.safeParse(
      own ? Object.assign(Object.create(null), value) : value,
    );
    if (!result.success) {
      for (const issue of result.error.issues) ctx.addIssue({ ...issue });
      return z.NEVER;
    }
    if (own && Object.hasOwn(value, "__proto__")) {
      // zod passes over a `__proto__` key: its own schema, if declared, checks it here.
      const declared = schema.shape?.["__proto__"];
      const kept = declared
        ? declared.safeParse(value["__proto__"])
        : { success: true, data: value["__proto__"] };
      if (!kept.success) {
        for (const issue of kept.error.issues) {
          ctx.addIssue({ ...issue, path: ["__proto__", ...issue.path] });
        }
        return z.NEVER;
      }
      Object.defineProperty(result.data, "__proto__", {
        value: kept.data,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return result.data;
  });
}

const REF_PREFIX = "#/components/schemas/";

const TYPES = {
  object: isObject,
  array: Array.isArray,
  string: (v) => typeof v === "string",
  boolean: (v) => typeof v === "boolean",
  null: (v) => v === null,
  number: (v) => typeof v === "number",
  integer: (v) => Number.isInteger(v),
};

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function equal(a, b) {
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length &&
      keys.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]))
    );
  }
  return a === b;
}

const patterns = new Map();

function matches(pattern, text) {
  let found = patterns.get(pattern);
  if (found === undefined) {
    found = new RegExp(pattern, "u");
    patterns.set(pattern, found);
  }
  return found.test(text);
}

function escape(key) {
  return key.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** The first way `value` (at JSON pointer `at`) breaks `schema`, or null if it meets it. */
export function firstProblem(schema, value, models, at) {
  const where = at || "/";
  if (schema === true) return null;
  if (schema === false) return `${where}: no value is allowed here`;
  if (!isObject(schema)) return null;
  const sub = (node, v, path = at) => firstProblem(node, v, models, path);
  const ref = schema.$ref;
  if (typeof ref === "string" && ref.startsWith(REF_PREFIX)) {
    const model = models[ref.slice(REF_PREFIX.length)];
    const result = model ? model.safeParse(value) : { success: true };
    if (!result.success) return `${where}: ${result.error.issues[0].message}`;
  }
  if (schema.type !== undefined) {
    const kinds = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!kinds.some((k) => (TYPES[k] ?? (() => true))(value))) {
      return `${where}: expected ${kinds.join(" or ")}`;
    }
  }
  if ("const" in schema && !equal(value, schema.const)) {
    return `${where}: must be ${JSON.stringify(schema.const)}`;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => equal(value, e))) {
    return `${where}: must be one of ${JSON.stringify(schema.enum)}`;
  }
  for (const part of schema.allOf ?? []) {
    const problem = sub(part, value);
    if (problem !== null) return problem;
  }
  if (
    Array.isArray(schema.anyOf) &&
    schema.anyOf.every((m) => sub(m, value) !== null)
  ) {
    return `${where}: matches none of the alternatives`;
  }
  if (
    Array.isArray(schema.oneOf) &&
    schema.oneOf.filter((m) => sub(m, value) === null).length !== 1
  ) {
    return `${where}: must match exactly one alternative`;
  }
  if ("not" in schema && sub(schema.not, value) === null) {
    return `${where}: must not match the schema under \`not\``;
  }
  if ("if" in schema) {
    const branch = sub(schema.if, value) === null ? "then" : "else";
    if (branch in schema) {
      const problem = sub(schema[branch], value);
      if (problem !== null) return problem;
    }
  }
  if (isObject(value)) return object(schema, value, sub, at);
  if (Array.isArray(value)) return array(schema, value, sub, at);
  if (typeof value === "string") return string(schema, value, where);
  if (typeof value === "number") return number(schema, value, where);
  return null;
}

function object(schema, value, sub, at) {
  const where = at || "/";
  for (const key of schema.required ?? []) {
    if (!Object.hasOwn(value, key)) return `${at}/${escape(key)}: required`;
  }
  for (const [key, needed] of Object.entries(schema.dependentRequired ?? {})) {
    const missing = Object.hasOwn(value, key)
      ? needed.filter((k) => !Object.hasOwn(value, k))
      : [];
    if (missing.length) {
      return `${at}/${escape(missing[0])}: required when ${JSON.stringify(key)} is given`;
    }
  }
  for (const [key, node] of Object.entries(schema.dependentSchemas ?? {})) {
    const problem = Object.hasOwn(value, key) ? sub(node, value) : null;
    if (problem !== null) return problem;
  }
  const count = Object.keys(value).length;
  if (schema.minProperties !== undefined && count < schema.minProperties) {
    return `${where}: at least ${schema.minProperties} keys`;
  }
  if (schema.maxProperties !== undefined && count > schema.maxProperties) {
    return `${where}: at most ${schema.maxProperties} keys`;
  }
  const properties = schema.properties ?? {};
  const patterned = Object.entries(schema.patternProperties ?? {});
  const extra = schema.additionalProperties ?? true;
  for (const key of Object.keys(value)) {
    const path = `${at}/${escape(key)}`;
    if (schema.propertyNames !== undefined) {
      const problem = sub(schema.propertyNames, key, path);
      if (problem !== null) {
        return `${path}: the key breaks propertyNames (${problem.split(": ").slice(1).join(": ")})`;
      }
    }
    let matched = Object.hasOwn(properties, key);
    if (matched) {
      const problem = sub(properties[key], value[key], path);
      if (problem !== null) return problem;
    }
    for (const [pattern, node] of patterned) {
      if (!matches(pattern, key)) continue;
      matched = true;
      const problem = sub(node, value[key], path);
      if (problem !== null) return problem;
    }
    if (!matched) {
      const problem = sub(extra, value[key], path);
      if (problem !== null) {
        return extra === false ? `${path}: no such key is allowed` : problem;
      }
    }
  }
  return null;
}

function array(schema, value, sub, at) {
  const where = at || "/";
  if (schema.minItems !== undefined && value.length < schema.minItems) {
    return `${where}: at least ${schema.minItems} items`;
  }
  if (schema.maxItems !== undefined && value.length > schema.maxItems) {
    return `${where}: at most ${schema.maxItems} items`;
  }
  const prefix = schema.prefixItems ?? [];
  for (let i = 0; i < value.length; i++) {
    const node = i < prefix.length ? prefix[i] : (schema.items ?? true);
    const problem = sub(node, value[i], `${at}/${i}`);
    if (problem !== null) {
      return node === false
        ? `${at}/${i}: at most ${prefix.length} items`
        : problem;
    }
  }
  if ("contains" in schema) {
    const found = value.filter(
      (item) => sub(schema.contains, item) === null,
    ).length;
    const least = schema.minContains ?? 1;
    const most = schema.maxContains ?? Infinity;
    if (found < least || found > most) {
      return `${where}: ${found} items match \`contains\`, not between ${least} and ${most}`;
    }
  }
  if (schema.uniqueItems === true) {
    for (let i = 0; i < value.length; i++) {
      if (value.slice(0, i).some((other) => equal(value[i], other))) {
        return `${at}/${i}: items must be unique`;
      }
    }
  }
  return null;
}

function string(schema, value, where) {
  const length = [...value].length;
  if (schema.minLength !== undefined && length < schema.minLength) {
    return `${where}: at least ${schema.minLength} characters`;
  }
  if (schema.maxLength !== undefined && length > schema.maxLength) {
    return `${where}: at most ${schema.maxLength} characters`;
  }
  if (typeof schema.pattern === "string" && !matches(schema.pattern, value)) {
    return `${where}: does not match ${JSON.stringify(schema.pattern)}`;
  }
  return null;
}

function number(schema, value, where) {
  const checks = [
    ["minimum", (b) => value >= b, "at least"],
    ["maximum", (b) => value <= b, "at most"],
    ["exclusiveMinimum", (b) => value > b, "more than"],
    ["exclusiveMaximum", (b) => value < b, "less than"],
    ["multipleOf", (b) => Number.isInteger(value / b), "a multiple of"],
  ];
  for (const [keyword, holds, words] of checks) {
    const bound = schema[keyword];
    if (typeof bound === "number" && !holds(bound)) {
      return `${where}: must be ${words} ${bound}`;
    }
  }
  return null;
}
