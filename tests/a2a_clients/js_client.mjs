// The A2A JavaScript SDK (@a2a-js/sdk, installed by scripts/setup.sh into
// target/test-tools/a2a-js) as a client of a served toolnexus agent.
//
// Usage: node js_client.mjs SDK BASE_URL MODE TEXT
//   SDK:  "0.3"     the 0.3 line (npm alias a2a-js-03), its A2A 0.3 wire;
//         "1"       the 1.x line (alias a2a-js-1), its A2A 1.0 wire;
//         "1-compat" the 1.x line with its v0.3 compatibility layer on.
//   MODE: "send"    send TEXT (non-streaming), then GetTask until the task
//                   leaves submitted/working (30 s at most); prints one JSON
//                   line {"sdk", "protocolVersion", "sendState", "state",
//                   "text"} (the shape of sdk_client.py);
//         "stream"  send TEXT with the SDK's streaming call and read every
//                   event until the stream ends (60 s at most);
//         "cancel"  as "stream", and cancel the task through the SDK once
//                   the first `working` update arrives, then read on.
//   Streaming prints one JSON line {"sdk", "protocolVersion", "events":
//   [{"kind": "task"|"status"|"artifact"|"message", "state"?, "text"}],
//   "canceled"?: <the state the cancel answered>, "after": <the state
//   GetTask gives after the stream>} (the shape of sdk_stream.py).
// States are printed as TASK_STATE_* on both lines (the 0.3 line's
// "working" is TASK_STATE_WORKING), so both SDKs' answers compare alike.
// A missing SDK exits 3 with a line naming scripts/setup.sh.

import { createRequire } from "node:module";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import path from "node:path";

const [sdk, base, mode, text] = process.argv.slice(2);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const prefix = path.join(root, "target/test-tools/a2a-js");
const requireSdk = createRequire(path.join(prefix, "package.json"));
const pkg = sdk === "0.3" ? "a2a-js-03" : "a2a-js-1";

function load(sub) {
  try {
    return requireSdk(`${pkg}${sub}`);
  } catch (e) {
    console.error(
      `@a2a-js/sdk (${pkg}) is not installed under ${prefix}: run scripts/setup.sh (${e.message})`,
    );
    process.exit(3);
  }
}

const withTimeout = (promise, ms, what) =>
  Promise.race([
    promise,
    new Promise((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: no end within ${ms} ms`)), ms).unref(),
    ),
  ]);

/** One SDK line's client and its vocabulary, behind one shape. */
async function open() {
  const client = load("/client");
  if (sdk === "0.3") {
    const card = await new client.DefaultAgentCardResolver().resolve(base);
    const c = await new client.ClientFactory().createFromAgentCard(card);
    const state = (s) => `TASK_STATE_${String(s).toUpperCase().replace(/-/g, "_")}`;
    const texts = (parts) =>
      (parts ?? [])
        .filter((p) => p.kind === "text")
        .map((p) => p.text)
        .join("");
    return {
      protocolVersion: card.protocolVersion,
      send: () =>
        c.sendMessage({
          message: {
            kind: "message",
            role: "user",
            messageId: randomUUID(),
            parts: [{ kind: "text", text }],
          },
          configuration: { blocking: false },
        }),
      stream: () =>
        c.sendMessageStream({
          message: {
            kind: "message",
            role: "user",
            messageId: randomUUID(),
            parts: [{ kind: "text", text }],
          },
        }),
      get: (id) => c.getTask({ id }),
      cancel: (id) => c.cancelTask({ id }),
      // A send's answer or a stream's event, as {kind, state?, text?, task?}.
      event(e) {
        switch (e.kind) {
          case "task":
            return { kind: "task", state: state(e.status.state), task: e.id };
          case "status-update":
            return {
              kind: "status",
              state: state(e.status.state),
              text: texts(e.status.message?.parts),
              task: e.taskId,
            };
          case "artifact-update":
            return { kind: "artifact", text: texts(e.artifact.parts), task: e.taskId };
          default:
            return { kind: "message", text: texts(e.parts) };
        }
      },
      taskState: (t) => state(t.status.state),
      taskText(t) {
        let out = (t.artifacts ?? []).map((a) => texts(a.parts)).filter(Boolean);
        if (out.length === 0 && t.status.message) out = [texts(t.status.message.parts)];
        return out.join("\n");
      },
    };
  }
  const core = load("");
  const compat = sdk === "1-compat" ? { legacyCompat: { enabled: true } } : {};
  const resolver = new client.DefaultAgentCardResolver(compat);
  const card = await resolver.resolve(base);
  const factory = new client.ClientFactory(
    client.ClientFactoryOptions.createFrom(client.ClientFactoryOptions.default, {
      transports: [new client.JsonRpcTransportFactory(compat)],
      cardResolver: resolver,
      clientConfig: { polling: mode === "send" },
    }),
  );
  const c = await factory.createFromAgentCard(card);
  const state = (s) => core.taskStateToJSON(s);
  const texts = (parts) =>
    (parts ?? [])
      .filter((p) => p.content?.$case === "text")
      .map((p) => p.content.value)
      .join("");
  const message = () => ({
    messageId: randomUUID(),
    contextId: "",
    taskId: "",
    role: core.Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  });
  const request = () => ({
    tenant: "",
    message: message(),
    configuration: undefined,
    metadata: undefined,
  });
  return {
    protocolVersion: card.supportedInterfaces?.[0]?.protocolVersion,
    send: () => c.sendMessage(request()),
    stream: () => c.sendMessageStream(request()),
    get: (id) => c.getTask({ tenant: "", id }),
    cancel: (id) => c.cancelTask({ tenant: "", id, metadata: undefined }),
    event(e) {
      // A send answers a Task or a Message; a stream a StreamResponse.
      if (e.payload === undefined) {
        e = e.status !== undefined ? { payload: { $case: "task", value: e } } : { payload: { $case: "message", value: e } };
      }
      const v = e.payload.value;
      switch (e.payload.$case) {
        case "task":
          return { kind: "task", state: state(v.status.state), task: v.id };
        case "statusUpdate":
          return {
            kind: "status",
            state: state(v.status.state),
            text: texts(v.status.message?.parts),
            task: v.taskId,
          };
        case "artifactUpdate":
          return { kind: "artifact", text: texts(v.artifact.parts), task: v.taskId };
        default:
          return { kind: "message", text: texts(v.parts) };
      }
    },
    taskState: (t) => state(t.status.state),
    taskText(t) {
      let out = (t.artifacts ?? []).map((a) => texts(a.parts)).filter(Boolean);
      if (out.length === 0 && t.status.message) out = [texts(t.status.message.parts)];
      return out.join("\n");
    },
  };
}

async function send(a) {
  const first = a.event(await a.send());
  if (first.kind !== "task") throw new Error(`no task in the send answer: ${JSON.stringify(first)}`);
  const pending = ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"];
  const deadline = Date.now() + 30_000;
  let task = await a.get(first.task);
  while (pending.includes(a.taskState(task))) {
    if (Date.now() > deadline) throw new Error(`task ${first.task} did not settle`);
    await new Promise((r) => setTimeout(r, 20));
    task = await a.get(first.task);
  }
  return {
    sdk,
    protocolVersion: a.protocolVersion,
    sendState: first.state,
    state: a.taskState(task),
    text: a.taskText(task),
  };
}

async function stream(a, cancel) {
  const events = [];
  const out = { sdk, protocolVersion: a.protocolVersion, events };
  let taskId;
  const read = async () => {
    for await (const raw of a.stream()) {
      const { task, ...e } = a.event(raw);
      taskId = task ?? taskId;
      events.push(e);
      if (cancel && e.kind === "status" && e.state === "TASK_STATE_WORKING" && !("canceled" in out)) {
        out.canceled = "asked";
        out.canceled = a.taskState(await a.cancel(taskId));
      }
    }
  };
  await withTimeout(read(), 60_000, "the stream");
  if (taskId) out.after = a.taskState(await a.get(taskId));
  return out;
}

const a = await open();
const out = mode === "send" ? await send(a) : await stream(a, mode === "cancel");
console.log(JSON.stringify(out));
