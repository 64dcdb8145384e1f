// Genkit (genkit 1.42): a coordinator prompt that delegates to two
// specialist prompts through tools, inside a flow.
//
//   flow answerQuestion -> prompt coordinator (tools: researcher, writer)
//   tool researcher -> runs the prompt researcher (tool: web_search)
//   tool writer     -> runs the prompt writer
//
// This is Genkit's documented delegation shape ("a delegation tool is a tool
// that runs one turn on a specialist and returns its reply", genkit.dev
// multi-agent page): a prompt passed directly in `tools` is no longer run as
// an agent in 1.42 (prompt.mjs asTool() returns the renderer action, whose
// output is the rendered request), so each specialist is wrapped by
// ai.defineTool.
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

import { genkit, z } from "genkit";
import { enableTelemetry, flushTracing } from "genkit/tracing";
import { openAI } from "@genkit-ai/compat-oai/openai";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { live } from "../harness/index.mjs";

const script = [
  {
    name: "coordinator asks the researcher",
    when: { system: "You are the coordinator", toolResults: 0 },
    reply: { tool: "researcher", args: { task: "Find the key paper on sparse attention." } },
    times: 1,
  },
  {
    name: "coordinator asks the writer",
    when: { system: "You are the coordinator", toolResults: 1 },
    reply: { tool: "writer", args: { task: "Write two sentences: sparse attention, key paper Longformer (2020)." } },
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
    const researcherPrompt = ai.definePrompt({
      name: "researcher",
      description: "Finds the key paper on a topic.",
      model,
      input: { schema: z.object({ task: z.string() }) },
      system: "You are the researcher. Search, then name the key paper.",
      prompt: "{{task}}",
      tools: [webSearch],
    });
    const writerPrompt = ai.definePrompt({
      name: "writer",
      description: "Writes a short answer.",
      model,
      input: { schema: z.object({ task: z.string() }) },
      system: "You are the writer. Write two sentences.",
      prompt: "{{task}}",
    });
    const researcher = ai.defineTool(
      { name: "researcher", description: "Delegates research to the researcher agent.", inputSchema: z.object({ task: z.string() }), outputSchema: z.string() },
      async (input) => (await researcherPrompt(input)).text,
    );
    const writer = ai.defineTool(
      { name: "writer", description: "Delegates writing to the writer agent.", inputSchema: z.object({ task: z.string() }), outputSchema: z.string() },
      async (input) => (await writerPrompt(input)).text,
    );
    const coordinatorPrompt = ai.definePrompt({
      name: "coordinator",
      description: "Delegates to the researcher and the writer.",
      model,
      input: { schema: z.object({ question: z.string() }) },
      system: "You are the coordinator. Ask the researcher, then the writer, then answer.",
      prompt: "{{question}}",
      tools: [researcher, writer],
    });
    const answerQuestion = ai.defineFlow(
      { name: "answerQuestion", inputSchema: z.string(), outputSchema: z.string() },
      async (question) => (await coordinatorPrompt({ question })).text,
    );

    const answer = await answerQuestion("Explain sparse attention and name the key paper.");
    console.error(`flow: ${answer.slice(0, 80)}`);
    await flushTracing();
    await processor.shutdown();
  },
});
