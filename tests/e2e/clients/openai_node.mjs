// The official `openai` npm package, unchanged, against BASE_URL: create, stream, parse with a zod
// format, a function tool round trip, and a WebSocket turn. Prints one JSON object of what it saw
// (tests/e2e/test_clients_node.py).
import OpenAI from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { ResponsesWS } from "openai/resources/responses/ws";
import { z } from "zod";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, maxRetries: 0 });

const created = await client.responses.create({ model: "demo", input: "Hello there" });

const deltas = [];
const stream = await client.responses.create({ model: "demo", input: "Stream this please", stream: true });
let last;
for await (const event of stream) {
  if (event.type === "response.output_text.delta") deltas.push(event.delta);
  last = event.type;
}

const Forecast = z.object({ city: z.string(), high: z.number().int() });
const parsed = await client.responses.parse({
  model: "demo",
  input: "Forecast for Paris",
  text: { format: zodTextFormat(Forecast, "forecast") },
});

const weather = {
  type: "function",
  name: "get_weather",
  description: "Get the current weather in a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
  strict: true,
};
const asked = await client.responses.create({ model: "demo", input: "What is the weather in Paris?", tools: [weather] });
const call = asked.output.find((item) => item.type === "function_call");
const answered = await client.responses.create({
  model: "demo",
  previous_response_id: asked.id,
  tools: [weather],
  input: [{ type: "function_call_output", call_id: call.call_id, output: `Sunny in ${JSON.parse(call.arguments).city}` }],
});

const socket = new ResponsesWS(client);
socket.send({ type: "response.create", model: "demo", input: "Hello over a socket" });
let overSocket;
for await (const event of socket.stream()) {
  if (event.type === "message" && event.message.type === "response.completed") {
    overSocket = event.message.response.output[0].content[0].text;
    break;
  }
  if (event.type === "error" || event.type === "close") throw new Error(`socket: ${JSON.stringify(event)}`);
}
socket.close();

console.log(
  JSON.stringify({
    created: created.output_text,
    streamed: deltas.join(""),
    deltas: deltas.length,
    last,
    parsed: parsed.output_parsed,
    call: [call.name, JSON.parse(call.arguments)],
    answered: answered.output_text,
    overSocket,
  }),
);
