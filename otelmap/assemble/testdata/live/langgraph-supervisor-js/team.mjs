// LangGraph.js supervisor team (@langchain/langgraph-supervisor createSupervisor)
// traced by the OpenInference LangChain instrumentation, set up as its README
// says: a NodeTracerProvider, LangChainInstrumentation().manuallyInstrument on
// @langchain/core/callbacks/manager; spans leave through the OTLP/HTTP JSON
// exporter with the default BatchSpanProcessor.
//
// The team is the supervisor README's: `supervisor` hands off to
// `research_expert` (one web_search, then an answer), control returns to the
// supervisor by the graph's static edge, the supervisor hands off to
// `math_expert` (one add, then an answer), control returns, the supervisor
// answers. Agents are createReactAgent graphs (the type createSupervisor takes).
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
import { createSupervisor } from "@langchain/langgraph-supervisor";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { tool } from "@langchain/core/tools";
import { z } from "zod";

const SUPERVISOR_PROMPT =
  "You are a team supervisor managing a research expert and a math expert. " +
  "For current events, use research_expert. For math problems, use math_expert.";
const RESEARCH_PROMPT = "You are a world class researcher with access to web search. Do not do any math.";
const MATH_PROMPT = "You are a math expert. Always use one tool at a time.";

/** The last tool result the request carries (handoff and tool messages alike). */
const lastToolResult = (req) => req.toolResultTexts.at(-1) ?? "";

// Keyed on the agent (its prompt) and on where it stands (the last tool
// result it holds), never on arrival order.
const script = [
  {
    name: "supervisor-delegates-research",
    when: (r) => r.system.includes("team supervisor") && r.toolResults === 0,
    reply: { tool: "transfer_to_research_expert", args: {} },
    times: 1,
  },
  {
    name: "supervisor-delegates-math",
    when: (r) => r.system.includes("team supervisor") && lastToolResult(r).includes("transferred back to supervisor") && !r.toolResultTexts.some((t) => t.includes("transferred to math_expert")),
    reply: { tool: "transfer_to_math_expert", args: {} },
    times: 1,
  },
  {
    name: "supervisor-answers",
    when: (r) => r.system.includes("team supervisor") && lastToolResult(r).includes("transferred back to supervisor") && r.toolResultTexts.some((t) => t.includes("transferred to math_expert")),
    reply: { text: "The five FAANG companies employed 1,977,586 people in 2024." },
    times: 1,
  },
  {
    name: "research-searches",
    when: (r) => r.system.includes("world class researcher") && lastToolResult(r).includes("transferred to research_expert"),
    reply: { tool: "web_search", args: { query: "FAANG headcount 2024" } },
    times: 1,
  },
  {
    name: "research-answers",
    when: (r) => r.system.includes("world class researcher") && lastToolResult(r).includes("Here are the headcounts"),
    reply: { text: "Meta 67,317; Apple 164,000; Amazon 1,551,000; Netflix 14,000; Google 181,269." },
    times: 1,
  },
  {
    name: "math-adds",
    when: (r) => r.system.includes("math expert. Always") && lastToolResult(r).includes("transferred to math_expert"),
    reply: { tool: "add", args: { a: 1796317, b: 181269 } },
    times: 1,
  },
  {
    name: "math-answers",
    when: (r) => r.system.includes("math expert. Always") && /^\d+$/.test(lastToolResult(r)),
    reply: { text: "The combined headcount is 1,977,586." },
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
    const add = tool(async ({ a, b }) => a + b, {
      name: "add",
      description: "Add two numbers.",
      schema: z.object({ a: z.number(), b: z.number() }),
    });
    const webSearch = tool(
      async () =>
        "Here are the headcounts for each of the FAANG companies in 2024:\n" +
        "1. Facebook (Meta): 67,317 employees.\n2. Apple: 164,000 employees.\n3. Amazon: 1,551,000 employees.\n" +
        "4. Netflix: 14,000 employees.\n5. Google (Alphabet): 181,269 employees.",
      { name: "web_search", description: "Search the web for information.", schema: z.object({ query: z.string() }) },
    );
    const mathAgent = createReactAgent({ llm: model, tools: [add], name: "math_expert", prompt: MATH_PROMPT });
    const researchAgent = createReactAgent({ llm: model, tools: [webSearch], name: "research_expert", prompt: RESEARCH_PROMPT });
    const app = createSupervisor({ agents: [researchAgent, mathAgent], llm: model, prompt: SUPERVISOR_PROMPT }).compile();

    const result = await app.invoke({
      messages: [{ role: "user", content: "what's the combined headcount of the FAANG companies in 2024??" }],
    }, { callbacks });
    const last = result.messages.at(-1);
    if (!String(last.content).includes("1,977,586")) throw new Error(`unexpected final answer: ${last.content}`);
    await provider.shutdown();
  },
});
