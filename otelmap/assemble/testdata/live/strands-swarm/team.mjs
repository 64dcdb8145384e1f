// Strands Agents TypeScript (@strands-agents/sdk): a Swarm of three agents.
//
//   Swarm({ nodes: [coordinator, researcher, writer], start: coordinator })
//   coordinator hands off to researcher; researcher calls web_search, then
//   hands off to writer; writer gives the final answer (no agentId).
//
// Strands TS routes a swarm by structured output, not by a handoff tool
// (multiagent/swarm.js): each node gets a Zod schema {agentId?, message,
// context?}, which the model fills by calling the strands_structured_output
// tool (tools/structured-output-tool.js); a present agentId is the handoff.
//
// Telemetry: Strands' own setupTracer({ exporters: { otlp: true } })
// (@strands-agents/sdk/telemetry, telemetry/config.js): NodeTracerProvider +
// BatchSpanProcessor(OTLPTraceExporter, OTLP/HTTP JSON), endpoint from
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.
//
// Model: Strands' OpenAIModel (models/openai), its default Responses API,
// through the openai client, whose base URL comes from OPENAI_BASE_URL.

import { Agent, tool } from "@strands-agents/sdk";
import { Swarm } from "@strands-agents/sdk/multiagent";
import { OpenAIModel } from "@strands-agents/sdk/models/openai";
import { setupTracer } from "@strands-agents/sdk/telemetry";
import { z } from "zod";
import { live } from "../harness/index.mjs";

const SO = "strands_structured_output";

/** True when the request holds the output of a call to the named function (Responses API). */
const called = (req, name) => {
  const input = Array.isArray(req.body.input) ? req.body.input : [];
  const ids = new Set(input.filter((it) => it.type === "function_call" && it.name === name).map((it) => it.call_id));
  return input.some((it) => it.type === "function_call_output" && ids.has(it.call_id));
};

const script = [
  {
    name: "coordinator hands off to researcher",
    when: (r) => r.system.includes("You are the coordinator") && !called(r, SO),
    reply: { tool: SO, args: { agentId: "researcher", message: "Find the key facts about sparse attention." } },
    times: 1,
  },
  {
    name: "researcher searches",
    when: (r) => r.system.includes("You are the researcher") && !called(r, "web_search") && !called(r, SO),
    reply: { tool: "web_search", args: { query: "sparse attention" } },
    times: 1,
  },
  {
    name: "researcher hands off to writer",
    when: (r) => r.system.includes("You are the researcher") && called(r, "web_search") && !called(r, SO),
    reply: { tool: SO, args: { agentId: "writer", message: "Write two sentences on sparse attention.", context: { source: "Longformer (2020)" } } },
    times: 1,
  },
  {
    name: "writer answers",
    when: (r) => r.system.includes("You are the writer") && !called(r, SO),
    reply: { tool: SO, args: { message: "Sparse attention lets each token attend to a few positions. Longformer (2020) made it practical." } },
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
      description: "Plans the work and routes it.",
      systemPrompt: "You are the coordinator. Route research to the researcher.",
      model: model(),
      printer: false,
    });
    const researcher = new Agent({
      id: "researcher",
      name: "researcher",
      description: "Searches the web for facts.",
      systemPrompt: "You are the researcher. Search, then hand off to the writer.",
      model: model(),
      tools: [webSearch],
      printer: false,
    });
    const writer = new Agent({
      id: "writer",
      name: "writer",
      description: "Writes the final answer.",
      systemPrompt: "You are the writer. Write the final answer.",
      model: model(),
      printer: false,
    });

    const swarm = new Swarm({ nodes: [coordinator, researcher, writer], start: "coordinator", maxSteps: 6 });
    const result = await swarm.invoke("Explain sparse attention and name the key paper.");
    const order = result.results?.map((r) => r.nodeId) ?? [];
    if (String(result.status).toLowerCase() !== "completed") throw new Error(`swarm ended ${result.status}: ${JSON.stringify(order)}`);
    console.error(`swarm: ${result.status}, nodes ${JSON.stringify(order)}`);
    await provider.shutdown();
  },
});
