// Vercel AI SDK 4: a coordinator with two specialist sub-agents, each called
// from one of the coordinator's tools (agents as tools). SDK 4 has no Agent
// class: each agent is `generateText` with its system prompt, its tools and
// `maxSteps`, on @ai-sdk/openai 1.x (`openai(model)` is Chat Completions
// there) pointed at the fake model. Traced the documented way:
// `experimental_telemetry: { isEnabled: true, functionId }` on each call,
// with an OpenTelemetry NodeTracerProvider, a BatchSpanProcessor and the
// OTLP/HTTP JSON exporter (endpoint from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
//
// The run: coordinator -> research tool -> researcher (which calls its own
// search_web tool once) -> back; coordinator -> write tool -> writer -> back;
// coordinator answers.
import { live } from "../harness/index.mjs";
import { NodeTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { generateText, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { z } from "zod";

const COORDINATOR = "You are the coordinator. Delegate research and writing to your specialists.";
const RESEARCHER = "You are the researcher. Find facts with search_web.";
const WRITER = "You are the writer. Turn notes into a short report.";

export const script = [
  { name: "coordinator asks research", when: { system: COORDINATOR, toolResults: 0 }, reply: { tool: "research", args: { topic: "solar panels" } }, times: 1 },
  { name: "coordinator asks writing", when: { system: COORDINATOR, toolResults: 1 }, reply: { tool: "write", args: { notes: "panels got cheaper" } }, times: 1 },
  { name: "coordinator answers", when: { system: COORDINATOR, toolResults: 2 }, reply: { text: "Report: solar panels got cheaper." }, times: 1 },
  { name: "researcher searches", when: { system: RESEARCHER, toolResults: 0 }, reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher answers", when: { system: RESEARCHER, toolResults: 1 }, reply: { text: "Panels got 90% cheaper since 2010." }, times: 1 },
  { name: "writer answers", when: { system: WRITER, toolResults: 0 }, reply: { text: "Solar panels got cheaper." }, times: 1 },
];

await live({
  script,
  async team({ model }) {
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ "service.name": "ai-sdk-4-team" }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    provider.register();

    const openai = createOpenAI({ baseURL: model.openaiBaseURL, apiKey: "sk-fake" });
    const llm = openai("gpt-4o-mini");
    const telemetry = (functionId) => ({ isEnabled: true, functionId });

    const researcher = (prompt, abortSignal) =>
      generateText({
        model: llm,
        system: RESEARCHER,
        prompt,
        abortSignal,
        maxSteps: 5,
        tools: {
          search_web: tool({
            description: "Search the web",
            parameters: z.object({ query: z.string() }),
            execute: async ({ query }) => `results for ${query}: prices fell 90%`,
          }),
        },
        experimental_telemetry: telemetry("researcher"),
      });
    const writer = (prompt, abortSignal) =>
      generateText({ model: llm, system: WRITER, prompt, abortSignal, experimental_telemetry: telemetry("writer") });

    const result = await generateText({
      model: llm,
      system: COORDINATOR,
      prompt: "Write a short report on solar panel prices.",
      maxSteps: 5,
      tools: {
        research: tool({
          description: "Ask the researcher to research a topic",
          parameters: z.object({ topic: z.string() }),
          execute: async ({ topic }, { abortSignal }) => (await researcher(`Research ${topic}`, abortSignal)).text,
        }),
        write: tool({
          description: "Ask the writer to write the report",
          parameters: z.object({ notes: z.string() }),
          execute: async ({ notes }, { abortSignal }) => (await writer(`Write from: ${notes}`, abortSignal)).text,
        }),
      },
      experimental_telemetry: telemetry("coordinator"),
    });
    if (!result.text.includes("cheaper")) throw new Error(`unexpected answer: ${result.text}`);
    await provider.shutdown();
  },
});
