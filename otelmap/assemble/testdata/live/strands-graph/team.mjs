// Strands Agents TypeScript (@strands-agents/sdk): a Graph that fans out.
//
//   Graph({ nodes: [coordinator, researcher, writer],
//           edges: [[coordinator, researcher], [coordinator, writer]] })
//   coordinator plans; researcher (web_search once) and writer then run
//   concurrently on the coordinator's output (maxConcurrency defaults to
//   Infinity, multiagent/graph.js), each answering.
//
// Telemetry: Strands' own setupTracer({ exporters: { otlp: true } })
// (@strands-agents/sdk/telemetry, telemetry/config.js): NodeTracerProvider +
// BatchSpanProcessor(OTLPTraceExporter, OTLP/HTTP JSON), endpoint from
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.
//
// Model: Strands' OpenAIModel (models/openai), its default Responses API,
// through the openai client, whose base URL comes from OPENAI_BASE_URL.

import { Agent, tool } from "@strands-agents/sdk";
import { Graph } from "@strands-agents/sdk/multiagent";
import { OpenAIModel } from "@strands-agents/sdk/models/openai";
import { setupTracer } from "@strands-agents/sdk/telemetry";
import { z } from "zod";
import { live } from "../harness/index.mjs";

// researcher and writer run at the same time: rules key on each agent's
// instructions and its own tool results, never on arrival order.
const script = [
  {
    name: "coordinator plans",
    when: { system: "You are the coordinator", toolResults: 0 },
    reply: { text: "Plan: the researcher finds the key paper on sparse attention; the writer drafts two sentences." },
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
    const coordinator = new Agent({
      id: "coordinator",
      name: "coordinator",
      description: "Plans the work.",
      systemPrompt: "You are the coordinator. Write a short plan.",
      model: model(),
      printer: false,
    });
    const researcher = new Agent({
      id: "researcher",
      name: "researcher",
      description: "Searches the web for facts.",
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

    const graph = new Graph({
      nodes: [coordinator, researcher, writer],
      edges: [
        ["coordinator", "researcher"],
        ["coordinator", "writer"],
      ],
    });
    const result = await graph.invoke("Explain sparse attention and name the key paper.");
    const order = result.results?.map((r) => r.nodeId) ?? [];
    if (String(result.status).toLowerCase() !== "completed") throw new Error(`graph ended ${result.status}: ${JSON.stringify(order)}`);
    console.error(`graph: ${result.status}, nodes ${JSON.stringify(order)}`);
    await provider.shutdown();
  },
});
