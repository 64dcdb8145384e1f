// Ax (@ax-llm/ax 24.0.21): a coordinator AxAgent with two child agents.
//
//   coordinator = agent("query -> answer", { functions: [researcher, writer] })
//   researcher  = agent("question -> findings", { functions: [web.search] })
//   writer      = agent("findings -> summary")
//
// This is the multi-agent pattern Ax 24 documents (skills/ax-agent.md, "Child
// Agents As Tools"): child agents go in the parent's `functions: [...]` and
// land in its JavaScript runtime under their agentIdentity.namespace
// (`team.researcher(...)`, `team.writer(...)`). An AxAgent is a pipeline
// (same file, "directResponse"): a distiller writes JavaScript that forwards
// the task with final(request, evidence), or ends the run with respond(...)
// when no function is needed; an executor writes JavaScript that calls the
// functions and child agents and then final(...); a responder ("Answer
// Synthesis") writes the output fields. Each model reply below is what a model
// would write for that stage: {"javascriptCode": ...} for the distiller and
// executor (Ax asks for json_schema output), `field: value` lines for the
// responder.
//
// The run: the coordinator's executor calls team.researcher (whose executor
// calls web.search once) and then team.writer (respond-only: its distiller
// calls respond(), no executor), one after the other in one code turn.
//
// Telemetry: Ax's own OpenTelemetry route, the `tracer` forward option
// (skills/ax-llm.md "Debugging": `forward(llm, values, { tracer })`; the
// docs say a forward-scoped tracer is carried through every internal stage
// and child, skills/ax-agent-observability.md "Global Runtime Defaults"),
// with a tracer from a NodeTracerProvider, BatchSpanProcessor and the
// OTLP/HTTP JSON exporter (endpoint from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
// ../ax-globals is the same team with the other documented route,
// axGlobals.tracer.
//
// Model: ai({ name: "openai", apiURL }) (Chat Completions, streaming, the
// default) at the harness's OPENAI_BASE_URL: Ax reads no base-URL variable.

import { NodeTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { agent, ai, f, fn } from "@ax-llm/ax";
import { live } from "../harness/index.mjs";

/** A distiller or executor reply: Ax asks for {"javascriptCode": "..."}. */
const code = (js) => ({ text: JSON.stringify({ javascriptCode: js }) });
/** Which pipeline stage a request belongs to, from the stage's own heading in its system prompt. */
const stage = (r) => (r.system.match(/## (Distiller|Executor|Answer Synthesis)\b/) ?? [])[1] ?? "";
/** Which agent a request belongs to: each agent's signature has its own first input field. */
const of = (r, field) => r.lastUser.startsWith(`${field}:`);
const firstTurn = (r) => r.lastUser.includes("Action Log: (no actions yet)");

const script = [
  {
    name: "coordinator distiller forwards",
    when: (r) => stage(r) === "Distiller" && of(r, "Query"),
    reply: code('await final("Research the key paper on sparse attention with the researcher, then have the writer summarise the findings", {})'),
    times: 1,
  },
  {
    name: "coordinator executor delegates to researcher then writer",
    when: (r) => stage(r) === "Executor" && of(r, "Query") && firstTurn(r),
    reply: code(
      [
        'const findings = await team.researcher({ question: "What is the key paper on sparse attention?" });',
        "const summary = await team.writer({ findings: String(findings) });",
        'await final("Answer with the writer\'s summary", { summary });',
      ].join("\n"),
    ),
    times: 1,
  },
  {
    name: "coordinator responder",
    when: (r) => stage(r) === "Answer Synthesis" && of(r, "Query"),
    reply: { text: "answer: Sparse attention lets each token attend to a few positions; Longformer (2020) made it practical." },
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
  async team({ model }) {
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ "service.name": "ax-team" }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    provider.register();
    const tracer = provider.getTracer("coordbench-live-ax");

    const llm = ai({ name: "openai", apiKey: process.env.OPENAI_API_KEY, apiURL: model.openaiBaseURL, config: { model: "gpt-4o-mini" } });

    const search = fn("search")
      .description("Searches the web")
      .namespace("web")
      .arg("query", f.string("What to search for"))
      .returns(f.string("The top result"))
      .handler(async ({ query }) => `Top result for ${query}: Longformer (2020).`)
      .build();
    const researcher = agent("question:string -> findings:string", {
      agentIdentity: { name: "Researcher", description: "Finds the key paper on a topic", namespace: "team" },
      functions: [search],
      contextFields: [],
    });
    const writer = agent("findings:string -> summary:string", {
      agentIdentity: { name: "Writer", description: "Writes a short answer from findings", namespace: "team" },
      contextFields: [],
    });
    const coordinator = agent("query:string -> answer:string", {
      agentIdentity: { name: "Coordinator", description: "Delegates research and writing" },
      functions: [researcher, writer],
      contextFields: [],
    });

    const result = await coordinator.forward(llm, { query: "Explain sparse attention and name the key paper." }, { tracer });
    console.error(`coordinator: ${String(result.answer).slice(0, 80)}`);
    await provider.shutdown();
  },
});
