// The Vercel AI SDK's OpenAI Responses model, unchanged, against BASE_URL: generateText, streamText,
// and a tool loop bounded by stopWhen. Prints one JSON object of what it saw (tests/e2e/test_clients_node.py).
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";

const model = createOpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY }).responses("demo");

const generated = await generateText({ model, prompt: "Hello there" });

const streamed = streamText({ model, prompt: "Stream this please" });
const deltas = [];
for await (const delta of streamed.textStream) deltas.push(delta);

const getWeather = tool({
  description: "Get the current weather in a city.",
  inputSchema: jsonSchema({
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false,
  }),
  execute: async ({ city }) => `Sunny in ${city}`,
});
const looped = await generateText({
  model,
  prompt: "What is the weather in Paris?",
  tools: { get_weather: getWeather },
  stopWhen: stepCountIs(3),
});

console.log(
  JSON.stringify({
    generated: generated.text,
    streamed: deltas.join(""),
    deltas: deltas.length,
    looped: looped.text,
    calls: looped.steps.flatMap((step) => step.toolCalls.map((call) => [call.toolName, call.input])),
    finish: looped.finishReason,
  }),
);
