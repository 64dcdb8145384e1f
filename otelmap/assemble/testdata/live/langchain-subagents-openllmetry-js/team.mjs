// LangChain v1 createAgent "subagents" pattern (docs: LangChain > Multi-agent
// > Subagents), the same team as ../langchain-subagents-js, traced by
// OpenLLMetry JS instead of OpenInference: Traceloop.init() from
// @traceloop/node-server-sdk, whose LangChain instrumentation is always on
// (it patches CallbackManager in both the CJS and the ESM copy of
// @langchain/core). The SDK's own exporter is OTLP/protobuf; the documented
// `exporter` option swaps in the OTLP/HTTP JSON exporter (the capture keeps
// JSON only), with the SDK's default batching.
//
// The team: `coordinator` calls the tool `research` (which runs the
// sub-agent `researcher`: one web_search, then an answer), then the tool
// `write` (which runs the sub-agent `writer`: answers at once), then answers.
// Tool names differ from agent names, as in the docs ("research" runs the
// research agent): the agent's own name is the one given to createAgent.
import { live } from "../harness/index.mjs";
import * as traceloop from "@traceloop/node-server-sdk";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { ChatOpenAI } from "@langchain/openai";
import { createAgent, tool } from "langchain";
import { z } from "zod";

const COORDINATOR_PROMPT = "You are the coordinator. Use research for facts and write for the final text.";
const RESEARCHER_PROMPT = "You are the researcher. Use web_search and report the facts.";
const WRITER_PROMPT = "You are the writer. Turn the facts you get into two short sentences.";

const lastToolResult = (req) => req.toolResultTexts.at(-1) ?? "";
const is = (prompt) => (r) => r.system.includes(prompt);

const script = [
  { name: "coordinator-calls-research", when: (r) => is("You are the coordinator")(r) && r.toolResults === 0, reply: { tool: "research", args: { query: "heat pump sales in Europe 2024" } }, times: 1 },
  { name: "coordinator-calls-write", when: (r) => is("You are the coordinator")(r) && r.toolResults === 1, reply: { tool: "write", args: { facts: "Heat pump sales in Europe fell 21% in 2024." } }, times: 1 },
  { name: "coordinator-answers", when: (r) => is("You are the coordinator")(r) && r.toolResults === 2, reply: { text: "Done: Heat pump sales in Europe fell by a fifth in 2024. Subsidy cuts are the main cause." }, times: 1 },
  { name: "researcher-searches", when: (r) => is("You are the researcher")(r) && r.toolResults === 0, reply: { tool: "web_search", args: { query: "heat pump sales Europe 2024" } }, times: 1 },
  { name: "researcher-answers", when: (r) => is("You are the researcher")(r) && lastToolResult(r).startsWith("Search results:"), reply: { text: "Heat pump sales in Europe fell 21% in 2024." }, times: 1 },
  { name: "writer-answers", when: (r) => is("You are the writer")(r) && r.toolResults === 0, reply: { text: "Heat pump sales in Europe fell by a fifth in 2024. Subsidy cuts are the main cause." }, times: 1 },
];

await live({
  script,
  async team() {
    traceloop.initialize({ appName: "langchain-team", exporter: new OTLPTraceExporter(), traceloopSyncEnabled: false });

    const model = new ChatOpenAI({ model: "gpt-4o" });
    const webSearch = tool(async ({ query }) => `Search results: EHPA says sales fell 21% in 2024 (${query}).`, {
      name: "web_search",
      description: "Search the web.",
      schema: z.object({ query: z.string() }),
    });
    const researcher = createAgent({ model, tools: [webSearch], systemPrompt: RESEARCHER_PROMPT, name: "researcher" });
    const writer = createAgent({ model, tools: [], systemPrompt: WRITER_PROMPT, name: "writer" });

    // The docs' wrapper: the tool runs the sub-agent and returns its last message.
    const research = tool(
      async ({ query }) => {
        const result = await researcher.invoke({ messages: [{ role: "user", content: query }] });
        return result.messages.at(-1)?.content;
      },
      { name: "research", description: "Research a topic and return findings", schema: z.object({ query: z.string() }) },
    );
    const write = tool(
      async ({ facts }) => {
        const result = await writer.invoke({ messages: [{ role: "user", content: facts }] });
        return result.messages.at(-1)?.content;
      },
      { name: "write", description: "Write the final text from facts", schema: z.object({ facts: z.string() }) },
    );
    const coordinator = createAgent({ model, tools: [research, write], systemPrompt: COORDINATOR_PROMPT, name: "coordinator" });

    const result = await coordinator.invoke({ messages: [{ role: "user", content: "How did heat pump sales in Europe do in 2024?" }] });
    const last = result.messages.at(-1);
    if (!String(last.content).startsWith("Done:")) throw new Error(`unexpected final answer: ${last.content}`);
    await traceloop.forceFlush();
  },
});
