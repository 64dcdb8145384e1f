// Ax (@ax-llm/ax 24.0.21): a coordinator AxGen calling two child agents as
// native functions.
//
//   researcher  = agent("question -> findings", { agentIdentity: { name: "Researcher" }, functions: [web.search] })
//   writer      = agent("findings -> summary",  { agentIdentity: { name: "Writer" } })
//   coordinator = ax("query -> answer", { functions: [researcher.getFunction(), writer.getFunction()] })
//
// This is Ax's other way to put child agents under a caller: an AxGen (the
// generator behind ax(...)) with native function calling, each child agent
// handed over as a function by getFunction() (skills/ax-agent.md: "To
// expose a child agent ... use childAgent.getFunction()"; "getFunction()
// requires agentIdentity because the agent needs function metadata when used
// as a child tool"). The coordinator's model answers with Chat Completions
// tool calls: `researcher` first, then `writer` with the findings, then the
// answer. Ax runs each call in a `Tool: <name>` span (dsp/functions.ts of the
// package's source map) whose body is the child's forward
// (agent/agentInternal/coordinator.ts: getFunction's func calls
// this.forward), so the child's AxAgent pipeline (distiller, executor,
// responder) runs inside the caller's tool call, in the same async context.
//
// The children are the agents of ../ax, script for script: the researcher's
// executor calls web.search from its JavaScript runtime (no span: runtime
// calls get none), the writer answers directly (distiller respond(...),
// responder).
//
// Telemetry: Ax's documented app-wide route, `axGlobals.tracer =
// trace.getTracer(...)` (skills/ax-llm.md "Debugging", skills/ax-gen.md "Live
// Global Defaults"), with a tracer from a NodeTracerProvider,
// BatchSpanProcessor and the OTLP/HTTP JSON exporter (endpoint from
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). The forward-scoped `tracer` option is
// not used: the function handler's options (dsp/functions.ts,
// executeFunction: sessionId, traceId, ai, step, abortSignal, eventContext)
// do not carry it, so the children would run untraced (as in ../ax).
// `node team.mjs CAPTURE forward-tracer` runs that route instead.
//
// Model: ai({ name: "openai", apiURL }) (Chat Completions, streaming, the
// default) at the harness's OPENAI_BASE_URL: Ax reads no base-URL variable.

import { NodeTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { agent, ai, ax, axGlobals, f, fn } from "@ax-llm/ax";
import { live } from "../harness/index.mjs";

/** A distiller or executor reply: Ax asks for {"javascriptCode": "..."}. */
const code = (js) => ({ text: JSON.stringify({ javascriptCode: js }) });
/** Which pipeline stage a request belongs to, from the stage's own heading in its system prompt. */
const stage = (r) => (r.system.match(/## (Distiller|Executor|Answer Synthesis)\b/) ?? [])[1] ?? "";
/** Which agent a request belongs to: each agent's signature has its own first input field. */
const of = (r, field) => r.lastUser.startsWith(`${field}:`);
const firstTurn = (r) => r.lastUser.includes("Action Log: (no actions yet)");
/** The coordinator's requests are the only ones offering the children as native tools. */
const coordinator = (r, results) => r.tools.includes("researcher") && r.tools.includes("writer") && r.toolResults === results;

const script = [
  {
    name: "coordinator calls the researcher",
    when: (r) => coordinator(r, 0),
    reply: { tool: "researcher", args: { question: "What is the key paper on sparse attention?" } },
    times: 1,
  },
  {
    name: "coordinator calls the writer with the findings",
    when: (r) => coordinator(r, 1),
    reply: { tool: "writer", args: { findings: "The key paper is Longformer (2020)." } },
    times: 1,
  },
  {
    name: "coordinator answers",
    when: (r) => coordinator(r, 2),
    reply: { text: "Answer: Sparse attention lets each token attend to a few positions; Longformer (2020) made it practical." },
    times: 1,
  },
  {
    name: "researcher distiller forwards",
    when: (r) => stage(r) === "Distiller" && of(r, "Question"),
    reply: code('await final("Search the web for the key paper on sparse attention and name it", {})'),
    times: 1,
  },
  {
    name: "researcher executor searches",
    when: (r) => stage(r) === "Executor" && of(r, "Question") && firstTurn(r),
    reply: code('const hits = await web.search({ query: "sparse attention key paper" });\nawait final("Name the key paper", { hits });'),
    times: 1,
  },
  {
    name: "researcher responder",
    when: (r) => stage(r) === "Answer Synthesis" && of(r, "Question"),
    reply: { text: "findings: The key paper is Longformer (2020)." },
    times: 1,
  },
  {
    name: "writer distiller responds directly",
    when: (r) => stage(r) === "Distiller" && of(r, "Findings"),
    reply: code('await respond("Write two sentences from the findings", { findings: inputs.findings })'),
    times: 1,
  },
  {
    name: "writer responder",
    when: (r) => stage(r) === "Answer Synthesis" && of(r, "Findings"),
    reply: { text: "summary: Sparse attention lets each token attend to a few positions. Longformer (2020) made it practical." },
    times: 1,
  },
];

await live({
  script,
  async team({ model, args }) {
    const forwardTracer = args.includes("forward-tracer");
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ "service.name": "ax-functions-team" }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    provider.register();
    const tracer = provider.getTracer("coordbench-live-ax-functions");
    if (!forwardTracer) axGlobals.tracer = tracer;

    const llm = ai({ name: "openai", apiKey: process.env.OPENAI_API_KEY, apiURL: model.openaiBaseURL, config: { model: "gpt-4o-mini" } });

    const search = fn("search")
      .description("Searches the web")
      .namespace("web")
      .arg("query", f.string("What to search for"))
      .returns(f.string("The top result"))
      .handler(async ({ query }) => `Top result for ${query}: Longformer (2020).`)
      .build();
    const researcher = agent("question:string -> findings:string", {
      agentIdentity: { name: "Researcher", description: "Finds the key paper on a topic" },
      functions: [search],
      contextFields: [],
    });
    const writer = agent("findings:string -> summary:string", {
      agentIdentity: { name: "Writer", description: "Writes a short answer from findings" },
      contextFields: [],
    });
    const lead = ax("query:string -> answer:string", {
      description: "Delegate the research to the researcher, then have the writer summarise the findings, and answer with the summary.",
      functions: [researcher.getFunction(), writer.getFunction()],
    });

    const result = await lead.forward(llm, { query: "Explain sparse attention and name the key paper." }, forwardTracer ? { tracer } : {});
    console.error(`coordinator: ${String(result.answer).slice(0, 80)}`);
    axGlobals.tracer = undefined;
    await provider.shutdown();
  },
});
