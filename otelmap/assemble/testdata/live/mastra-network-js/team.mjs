// Mastra agent network: `coordinator.network(task)` (Agent with `agents`
// and memory, as the docs' agent networks require). Mastra builds a
// "Routing Agent" that picks one primitive per iteration by structured
// output ({primitiveId, primitiveType, prompt, selectionReason}), runs it,
// then asks the model whether the task is complete ({isComplete, ...}).
// Traced by Mastra's own observability with @mastra/otel-exporter (custom
// provider, http/json), as in ../mastra-js.
//
// The run: routing picks `researcher` (one webSearch, then an answer), the
// completion check says not complete, routing picks `writer` (answers at
// once), the completion check says complete.
import { live } from "../harness/index.mjs";
import { Mastra } from "@mastra/core/mastra";
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { Memory } from "@mastra/memory";
import { Observability } from "@mastra/observability";
import { OtelExporter } from "@mastra/otel-exporter";
import { z } from "zod";

const COORDINATOR_PROMPT = "You coordinate a report desk: the researcher finds facts, the writer writes the final text. The task is complete when the writer has written it.";
const RESEARCHER_PROMPT = "You are the researcher. Use webSearch and report the facts.";
const WRITER_PROMPT = "You are the writer. Turn the facts you get into two short sentences.";
const RESEARCH_ANSWER = "FACTS: heat pump sales in Europe fell 21% in 2024.";
const WRITER_ANSWER = "REPORT: Heat pump sales in Europe fell by a fifth in 2024. Subsidy cuts are the main cause.";

const lastToolResult = (req) => req.toolResultTexts.at(-1) ?? "";
// Sub-agents get their own instructions first (then the caller's context).
const is = (prompt) => (r) => r.system.startsWith(prompt);
const router = (r) => r.system.includes("You are a router in a network");
const bodyHas = (r, s) => JSON.stringify(r.body).includes(s);
const completionCheck = (r) => router(r) && bodyHas(r, "evaluate if the task is complete");
const json = (o) => ({ text: JSON.stringify(o) });

const script = [
  { name: "completion-after-researcher", when: (r) => completionCheck(r) && !bodyHas(r, "REPORT:"), reply: json({ isComplete: false, completionReason: "The writer has not written the report yet.", finalResult: "" }), times: 1 },
  { name: "completion-after-writer", when: (r) => completionCheck(r) && bodyHas(r, "REPORT:"), reply: json({ isComplete: true, completionReason: "The writer wrote the report.", finalResult: "" }), times: 1 },
  { name: "route-to-researcher", when: (r) => router(r) && !bodyHas(r, "FACTS:"), reply: json({ primitiveId: "researcher", primitiveType: "agent", prompt: "How did heat pump sales in Europe do in 2024?", selectionReason: "Facts first." }), times: 1 },
  { name: "route-to-writer", when: (r) => router(r) && bodyHas(r, "FACTS:") && !bodyHas(r, "REPORT:"), reply: json({ primitiveId: "writer", primitiveType: "agent", prompt: "Write it up: heat pump sales in Europe fell 21% in 2024.", selectionReason: "The facts are in; now the text." }), times: 1 },
  { name: "researcher-searches", when: (r) => is("You are the researcher")(r) && r.toolResults === 0, reply: { tool: "webSearch", args: { query: "heat pump sales Europe 2024" } }, times: 1 },
  { name: "researcher-answers", when: (r) => is("You are the researcher")(r) && lastToolResult(r).includes("Search results:"), reply: { text: RESEARCH_ANSWER }, times: 1 },
  { name: "writer-answers", when: (r) => is("You are the writer")(r), reply: { text: WRITER_ANSWER }, times: 1 },
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
      id: "researcher", name: "researcher", description: "Finds facts on the web.",
      instructions: RESEARCHER_PROMPT, model: "openai/gpt-4o", tools: { webSearch },
    });
    const writer = new Agent({
      id: "writer", name: "writer", description: "Writes the final short report from facts.",
      instructions: WRITER_PROMPT, model: "openai/gpt-4o",
    });
    const coordinator = new Agent({
      id: "coordinator", name: "coordinator", instructions: COORDINATOR_PROMPT, model: "openai/gpt-4o",
      agents: { researcher, writer }, memory: new Memory(),
    });
    const mastra = new Mastra({
      agents: { coordinator, researcher, writer },
      observability: new Observability({
        configs: {
          otel: {
            serviceName: "mastra-network",
            exporters: [new OtelExporter({ provider: { custom: { endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT, protocol: "http/json" } } })],
          },
        },
      }),
    });

    try {
      const stream = await mastra.getAgent("coordinator").network("Write me a short report on heat pump sales in Europe in 2024.", {
        memory: { thread: "live-network", resource: "live-corpus" },
      });
      const kinds = [];
      for await (const chunk of stream) kinds.push(chunk.type);
      if (DEBUG) console.error(kinds.join(" "));
      const status = await stream.status;
      if (status !== "success") throw new Error(`network ended ${status}`);
    } finally {
      if (DEBUG) for (const r of model.requests) console.error(JSON.stringify({ rule: r.rule, api: r.api, system: r.system.slice(0, 60), tr: r.toolResults, tools: r.tools, last: r.lastUser.slice(0, 80) }));
      await mastra.shutdown();
    }
  },
});
