// Laminar TypeScript SDK (@lmnr-ai/lmnr, built on OpenTelemetry): a team
// written by hand, the way a Laminar user instruments their own agents (Laminar
// has no agent runtime). Each agent's run is wrapped in `observe({name,
// spanType: "DEFAULT"})` (ObserveOptions.spanType has no agent type: "DEFAULT"
// | "LLM" | "TOOL" | "EVALUATOR" | "EVALUATION" | "EXECUTOR"; DEFAULT is the
// type the README's `observe({name: 'poemWriter'}, ...)` example gets). Each
// tool call runs in `observe({name, spanType: "TOOL"})`. The coordinator
// offers the model two tools, `research` and `write`, whose bodies run the
// specialists; the researcher has a tool of its own (`search_web`, not an
// agent). Every model call goes through the `openai` client (Chat
// Completions), auto-instrumented by `Laminar.initialize({instrumentModules:
// {OpenAI}})` (Laminar's bundled OpenLLMetry @traceloop/instrumentation-openai).
//
// Export: Laminar normally sends OTLP over gRPC to api.lmnr.ai:8443 (or, with
// `forceHttp`, OTLP/HTTP protobuf); the harness receiver takes OTLP/JSON only.
// So the program passes `Laminar.initialize({spanProcessor})` a
// `new LaminarSpanProcessor({exporter})` whose documented `exporter` option
// ("The exporter to use ... Defaults to a new LaminarSpanExporter") is the
// OTLP/HTTP JSON exporter: the capture holds exactly the spans Laminar's own
// processor (its batching, its lmnr.span.path / ids_path enrichment) would send
// to Laminar. No project API key: Laminar.initialize accepts that when an OTLP
// endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT, set by the harness).
import { live } from "../harness/index.mjs";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { Laminar, LaminarSpanProcessor, observe } from "@lmnr-ai/lmnr";
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
 * Laminar TOOL span), until it answers in text.
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
      const result = await observe({ name: call.function.name, spanType: "TOOL" }, (a) => run[call.function.name](a), args);
      messages.push({ role: "tool", tool_call_id: call.id, content: result });
    }
  }
  throw new Error(`${system}: no answer after 5 steps`);
}

await live({
  script,
  async team({ model }) {
    Laminar.initialize({
      instrumentModules: { OpenAI },
      spanProcessor: new LaminarSpanProcessor({ exporter: new OTLPTraceExporter() }),
    });

    const openai = new OpenAI({ baseURL: model.openaiBaseURL, apiKey: "sk-fake" });

    const researcher = (topic) =>
      observe({ name: "researcher", spanType: "DEFAULT" }, (t) =>
        toolLoop(openai, RESEARCHER, `Research: ${t}`, [fnTool("search_web", "Search the web", "query")], {
          search_web: async ({ query }) => `results for ${query}: prices fell 90%`,
        }), topic);
    const writer = (notes) =>
      observe({ name: "writer", spanType: "DEFAULT" }, (n) => toolLoop(openai, WRITER, `Write from: ${n}`, [], {}), notes);

    const task = "Write a short report on solar panel prices.";
    const answer = await observe({ name: "coordinator", spanType: "DEFAULT" }, (t) =>
      toolLoop(
        openai,
        COORDINATOR,
        t,
        [fnTool("research", "Research a topic", "topic"), fnTool("write", "Write the report from notes", "notes")],
        { research: ({ topic }) => researcher(topic), write: ({ notes }) => writer(notes) },
      ), task);
    if (!answer.includes("cheaper")) throw new Error(`unexpected answer: ${answer}`);
    await Laminar.shutdown();
  },
});
