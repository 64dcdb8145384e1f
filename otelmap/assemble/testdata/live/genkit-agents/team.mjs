// Genkit (genkit 1.42, genkit/beta): the documented multi-agent delegation
// (genkit.dev/docs/js/agents/multi-agent): agents made with ai.defineAgent,
// the coordinator delegating through @genkit-ai/middleware's agents()
// middleware, which injects one tool per sub-agent (delegate_to_<name>,
// input {task}) and runs the sub-agent when the model calls it.
//
//   coordinator (use: agents({agents: ["researcher", "writer"]}))
//   coordinator calls delegate_to_researcher, then delegate_to_writer, then
//   answers; researcher calls web_search once, then answers; writer answers.
//
// Telemetry: Genkit's own enableTelemetry() (genkit/tracing ->
// @genkit-ai/core tracing/node-telemetry-provider.mjs), which starts an
// OpenTelemetry NodeSDK with the span processors given; here the one a user
// adds to export OTLP: BatchSpanProcessor(OTLPTraceExporter) (OTLP/HTTP
// JSON, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). Genkit's spans carry its own
// genkit:* attributes.
//
// Model: @genkit-ai/compat-oai's openAI() plugin (Chat Completions) through
// the openai client, whose base URL comes from OPENAI_BASE_URL.

import { z } from "genkit";
import { genkit } from "genkit/beta";
import { enableTelemetry, flushTracing } from "genkit/tracing";
import { agents } from "@genkit-ai/middleware";
import { openAI } from "@genkit-ai/compat-oai/openai";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { live } from "../harness/index.mjs";

const script = [
  {
    name: "coordinator asks the researcher",
    when: { system: "You are the coordinator", toolResults: 0 },
    reply: { tool: "delegate_to_researcher", args: { task: "Find the key paper on sparse attention." } },
    times: 1,
  },
  {
    name: "coordinator asks the writer",
    when: { system: "You are the coordinator", toolResults: 1 },
    reply: { tool: "delegate_to_writer", args: { task: "Write two sentences: sparse attention, key paper Longformer (2020)." } },
    times: 1,
  },
  {
    name: "coordinator answers",
    when: { system: "You are the coordinator", toolResults: 2 },
    reply: { text: "Sparse attention lets each token attend to a few positions; Longformer (2020) made it practical." },
    times: 1,
  },
  {
    name: "researcher searches",
    when: { system: "You are the researcher", toolResults: 0 },
    reply: { tool: "web_search", args: { query: "sparse attention key paper" } },
    times: 1,
  },
  {
    name: "researcher answers",
    when: { system: "You are the researcher", toolResults: 1 },
    reply: { text: "The key paper is Longformer (2020)." },
    times: 1,
  },
  {
    name: "writer answers",
    when: { system: "You are the writer", toolResults: 0 },
    reply: { text: "Sparse attention lets each token attend to a few positions. Longformer (2020) made it practical." },
    times: 1,
  },
];

await live({
  script,
  async team() {
    const exporter = new OTLPTraceExporter();
    const processor = new BatchSpanProcessor(exporter);
    await enableTelemetry({ spanProcessors: [processor] });

    const ai = genkit({ plugins: [openAI()] });
    const model = openAI.model("gpt-4o-mini");

    const webSearch = ai.defineTool(
      { name: "web_search", description: "Searches the web.", inputSchema: z.object({ query: z.string() }), outputSchema: z.string() },
      async ({ query }) => `Top result for ${query}: Longformer (2020).`,
    );
    ai.defineAgent({
      name: "researcher",
      description: "Finds the key paper on a topic.",
      model,
      system: "You are the researcher. Search, then name the key paper.",
      tools: [webSearch],
    });
    ai.defineAgent({
      name: "writer",
      description: "Writes a short answer.",
      model,
      system: "You are the writer. Write two sentences.",
    });
    const coordinator = ai.defineAgent({
      name: "coordinator",
      description: "Delegates to the researcher and the writer.",
      model,
      system: "You are the coordinator. Ask the researcher, then the writer, then answer.",
      use: [agents({ agents: ["researcher", "writer"] })],
    });

    const response = await coordinator.chat().send("Explain sparse attention and name the key paper.");
    const text = response.text ?? response.message?.content?.map((p) => p.text ?? "").join("") ?? "";
    console.error(`coordinator: ${String(text).slice(0, 80)}`);
    await flushTracing();
    await processor.shutdown();
  },
});
