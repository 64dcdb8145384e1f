// Braintrust JS SDK (`braintrust`) with its OpenTelemetry integration
// (`@braintrust/otel`): a team written by hand (Braintrust has no agent
// runtime), traced the way a Braintrust user who also runs OpenTelemetry is
// told to: compatibility mode. Each agent's run is a Braintrust span of type
// "task" (`traced(fn, {name, type: "task"})`), each tool call a span of type
// "tool", and every model call an "llm" span made by `wrapOpenAI` on the
// `openai` client (Chat Completions). The coordinator offers the model two
// tools, `research` and `write`, whose bodies run the specialists; the
// researcher has a tool of its own (`search_web`, not an agent).
//
// OpenTelemetry side, as documented (@braintrust/otel README "setupOtelCompat()",
// braintrust.dev "Link Braintrust and OpenTelemetry spans"): `setupOtelCompat()`
// is called before any logger or span, the tracer provider is registered with
// an AsyncLocalStorage context manager (NodeTracerProvider.register()), and the
// application's own OpenTelemetry span (`handle_request`, standing for the
// request handler a service has) is the parent of the Braintrust spans. The
// user's OTel pipeline exports with the OTLP/HTTP JSON exporter (Braintrust's
// "OTLP trace exporter" path: an existing exporter pointed at an OTLP endpoint;
// here the harness receiver instead of api.braintrust.dev/otel).
//
// What this shows (FINDINGS.md): compatibility mode shares context and ID
// formats only. Braintrust's own spans (traced, wrapOpenAI) are written by
// SpanImpl.log to its HTTP background logger (POST logs3 to the Braintrust
// API, after a login that needs an API key); they never become OpenTelemetry
// spans, so the OTLP capture holds the application's span and nothing of the
// team. No API key is set: the Braintrust logger cannot log in; its flush error
// goes to its debug logger (debugLogger.warn), silent by default.
import { live } from "../harness/index.mjs";
import { setupOtelCompat } from "@braintrust/otel";
import { trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { initLogger, traced, wrapOpenAI, flush } from "braintrust";
import OpenAI from "openai";

// Before any Braintrust logger or span (the README's "IMPORTANT").
setupOtelCompat();

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
 * Braintrust "tool" span), until it answers in text.
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
      const result = await traced(
        async (span) => {
          span.log({ input: args });
          const out = await run[call.function.name](args);
          span.log({ output: out });
          return out;
        },
        { name: call.function.name, type: "tool" },
      );
      messages.push({ role: "tool", tool_call_id: call.id, content: result });
    }
  }
  throw new Error(`${system}: no answer after 5 steps`);
}

/** The Braintrust agent spans made, to show they exist and are linked. */
const made = [];

/** An agent's run as a Braintrust "task" span. */
const agent = (name, body) => traced(async (span) => {
  made.push({ name, spanId: span.spanId, rootSpanId: span.rootSpanId, parents: span.spanParents });
  const out = await body();
  span.log({ output: out });
  return out;
}, { name, type: "task" });

await live({
  script,
  async team({ model }) {
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ "service.name": "braintrust-team" }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    // The AsyncLocalStorage context manager compatibility mode needs.
    provider.register();
    initLogger({ projectName: "coordbench-team" });

    const openai = wrapOpenAI(new OpenAI({ baseURL: model.openaiBaseURL, apiKey: "sk-fake" }));

    const researcher = (topic) =>
      agent("researcher", () =>
        toolLoop(openai, RESEARCHER, `Research: ${topic}`, [fnTool("search_web", "Search the web", "query")], {
          search_web: async ({ query }) => `results for ${query}: prices fell 90%`,
        }));
    const writer = (notes) => agent("writer", () => toolLoop(openai, WRITER, `Write from: ${notes}`, [], {}));

    const tracer = trace.getTracer("braintrust-team-app");
    const answer = await tracer.startActiveSpan("handle_request", async (span) => {
      try {
        return await agent("coordinator", () =>
          toolLoop(
            openai,
            COORDINATOR,
            "Write a short report on solar panel prices.",
            [fnTool("research", "Research a topic", "topic"), fnTool("write", "Write the report from notes", "notes")],
            { research: ({ topic }) => researcher(topic), write: ({ notes }) => writer(notes) },
          ));
      } finally {
        span.end();
      }
    });
    if (!answer.includes("cheaper")) throw new Error(`unexpected answer: ${answer}`);
    // Compatibility mode did link them: the agents' Braintrust spans carry the
    // OTel trace id and (the coordinator) the OTel span as parent.
    console.error(`braintrust spans made (never exported as OTel): ${JSON.stringify(made)}`);
    if (made.length !== 3) throw new Error(`expected 3 Braintrust agent spans, made ${made.length}`);
    // Braintrust's flush: sends its spans to its API. Without an API key it
    // cannot log in; the background logger reports that to its debug logger,
    // but catch anything it throws so the OTel side still shuts down.
    try {
      await flush();
    } catch (err) {
      console.error(`braintrust flush: ${err instanceof Error ? err.message : err}`);
    }
    await provider.shutdown();
  },
});
