// A2A agents, in a process of their own: `node --import ./telemetry.mjs
// agent.mjs ROLE[,ROLE...] [ports|paths]` (OTEL_SERVICE_NAME names the
// process). Per role an Express app with the A2A JS SDK's agent card and
// JSON-RPC handlers (the layout of the SDK's multi-transport sample,
// src/samples/agents/multi-transport-agent) and an AgentExecutor, listening
// on 127.0.0.1 (port 0). Several roles in one process (the team's "shared"
// modes) listen each on a port of its own ("ports", the default) or are
// mounted under /ROLE of one app on one port ("paths"). Prints one JSON
// line {role: base URL} on stdout once all listen.
//
//   researcher: asks the model (Chat Completions over fetch, the system
//     prompt "You are the researcher") and answers with a Message.
//   writer: asks the model ("You are the writer") and answers with a Task
//     completed with one artifact.
//   coordinator: a tool-calling loop on the model ("You are the
//     coordinator", tools ask_researcher and ask_writer); each tool call is
//     an A2A call to that specialist through the SDK's ClientFactory
//     (createFromUrl: the agent card, then message/send over JSON-RPC),
//     parallel tool calls concurrently. The specialists' URLs come from
//     RESEARCHER_URL and WRITER_URL.
import { randomUUID } from "node:crypto";
import express from "express";
import { AGENT_CARD_PATH, Role, TaskState } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { ClientFactory } from "@a2a-js/sdk/client";

const roles = {
  researcher: { title: "Research Agent", system: "You are the researcher. Answer with facts and sources.", tools: [] },
  writer: { title: "Writing Agent", system: "You are the writer. Turn notes into two clear sentences.", tools: [] },
  coordinator: {
    title: "Coordinator Agent",
    system: "You are the coordinator. Ask the researcher for facts and the writer for the final text.",
    tools: [
      { type: "function", function: { name: "ask_researcher", description: "Ask the research agent a question", parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] } } },
      { type: "function", function: { name: "ask_writer", description: "Ask the writing agent to write", parameters: { type: "object", properties: { notes: { type: "string" } }, required: ["notes"] } } },
    ],
  },
};
const hosted = (process.argv[2] ?? "").split(",");
const layout = process.argv[3] ?? "ports";
for (const r of hosted) if (!roles[r]) throw new Error(`agent.mjs: unknown role ${r}`);

/** One Chat Completions request to the model at OPENAI_BASE_URL. */
async function chat(me, messages) {
  const res = await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${process.env.OPENAI_API_KEY}` },
    body: JSON.stringify({ model: "gpt-4o-mini", messages, ...(me.tools.length ? { tools: me.tools } : {}) }),
  });
  if (!res.ok) throw new Error(`model: HTTP ${res.status}: ${await res.text()}`);
  return (await res.json()).choices[0].message;
}

const textPart = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "text/plain" });
const textOf = (parts) => (parts ?? []).filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("\n");
const message = (text, extra = {}) => ({ role: Role.ROLE_AGENT, messageId: randomUUID(), parts: [textPart(text)], contextId: "", taskId: "", metadata: {}, extensions: [], referenceTaskIds: [], ...extra });

/** Sends one message to the A2A agent at url and returns its answer's text. */
async function askAgent(url, text) {
  const client = await new ClientFactory().createFromUrl(url);
  const result = await client.sendMessage({
    tenant: "",
    message: { ...message(text), role: Role.ROLE_USER },
    configuration: undefined,
    metadata: undefined,
  });
  // A Message has parts; a Task has artifacts.
  if (result.parts) return textOf(result.parts);
  return (result.artifacts ?? []).map((a) => textOf(a.parts)).join("\n");
}

const specialists = { ask_researcher: process.env.RESEARCHER_URL, ask_writer: process.env.WRITER_URL };

async function coordinate(question) {
  const messages = [{ role: "system", content: roles.coordinator.system }, { role: "user", content: question }];
  for (let turn = 0; turn < 5; turn++) {
    const reply = await chat(roles.coordinator, messages);
    messages.push(reply);
    if (!reply.tool_calls?.length) return reply.content;
    const results = await Promise.all(reply.tool_calls.map(async (call) => {
      const args = JSON.parse(call.function.arguments);
      const url = specialists[call.function.name];
      if (!url) throw new Error(`coordinator: no agent for tool ${call.function.name}`);
      return askAgent(url, args.question ?? args.notes);
    }));
    reply.tool_calls.forEach((call, i) => messages.push({ role: "tool", tool_call_id: call.id, content: results[i] }));
  }
  throw new Error("coordinator: no answer after 5 turns");
}

class Executor {
  constructor(role) {
    this.role = role;
  }

  async execute(ctx, bus) {
    const { role } = this;
    const me = roles[role];
    const question = textOf(ctx.userMessage.parts);
    const { taskId, contextId } = ctx;
    if (role === "coordinator") {
      bus.publish(AgentEvent.message(message(await coordinate(question), { contextId })));
    } else if (role === "researcher") {
      const reply = await chat(me, [{ role: "system", content: me.system }, { role: "user", content: question }]);
      bus.publish(AgentEvent.message(message(reply.content, { contextId })));
    } else {
      bus.publish(AgentEvent.task({ id: taskId, contextId, status: { state: TaskState.TASK_STATE_WORKING, timestamp: new Date().toISOString(), message: undefined }, artifacts: [], history: [ctx.userMessage], metadata: {} }));
      const reply = await chat(me, [{ role: "system", content: me.system }, { role: "user", content: question }]);
      bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: randomUUID(), name: "text", description: "", parts: [textPart(reply.content)], metadata: undefined, extensions: [] }, lastChunk: true, append: false, metadata: undefined }));
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_COMPLETED, timestamp: new Date().toISOString(), message: undefined }, metadata: undefined }));
    }
    bus.finished();
  }
  async cancelTask() {}
}

/** Mounts one role's card and JSON-RPC handlers on app under prefix. */
function mount(app, role, base, prefix) {
  const me = roles[role];
  const card = {
    name: me.title,
    description: me.system,
    supportedInterfaces: [{ url: `${base}${prefix}/a2a/jsonrpc`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" }],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text"],
    defaultOutputModes: ["text"],
    skills: [{ id: role, name: me.title, description: me.system, tags: [role], examples: [], inputModes: ["text"], outputModes: ["text"], securityRequirements: [] }],
    signatures: [],
  };
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Executor(role));
  app.use(`${prefix}/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  app.use(`${prefix}/a2a/jsonrpc`, jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
}

/** Starts an Express app on 127.0.0.1 and returns it with its base URL. */
function listen() {
  const app = express();
  return new Promise((resolve, reject) => {
    const server = app.listen(0, "127.0.0.1", (err) => (err ? reject(err) : resolve({ app, base: `http://127.0.0.1:${server.address().port}` })));
  });
}

const urls = {};
if (layout === "paths") {
  const { app, base } = await listen();
  for (const role of hosted) {
    mount(app, role, base, `/${role}`);
    urls[role] = `${base}/${role}/`; // a base URL ends in "/": the card path resolves against it
  }
} else {
  for (const role of hosted) {
    const { app, base } = await listen();
    mount(app, role, base, "");
    urls[role] = base;
  }
}
console.log(JSON.stringify(urls));
