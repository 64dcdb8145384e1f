// LlamaIndex.TS (llamaindex 0.12, @llamaindex/workflow 1.1): a multi-agent
// workflow with handoffs.
//
//   multiAgent({ agents: [coordinator, researcher, writer], rootAgent: coordinator })
//   coordinator hands off to researcher (the injected handOff tool,
//   {toAgent, reason}); researcher calls web_search, then hands off to
//   writer; writer answers.
//
// Telemetry: LlamaIndex.TS has no OpenTelemetry of its own; the route its
// ecosystem documents is OpenLLMetry's @traceloop/instrumentation-llamaindex
// (README: register it with a NodeTracerProvider). The program is ESM, where
// require hooks do not patch imports, so it is applied with the
// instrumentation's manuallyInstrument(llamaindex, @llamaindex/openai) (the
// same call the Traceloop SDK makes for `instrumentModules.llamaIndex`).
// Export: NodeTracerProvider + BatchSpanProcessor(OTLPTraceExporter,
// OTLP/HTTP JSON) from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.
//
// Model: @llamaindex/openai's OpenAI (Chat Completions, streaming in the
// agent loop) through the openai client, base URL from OPENAI_BASE_URL.

import * as llamaindex from "llamaindex";
import * as llamaindexOpenAI from "@llamaindex/openai";
import { agent, multiAgent } from "@llamaindex/workflow";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { registerInstrumentations } from "@opentelemetry/instrumentation";
import { LlamaIndexInstrumentation } from "@traceloop/instrumentation-llamaindex";
import { z } from "zod";
import { live } from "../harness/index.mjs";

/** True when the request holds the result of a call to the named tool (Chat Completions). */
const called = (req, name) => {
  const msgs = req.body.messages ?? [];
  const ids = new Set(msgs.flatMap((m) => (m.tool_calls ?? []).filter((c) => c.function?.name === name).map((c) => c.id)));
  return msgs.some((m) => m.role === "tool" && ids.has(m.tool_call_id));
};

// The workflow shares one memory among the agents, so a later agent's
// request also holds the earlier agents' tool calls: rules key on the
// agent's system prompt and on which calls are answered already.
const script = [
  {
    name: "coordinator hands off to researcher",
    when: (r) => r.system.includes("You are the coordinator") && !called(r, "handOff"),
    reply: { tool: "handOff", args: { toAgent: "researcher", reason: "Research is needed first." } },
    times: 1,
  },
  {
    name: "researcher searches",
    when: (r) => r.system.includes("You are the researcher") && !called(r, "web_search"),
    reply: { tool: "web_search", args: { query: "sparse attention key paper" } },
    times: 1,
  },
  {
    name: "researcher hands off to writer",
    when: (r) => r.system.includes("You are the researcher") && called(r, "web_search"),
    reply: { tool: "handOff", args: { toAgent: "writer", reason: "The facts are in; write the answer." } },
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
    const provider = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
    provider.register();
    const instrumentation = new LlamaIndexInstrumentation();
    registerInstrumentations({ instrumentations: [instrumentation] });
    instrumentation.manuallyInstrument(llamaindex, llamaindexOpenAI);

    const llm = () => new llamaindexOpenAI.OpenAI({ model: "gpt-4o-mini" });
    const webSearch = llamaindex.tool({
      name: "web_search",
      description: "Searches the web.",
      parameters: z.object({ query: z.string() }),
      execute: ({ query }) => `Top result for ${query}: Longformer (2020).`,
    });
    const coordinator = agent({
      name: "coordinator",
      description: "Plans the work and routes it.",
      systemPrompt: "You are the coordinator. Hand research to the researcher.",
      llm: llm(),
      tools: [],
      canHandoffTo: ["researcher"],
    });
    const researcher = agent({
      name: "researcher",
      description: "Searches the web for facts.",
      systemPrompt: "You are the researcher. Search, then hand off to the writer.",
      llm: llm(),
      tools: [webSearch],
      canHandoffTo: ["writer"],
    });
    const writer = agent({
      name: "writer",
      description: "Writes the final answer.",
      systemPrompt: "You are the writer. Write the final answer.",
      llm: llm(),
      tools: [],
    });

    const workflow = multiAgent({ agents: [coordinator, researcher, writer], rootAgent: coordinator });
    const result = await workflow.run("Explain sparse attention and name the key paper.");
    const data = result.data ?? {};
    // The script's `times` prove the order of visits; the result must be the writer's answer.
    if (!String(data.result).startsWith("Sparse attention lets")) throw new Error(`the workflow did not end with the writer's answer: ${JSON.stringify(data).slice(0, 200)}`);
    console.error(`workflow: ${String(data.result).slice(0, 80)}`);
    await provider.shutdown();
  },
});
