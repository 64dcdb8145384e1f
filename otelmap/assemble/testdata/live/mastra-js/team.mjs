// Mastra supervisor agent with sub-agents (Agent `agents: {...}`: each
// sub-agent becomes a tool `agent-<key>` the supervisor's model can call),
// traced by Mastra's own observability: `new Mastra({ observability: new
// Observability({ configs: { otel: { serviceName, exporters: [new
// OtelExporter({ provider: { custom: { endpoint, protocol: "http/json" } } })]
// } } }) })` as the OtelExporter reference documents. The exporter converts
// Mastra's spans to OpenTelemetry (its own BatchSpanProcessor, 5 s delay);
// mastra.shutdown() flushes it.
//
// The team: `coordinator` calls agent-researcher (the researcher runs one
// web-search tool, then answers), then agent-writer (answers at once), then
// answers. Models go through Mastra's model router ("openai/gpt-4o"), whose
// bundled OpenAI provider reads OPENAI_BASE_URL / OPENAI_API_KEY.
import { live } from "../harness/index.mjs";
import { Mastra } from "@mastra/core/mastra";
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { Observability } from "@mastra/observability";
import { OtelExporter } from "@mastra/otel-exporter";
import { z } from "zod";

const COORDINATOR_PROMPT = "You are the coordinator. Ask the researcher for facts, then the writer for the final text.";
const RESEARCHER_PROMPT = "You are the researcher. Use webSearch and report the facts.";
const WRITER_PROMPT = "You are the writer. Turn the facts you get into two short sentences.";

const lastToolResult = (req) => req.toolResultTexts.at(-1) ?? "";
// A sub-agent's request carries its own instructions first, then the
// supervisor's (Mastra passes the supervisor's context on): key on the first.
const is = (prompt) => (r) => r.system.startsWith(prompt);

const script = [
  { name: "coordinator-calls-researcher", when: (r) => is("You are the coordinator")(r) && r.toolResults === 0, reply: { tool: "agent-researcher", args: { prompt: "How did heat pump sales in Europe do in 2024?" } }, times: 1 },
  { name: "coordinator-calls-writer", when: (r) => is("You are the coordinator")(r) && r.toolResults === 1, reply: { tool: "agent-writer", args: { prompt: "Facts: heat pump sales in Europe fell 21% in 2024." } }, times: 1 },
  { name: "coordinator-answers", when: (r) => is("You are the coordinator")(r) && r.toolResults === 2, reply: { text: "Done: Heat pump sales in Europe fell by a fifth in 2024. Subsidy cuts are the main cause." }, times: 1 },
  { name: "researcher-searches", when: (r) => is("You are the researcher")(r) && r.toolResults === 0, reply: { tool: "webSearch", args: { query: "heat pump sales Europe 2024" } }, times: 1 },
  { name: "researcher-answers", when: (r) => is("You are the researcher")(r) && lastToolResult(r).includes("Search results:"), reply: { text: "Heat pump sales in Europe fell 21% in 2024." }, times: 1 },
  { name: "writer-answers", when: (r) => is("You are the writer")(r) && r.toolResults === 0, reply: { text: "Heat pump sales in Europe fell by a fifth in 2024. Subsidy cuts are the main cause." }, times: 1 },
];

const DEBUG = process.env.LIVE_DEBUG;
await live({
  script,
  async team({ model }) {
    const webSearch = createTool({
      id: "web-search",
      description: "Search the web.",
      inputSchema: z.object({ query: z.string() }),
      execute: async ({ query }) => `Search results: EHPA says sales fell 21% in 2024 (${query}).`,
    });
    const researcher = new Agent({
      id: "researcher",
      name: "researcher",
      description: "Finds facts on the web.",
      instructions: RESEARCHER_PROMPT,
      model: "openai/gpt-4o",
      tools: { webSearch },
    });
    const writer = new Agent({
      id: "writer",
      name: "writer",
      description: "Writes short final texts from facts.",
      instructions: WRITER_PROMPT,
      model: "openai/gpt-4o",
    });
    const coordinator = new Agent({
      id: "coordinator",
      name: "coordinator",
      instructions: COORDINATOR_PROMPT,
      model: "openai/gpt-4o",
      agents: { researcher, writer },
    });
    const mastra = new Mastra({
      agents: { coordinator, researcher, writer },
      observability: new Observability({
        configs: {
          otel: {
            serviceName: "mastra-team",
            exporters: [new OtelExporter({ provider: { custom: { endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT, protocol: "http/json" } } })],
          },
        },
      }),
    });

    const result = await mastra.getAgent("coordinator").generate("How did heat pump sales in Europe do in 2024? Write it up.");
    if (!result.text.startsWith("Done:")) throw new Error(`unexpected final answer: ${result.text}`);
    await mastra.shutdown();
    if (DEBUG) for (const r of model.requests) console.error(JSON.stringify({ api: r.api, stream: r.stream, system: r.system, tr: r.toolResults, tools: r.tools, last: r.lastUser.slice(0, 60) }));
  },
});
