// Google ADK for TypeScript (@google/adk): a coordinator with an AgentTool
// and a sub-agent reached by transfer_to_agent.
//
//   coordinator (root LlmAgent)
//     tools:     AgentTool(summarizer)   -> a child Runner runs summarizer
//     subAgents: [researcher]            -> transfer_to_agent hands over
//   researcher uses the FunctionTool lookup_paper, then answers.
//
// Telemetry: ADK's own route, maybeSetOtelProviders() (exported from
// @google/adk, dist/esm/telemetry/setup.js): with OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set it registers a NodeTracerProvider
// with a BatchSpanProcessor(OTLPTraceExporter) (OTLP/HTTP JSON), the resource
// from detectResources({detectors: []}). ADK's spans come from the tracer
// "gcp.vertex.agent" (telemetry/tracing.js).
//
// Model: ADK's Gemini class (models/google_llm.js) builds a GoogleGenAI
// client with no base URL; @google/genai reads GOOGLE_GEMINI_BASE_URL
// (dist/node/index.mjs, getBaseUrl(..., getEnv('GOOGLE_GEMINI_BASE_URL'))),
// which the harness points at the fake model's Gemini API.

import { trace } from "@opentelemetry/api";
import {
  AgentTool,
  FunctionTool,
  InMemoryRunner,
  LlmAgent,
  maybeSetOtelProviders,
} from "@google/adk";
import { live } from "../harness/index.mjs";

const MODEL = "gemini-2.5-flash";

/** True when the request holds a function response of the named function. */
const hasResponse = (req, name) =>
  (req.body.contents ?? []).some((c) => (c.parts ?? []).some((p) => p.functionResponse?.name === name));

// ADK sends each agent its own instruction as systemInstruction, so rules are
// keyed on the agent's instruction and on which function responses its
// request already holds (a transferred agent sees the session's history).
const script = [
  {
    name: "coordinator asks the summarizer tool",
    when: (r) => r.system.includes("You are the coordinator") && !hasResponse(r, "summarizer") && !hasResponse(r, "transfer_to_agent"),
    reply: { tool: "summarizer", args: { request: "Summarize the topic: sparse attention in long-context models." } },
    times: 1,
  },
  {
    name: "coordinator transfers to researcher",
    when: (r) => r.system.includes("You are the coordinator") && hasResponse(r, "summarizer") && !hasResponse(r, "transfer_to_agent"),
    // ADK JS declares the argument as agentName (agent_transfer_llm_request_processor.js),
    // not agent_name as ADK Python does.
    reply: { tool: "transfer_to_agent", args: { agentName: "researcher" } },
    times: 1,
  },
  {
    name: "summarizer answers",
    when: { system: "You are the summarizer" },
    reply: { text: "Sparse attention restricts each token to a subset of positions, cutting cost from quadratic to near-linear." },
    times: 1,
  },
  {
    name: "researcher looks the paper up",
    when: (r) => r.system.includes("You are the researcher") && !hasResponse(r, "lookup_paper"),
    reply: { tool: "lookup_paper", args: { topic: "sparse attention" } },
    times: 1,
  },
  {
    name: "researcher answers",
    when: (r) => r.system.includes("You are the researcher") && hasResponse(r, "lookup_paper"),
    reply: { text: "The key paper is 'Longformer' (2020); it combines sliding-window and global attention." },
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

    const summarizer = new LlmAgent({
      name: "summarizer",
      model: MODEL,
      description: "Summarizes a topic in one sentence.",
      instruction: "You are the summarizer. Answer with one sentence.",
    });
    const researcher = new LlmAgent({
      name: "researcher",
      model: MODEL,
      description: "Finds the key paper on a topic.",
      instruction: "You are the researcher. Use lookup_paper, then name the key paper.",
      tools: [lookupPaper],
    });
    const coordinator = new LlmAgent({
      name: "coordinator",
      model: MODEL,
      description: "Plans the answer and delegates.",
      instruction:
        "You are the coordinator. First get a summary from the summarizer tool, then transfer to the researcher.",
      tools: [new AgentTool({ agent: summarizer })],
      subAgents: [researcher],
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
    if (!last.startsWith("researcher:")) throw new Error(`the team did not end with the researcher's answer: ${last}`);

    // maybeSetOtelProviders registered a NodeTracerProvider behind the API's
    // proxy; shutting it down flushes the batch processor.
    const provider = trace.getTracerProvider();
    await (provider.getDelegate?.() ?? provider).shutdown();
  },
});
