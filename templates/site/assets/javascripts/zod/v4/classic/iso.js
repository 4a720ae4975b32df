import * as core from "../core/index.js";
import { ZodISODate, ZodISODateTime, ZodISODuration, ZodISOTime } from "./schemas.js";
export { ZodISODate, ZodISODateTime, ZodISODuration, ZodISOTime } from "./schemas.js";
export function datetime(params) {
    return core._isoDateTime(ZodISODateTime, params);
}
export function date(params) {
    return core._isoDate(ZodISODate, params);
}
export function time(params) {
    return core._isoTime(ZodISOTime, params);
}
export function duration(params) {
    return core._isoDuration(ZodISODuration, params);
}
