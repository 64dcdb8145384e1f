// Strands Agents TypeScript (@strands-agents/sdk): agents as tools.
//
//   coordinator (tools: researcher.asTool(), writer.asTool())
//   coordinator calls researcher, then writer, then answers;
//   researcher calls web_search once, then answers; writer answers.
//
// agent.asTool() (agent/agent-as-tool.js) wraps an agent as a tool with one
// `input` string parameter; the tool's stream() runs the wrapped agent.
//
// Telemetry: Strands' own setupTracer({ exporters: { otlp: true } })
// (@strands-agents/sdk/telemetry, telemetry/config.js): NodeTracerProvider +
// BatchSpanProcessor(OTLPTraceExporter, OTLP/HTTP JSON), endpoint from
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.
//
// Model: Strands' OpenAIModel (models/openai), its default Responses API,
// through the openai client, whose base URL comes from OPENAI_BASE_URL.

import { Agent, tool } from "@strands-agents/sdk";
import { OpenAIModel } from "@strands-agents/sdk/models/openai";
import { setupTracer } from "@strands-agents/sdk/telemetry";
import { z } from "zod";
import { live } from "../harness/index.mjs";

const script = [
  {
    name: "coordinator asks the researcher",
    when: { system: "You are the coordinator", toolResults: 0 },
    reply: { tool: "researcher", args: { input: "Find the key paper on sparse attention." } },
    times: 1,
  },
  {
    name: "coordinator asks the writer",
    when: { system: "You are the coordinator", toolResults: 1 },
    reply: { tool: "writer", args: { input: "Write two sentences: sparse attention, key paper Longformer (2020)." } },
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
    const provider = setupTracer({ exporters: { otlp: true } });
    const model = () => new OpenAIModel({ modelId: "gpt-4o-mini" });

    const webSearch = tool({
      name: "web_search",
      description: "Searches the web.",
      inputSchema: z.object({ query: z.string() }),
      callback: ({ query }) => `Top result for ${query}: Longformer (2020).`,
    });
    const researcher = new Agent({
      id: "researcher",
      name: "researcher",
      description: "Finds the key paper on a topic.",
      systemPrompt: "You are the researcher. Search, then name the key paper.",
      model: model(),
      tools: [webSearch],
      printer: false,
    });
    const writer = new Agent({
      id: "writer",
      name: "writer",
      description: "Writes a short answer.",
      systemPrompt: "You are the writer. Write two sentences.",
      model: model(),
      printer: false,
    });
    const coordinator = new Agent({
      id: "coordinator",
      name: "coordinator",
      description: "Delegates to the researcher and the writer.",
      systemPrompt: "You are the coordinator. Ask the researcher, then the writer, then answer.",
      model: model(),
      tools: [researcher.asTool(), writer.asTool()],
      printer: false,
    });

    const result = await coordinator.invoke("Explain sparse attention and name the key paper.");
    console.error(`coordinator: ${String(result).slice(0, 80)}`);
    await provider.shutdown();
  },
});
