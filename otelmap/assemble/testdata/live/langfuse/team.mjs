// Langfuse JS/TS SDK v5 (@langfuse/tracing, built on OpenTelemetry): a team
// written by hand, the way a Langfuse user instruments their own agents.
// The coordinator is an `agent` observation (startActiveObservation(...,
// {asType: "agent"})); it offers the model two tools, `research` and
// `write`; each tool call runs in a `tool` observation whose body runs the
// specialist, itself an `agent` observation. The researcher has a tool of
// its own (`search_web`, a `tool` observation, not an agent). Every model
// call goes through the OpenAI client wrapped by @langfuse/openai's
// observeOpenAI (Chat Completions), which makes a `generation` observation
// under the active one.
//
// Export: the LangfuseSpanProcessor on a NodeTracerProvider, as the
// @langfuse/otel README shows, given the OTLP/HTTP JSON exporter through its
// documented `exporter` option (LangfuseSpanProcessorParams.exporter, "Custom
// OpenTelemetry span exporter"): no Langfuse server exists here, and this
// way the capture holds exactly what the processor would send to Langfuse
// (its default filter, its environment/propagated attributes, its batching).
import { live } from "../harness/index.mjs";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { LangfuseSpanProcessor } from "@langfuse/otel";
import { startActiveObservation } from "@langfuse/tracing";
import { observeOpenAI } from "@langfuse/openai";
import OpenAI from "openai";

const COORDINATOR = "You are the coordinator. Delegate to research and write, then answer.";
const RESEARCHER = "You are the researcher. Find facts with search_web.";
const WRITER = "You are the writer. Turn notes into a short report.";

export const script = [
  { name: "coordinator asks research", when: { system: COORDINATOR, toolResults: 0 }, reply: { tool: "research", args: { topic: "solar panel prices" } }, times: 1 },
  { name: "coordinator asks writing", when: { system: COORDINATOR, toolResults: 1 }, reply: { tool: "write", args: { notes: "panels got 90% cheaper" } }, times: 1 },
  { name: "coordinator answers", when: { system: COORDINATOR, toolResults: 2 }, reply: { text: "Report: solar panels got 90% cheaper." }, times: 1 },
  { name: "researcher searches", when: { system: RESEARCHER, toolResults: 0 }, reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher answers", when: { system: RESEARCHER, toolResults: 1 }, reply: { text: "Panels got 90% cheaper since 2010." }, times: 1 },
  { name: "writer answers", when: { system: WRITER, toolResults: 0 }, reply: { text: "Solar panels got 90% cheaper." }, times: 1 },
];

/** A function tool in the Chat Completions shape. */
function fnTool(name, description, param) {
  return {
    type: "function",
    function: { name, description, parameters: { type: "object", properties: { [param]: { type: "string" } }, required: [param] } },
  };
}

/**
 * One agent's tool loop: ask the model, run the tools it calls (each in a
 * Langfuse `tool` observation), until it answers in text.
 * @param {OpenAI} openai
 * @param {string} system
 * @param {string} task
 * @param {any[]} tools
 * @param {Record<string, (args: any) => Promise<string>>} run
 */
async function toolLoop(openai, system, task, tools, run) {
  const messages = [
    { role: "system", content: system },
    { role: "user", content: task },
  ];
  for (let step = 0; step < 5; step++) {
    const completion = await openai.chat.completions.create({
      model: "gpt-4o-mini",
      messages,
      ...(tools.length ? { tools } : {}),
    });
    const msg = completion.choices[0].message;
    messages.push(msg);
    if (!msg.tool_calls?.length) return msg.content ?? "";
    for (const call of msg.tool_calls) {
      const args = JSON.parse(call.function.arguments);
      const result = await startActiveObservation(
        call.function.name,
        async (tool) => {
          tool.update({ input: args });
          const out = await run[call.function.name](args);
          tool.update({ output: out });
          return out;
        },
        { asType: "tool" },
      );
      messages.push({ role: "tool", tool_call_id: call.id, content: result });
    }
  }
  throw new Error(`${system}: no answer after 5 steps`);
}

await live({
  script,
  async team({ model }) {
    const langfuseSpanProcessor = new LangfuseSpanProcessor({ exporter: new OTLPTraceExporter() });
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ "service.name": "langfuse-team" }),
      spanProcessors: [langfuseSpanProcessor],
    });
    provider.register();

    const openai = observeOpenAI(new OpenAI({ baseURL: model.openaiBaseURL, apiKey: "sk-fake" }));

    const researcher = (topic) =>
      startActiveObservation(
        "researcher",
        async (agent) => {
          agent.update({ input: { topic } });
          const out = await toolLoop(openai, RESEARCHER, `Research: ${topic}`, [fnTool("search_web", "Search the web", "query")], {
            search_web: async ({ query }) => `results for ${query}: prices fell 90%`,
          });
          agent.update({ output: out });
          return out;
        },
        { asType: "agent" },
      );
    const writer = (notes) =>
      startActiveObservation(
        "writer",
        async (agent) => {
          agent.update({ input: { notes } });
          const out = await toolLoop(openai, WRITER, `Write from: ${notes}`, [], {});
          agent.update({ output: out });
          return out;
        },
        { asType: "agent" },
      );

    const answer = await startActiveObservation(
      "coordinator",
      async (agent) => {
        const task = "Write a short report on solar panel prices.";
        agent.update({ input: task });
        const out = await toolLoop(
          openai,
          COORDINATOR,
          task,
          [fnTool("research", "Research a topic", "topic"), fnTool("write", "Write the report from notes", "notes")],
          { research: ({ topic }) => researcher(topic), write: ({ notes }) => writer(notes) },
        );
        agent.update({ output: out });
        return out;
      },
      { asType: "agent" },
    );
    if (!answer.includes("cheaper")) throw new Error(`unexpected answer: ${answer}`);
    await langfuseSpanProcessor.forceFlush();
    await provider.shutdown();
  },
});
