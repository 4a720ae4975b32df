// The client against a live `orspec serve` (base URL and key in argv): prints one JSON report.
import {
  AuthenticationError,
  NotFoundError,
  OpenResponses,
} from "openresponses-runtime";
import { StreamChecker, validateEvent } from "openresponses-runtime/streaming";

const [base, key] = process.argv.slice(2);
const client = new OpenResponses({ baseURL: base, apiKey: key });
const report = {};
const created = await client.responses.create({
  model: "demo",
  input: "hello",
});
report.status = created.status;
const stream = await client.responses.create({
  model: "demo",
  input: "hello",
  stream: true,
});
report.streamed = [];
for await (const event of stream) report.streamed.push(event.type);
report.streamSawDone = stream.sawDone;
const live = await client.responses.create({
  model: "demo",
  input: "hello there",
  stream: true,
});
const checker = new StreamChecker({ validate: validateEvent });
report.liveViolations = (await checker.checkEvents(live)).map(String);
report.liveEvents = checker.events;
const helped = client.responses.stream({ model: "demo", input: "hello" });
const deltas = [];
helped.on("response.output_text.delta", (event) => deltas.push(event.delta));
const final = await helped.finalResponse();
report.helped = {
  text: await helped.finalText(),
  deltas: deltas.join(""),
  outputText: final.output_text,
  status: final.status,
  sawDone: helped.sawDone,
  issues: helped.issues.length,
};
const created2 = await client.responses.create({ model: "demo", input: "hi" });
report.createdOutputText = created2.output_text;
report.outputTextEnumerable = Object.keys(created2).includes("output_text");
report.retrieved =
  (await client.responses.retrieve(created.id)).id === created.id;
report.inputItems = (
  await client.responses.inputItems.list(created.id)
).data.length;
const background = await client.responses.create({
  model: "demo",
  input: "hello",
  stream: true,
  background: true,
});
report.background = [];
for await (const event of background)
  report.background.push(event.sequence_number);
const replay = await client.responses.retrieve(background.responseId, {
  stream: true,
  starting_after: 2,
});
report.replayed = [];
for await (const event of replay) report.replayed.push(event.sequence_number);
try {
  await client.responses.retrieve("resp_missing");
} catch (error) {
  report.missing = [error instanceof NotFoundError, error.status, error.code];
}
try {
  await new OpenResponses({ baseURL: base, apiKey: "wrong" }).responses.create({
    model: "demo",
    input: "x",
  });
} catch (error) {
  report.wrongKey = error instanceof AuthenticationError;
}
const counted = await client.responses.inputTokens.count({
  model: "demo",
  input: "hello",
});
report.counted = [counted.object, counted.input_tokens];
report.createdInputTokens = created.usage.input_tokens;
report.deleted = (await client.responses.delete(created.id)).deleted;
console.log(JSON.stringify(report));
