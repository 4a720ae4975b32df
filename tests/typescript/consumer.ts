// A consumer of the package under `tsc --strict`: narrowing on `type` must type each member.
import {
  EVENT_TYPES,
  OpenResponses,
  isKnownEvent,
  parseEvent,
  type ItemField,
  type ResponseResource,
  type StreamingEvent,
} from "openresponses-runtime";

const event: StreamingEvent = parseEvent('{"type": "zeta:custom"}');
if (event.type === "response.output_text.delta") {
  const delta: string = event.delta;
  console.log(delta);
}
switch (event.type) {
  case "response.completed": {
    const response: ResponseResource = event.response;
    console.log(response.id);
    break;
  }
  default:
    console.log(String(event.type));
}
if (isKnownEvent(event)) console.log(EVENT_TYPES[event.type].category);

export function describe(item: ItemField): string {
  return item.type === "message" ? item.role : String(item.type);
}

export async function run(client: OpenResponses): Promise<number> {
  const stream = await client.responses.create({
    model: "m",
    input: "hi",
    stream: true,
  });
  for await (const e of stream) {
    if (e.type === "response.output_text.delta") console.log(e.delta);
  }
  const response = await client.responses.create({ model: "m", input: "hi" });
  const again = await client.responses.retrieve(response.id);
  const replay = await client.responses.retrieve(response.id, {
    stream: true,
    starting_after: 3,
  });
  console.log(replay.lastSequence);
  const items = await client.responses.inputItems.list(again.id, { limit: 2 });
  const counted = await client.responses.inputTokens.count({ input: "hi" });
  return items.data.length + response.output.length + counted.input_tokens;
}
