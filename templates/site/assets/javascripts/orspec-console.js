// The console on each operation's page: send the operation to a server and see what comes back.
// A JSON answer is shown as returned. An SSE stream is shown event by event as it arrives, each
// checked by the stream checker that `orspec build` generates in TypeScript, against the zod schemas
// of the page's own version (served with the site under assets/orspec/<version>/): a broken rule,
// `schema` included, is marked on its event with the rule's id and the checker's message, as
// `orspec check-stream` reports it, and the response the events build (ResponseAccumulator) is
// shown at the end.
// Path, query and header parameters have their fields; the model picker offers the models of the
// spec's examples; "Copy as curl" writes the request as a command (the key left to an environment
// variable). The server URL, the key and each operation's form stay in this browser tab
// (sessionStorage); nothing is kept beyond it.

const STORE = { base: "orspec-console-base", key: "orspec-console-key" };
const DEFAULT_BASE = "http://127.0.0.1:8000/v1";
// The checker, its zod validation, the accumulator and the SSE reader of one version of the spec.
const MODULES = ["checker.js", "schemas.js", "accumulator.js", "sse.js"];

const checkers = new Map(); // version -> its modules, loaded once, on the first stream
function streaming(version) {
  if (!checkers.has(version)) {
    const urls = MODULES.map(
      (name) => new URL(`../orspec/${encodeURIComponent(version)}/src/streaming/${name}`, import.meta.url).href,
    );
    checkers.set(
      version,
      Promise.all(urls.map((url) => import(url))).then(
        (modules) => Object.assign({}, ...modules),
        () => null, // a site built without the TypeScript output: the stream is shown unchecked
      ),
    );
  }
  return checkers.get(version);
}

function remembered(name, fallback) {
  try {
    return sessionStorage.getItem(name) ?? fallback;
  } catch {
    return fallback;
  }
}

function remember(name, value) {
  try {
    sessionStorage.setItem(name, value);
  } catch {
    // storage off: the value lives in the page only
  }
}

function element(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
}

function field(labelText, input) {
  return element("label", { class: "orspec-console-field" }, element("span", { text: labelText }), input);
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function rulesLink(root, rule) {
  return element("a", { href: `${root}stream-rules/#rule-${rule}`, class: "orspec-rule", text: rule });
}

function violationList(root, violations) {
  const list = element("ul", { class: "orspec-violations" });
  for (const v of violations) {
    const item = element("li", {
      "data-rule": v.rule,
      "data-seq": v.sequenceNumber === null ? "?" : String(v.sequenceNumber),
      class: v.isWarning ? "orspec-warning" : "orspec-error",
    });
    item.append(rulesLink(root, v.rule), ` ${v.message}`);
    list.append(item);
  }
  return list;
}

/**
 * A live list of events, each checked as it comes: `onMessage(event name, data)` adds one, `finish()`
 * says what the stream as a whole broke and shows the response the events build. A WebSocket turn
 * (`overWebSocket`) has no `[DONE]` to end it, so its absence is no finding there.
 */
async function checkedEvents(out, root, version, overWebSocket = false) {
  const mod = await streaming(version);
  const checker = mod ? new mod.StreamChecker({ validate: mod.validateEvent }) : null;
  const accumulator = mod ? new mod.ResponseAccumulator() : null;
  const log = element("ol", { class: "orspec-events" });
  const status = element("p", { class: "orspec-stream-status", text: "streaming…" });
  out.append(status, log);
  if (!mod) status.textContent = "streaming (unchecked: the stream checker's modules are not on this site)…";
  let seen = 0;
  const onMessage = (eventName, data) => {
    const row = element("li", { class: "orspec-event" });
    let type = eventName || "";
    try {
      const parsed = JSON.parse(data);
      type = parsed.type || type;
      if (Number.isInteger(parsed.sequence_number)) row.dataset.seq = String(parsed.sequence_number);
    } catch {
      // not JSON: `[DONE]`, or a broken event the checker names
    }
    row.dataset.type = data === "[DONE]" ? "[DONE]" : type;
    row.append(element("code", { class: "orspec-event-type", text: row.dataset.type }));
    row.append(element("pre", { class: "orspec-event-data" }, element("code", { text: data })));
    if (checker) {
      const parsed = checker.feed(eventName, data);
      if (accumulator && data !== "[DONE]" && parsed && typeof parsed === "object") {
        try {
          accumulator.feed(parsed);
        } catch {
          // a broken event the accumulator cannot place; the checker has said why
        }
      }
      const fresh = checker.violations.slice(seen);
      seen = checker.violations.length;
      const errors = fresh.filter((v) => !v.isWarning);
      row.classList.add(errors.length ? "orspec-invalid" : "orspec-valid");
      if (fresh.length) row.append(violationList(root, fresh));
    }
    log.append(row);
    return type;
  };
  const finish = () => {
    if (!checker) {
      status.textContent = `${log.children.length} events, unchecked`;
      return;
    }
    const kept = (found) => (overWebSocket ? checker.withoutMissingDone(found) : found);
    const atEnd = kept(checker.finish().slice(seen));
    const errors = kept(checker.errors).length;
    status.textContent = errors
      ? `${checker.events} events: ${errors} violation${errors === 1 ? "" : "s"}`
      : `${checker.events} events, every one valid`;
    status.classList.add(errors ? "orspec-invalid" : "orspec-valid");
    if (atEnd.length) out.append(element("p", { text: "At the end of the stream:" }), violationList(root, atEnd));
    out.append(
      element("p", { text: "The response the events build:" }),
      element(
        "pre",
        { class: "orspec-accumulated" },
        element("code", { text: JSON.stringify(accumulator.asObject(), null, 2) }),
      ),
    );
  };
  return { onMessage, finish, decoder: mod ? new mod.SSEDecoder() : null };
}

async function showStream(answer, out, root, version) {
  const { onMessage, finish, decoder } = await checkedEvents(out, root, version);
  const reader = answer.body.getReader();
  const text = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (decoder) for (const message of decoder.feed(value)) onMessage(message.event, message.data);
    else {
      buffer += text.decode(value, { stream: true });
      const blocks = buffer.split(/\r?\n\r?\n/);
      buffer = blocks.pop();
      for (const block of blocks) {
        const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart());
        if (data.length) onMessage(null, data.join("\n"));
      }
    }
  }
  if (decoder) for (const message of decoder.close()) onMessage(message.event, message.data);
  finish();
}

// What ends a WebSocket turn: its terminal event, or an `error` message.
const TURN_ENDS = new Set(["response.completed", "response.failed", "response.incomplete", "error"]);

/** The key as the subprotocol `orspec serve --cors-origin` reads it from (a browser's WebSocket sends no headers). */
function keyProtocol(key) {
  const bytes = String.fromCharCode(...new TextEncoder().encode(key));
  return `openresponses-key.${btoa(bytes).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}`;
}

/** One turn over WebSocket: `response.create` with the body, its events checked as they come. */
async function sendOverWebSocket(form, fields, out, root, version) {
  const key = form.querySelector("[name=key]").value;
  remember(STORE.base, form.querySelector("[name=base]").value.trim().replace(/\/+$/, ""));
  remember(STORE.key, key);
  out.replaceChildren();
  const asked = request(form, fields);
  let body;
  try {
    body = JSON.parse(asked.body ?? "{}");
  } catch (error) {
    out.append(element("p", { class: "orspec-invalid", text: `The body is not JSON: ${error.message}` }));
    return;
  }
  const { stream, ...turn } = body; // every turn streams: WebSocket mode has no `stream`
  const url = asked.url.replace(/^http/, "ws");
  out.append(element("p", { class: "orspec-status", text: `WebSocket ${url}` }));
  const { onMessage, finish } = await checkedEvents(out, root, version, true);
  await new Promise((resolve) => {
    let socket;
    try {
      socket = new WebSocket(url, ["openresponses", keyProtocol(key)]);
    } catch (error) {
      out.append(element("p", { class: "orspec-invalid", text: `Cannot open ${url}: ${error.message}` }));
      resolve();
      return;
    }
    let ended = false;
    const end = (note) => {
      if (ended) return;
      ended = true;
      if (note) out.append(element("p", { class: "orspec-invalid", text: note }));
      finish();
      socket.close();
      resolve();
    };
    socket.addEventListener("open", () => socket.send(JSON.stringify({ type: "response.create", ...turn })));
    socket.addEventListener("message", (message) => {
      if (TURN_ENDS.has(onMessage(null, String(message.data)))) end();
    });
    socket.addEventListener("close", (event) =>
      end(
        `The connection closed before the turn ended (code ${event.code}). Does the server allow this page's origin (orspec serve --cors-origin ${location.origin}), and is the key right?`,
      ),
    );
  });
}

/** The form's request: method, URL, headers (the key left out) and body; or a word on what is missing. */
function request(form, fields) {
  const { method, path } = form.dataset;
  const base = form.querySelector("[name=base]").value.trim().replace(/\/+$/, "");
  let route = path;
  const query = new URLSearchParams();
  const headers = {};
  for (const p of fields.parameters) {
    const value = form.querySelector(`[name="${p.in}:${p.name}"]`).value.trim();
    if (!value) {
      if (p.required) return { missing: `${p.name} (${p.in})` };
      continue;
    }
    if (p.in === "path") route = route.replace(`{${p.name}}`, encodeURIComponent(value));
    else if (p.in === "header") headers[p.name] = value;
    else for (const one of p.list ? value.split(",") : [value]) query.append(p.name, one.trim());
  }
  for (const line of form.querySelector("[name=headers]").value.split("\n")) {
    const at = line.indexOf(":");
    if (at > 0) headers[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  const body = form.querySelector("[name=body]")?.value;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const search = query.toString();
  return { method, url: base + route + (search ? `?${search}` : ""), headers, body };
}

const quoted = (text) => `'${text.replaceAll("'", "'\\''")}'`;

/** The request as a curl command; the key is read from $OPENRESPONSES_API_KEY, never copied. */
function asCurl({ method, url, headers, body }) {
  const streams = body !== undefined && /"stream"\s*:\s*true/.test(body);
  const lines = [`curl -sS${streams ? "N" : ""} -X ${method} ${quoted(url)}`];
  lines.push(`-H "Authorization: Bearer $OPENRESPONSES_API_KEY"`);
  for (const [name, value] of Object.entries(headers)) lines.push(`-H ${quoted(`${name}: ${value}`)}`);
  if (body !== undefined) lines.push(`-d ${quoted(body)}`);
  return lines.join(" \\\n  ");
}

async function send(form, fields, out, root, version) {
  const base = form.querySelector("[name=base]").value.trim().replace(/\/+$/, "");
  const key = form.querySelector("[name=key]").value;
  remember(STORE.base, base);
  remember(STORE.key, key);
  out.replaceChildren();
  const asked = request(form, fields);
  if (asked.missing) {
    out.append(element("p", { class: "orspec-invalid orspec-missing", text: `Fill in ${asked.missing} first.` }));
    return;
  }
  const headers = { Accept: "application/json, text/event-stream", ...asked.headers };
  if (key) headers.Authorization = `Bearer ${key}`;
  const init = { method: asked.method, headers };
  if (asked.body !== undefined) init.body = asked.body;
  let answer;
  try {
    answer = await fetch(asked.url, init);
  } catch (error) {
    out.append(
      element("p", {
        class: "orspec-invalid",
        text: `No answer from ${base}: ${error.message}. Is the server up, and does it allow this page's origin (orspec serve --cors-origin ${location.origin})?`,
      }),
    );
    return;
  }
  const type = answer.headers.get("content-type") || "";
  out.append(element("p", { class: "orspec-status", text: `${answer.status} ${answer.statusText} ${type}`.trim() }));
  if (type.startsWith("text/event-stream") && answer.body) await showStream(answer, out, root, version);
  else out.append(element("pre", { class: "orspec-answer" }, element("code", { text: pretty(await answer.text()) })));
}

function parameterInput(p) {
  const name = `${p.in}:${p.name}`;
  if (p.choices && !p.list) {
    const select = element("select", { name });
    select.append(new Option(p.default ? `(default: ${p.default})` : "", ""));
    for (const choice of p.choices) select.append(new Option(choice, choice));
    return select;
  }
  const input = element("input", { name, type: "text", autocomplete: "off" });
  if (p.list && p.choices) input.placeholder = p.choices.join(",");
  else if (p.default) input.placeholder = `default: ${p.default}`;
  if (p.required) input.setAttribute("aria-required", "true"); // the console says what is missing
  return input;
}

/** A model picker: the models of the spec's examples, or any other typed in; it sets the body's `model`. */
function modelPicker(models, body, id) {
  const list = element("datalist", { id });
  for (const model of models) list.append(new Option(model, model));
  const input = element("input", { name: "model", type: "text", list: id, autocomplete: "off" });
  const current = () => {
    try {
      return JSON.parse(body.value).model ?? "";
    } catch {
      return "";
    }
  };
  input.value = current();
  input.addEventListener("input", () => {
    try {
      body.value = JSON.stringify({ ...JSON.parse(body.value), model: input.value }, null, 2);
    } catch {
      // a body that is not JSON: left as the reader wrote it
    }
  });
  body.addEventListener("input", () => {
    input.value = current();
  });
  return [input, list];
}

function mount(box, index) {
  const { method, path, example } = box.dataset;
  const fields = JSON.parse(box.dataset.fields || '{"parameters":[],"models":[]}');
  // The stream rules page sits at the reference's root, which the version bar knows.
  const bar = document.querySelector(".orspec-versions");
  const root = bar?.dataset.root ?? "";
  const version = bar?.dataset.version ?? "draft"; // the page's version: its checker and schemas
  const state = `orspec-console:${version}:${method} ${path}`; // the form of this operation, kept in the tab
  const form = element("form", { class: "orspec-console-form", "data-method": method, "data-path": path });
  const base = element("input", { name: "base", type: "url", value: remembered(STORE.base, DEFAULT_BASE) });
  const key = element("input", { name: "key", type: "password", autocomplete: "off", placeholder: "sk-…" });
  key.value = remembered(STORE.key, "");
  form.append(field("Server URL", base), field("API key (kept in this tab only)", key));
  form.append(element("p", { class: "orspec-console-route" }, element("code", { text: `${method} ${path}` })));
  for (const p of fields.parameters) {
    form.append(field(`${p.name} (${p.in}${p.required ? ", required" : ""})`, parameterInput(p)));
  }
  const headers = element("textarea", { name: "headers", rows: "2", spellcheck: "false", placeholder: "Name: value" });
  form.append(field("More headers, one a line", headers));
  if (example) {
    const body = element("textarea", { name: "body", rows: "10", spellcheck: "false" });
    body.value = example;
    if (/"model"\s*:/.test(example)) {
      const [picker, list] = modelPicker(fields.models, body, `orspec-models-${index}`);
      form.append(field("Model", picker), list);
    }
    form.append(field("Request body", body));
  }
  const kept = form.querySelectorAll("[name]:not([name=base]):not([name=key])");
  try {
    const saved = JSON.parse(remembered(state, "{}"));
    for (const input of kept) if (typeof saved[input.name] === "string") input.value = saved[input.name];
  } catch {
    // nothing kept, or not ours: the page's defaults
  }
  form.addEventListener("input", () => {
    remember(state, JSON.stringify(Object.fromEntries([...kept].map((input) => [input.name, input.value]))));
  });
  const button = element("button", { type: "submit", class: "md-button md-button--primary", text: "Send" });
  const copy = element("button", { type: "button", class: "md-button orspec-copy-curl", text: "Copy as curl" });
  const curl = element("pre", { class: "orspec-curl", hidden: "" }, element("code"));
  form.append(button, " ", copy);
  if (fields.websocket) {
    const overWebSocket = element("button", {
      type: "button",
      class: "md-button orspec-websocket",
      text: "Send over WebSocket",
    });
    overWebSocket.addEventListener("click", async () => {
      overWebSocket.disabled = true;
      try {
        await sendOverWebSocket(form, fields, out, root, version);
      } finally {
        overWebSocket.disabled = false;
      }
    });
    form.append(" ", overWebSocket);
  }
  form.append(curl);
  copy.addEventListener("click", async () => {
    const asked = request(form, fields);
    const text = asked.missing ? `# fill in ${asked.missing} first` : asCurl(asked);
    curl.firstChild.textContent = text;
    curl.hidden = false;
    try {
      await navigator.clipboard.writeText(text);
      copy.textContent = "Copied as curl";
    } catch {
      copy.textContent = "Copy as curl (select the text below)";
    }
  });
  const out = element("div", { class: "orspec-console-output", "aria-live": "polite" });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    try {
      await send(form, fields, out, root, version);
    } finally {
      button.disabled = false;
    }
  });
  box.replaceChildren(element("p", { class: "orspec-console-title", text: "Try it" }), form, out);
  box.classList.add("orspec-console-ready");
}

function start() {
  let index = 0;
  for (const box of document.querySelectorAll(".orspec-console:not(.orspec-console-ready)")) mount(box, index++);
}

if (window.document$ && typeof window.document$.subscribe === "function") window.document$.subscribe(start);
else start();
