// Vercel AI SDK 7: a ToolLoopAgent coordinator with two specialist
// ToolLoopAgents, each called from one of the coordinator's tools (agents as
// tools, docs/03-agents/06-subagents.mdx of ai 7), on @ai-sdk/openai 4.x
// (Responses API) pointed at the fake model. Traced by SDK 7's own route,
// its GenAI semantic-conventions integration: `registerTelemetry(new
// OpenTelemetry())` from @ai-sdk/otel with its defaults
// (docs/03-ai-sdk-core/60-telemetry.mdx of ai 7.0.173; @ai-sdk/otel 1.0.173
// src/open-telemetry.ts: `invoke_agent {modelId}` spans with
// gen_ai.agent.name = telemetry.functionId, `chat`, `execute_tool {name}`),
// with `telemetry: { functionId }` naming each agent, and an OpenTelemetry
// NodeTracerProvider, a BatchSpanProcessor and the OTLP/HTTP JSON exporter.
//
// The run: coordinator -> research tool -> researcher (which calls its own
// search_web tool once) -> back; coordinator -> write tool -> writer -> back;
// coordinator answers.
import { live } from "../harness/index.mjs";
import { NodeTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { ToolLoopAgent, tool, registerTelemetry } from "ai";
import { OpenTelemetry } from "@ai-sdk/otel";
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
      resource: resourceFromAttributes({ "service.name": "ai-sdk-7-team" }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    provider.register();
    registerTelemetry(new OpenTelemetry());

    const openai = createOpenAI({ baseURL: model.openaiBaseURL, apiKey: "sk-fake" });
    const llm = openai("gpt-4o-mini");
    const telemetry = (functionId) => ({ functionId });

    const researcher = new ToolLoopAgent({
      id: "researcher",
      model: llm,
      instructions: RESEARCHER,
      tools: {
        search_web: tool({
          description: "Search the web",
          inputSchema: z.object({ query: z.string() }),
          execute: async ({ query }) => `results for ${query}: prices fell 90%`,
        }),
      },
      telemetry: telemetry("researcher"),
    });
    const writer = new ToolLoopAgent({ id: "writer", model: llm, instructions: WRITER, telemetry: telemetry("writer") });

    const coordinator = new ToolLoopAgent({
      id: "coordinator",
      model: llm,
      instructions: COORDINATOR,
      tools: {
        research: tool({
          description: "Ask the researcher to research a topic",
          inputSchema: z.object({ topic: z.string() }),
          execute: async ({ topic }, { abortSignal }) => (await researcher.generate({ prompt: `Research ${topic}`, abortSignal })).text,
        }),
        write: tool({
          description: "Ask the writer to write the report",
          inputSchema: z.object({ notes: z.string() }),
          execute: async ({ notes }, { abortSignal }) => (await writer.generate({ prompt: `Write from: ${notes}`, abortSignal })).text,
        }),
      },
      telemetry: telemetry("coordinator"),
    });

    // The coordinator streams (ai.streamText), as a chat route would; the
    // sub-agents generate (ai.generateText), as the subagent docs show.
    const result = await coordinator.stream({ prompt: "Write a short report on solar panel prices." });
    let text = "";
    for await (const delta of result.textStream) text += delta;
    if (!text.includes("cheaper")) throw new Error(`unexpected answer: ${text}`);
    await provider.shutdown();
  },
});
