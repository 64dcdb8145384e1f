// OpenAI Agents SDK JS: an orchestrator calls a researcher and a writer as
// tools (`agent.asTool()`, the SDK's agents-as-tools pattern); the
// researcher searches with its own function tool. The SDK's default model
// provider (Responses API) gets an OpenAI client pointed at the fake model
// through setDefaultOpenAIClient. Traced with OpenInference as its README
// shows: NodeTracerProvider + BatchSpanProcessor + an OTLP exporter (here
// the OTLP/HTTP JSON one, where the README uses the protobuf one), and
// OpenAIAgentsInstrumentation.manuallyInstrument(agents) (ESM).
import { live } from "../harness/index.mjs";
import { NodeTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { OpenAIAgentsInstrumentation } from "@arizeai/openinference-instrumentation-openai-agents";
import * as agents from "@openai/agents";
import { Agent, run, tool, setDefaultOpenAIClient, getGlobalTraceProvider } from "@openai/agents";
import OpenAI from "openai";
import { z } from "zod";

const ORCHESTRATOR = "You are the orchestrator. Use your specialists' tools, then answer.";
const RESEARCHER = "You are the researcher. Find facts with search_web.";
const WRITER = "You are the writer. Turn notes into a short report.";

export const script = [
  { name: "orchestrator asks research", when: { system: ORCHESTRATOR, toolResults: 0 }, reply: { tool: "research", args: { input: "solar panel prices" } }, times: 1 },
  { name: "orchestrator asks writing", when: { system: ORCHESTRATOR, toolResults: 1 }, reply: { tool: "write", args: { input: "panels got 90% cheaper" } }, times: 1 },
  { name: "orchestrator answers", when: { system: ORCHESTRATOR, toolResults: 2 }, reply: { text: "Report: solar panels got 90% cheaper." }, times: 1 },
  { name: "researcher searches", when: { system: RESEARCHER, toolResults: 0 }, reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher answers", when: { system: RESEARCHER, toolResults: 1 }, reply: { text: "Panels got 90% cheaper since 2010." }, times: 1 },
  { name: "writer answers", when: { system: WRITER, toolResults: 0 }, reply: { text: "Solar panels got 90% cheaper." }, times: 1 },
];

await live({
  script,
  async team({ model }) {
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ "service.name": "openai-agents-team" }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    provider.register();
    new OpenAIAgentsInstrumentation({ tracerProvider: provider }).manuallyInstrument(agents);

    setDefaultOpenAIClient(new OpenAI({ baseURL: model.openaiBaseURL, apiKey: "sk-fake" }));

    const searchWeb = tool({
      name: "search_web",
      description: "Search the web",
      parameters: z.object({ query: z.string() }),
      execute: async ({ query }) => `results for ${query}: prices fell 90%`,
    });
    const researcher = new Agent({ name: "researcher", model: "gpt-4o-mini", instructions: RESEARCHER, tools: [searchWeb] });
    const writer = new Agent({ name: "writer", model: "gpt-4o-mini", instructions: WRITER });
    const orchestrator = new Agent({
      name: "orchestrator",
      model: "gpt-4o-mini",
      instructions: ORCHESTRATOR,
      tools: [
        researcher.asTool({ toolName: "research", toolDescription: "Research a topic" }),
        writer.asTool({ toolName: "write", toolDescription: "Write the report from notes" }),
      ],
    });

    const result = await run(orchestrator, "Write a short report on solar panel prices.");
    if (!String(result.finalOutput).includes("cheaper")) throw new Error(`unexpected answer: ${result.finalOutput}`);
    await getGlobalTraceProvider().forceFlush();
    await provider.shutdown();
  },
});
