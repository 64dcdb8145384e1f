// A purple agent that works coordbench's tasks through MCP, written as a
// participant would write one with the official SDKs, unpatched (docs/mcp.md,
// "A participant's quick start"): A2A by @a2a-js/sdk, the tools by the MCP
// TypeScript SDK's Client over its stock Streamable HTTP transport with the
// task's bearer token.
//
//   node participant.mjs        prints {"url": "http://127.0.0.1:PORT"} once it listens
//
// A message that carries the green agent's MCP endpoint (a data part of kind
// coordbench.mcp/v1) is worked through the tools only: list them, read the
// step or the paper, run the code (SciCode's run_code), submit. A message
// without one is answered in text, with the same answers, so that a test
// can compare the two deliveries. The "model" is scripted:
//
//   SciCode: the reference code of the step (ground_truth_code of the
//     validation split, read from $COORDBENCH_SCICODE_DIR/problems_dev.jsonl);
//     the steps named in $FIRST_DRAFT_WRONG (comma-separated, e.g. "29.2") get
//     a wrong first draft on their first turn, so that a step takes feedback.
//   coordination: one fixed review (REVIEW).
//
// PORT (default 0, any free port) is the A2A port on 127.0.0.1.
//
// MCP_TRACEPARENT puts a W3C traceparent into each tool call's params._meta,
// as a participant with some OpenTelemetry might, to try the green agent's
// rule for it (docs/mcp.md#spans); unset, the SDK sends none:
//   forward    the traceparent header of the A2A request being answered (the
//              green agent's own span), as an OpenTelemetry API without an SDK
//              propagates it in JavaScript and Go;
//   previous   the one of the A2A request before it (another task's trace: a
//              participant grafting its calls into another trace);
//   alternate  forward on every other tool call, none on the rest.
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import express from "express";
import { AGENT_CARD_PATH, Role } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const NAME = "mcp-participant-js";
const MCP_KIND = "coordbench.mcp/v1";
const STEP_KINDS = ["coordbench.scicode_step/v1", "coordbench.scicode_feedback/v1"];

/** The scripted review, submitted through submit_review or sent as text. */
export const REVIEW = {
  decision: "accept",
  recommendation: 4,
  scores: { originality: 4, clarity: 3, soundness: 4, substance: 3 },
  rationale: "A scripted review: the same decision for every paper.",
};

let references;
/** The reference code of a SciCode step of the validation split. */
function reference(step) {
  if (!references) {
    const dir = process.env.COORDBENCH_SCICODE_DIR;
    if (!dir) throw new Error("set COORDBENCH_SCICODE_DIR to the SciCode data directory");
    references = new Map();
    for (const line of readFileSync(join(dir, "problems_dev.jsonl"), "utf8").split("\n")) {
      if (!line.trim()) continue;
      const p = JSON.parse(line);
      for (const s of p.sub_steps) references.set(s.step_number, { header: s.function_header, code: s.ground_truth_code });
    }
  }
  const ref = references.get(step);
  if (!ref?.code) throw new Error(`no reference code for step ${step}`);
  return ref;
}

const wrongFirst = new Set((process.env.FIRST_DRAFT_WRONG ?? "").split(",").map((s) => s.trim()).filter(Boolean));

/** The scripted model's code for a step's turn. */
function answerCode(step, turn) {
  const ref = reference(step);
  if (turn <= 1 && wrongFirst.has(step)) {
    return `${ref.header.trimEnd()}\n    raise NotImplementedError("first draft of step ${step}")\n`;
  }
  return ref.code;
}

const incoming = new AsyncLocalStorage(); // the traceparent headers of the A2A request being answered
let lastTraceparent = "";
let toolCalls = 0;

/** The params._meta of a tool call under MCP_TRACEPARENT, or undefined. */
function meta() {
  const mode = process.env.MCP_TRACEPARENT ?? "";
  const tp = incoming.getStore() ?? {};
  toolCalls++;
  const traceparent = { forward: tp.current, previous: tp.previous, alternate: toolCalls % 2 ? tp.current : undefined }[mode];
  if (mode && !(mode in { forward: 1, previous: 1, alternate: 1 })) throw new Error(`MCP_TRACEPARENT=${mode}: want forward, previous or alternate`);
  return traceparent ? { traceparent } : undefined;
}

/** The structured result of a tool call; a result marked isError throws. */
async function call(client, name, args) {
  const res = await client.callTool({ name, arguments: args, _meta: meta() });
  const text = (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
  if (res.isError) throw new Error(`${name}: ${text}`);
  if (!res.structuredContent) throw new Error(`${name}: no structured result: ${text}`);
  return res.structuredContent;
}

/** Works the task at the endpoint through its tools; returns the reply text. */
async function workThroughMCP(ep) {
  const client = new Client({ name: NAME, version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(ep.url), {
    requestInit: { headers: { Authorization: `Bearer ${ep.token}` } },
  });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    if (names.includes("read_step")) {
      const step = await call(client, "read_step", {});
      const code = answerCode(step.step_number, step.turn);
      // run_code as a participant would use it: the code runs after the
      // previous steps' code; the expression names the function it defines.
      const run = await call(client, "run_code", { code, expression: step.function_name });
      if (run.exception || !String(run.result ?? "").includes(step.function_name)) {
        throw new Error(`run_code of step ${step.step_number}: ${JSON.stringify(run)}`);
      }
      const verdict = await call(client, "submit_step", { step_number: step.step_number, code });
      return `Step ${step.step_number}: submitted through submit_step, ${verdict.reason}.`;
    }
    if (names.includes("read_paper")) {
      const paper = await call(client, "read_paper", {});
      if (!paper.title) throw new Error(`read_paper: no title: ${JSON.stringify(paper)}`);
      const res = await call(client, "submit_review", REVIEW);
      if (!res.accepted) throw new Error(`submit_review: ${JSON.stringify(res)}`);
      return JSON.stringify(REVIEW);
    }
    throw new Error(`the endpoint offers no tools this participant knows: ${names.join(", ")}`);
  } finally {
    await client.close();
  }
}

/** Answers in text: the same answers, as the text delivery reads them. */
function answerInText(data) {
  const step = data.find((d) => STEP_KINDS.includes(d?.kind));
  if (step) return "```python\n" + answerCode(step.step_number, step.turn) + "```\n";
  return JSON.stringify(REVIEW);
}

const textPart = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "text/plain" });

class Executor {
  async execute(ctx, bus) {
    const data = (ctx.userMessage.parts ?? []).filter((p) => p.content?.$case === "data").map((p) => p.content.value);
    const ep = data.find((d) => d?.kind === MCP_KIND);
    const text = ep ? await workThroughMCP(ep) : answerInText(data);
    bus.publish(AgentEvent.message({
      role: Role.ROLE_AGENT, messageId: randomUUID(), parts: [textPart(text)], contextId: ctx.contextId, taskId: "",
      metadata: {}, extensions: [], referenceTaskIds: [],
    }));
    bus.finished();
  }
  async cancelTask() {}
}

const app = express();
app.use((req, res, next) => {
  const current = req.headers.traceparent ?? "";
  const previous = lastTraceparent;
  if (req.method === "POST" && current) lastTraceparent = current;
  incoming.run({ current, previous }, next);
});
const server = app.listen(Number(process.env.PORT ?? 0), "127.0.0.1", (err) => {
  if (err) throw err;
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: NAME,
    description: "Works coordbench tasks through MCP with the MCP TypeScript SDK",
    supportedInterfaces: [{ url: `${base}/a2a/jsonrpc`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" }],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text"],
    defaultOutputModes: ["text"],
    skills: [{ id: "solve", name: "solve", description: "SciCode steps and paper reviews", tags: ["mcp"], examples: [], inputModes: ["text"], outputModes: ["text"], securityRequirements: [] }],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Executor());
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log(JSON.stringify({ url: base }));
});
