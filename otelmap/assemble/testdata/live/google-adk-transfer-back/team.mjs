// Google ADK for TypeScript (@google/adk): transfer_to_agent there and back.
//
//   coordinator (root LlmAgent, subAgents: [researcher, writer])
//   coordinator transfers to researcher; researcher calls lookup_paper, then
//   transfers back to its parent coordinator; coordinator transfers to
//   writer; writer answers.
//
// A sub-agent may transfer to its parent unless disallowTransferToParent
// (agents/processors/agent_transfer_llm_request_processor.js
// getTransferTargets); the transferred-to agent runs inside the caller's
// flow (agents/llm_agent.js, after the function response with
// actions.transferToAgent).
//
// Telemetry: ADK's own route, maybeSetOtelProviders() (exported from
// @google/adk, dist/esm/telemetry/setup.js): with OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set it registers a NodeTracerProvider
// with a BatchSpanProcessor(OTLPTraceExporter) (OTLP/HTTP JSON).
//
// Model: ADK's Gemini class through @google/genai, base URL from
// GOOGLE_GEMINI_BASE_URL (see ../google-adk/team.mjs).

import { trace } from "@opentelemetry/api";
import { FunctionTool, InMemoryRunner, LlmAgent, maybeSetOtelProviders } from "@google/adk";
import { live } from "../harness/index.mjs";

const MODEL = "gemini-2.5-flash";

// ADK shows an agent the other agents' turns as text ("For context: [researcher]
// called tool ...", content processor), so the coordinator's second turn is
// told apart by the researcher's lookup_paper result in that text.
/** Every text and function part of the request, as one string to search. */
const flat = (req) => JSON.stringify(req.body.contents ?? []);
/** True when the request holds a function response of the named function. */
const hasResponse = (req, name) =>
  (req.body.contents ?? []).some((c) => (c.parts ?? []).some((p) => p.functionResponse?.name === name));

const script = [
  {
    name: "coordinator transfers to researcher",
    when: (r) => r.system.includes("You are the coordinator") && !flat(r).includes("lookup_paper"),
    reply: { tool: "transfer_to_agent", args: { agentName: "researcher" } },
    times: 1,
  },
  {
    name: "researcher looks the paper up",
    when: (r) => r.system.includes("You are the researcher") && !hasResponse(r, "lookup_paper"),
    reply: { tool: "lookup_paper", args: { topic: "sparse attention" } },
    times: 1,
  },
  {
    name: "researcher transfers back",
    when: (r) => r.system.includes("You are the researcher") && hasResponse(r, "lookup_paper"),
    reply: { tool: "transfer_to_agent", args: { agentName: "coordinator" } },
    times: 1,
  },
  {
    name: "coordinator transfers to writer",
    when: (r) => r.system.includes("You are the coordinator") && flat(r).includes("[researcher] tool `lookup_paper` returned result"),
    reply: { tool: "transfer_to_agent", args: { agentName: "writer" } },
    times: 1,
  },
  {
    name: "writer answers",
    when: { system: "You are the writer" },
    reply: { text: "Sparse attention lets each token attend to a few positions. Longformer (2020) made it practical." },
    times: 1,
  },
];

await live({
  script,
  async team() {
    maybeSetOtelProviders();

    const lookupPaper = new FunctionTool({
      name: "lookup_paper",
      description: "Looks up the most cited paper on a topic.",
      parameters: {
        type: "object",
        properties: { topic: { type: "string", description: "the topic" } },
        required: ["topic"],
      },
      execute: async ({ topic }) => ({ title: "Longformer: The Long-Document Transformer", year: 2020, topic }),
    });
    const researcher = new LlmAgent({
      name: "researcher",
      model: MODEL,
      description: "Finds the key paper on a topic.",
      instruction: "You are the researcher. Use lookup_paper, then transfer back to the coordinator.",
      tools: [lookupPaper],
    });
    const writer = new LlmAgent({
      name: "writer",
      model: MODEL,
      description: "Writes the final answer.",
      instruction: "You are the writer. Write two sentences.",
    });
    const coordinator = new LlmAgent({
      name: "coordinator",
      model: MODEL,
      description: "Plans the answer and routes it.",
      instruction: "You are the coordinator. First transfer to the researcher; when the research is in, transfer to the writer.",
      subAgents: [researcher, writer],
    });

    const runner = new InMemoryRunner({ agent: coordinator, appName: "paper_desk" });
    const session = await runner.sessionService.createSession({ appName: "paper_desk", userId: "user-1" });
    let last = "";
    for await (const event of runner.runAsync({
      userId: "user-1",
      sessionId: session.id,
      newMessage: { role: "user", parts: [{ text: "What is sparse attention and what is the key paper?" }] },
    })) {
      const text = (event.content?.parts ?? []).map((p) => p.text ?? "").join("");
      if (text) last = `${event.author}: ${text}`;
    }
    if (!last.startsWith("writer:")) throw new Error(`the team did not end with the writer's answer: ${last}`);

    const provider = trace.getTracerProvider();
    await (provider.getDelegate?.() ?? provider).shutdown();
  },
});
