// Vercel AI SDK 5: the shapes the plain ai-sdk-5 team does not show, on the
// same packages. A coordinator (Experimental_Agent) asks for two tools in
// one step, run in parallel by the SDK: `research` runs the researcher agent
// and `outline` runs the planner, a generateObject call. The researcher's
// tool `fact_check` runs the checker agent (agents three deep). The
// coordinator's `write` tool runs the writer with streamText (its stream
// read to the end inside the tool). Every agent is traced with
// `experimental_telemetry: { isEnabled: true, functionId }`, the documented
// way, on a NodeTracerProvider with a BatchSpanProcessor and the OTLP/HTTP
// JSON exporter.
//
// `node team.mjs CAPTURE unnamed` runs the same team with the checker's
// telemetry enabled but no functionId (a user who left it out): the SDK then
// writes no ai.telemetry.functionId on the checker's spans.
import { live } from "../harness/index.mjs";
import { NodeTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { Experimental_Agent as Agent, generateObject, streamText, tool, stepCountIs } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { z } from "zod";

const COORDINATOR = "You are the coordinator. Delegate research, outlining and writing.";
const RESEARCHER = "You are the researcher. Find facts and have them checked with fact_check.";
const CHECKER = "You are the fact checker. Say whether a claim holds.";
const PLANNER = "You are the planner. Outline the report as JSON.";
const WRITER = "You are the writer. Turn notes into a short report.";

export const script = [
  {
    name: "coordinator asks research and outline at once",
    when: { system: COORDINATOR, toolResults: 0 },
    reply: { tools: [{ name: "research", args: { topic: "solar panels" } }, { name: "outline", args: { topic: "solar panels" } }] },
    times: 1,
  },
  { name: "coordinator asks writing", when: { system: COORDINATOR, toolResults: 2 }, reply: { tool: "write", args: { notes: "panels got cheaper" } }, times: 1 },
  { name: "coordinator answers", when: { system: COORDINATOR, toolResults: 3 }, reply: { text: "Report: solar panels got cheaper." }, times: 1 },
  { name: "researcher checks a claim", when: { system: RESEARCHER, toolResults: 0 }, reply: { tool: "fact_check", args: { claim: "panels got 90% cheaper" } }, times: 1 },
  { name: "researcher answers", when: { system: RESEARCHER, toolResults: 1 }, reply: { text: "Panels got 90% cheaper since 2010 (checked)." }, times: 1 },
  { name: "checker answers", when: { system: CHECKER }, reply: { text: "The claim holds." }, times: 1 },
  { name: "planner outlines", when: { system: PLANNER }, reply: { text: '{"sections":["prices","outlook"]}' }, times: 1 },
  { name: "writer answers", when: { system: WRITER }, reply: { text: "Solar panels got cheaper." }, times: 1 },
];

await live({
  script,
  async team({ model, args }) {
    const unnamed = args.includes("unnamed");
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ "service.name": "ai-sdk-5-deep-team" }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    provider.register();

    const openai = createOpenAI({ baseURL: model.openaiBaseURL, apiKey: "sk-fake" });
    const llm = openai("gpt-4o-mini");
    const telemetry = (functionId) => ({ isEnabled: true, functionId });

    const checker = new Agent({
      model: llm,
      system: CHECKER,
      experimental_telemetry: unnamed ? { isEnabled: true } : telemetry("checker"),
    });
    const researcher = new Agent({
      model: llm,
      system: RESEARCHER,
      tools: {
        fact_check: tool({
          description: "Have a claim checked",
          inputSchema: z.object({ claim: z.string() }),
          execute: async ({ claim }, { abortSignal }) => (await checker.generate({ prompt: `Check: ${claim}`, abortSignal })).text,
        }),
      },
      stopWhen: stepCountIs(5),
      experimental_telemetry: telemetry("researcher"),
    });

    const coordinator = new Agent({
      model: llm,
      system: COORDINATOR,
      tools: {
        research: tool({
          description: "Ask the researcher to research a topic",
          inputSchema: z.object({ topic: z.string() }),
          execute: async ({ topic }, { abortSignal }) => (await researcher.generate({ prompt: `Research ${topic}`, abortSignal })).text,
        }),
        outline: tool({
          description: "Ask the planner for an outline",
          inputSchema: z.object({ topic: z.string() }),
          execute: async ({ topic }, { abortSignal }) => {
            const { object } = await generateObject({
              model: llm,
              system: PLANNER,
              prompt: `Outline a report on ${topic}`,
              schema: z.object({ sections: z.array(z.string()) }),
              abortSignal,
              experimental_telemetry: telemetry("planner"),
            });
            return object.sections.join(", ");
          },
        }),
        write: tool({
          description: "Ask the writer to write the report",
          inputSchema: z.object({ notes: z.string() }),
          execute: async ({ notes }, { abortSignal }) => {
            const result = streamText({ model: llm, system: WRITER, prompt: `Write from: ${notes}`, abortSignal, experimental_telemetry: telemetry("writer") });
            let text = "";
            for await (const part of result.textStream) text += part;
            return text;
          },
        }),
      },
      stopWhen: stepCountIs(5),
      experimental_telemetry: telemetry("coordinator"),
    });

    const result = await coordinator.generate({ prompt: "Write a short report on solar panel prices." });
    if (!result.text.includes("cheaper")) throw new Error(`unexpected answer: ${result.text}`);
    await provider.shutdown();
  },
});
