// The mastra-js team (a Mastra supervisor agent with sub-agents `agents:
// {...}`: each sub-agent becomes a tool `agent-<key>` the supervisor's model
// can call), exported through Mastra's OpenTelemetry bridge,
// @mastra/otel-bridge, the way its README's Quick Start sets it up:
//
//   1. the OpenTelemetry NodeSDK started before anything else: `new
//      NodeSDK({ serviceName, traceExporter: new OTLPTraceExporter({ url }),
//      instrumentations: [getNodeAutoInstrumentations({
//      "@opentelemetry/instrumentation-fs": { enabled: false } })] })`,
//      `sdk.start()`;
//   2. `new Mastra({ observability: new Observability({ configs: { default:
//      { serviceName, bridge: new OtelBridge() } } }) })`.
//
// The bridge starts a real OTEL span (tracer "@mastra/otel-bridge") when a
// Mastra span starts, parented on the active OTEL context, and finishes it
// with the same SpanConverter as @mastra/otel-exporter; the NodeSDK's
// BatchSpanProcessor and OTLP/HTTP JSON exporter ship it, with whatever the
// auto-instrumentations add (undici: the model calls).
//
// The harness sets OTEL_EXPORTER_OTLP_ENDPOINT inside live(), so the SDK is
// started at the top of team() and Mastra is imported after it (the
// README's "import instrumentation FIRST"). No ESM loader hook is
// registered: the README registers none; undici is instrumented through
// diagnostics_channel regardless. mastra.shutdown() then sdk.shutdown()
// flush. One departure from the README: the HTTP instrumentation ignores
// incoming requests, because the fake model and the span receiver live in
// this process (without it each model call's server side, and the NodeSDK's
// own OTLP log export to the receiver, a trace of its own, would be spans
// of this service).
import { live } from "../harness/index.mjs";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { getNodeAutoInstrumentations } from "@opentelemetry/auto-instrumentations-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";

const COORDINATOR_PROMPT = "You are the coordinator. Ask the researcher for facts, then the writer for the final text.";
const RESEARCHER_PROMPT = "You are the researcher. Use webSearch and report the facts.";
const WRITER_PROMPT = "You are the writer. Turn the facts you get into two short sentences.";

const lastToolResult = (req) => req.toolResultTexts.at(-1) ?? "";
// A sub-agent's request carries its own instructions first, then the
// supervisor's (Mastra passes the supervisor's context on): key on the first.
const is = (prompt) => (r) => r.system.startsWith(prompt);

const script = [
  { name: "coordinator-calls-researcher", when: (r) => is("You are the coordinator")(r) && r.toolResults === 0, reply: { tool: "agent-researcher", args: { prompt: "How did heat pump sales in Europe do in 2024?" } }, times: 1 },
  { name: "coordinator-calls-writer", when: (r) => is("You are the coordinator")(r) && r.toolResults === 1, reply: { tool: "agent-writer", args: { prompt: "Facts: heat pump sales in Europe fell 21% in 2024." } }, times: 1 },
  { name: "coordinator-answers", when: (r) => is("You are the coordinator")(r) && r.toolResults === 2, reply: { text: "Done: Heat pump sales in Europe fell by a fifth in 2024. Subsidy cuts are the main cause." }, times: 1 },
  { name: "researcher-searches", when: (r) => is("You are the researcher")(r) && r.toolResults === 0, reply: { tool: "webSearch", args: { query: "heat pump sales Europe 2024" } }, times: 1 },
  { name: "researcher-answers", when: (r) => is("You are the researcher")(r) && lastToolResult(r).includes("Search results:"), reply: { text: "Heat pump sales in Europe fell 21% in 2024." }, times: 1 },
  { name: "writer-answers", when: (r) => is("You are the writer")(r) && r.toolResults === 0, reply: { text: "Heat pump sales in Europe fell by a fifth in 2024. Subsidy cuts are the main cause." }, times: 1 },
];

const DEBUG = process.env.LIVE_DEBUG;
await live({
  script,
  async team({ model }) {
    const sdk = new NodeSDK({
      serviceName: "mastra-team",
      traceExporter: new OTLPTraceExporter({ url: process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT }),
      instrumentations: [
        getNodeAutoInstrumentations({
          "@opentelemetry/instrumentation-fs": { enabled: false },
          // The only requests this process receives are the harness's: the
          // fake model and the OTLP receiver, stand-ins for remote services
          // whose server spans a real deployment would not hold.
          "@opentelemetry/instrumentation-http": { ignoreIncomingRequestHook: () => true },
        }),
      ],
    });
    sdk.start();
    const { Mastra } = await import("@mastra/core/mastra");
    const { Agent } = await import("@mastra/core/agent");
    const { createTool } = await import("@mastra/core/tools");
    const { Observability } = await import("@mastra/observability");
    const { OtelBridge } = await import("@mastra/otel-bridge");
    const { z } = await import("zod");

    const webSearch = createTool({
      id: "web-search",
      description: "Search the web.",
      inputSchema: z.object({ query: z.string() }),
      execute: async ({ query }) => `Search results: EHPA says sales fell 21% in 2024 (${query}).`,
    });
    const researcher = new Agent({
      id: "researcher",
      name: "researcher",
      description: "Finds facts on the web.",
      instructions: RESEARCHER_PROMPT,
      model: "openai/gpt-4o",
      tools: { webSearch },
    });
    const writer = new Agent({
      id: "writer",
      name: "writer",
      description: "Writes short final texts from facts.",
      instructions: WRITER_PROMPT,
      model: "openai/gpt-4o",
    });
    const coordinator = new Agent({
      id: "coordinator",
      name: "coordinator",
      instructions: COORDINATOR_PROMPT,
      model: "openai/gpt-4o",
      agents: { researcher, writer },
    });
    const mastra = new Mastra({
      agents: { coordinator, researcher, writer },
      observability: new Observability({
        configs: {
          default: { serviceName: "mastra-team", bridge: new OtelBridge() },
        },
      }),
    });

    const result = await mastra.getAgent("coordinator").generate("How did heat pump sales in Europe do in 2024? Write it up.");
    if (!result.text.startsWith("Done:")) throw new Error(`unexpected final answer: ${result.text}`);
    await mastra.shutdown();
    await sdk.shutdown();
    if (DEBUG) for (const r of model.requests) console.error(JSON.stringify({ api: r.api, stream: r.stream, system: r.system, tr: r.toolResults, tools: r.tools, last: r.lastUser.slice(0, 60) }));
  },
});
