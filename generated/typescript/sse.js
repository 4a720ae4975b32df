// The package's SSE reader lives in src/streaming/sse.js (the stream checker reads with it too);
// the root module, which the client and the package's index use, gives the same one.
export { readSSE, SSEDecoder } from "./src/streaming/sse.js";
