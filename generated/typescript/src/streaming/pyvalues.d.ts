/** Python's `==` between two JSON values. */
export declare function pyEqual(a: unknown, b: unknown): boolean;
/** Python's truthiness of a JSON value. */
export declare function pyTruthy(value: unknown): boolean;
/** Whether a value is a JSON object (a Python dict). */
export declare function isObject(
  value: unknown,
): value is Record<string, unknown>;
/** `obj.get(key)`: the value, or null when absent. */
export declare function get(obj: Record<string, unknown>, key: string): unknown;
/** Python's `repr` of a JSON value. */
export declare function pyRepr(value: unknown): string;
/** Python's `str` of a JSON value, as an f-string writes it. */
export declare function pyStr(value: unknown): string;
/** The repr of a value, cut to `limit` characters with `...`. */
export declare function short(value: unknown, limit?: number): string;
/** Python's sort of strings, by code point. */
export declare function byCodePoint(a: string, b: string): number;
