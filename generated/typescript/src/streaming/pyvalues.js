// JSON values as the Python runtime sees them: its equality (1 == 1.0 == true), its truthiness,
// and its repr and str, so that the checker's messages read exactly as the Python checker's do.

/** Python's `==` between two JSON values. */
export function pyEqual(a, b) {
  if (a === b) return true;
  if (a === undefined) a = null;
  if (b === undefined) b = null;
  if (typeof a === "boolean") a = Number(a);
  if (typeof b === "boolean") b = Number(b);
  if (
    a === null ||
    b === null ||
    typeof a !== "object" ||
    typeof b !== "object"
  ) {
    return a === b;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length)
      return false;
    return a.every((value, i) => pyEqual(value, b[i]));
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && pyEqual(a[key], b[key]));
}

/** Python's truthiness of a JSON value. */
export function pyTruthy(value) {
  if (value === null || value === undefined) return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  return Boolean(value);
}

/** Whether a value is a JSON object (a Python dict). */
export function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** `obj.get(key)`: the value, or null when absent. */
export function get(obj, key) {
  return Object.hasOwn(obj, key) ? obj[key] : null;
}

// Python's str.isprintable() is false for these categories (but true for the ASCII space).
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

function hex(codePoint, width) {
  return codePoint.toString(16).padStart(width, "0");
}

function stringRepr(text) {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of text) {
    const code = ch.codePointAt(0);
    if (ch === quote || ch === "\\") out += "\\" + ch;
    else if (ch === "\t") out += "\\t";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (code < 0x20 || code === 0x7f) out += "\\x" + hex(code, 2);
    else if (code < 0x7f || !UNPRINTABLE.test(ch)) out += ch;
    else if (code <= 0xff) out += "\\x" + hex(code, 2);
    else if (code <= 0xffff) out += "\\u" + hex(code, 4);
    else out += "\\U" + hex(code, 8);
  }
  return out + quote;
}

function numberRepr(value) {
  if (Number.isNaN(value)) return "nan";
  if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
  // JSON keeps no difference between 1 and 1.0 once parsed: an integral value reads as an int.
  if (Number.isInteger(value) && !Object.is(value, -0)) {
    return Math.abs(value) < 2 ** 53 ? String(value) : BigInt(value).toString();
  }
  if (Object.is(value, -0)) return "-0.0";
  const [mantissa, exp] = value.toExponential().split("e");
  const exponent = Number(exp);
  if (exponent < -4 || exponent >= 16) {
    const sign = exponent < 0 ? "-" : "+";
    return `${mantissa}e${sign}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  const text = String(value);
  return text.includes(".") ? text : `${text}.0`;
}

/** Python's `repr` of a JSON value. */
export function pyRepr(value) {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "string") return stringRepr(value);
  if (typeof value === "number") return numberRepr(value);
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(", ")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value).map(
      ([k, v]) => `${stringRepr(k)}: ${pyRepr(v)}`,
    );
    return `{${entries.join(", ")}}`;
  }
  return String(value);
}

/** Python's `str` of a JSON value, as an f-string writes it. */
export function pyStr(value) {
  return typeof value === "string" ? value : pyRepr(value);
}

/** The repr of a value, cut to `limit` characters with `...`. */
export function short(value, limit = 40) {
  const chars = Array.from(pyRepr(value));
  return chars.length <= limit
    ? chars.join("")
    : chars.slice(0, limit - 3).join("") + "...";
}

/** Python's sort of strings, by code point. */
export function byCodePoint(a, b) {
  const x = Array.from(a, (c) => c.codePointAt(0));
  const y = Array.from(b, (c) => c.codePointAt(0));
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i] - y[i];
  }
  return x.length - y.length;
}
