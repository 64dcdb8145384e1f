// LangGraph.js swarm team (@langchain/langgraph-swarm createSwarm with
// createHandoffTool) traced by the OpenInference LangChain instrumentation,
// set up as its README says (NodeTracerProvider, manuallyInstrument on
// @langchain/core/callbacks/manager), OTLP/HTTP JSON with default batching.
//
// The team: `coordinator` (the default active agent) hands off to
// `researcher`; the researcher searches once and hands back to the
// coordinator; the coordinator hands off to `writer`, who answers, which ends
// the turn. Every move is a handoff tool (transfer_to_<agent>) whose Command
// goes to the parent graph. Agents are createReactAgent graphs (the type
// createSwarm takes).
//
// `node team.mjs CAPTURE langfuse` (the `langfuse` variant, captures-langfuse/)
// traces the same team through Langfuse instead, as Langfuse's LangChain/
// LangGraph guide does: @langfuse/langchain's CallbackHandler passed in the
// invoke's callbacks, the LangfuseSpanProcessor (@langfuse/otel) on the
// NodeTracerProvider given the OTLP/HTTP JSON exporter through its documented
// `exporter` option (there is no Langfuse server here).
import { live } from "../harness/index.mjs";
import { NodeTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { LangfuseSpanProcessor } from "@langfuse/otel";
import { CallbackHandler } from "@langfuse/langchain";
import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { ChatOpenAI } from "@langchain/openai";
import { createSwarm, createHandoffTool } from "@langchain/langgraph-swarm";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { MemorySaver } from "@langchain/langgraph";
import { tool } from "@langchain/core/tools";
import { z } from "zod";

const COORDINATOR_PROMPT = "You are the coordinator of a report desk. Research goes to researcher, writing goes to writer.";
const RESEARCHER_PROMPT = "You are the researcher. Search the web, then hand the findings back to the coordinator.";
const WRITER_PROMPT = "You are the writer. Write the final short report for the user.";

const lastToolResult = (req) => req.toolResultTexts.at(-1) ?? "";
const is = (prompt) => (r) => r.system.includes(prompt);

const script = [
  {
    name: "coordinator-to-researcher",
    when: (r) => is("You are the coordinator")(r) && r.toolResults === 0,
    reply: { tool: "transfer_to_researcher", args: {} },
    times: 1,
  },
  {
    name: "coordinator-to-writer",
    when: (r) => is("You are the coordinator")(r) && lastToolResult(r) === "Successfully transferred to coordinator",
    reply: { tool: "transfer_to_writer", args: {} },
    times: 1,
  },
  {
    name: "researcher-searches",
    when: (r) => is("You are the researcher")(r) && lastToolResult(r) === "Successfully transferred to researcher",
    reply: { tool: "web_search", args: { query: "solar capacity added in 2024" } },
    times: 1,
  },
  {
    name: "researcher-back-to-coordinator",
    when: (r) => is("You are the researcher")(r) && lastToolResult(r).startsWith("Search results:"),
    reply: { tool: "transfer_to_coordinator", args: {} },
    times: 1,
  },
  {
    name: "writer-answers",
    when: (r) => is("You are the writer")(r) && lastToolResult(r) === "Successfully transferred to writer",
    reply: { text: "Report: the world added about 600 GW of solar capacity in 2024." },
    times: 1,
  },
];

await live({
  script,
  async team({ args }) {
    const langfuse = args[0] === "langfuse";
    const processor = langfuse
      ? new LangfuseSpanProcessor({ exporter: new OTLPTraceExporter() })
      : new BatchSpanProcessor(new OTLPTraceExporter());
    const provider = new NodeTracerProvider({ spanProcessors: [processor] });
    provider.register();
    if (!langfuse) new LangChainInstrumentation().manuallyInstrument(CallbackManagerModule);
    const callbacks = langfuse ? [new CallbackHandler()] : [];

    const model = new ChatOpenAI({ model: "gpt-4o" });
    const webSearch = tool(async ({ query }) => `Search results: about 600 GW of solar were added worldwide in 2024 (${query}).`, {
      name: "web_search",
      description: "Search the web for information.",
      schema: z.object({ query: z.string() }),
    });
    const coordinator = createReactAgent({
      llm: model,
      tools: [
        createHandoffTool({ agentName: "researcher", description: "Transfer to the researcher for facts" }),
        createHandoffTool({ agentName: "writer", description: "Transfer to the writer for the final report" }),
      ],
      name: "coordinator",
      prompt: COORDINATOR_PROMPT,
    });
    const researcher = createReactAgent({
      llm: model,
      tools: [webSearch, createHandoffTool({ agentName: "coordinator", description: "Transfer back to the coordinator" })],
      name: "researcher",
      prompt: RESEARCHER_PROMPT,
    });
    const writer = createReactAgent({ llm: model, tools: [], name: "writer", prompt: WRITER_PROMPT });

    const app = createSwarm({ agents: [coordinator, researcher, writer], defaultActiveAgent: "coordinator" }).compile({
      checkpointer: new MemorySaver(),
    });
    const result = await app.invoke(
      { messages: [{ role: "user", content: "Write me a short report on how much solar was added in 2024." }] },
      { configurable: { thread_id: "live-1" }, callbacks },
    );
    const last = result.messages.at(-1);
    if (!String(last.content).startsWith("Report:")) throw new Error(`unexpected final answer: ${last.content}`);
    if (result.activeAgent !== "writer") throw new Error(`active agent at the end is ${result.activeAgent}, want writer`);
    await provider.shutdown();
  },
});
