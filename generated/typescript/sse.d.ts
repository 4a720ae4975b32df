export { readSSE, SSEDecoder, type SSEMessage } from "./src/streaming/sse.js";
