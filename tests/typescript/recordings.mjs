// The client on real traffic: argv is the base URL of the recordings server, then the streams' and
// the bodies' names. Prints one JSON report of what each call read.
import {
  APIResponseValidationError,
  OpenResponses,
} from "openresponses-runtime";

const [base, streams, bodies] = process.argv
  .slice(2)
  .map((arg, i) => (i === 0 ? arg : arg.split(",")));
const told = [];
const client = new OpenResponses({
  baseURL: base,
  apiKey: "sk-test",
  maxRetries: 0,
  onInvalid: (invalid) => told.push(invalid),
});
const strict = new OpenResponses({
  baseURL: base,
  apiKey: "sk-test",
  maxRetries: 0,
  validate: "strict",
});
const report = { streams: {}, bodies: {} };
for (const name of streams) {
  const stream = client.responses.stream({ model: name, input: "hi" });
  const types = [];
  const deltas = [];
  stream.on("event", (event) => types.push(event.type));
  stream.on("response.output_text.delta", (event) => deltas.push(event.delta));
  const final = await stream.finalResponse();
  const reported = stream.issues.filter((i) => i.type !== null);
  let strictError = null;
  try {
    for await (const _ of strict.responses.stream({
      model: name,
      input: "hi",
    }));
  } catch (error) {
    strictError = {
      isValidationError: error instanceof APIResponseValidationError,
      message: error.message,
      eventType: error.eventType,
      status: error.status,
      requestId: error.requestId,
      issues: error.issues,
    };
  }
  report.streams[name] = {
    types,
    invalid: reported.map((i) => [i.type, i.sequenceNumber]),
    messages: reported.map((i) => i.message),
    id: final.id,
    status: final.status,
    outputs: final.output.length,
    outputText: final.output_text,
    deltas: deltas.join(""),
    sawDone: stream.sawDone,
    requestId: stream.eventStream.requestId,
    strictError,
  };
}
for (const name of bodies) {
  const before = told.length;
  const response = await client.responses.create({ model: name, input: "hi" });
  report.bodies[name] = {
    id: response.id,
    outputs: response.output.length,
    reported: told.length - before,
    outputText: response.output_text,
  };
}
report.told = told.length;
console.log(JSON.stringify(report));
