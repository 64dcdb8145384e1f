// VoltAgent (@voltagent/core 2.10): a supervisor with two sub-agents.
//
//   supervisor (subAgents: [researcher, writer])
//   supervisor calls delegate_task {targetAgents: ["researcher"]}, then
//   delegate_task {targetAgents: ["writer"]}, then answers;
//   researcher calls web_search once, then answers; writer answers.
//
// A supervisor gets the delegate_task tool (dist/index.mjs, SubAgentManager
// createDelegateTool): its execute runs each named sub-agent with the task.
//
// Telemetry: VoltAgent's own VoltAgentObservability (dist/index.mjs), given
// to new VoltAgent({ observability }): it registers a NodeTracerProvider with
// its in-memory/WebSocket/VoltOps processors plus the `spanProcessors` a
// user adds, here BatchSpanProcessor(OTLPTraceExporter) (OTLP/HTTP JSON,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). By default it keeps only spans of its
// own instrumentation scope (@voltagent/core).
//
// Model: the AI SDK's @ai-sdk/openai provider (its default Responses API),
// base URL from OPENAI_BASE_URL. createOpenAI() reads it when called, so the
// provider is made inside team(), after the harness has set it.
//
// NODE_ENV=production, as a deployed app runs: outside production
// @voltagent/core starts, at import, a refresh of its model registry from
// https://models.dev (dist/index.mjs ModelProviderRegistry.startAutoRefresh),
// which has no place in an offline run; hence the dynamic imports below.

import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { z } from "zod";
import { live } from "../harness/index.mjs";

/** True when the request holds the output of a call to the named function (Responses API). */
const calls = (req, name) => {
  const input = Array.isArray(req.body.input) ? req.body.input : [];
  const ids = new Set(input.filter((it) => it.type === "function_call" && it.name === name).map((it) => it.call_id));
  return input.filter((it) => it.type === "function_call_output" && ids.has(it.call_id)).length;
};

const script = [
  {
    name: "supervisor delegates to researcher",
    when: (r) => r.system.includes("You are the supervisor") && calls(r, "delegate_task") === 0,
    reply: { tool: "delegate_task", args: { task: "Find the key paper on sparse attention.", targetAgents: ["researcher"], context: {} } },
    times: 1,
  },
  {
    name: "supervisor delegates to writer",
    when: (r) => r.system.includes("You are the supervisor") && calls(r, "delegate_task") === 1,
    reply: { tool: "delegate_task", args: { task: "Write two sentences: sparse attention, key paper Longformer (2020).", targetAgents: ["writer"], context: {} } },
    times: 1,
  },
  {
    name: "supervisor answers",
    when: (r) => r.system.includes("You are the supervisor") && calls(r, "delegate_task") === 2,
    reply: { text: "Sparse attention lets each token attend to a few positions; Longformer (2020) made it practical." },
    times: 1,
  },
  {
    name: "researcher searches",
    when: (r) => r.system.includes("You are the researcher") && calls(r, "web_search") === 0,
    reply: { tool: "web_search", args: { query: "sparse attention key paper" } },
    times: 1,
  },
  {
    name: "researcher answers",
    when: (r) => r.system.includes("You are the researcher") && calls(r, "web_search") === 1,
    reply: { text: "The key paper is Longformer (2020)." },
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
    process.env.NODE_ENV = "production";
    const { Agent, VoltAgent, VoltAgentObservability, createTool } = await import("@voltagent/core");
    const { createOpenAI } = await import("@ai-sdk/openai");
    const openai = createOpenAI();

    const processor = new BatchSpanProcessor(new OTLPTraceExporter());
    const observability = new VoltAgentObservability({ spanProcessors: [processor] });

    const webSearch = createTool({
      name: "web_search",
      description: "Searches the web.",
      parameters: z.object({ query: z.string() }),
      execute: async ({ query }) => `Top result for ${query}: Longformer (2020).`,
    });
    const researcher = new Agent({
      name: "researcher",
      purpose: "Finds the key paper on a topic.",
      instructions: "You are the researcher. Search, then name the key paper.",
      model: openai("gpt-4o-mini"),
      tools: [webSearch],
    });
    const writer = new Agent({
      name: "writer",
      purpose: "Writes a short answer.",
      instructions: "You are the writer. Write two sentences.",
      model: openai("gpt-4o-mini"),
    });
    const supervisor = new Agent({
      name: "supervisor",
      instructions: "You are the supervisor. Delegate research to the researcher, then writing to the writer, then answer.",
      model: openai("gpt-4o-mini"),
      subAgents: [researcher, writer],
    });
    new VoltAgent({ agents: { supervisor, researcher, writer }, observability });

    const result = await supervisor.generateText("Explain sparse attention and name the key paper.");
    console.error(`supervisor: ${String(result.text).slice(0, 80)}`);
    await observability.forceFlush?.();
    await observability.shutdown?.();
    await processor.shutdown();
  },
});
