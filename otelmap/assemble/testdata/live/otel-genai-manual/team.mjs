// Plain OpenTelemetry, no agent framework: a team written by hand the way an
// OpenTelemetry user would trace it with nothing but the SDK, the official
// contrib instrumentation for the `openai` client, and the GenAI semantic
// conventions.
//
//   - Model calls: @opentelemetry/instrumentation-openai, registered with
//     `registerInstrumentations` (@opentelemetry/instrumentation README,
//     "Usage in Node"; the instrumentation's README shows the NodeSDK
//     `instrumentations` option, which calls the same thing). It emits one
//     CLIENT span `chat <model>` per Chat Completions call, GenAI conventions
//     v1.36.0 (its README, "Semantic Conventions"). The program is ESM, so
//     the instrumentation's loader hook is registered first, as
//     @opentelemetry/instrumentation's README ("Instrumentation for ECMAScript
//     Modules") and opentelemetry-js doc/esm-support.md say
//     (`module.register("@opentelemetry/instrumentation/hook.mjs")`), and
//     `openai` is imported only after the instrumentation is registered.
//     OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is left unset (its
//     default, false): the contents it captures go to log events, not spans.
//   - Agents and tools: by hand, following the GenAI agent-span conventions
//     ("Invoke agent internal span" and "Execute tool span" of
//     docs/gen-ai/gen-ai-agent-spans.md, semantic-conventions v1.41.0), with
//     the attribute names and values exported by
//     @opentelemetry/semantic-conventions/incubating 1.45.0:
//       invoke_agent {gen_ai.agent.name}, kind INTERNAL (an agent running in
//         this process), gen_ai.operation.name=invoke_agent,
//         gen_ai.provider.name, gen_ai.agent.name, gen_ai.agent.id,
//         gen_ai.agent.description, gen_ai.conversation.id,
//         gen_ai.request.model;
//       execute_tool {gen_ai.tool.name}, kind INTERNAL,
//         gen_ai.operation.name=execute_tool, gen_ai.tool.name,
//         gen_ai.tool.call.id, gen_ai.tool.type=function,
//         gen_ai.tool.description;
//     each made the active span for the work inside it
//     (tracer.startActiveSpan), an error recorded as error.type + status
//     ERROR as the conventions say.
//   - Export: a NodeTracerProvider with a BatchSpanProcessor and the OTLP/HTTP
//     JSON exporter (endpoint from OTEL_EXPORTER_OTLP_ENDPOINT, set by the
//     harness), flushed by provider.shutdown() at the end.
//
// The team (agents as tools): the coordinator's Chat Completions tool loop
// calls ask_researcher (its body runs the researcher, which calls its own
// search_web tool once), then ask_writer (runs the writer), then answers.
//
// `node team.mjs CAPTURE client-kind` (its `variants` file, captures in
// captures-client-kind/) makes the invoke_agent spans CLIENT instead: the
// conventions' first agent span is the "Invoke agent client span", and a user
// reading only that section would write CLIENT for an agent in this process.
// The team and every other attribute are the same.
import { register } from "node:module";
import { live } from "../harness/index.mjs";
import { trace, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { NodeTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { registerInstrumentations } from "@opentelemetry/instrumentation";
import { OpenAIInstrumentation } from "@opentelemetry/instrumentation-openai";
import { ATTR_SERVICE_NAME, ATTR_ERROR_TYPE } from "@opentelemetry/semantic-conventions";
import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_AGENT_ID,
  ATTR_GEN_AI_AGENT_DESCRIPTION,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_TYPE,
  ATTR_GEN_AI_TOOL_DESCRIPTION,
  GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
  GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
} from "@opentelemetry/semantic-conventions/incubating";

// The ESM loader hook, before `openai` is loaded (see the header).
register("@opentelemetry/instrumentation/hook.mjs", import.meta.url);

const COORDINATOR = "You are the coordinator. Delegate research and writing to your specialists.";
const RESEARCHER = "You are the researcher. Find facts with search_web.";
const WRITER = "You are the writer. Turn notes into a short report.";

export const script = [
  { name: "coordinator asks research", when: { system: COORDINATOR, toolResults: 0 }, reply: { tool: "ask_researcher", args: { topic: "solar panels" } }, times: 1 },
  { name: "coordinator asks writing", when: { system: COORDINATOR, toolResults: 1 }, reply: { tool: "ask_writer", args: { notes: "panels got cheaper" } }, times: 1 },
  { name: "coordinator answers", when: { system: COORDINATOR, toolResults: 2 }, reply: { text: "Report: solar panels got cheaper." }, times: 1 },
  { name: "researcher searches", when: { system: RESEARCHER, toolResults: 0 }, reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher answers", when: { system: RESEARCHER, toolResults: 1 }, reply: { text: "Panels got 90% cheaper since 2010." }, times: 1 },
  { name: "writer answers", when: { system: WRITER, toolResults: 0 }, reply: { text: "Solar panels got cheaper." }, times: 1 },
];

const MODEL = "gpt-4o-mini";
const CONVERSATION = "conv-solar-1";
const tracer = trace.getTracer("otel-genai-manual-team", "1.0.0");
const AGENT_KIND = process.argv[3] === "client-kind" ? SpanKind.CLIENT : SpanKind.INTERNAL;
if (process.argv[3] !== undefined && process.argv[3] !== "client-kind") {
  throw new Error(`unknown variant ${process.argv[3]} (want client-kind or nothing)`);
}

const functionTool = (name, description, properties) => ({
  type: "function",
  function: { name, description, parameters: { type: "object", properties, required: Object.keys(properties) } },
});

/** Runs fn inside an active span of that kind; records an error as the conventions say and rethrows it. */
async function inSpan(name, kind, attributes, fn) {
  return tracer.startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.setAttribute(ATTR_ERROR_TYPE, err?.constructor?.name ?? "Error");
      span.recordException(err);
      span.setStatus({ code: SpanStatusCode.ERROR, message: String(err?.message ?? err) });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** One agent: a Chat Completions tool loop, traced as an invoke_agent span with execute_tool spans. */
class Agent {
  constructor({ name, description, instructions, tools = {}, client }) {
    this.name = name;
    this.description = description;
    this.instructions = instructions;
    this.tools = tools; // name -> {spec, run(args)}
    this.client = client;
  }

  invoke(input) {
    return inSpan(
      `${GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT} ${this.name}`,
      AGENT_KIND,
      {
        [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
        [ATTR_GEN_AI_PROVIDER_NAME]: GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
        [ATTR_GEN_AI_AGENT_NAME]: this.name,
        [ATTR_GEN_AI_AGENT_ID]: `${this.name}-id`,
        [ATTR_GEN_AI_AGENT_DESCRIPTION]: this.description,
        [ATTR_GEN_AI_CONVERSATION_ID]: CONVERSATION,
        [ATTR_GEN_AI_REQUEST_MODEL]: MODEL,
      },
      () => this.#loop(input),
    );
  }

  async #loop(input) {
    const messages = [
      { role: "system", content: this.instructions },
      { role: "user", content: input },
    ];
    const specs = Object.values(this.tools).map((t) => t.spec);
    for (let step = 0; step < 8; step++) {
      const res = await this.client.chat.completions.create({ model: MODEL, messages, ...(specs.length ? { tools: specs } : {}) });
      const message = res.choices[0].message;
      messages.push(message);
      if (!message.tool_calls?.length) return message.content ?? "";
      for (const call of message.tool_calls) {
        messages.push({ role: "tool", tool_call_id: call.id, content: await this.#runTool(call) });
      }
    }
    throw new Error(`${this.name}: no answer after 8 steps`);
  }

  #runTool(call) {
    const tool = this.tools[call.function.name];
    if (!tool) throw new Error(`${this.name}: unknown tool ${call.function.name}`);
    const args = JSON.parse(call.function.arguments || "{}");
    return inSpan(
      `${GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL} ${call.function.name}`,
      SpanKind.INTERNAL,
      {
        [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
        [ATTR_GEN_AI_TOOL_NAME]: call.function.name,
        [ATTR_GEN_AI_TOOL_CALL_ID]: call.id,
        [ATTR_GEN_AI_TOOL_TYPE]: "function",
        [ATTR_GEN_AI_TOOL_DESCRIPTION]: tool.spec.function.description,
      },
      () => tool.run(args),
    );
  }
}

await live({
  script,
  async team({ model }) {
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: "otel-genai-team" }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    provider.register();
    registerInstrumentations({ tracerProvider: provider, instrumentations: [new OpenAIInstrumentation()] });
    // Only now: the hook patches `openai` as it loads.
    const { default: OpenAI } = await import("openai");
    const client = new OpenAI({ baseURL: model.openaiBaseURL, apiKey: "sk-fake" });

    const researcher = new Agent({
      name: "researcher",
      description: "Finds facts on the web",
      instructions: RESEARCHER,
      client,
      tools: {
        search_web: {
          spec: functionTool("search_web", "Search the web", { query: { type: "string" } }),
          run: async ({ query }) => `results for ${query}: prices fell 90%`,
        },
      },
    });
    const writer = new Agent({ name: "writer", description: "Writes short reports", instructions: WRITER, client });
    const coordinator = new Agent({
      name: "coordinator",
      description: "Delegates research and writing",
      instructions: COORDINATOR,
      client,
      tools: {
        ask_researcher: {
          spec: functionTool("ask_researcher", "Ask the researcher to research a topic", { topic: { type: "string" } }),
          run: ({ topic }) => researcher.invoke(`Research ${topic}`),
        },
        ask_writer: {
          spec: functionTool("ask_writer", "Ask the writer to write the report", { notes: { type: "string" } }),
          run: ({ notes }) => writer.invoke(`Write from: ${notes}`),
        },
      },
    });

    const answer = await coordinator.invoke("Write a short report on solar panel prices.");
    if (!answer.includes("cheaper")) throw new Error(`unexpected answer: ${answer}`);
    await provider.shutdown();
  },
});
