// Microsoft Agent 365 observability SDK for TypeScript
// (@microsoft/agents-a365-observability 1.0.0): a coordinator agent that
// delegates to two specialist agents, each agent a Chat Completions loop over
// the `openai` client pointed at the fake model. The SDK has no agent runtime
// of its own: it is the tracing a user adds by hand around their agents, with
// the scopes its docs show (packages/agents-a365-observability/docs/design.md
// of microsoft/Agent365-nodejs, "Scope Classes"; the typings in
// dist/esm/tracing/scopes/*.d.ts):
//
//   - every agent run is an `InvokeAgentScope.start(request, {}, agentDetails,
//     callerDetails)`: span `invoke_agent <agentName>`, gen_ai.operation.name
//     invoke_agent, gen_ai.agent.id/name, and for the specialists the caller
//     agent (`callerDetails.callerAgentDetails`, "for A2A scenarios");
//   - every model call is an `InferenceScope.start(request, {operationName:
//     InferenceOperationType.CHAT, model, providerName}, agentDetails)`: span
//     `Chat gpt-4o-mini`, with tokens and finish reasons recorded;
//   - every tool the model asks for is an `ExecuteToolScope.start(request,
//     {toolName, arguments, toolCallId}, agentDetails)`: span
//     `execute_tool <toolName>`; the coordinator's two delegation tools run
//     the specialist inside that tool scope (agents as tools).
//
// Each scope's span is made current for the work inside it with
// `scope.withActiveSpanAsync(...)` and ended with `scope.dispose()`.
//
// OpenTelemetry: the SDK's documented setup is `ObservabilityManager.configure(
// b => b.withService(...)).start()`. Without Agent 365 credentials
// (ENABLE_A365_OBSERVABILITY_EXPORTER unset, its default) its builder exports
// to a ConsoleSpanExporter in a NodeSDK of its own; it offers no option to add
// an exporter, but its build() attaches its processors to a tracer provider
// "someone else already created" (dist/esm/ObservabilityBuilder.js, build()).
// So the program registers its own NodeTracerProvider (BatchSpanProcessor,
// OTLP/HTTP JSON exporter to the capture receiver) FIRST, then starts the SDK
// as documented; the scopes trace through the global API
// (OpenTelemetryScope.tracer = trace.getTracer(...)), so they reach our
// provider. FINDINGS.md says what the builder actually does with it.
//
// The run: coordinator -> ask_researcher -> researcher (calls its own
// search_web tool once) -> back; coordinator -> ask_writer -> writer -> back;
// coordinator answers.
import { live } from "../harness/index.mjs";
import { NodeTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import {
  ObservabilityManager,
  InvokeAgentScope,
  InferenceScope,
  ExecuteToolScope,
  InferenceOperationType,
} from "@microsoft/agents-a365-observability";
import OpenAI from "openai";

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
const TENANT = "contoso-tenant";
const CONVERSATION = "conv-solar-1";

/** The identity each agent's scopes carry (AgentDetails). */
const identity = (name) => ({ agentId: `${name}-id`, agentName: name, tenantId: TENANT, providerName: "openai" });

const functionTool = (name, description, properties) => ({
  type: "function",
  function: { name, description, parameters: { type: "object", properties, required: Object.keys(properties) } },
});

/**
 * One agent: a Chat Completions loop, traced as one invoke_agent scope with
 * an inference scope per model call and an execute_tool scope per tool call.
 */
class Agent {
  constructor({ name, instructions, tools = {}, client }) {
    this.details = identity(name);
    this.instructions = instructions;
    this.tools = tools; // name -> {spec, run(args, caller)}
    this.client = client;
  }

  /** Runs the agent on one user message; `caller` is the calling agent's details, if any. */
  async invoke(input, caller) {
    const request = { content: [input], conversationId: CONVERSATION, channel: { name: "coordbench-live" } };
    const scope = InvokeAgentScope.start(request, {}, this.details, caller ? { callerAgentDetails: caller } : undefined);
    try {
      const answer = await scope.withActiveSpanAsync(() => this.#loop(input));
      scope.recordResponse(answer);
      return answer;
    } catch (err) {
      scope.recordError(err);
      throw err;
    } finally {
      scope.dispose();
    }
  }

  async #loop(input) {
    const messages = [
      { role: "system", content: this.instructions },
      { role: "user", content: input },
    ];
    const specs = Object.values(this.tools).map((t) => t.spec);
    for (let step = 0; step < 8; step++) {
      const message = await this.#infer(messages, specs);
      messages.push(message);
      if (!message.tool_calls?.length) return message.content ?? "";
      for (const call of message.tool_calls) {
        messages.push({ role: "tool", tool_call_id: call.id, content: await this.#runTool(call) });
      }
    }
    throw new Error(`${this.details.agentName}: no answer after 8 steps`);
  }

  async #infer(messages, tools) {
    const scope = InferenceScope.start(
      { conversationId: CONVERSATION },
      { operationName: InferenceOperationType.CHAT, model: MODEL, providerName: "openai" },
      this.details,
    );
    try {
      return await scope.withActiveSpanAsync(async () => {
        scope.recordInputMessages(messages.filter((m) => typeof m.content === "string" && m.content).map((m) => m.content));
        const res = await this.client.chat.completions.create({ model: MODEL, messages, ...(tools.length ? { tools } : {}) });
        const choice = res.choices[0];
        if (res.usage) {
          scope.recordInputTokens(res.usage.prompt_tokens);
          scope.recordOutputTokens(res.usage.completion_tokens);
        }
        scope.recordFinishReasons([choice.finish_reason]);
        if (choice.message.content) scope.recordOutputMessages([choice.message.content]);
        return choice.message;
      });
    } catch (err) {
      scope.recordError(err);
      throw err;
    } finally {
      scope.dispose();
    }
  }

  async #runTool(call) {
    const tool = this.tools[call.function.name];
    if (!tool) throw new Error(`${this.details.agentName}: unknown tool ${call.function.name}`);
    const args = JSON.parse(call.function.arguments || "{}");
    const scope = ExecuteToolScope.start(
      { conversationId: CONVERSATION },
      { toolName: call.function.name, arguments: args, toolCallId: call.id, toolType: "function" },
      this.details,
    );
    try {
      const result = await scope.withActiveSpanAsync(() => tool.run(args, this.details));
      scope.recordResponse(result);
      return result;
    } catch (err) {
      scope.recordError(err);
      throw err;
    } finally {
      scope.dispose();
    }
  }
}

await live({
  script,
  async team({ model }) {
    // Our exporter first (see the header), then the SDK as its docs start it.
    const provider = new NodeTracerProvider({
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    provider.register();
    const a365 = ObservabilityManager.configure((builder) => builder.withService("a365-team", "1.0.0"));
    a365.start();

    const client = new OpenAI({ baseURL: model.openaiBaseURL, apiKey: "sk-fake" });

    const researcher = new Agent({
      name: "researcher",
      instructions: RESEARCHER,
      client,
      tools: {
        search_web: {
          spec: functionTool("search_web", "Search the web", { query: { type: "string" } }),
          run: async ({ query }) => `results for ${query}: prices fell 90%`,
        },
      },
    });
    const writer = new Agent({ name: "writer", instructions: WRITER, client });
    const coordinator = new Agent({
      name: "coordinator",
      instructions: COORDINATOR,
      client,
      tools: {
        ask_researcher: {
          spec: functionTool("ask_researcher", "Ask the researcher to research a topic", { topic: { type: "string" } }),
          run: ({ topic }, caller) => researcher.invoke(`Research ${topic}`, caller),
        },
        ask_writer: {
          spec: functionTool("ask_writer", "Ask the writer to write the report", { notes: { type: "string" } }),
          run: ({ notes }, caller) => writer.invoke(`Write from: ${notes}`, caller),
        },
      },
    });

    const answer = await coordinator.invoke("Write a short report on solar panel prices.");
    if (!answer.includes("cheaper")) throw new Error(`unexpected answer: ${answer}`);
    await ObservabilityManager.shutdown();
    await provider.shutdown();
  },
});
