// Deep Agents JS (deepagents 1.14.1): a main agent delegating to two
// sub-agents with its built-in `task` tool (README: "Sub-agents — `task` for
// delegating work with isolated context windows"; createDeepAgent's
// `subagents: [{ name, description, systemPrompt, tools }]`).
//
// The team: `coordinator` (createDeepAgent, name "coordinator") calls
// task {subagent_type: "researcher"} (the researcher calls web_search once,
// then answers), then task {subagent_type: "writer"} (the writer answers at
// once), then answers. The task tool runs the sub-agent's graph with
// `lc_agent_name: <subagent_type>` in the run's metadata
// (dist/langsmith-*.js, runTask).
//
// Traced the way the corpus's langchain-subagents-js is: Deep Agents is built
// on LangChain/LangGraph and documents LangSmith, not OpenTelemetry, so the
// OpenTelemetry route is OpenInference's LangChain instrumentation as its
// README says (NodeTracerProvider, manuallyInstrument on
// @langchain/core/callbacks/manager), OTLP/HTTP JSON, default batching.
import { live } from "../harness/index.mjs";
import { NodeTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { ChatOpenAI } from "@langchain/openai";
import { tool } from "langchain";
import { createDeepAgent } from "deepagents";
import { z } from "zod";

const COORDINATOR_PROMPT = "You are the coordinator. Delegate research to the researcher and writing to the writer with the task tool, then answer.";
const RESEARCHER_PROMPT = "You are the researcher. Use web_search and report the facts.";
const WRITER_PROMPT = "You are the writer. Turn the facts you get into two short sentences.";

const is = (prompt) => (r) => r.system.includes(prompt);
const lastToolResult = (req) => req.toolResultTexts.at(-1) ?? "";

const script = [
  { name: "coordinator-delegates-research", when: (r) => is("You are the coordinator")(r) && r.toolResults === 0, reply: { tool: "task", args: { description: "Find how heat pump sales in Europe changed in 2024.", subagent_type: "researcher" } }, times: 1 },
  { name: "coordinator-delegates-writing", when: (r) => is("You are the coordinator")(r) && r.toolResults === 1, reply: { tool: "task", args: { description: "Write two sentences: heat pump sales in Europe fell 21% in 2024.", subagent_type: "writer" } }, times: 1 },
  { name: "coordinator-answers", when: (r) => is("You are the coordinator")(r) && r.toolResults === 2, reply: { text: "Heat pump sales in Europe fell by a fifth in 2024. Subsidy cuts are the main cause." }, times: 1 },
  { name: "researcher-searches", when: (r) => is("You are the researcher")(r) && r.toolResults === 0, reply: { tool: "web_search", args: { query: "heat pump sales Europe 2024" } }, times: 1 },
  { name: "researcher-answers", when: (r) => is("You are the researcher")(r) && lastToolResult(r).startsWith("Search results:"), reply: { text: "Heat pump sales in Europe fell 21% in 2024." }, times: 1 },
  { name: "writer-answers", when: (r) => is("You are the writer")(r) && r.toolResults === 0, reply: { text: "Heat pump sales in Europe fell by a fifth in 2024. Subsidy cuts are the main cause." }, times: 1 },
];

await live({
  script,
  async team() {
    const provider = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
    provider.register();
    new LangChainInstrumentation().manuallyInstrument(CallbackManagerModule);

    const model = new ChatOpenAI({ model: "gpt-4o" });
    const webSearch = tool(async ({ query }) => `Search results: EHPA says sales fell 21% in 2024 (${query}).`, {
      name: "web_search",
      description: "Search the web.",
      schema: z.object({ query: z.string() }),
    });
    const coordinator = createDeepAgent({
      name: "coordinator",
      model,
      systemPrompt: COORDINATOR_PROMPT,
      subagents: [
        { name: "researcher", description: "Finds facts on the web.", systemPrompt: RESEARCHER_PROMPT, tools: [webSearch] },
        { name: "writer", description: "Writes the final text from facts.", systemPrompt: WRITER_PROMPT, tools: [] },
      ],
    });
    const result = await coordinator.invoke({ messages: [{ role: "user", content: "How did heat pump sales in Europe change in 2024?" }] });
    console.error(`coordinator: ${String(result.messages.at(-1)?.content).slice(0, 80)}`);
    await provider.shutdown();
  },
});
