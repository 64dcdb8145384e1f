// OpenAI Agents SDK JS: a triage agent hands off to a researcher, which
// searches (a function tool) and hands off to a writer, which answers
// (handoffs, the SDK's own delegation primitive). The SDK's default model
// provider (Responses API) gets an OpenAI client pointed at the fake model
// through setDefaultOpenAIClient. Traced with OpenInference as its README
// shows: NodeTracerProvider + BatchSpanProcessor + an OTLP exporter (here
// the OTLP/HTTP JSON one, where the README uses the protobuf one), and
// OpenAIAgentsInstrumentation.manuallyInstrument(agents) (ESM), which
// replaces the SDK's trace processors with the OpenInference one.
import { live } from "../harness/index.mjs";
import { NodeTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { OpenAIAgentsInstrumentation } from "@arizeai/openinference-instrumentation-openai-agents";
import * as agents from "@openai/agents";
import { Agent, run, tool, setDefaultOpenAIClient, getGlobalTraceProvider } from "@openai/agents";
import OpenAI from "openai";
import { z } from "zod";

const TRIAGE = "You are triage. Route the request to the right specialist.";
const RESEARCHER = "You are the researcher. Find facts with search_web, then hand off to the writer.";
const WRITER = "You are the writer. Turn the findings into a short report.";

const searched = (req) => req.toolResultTexts.some((t) => t.includes("prices fell"));
export const script = [
  { name: "triage hands off", when: { system: TRIAGE, toolResults: 0 }, reply: { tool: "transfer_to_researcher", args: {} }, times: 1 },
  { name: "researcher searches", when: (r) => r.system.includes(RESEARCHER) && !searched(r), reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher hands off", when: (r) => r.system.includes(RESEARCHER) && searched(r), reply: { tool: "transfer_to_writer", args: {} }, times: 1 },
  { name: "writer answers", when: { system: WRITER }, reply: { text: "Report: solar panels got 90% cheaper." }, times: 1 },
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
    const writer = new Agent({ name: "writer", model: "gpt-4o-mini", instructions: WRITER });
    const researcher = new Agent({ name: "researcher", model: "gpt-4o-mini", instructions: RESEARCHER, tools: [searchWeb], handoffs: [writer] });
    const triage = new Agent({ name: "triage", model: "gpt-4o-mini", instructions: TRIAGE, handoffs: [researcher] });

    const result = await run(triage, "Write a short report on solar panel prices.");
    if (!String(result.finalOutput).includes("cheaper")) throw new Error(`unexpected answer: ${result.finalOutput}`);
    if (result.lastAgent?.name !== "writer") throw new Error(`last agent ${result.lastAgent?.name}, want writer`);
    await getGlobalTraceProvider().forceFlush();
    await provider.shutdown();
  },
});
