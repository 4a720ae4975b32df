// Must NOT compile: a field of one event type, read before narrowing on `type`.
import { parseEvent } from "openresponses-runtime";

const event = parseEvent("{}");
console.log(event.delta);
