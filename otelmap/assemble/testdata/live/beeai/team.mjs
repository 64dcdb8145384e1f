// BeeAI Framework TypeScript (beeai-framework 0.1.13): a coordinator
// ToolCallingAgent whose tools run two other ToolCallingAgents (agents as
// tools).
//
//   coordinator (tools: researcher, writer)
//   coordinator calls researcher, then writer, then answers;
//   researcher calls web_search once, then answers; writer answers.
//   Every agent answers through its final_answer tool (agents/toolCalling/agent.js).
//
// Why 0.1.13 and not the newest 0.1.30: BeeAI has no OpenTelemetry of its
// own; its documented route is OpenInference's
// @arizeai/openinference-instrumentation-beeai, whose newest release (1.5.30)
// instruments only beeai-framework ">=0.1.9 <0.1.14" (dist/src/
// instrumentation.js INSTRUMENTS): given 0.1.30, manuallyInstrument() logs a
// DependencyConflict at diag level and patches nothing, so a run exports no
// span at all (tried; FINDINGS.md). 0.1.13 is the newest release a user of
// that route can trace. (0.1.13 has no HandoffTool or RequirementAgent yet,
// so the delegation tools are DynamicTools that run the agents.)
//
// Telemetry: NodeTracerProvider + BatchSpanProcessor(OTLPTraceExporter,
// OTLP/HTTP JSON, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), the instrumentation
// registered and applied with manuallyInstrument(beeaiFramework) (README: for
// ESM).
//
// Model: BeeAI's OpenAIChatModel (adapters/openai/backend) through the AI
// SDK's @ai-sdk/openai; BeeAI takes the base URL from OPENAI_API_ENDPOINT
// (adapters/openai/backend/client.js), not OPENAI_BASE_URL, so the program
// copies the harness's value there.

import * as beeaiFramework from "beeai-framework";
import { ToolCallingAgent } from "beeai-framework/agents/toolCalling/agent";
import { UnconstrainedMemory } from "beeai-framework/memory/unconstrainedMemory";
import { DynamicTool, StringToolOutput } from "beeai-framework/tools/base";
import { OpenAIChatModel } from "beeai-framework/adapters/openai/backend/chat";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { registerInstrumentations } from "@opentelemetry/instrumentation";
import { BeeAIInstrumentation } from "@arizeai/openinference-instrumentation-beeai";
import { z } from "zod";
import { live } from "../harness/index.mjs";

/** The answers to calls of the named tool the request holds (Chat Completions or Responses). */
const answered = (req, name) => {
  const msgs = req.body.messages ?? [];
  if (msgs.length) {
    const ids = new Set(msgs.flatMap((m) => (m.tool_calls ?? []).filter((c) => c.function?.name === name).map((c) => c.id)));
    return msgs.filter((m) => m.role === "tool" && ids.has(m.tool_call_id)).length;
  }
  const input = Array.isArray(req.body.input) ? req.body.input : [];
  const ids = new Set(input.filter((it) => it.type === "function_call" && it.name === name).map((it) => it.call_id));
  return input.filter((it) => it.type === "function_call_output" && ids.has(it.call_id)).length;
};

// Rules key on each agent's instructions and on the answers its own tools
// already gave. beeai-framework 0.1.13 sends its system prompt as the first
// message with role "user" (seen on the wire), so the instructions are read
// from there.
const instructions = (r) => {
  const first = (r.body.messages ?? [])[0];
  return typeof first?.content === "string" ? first.content : JSON.stringify(first?.content ?? "");
};

const script = [
  {
    name: "coordinator hands to researcher",
    when: (r) => instructions(r).includes("You are the coordinator") && answered(r, "researcher") === 0,
    reply: { tool: "researcher", args: { task: "Find the key paper on sparse attention." } },
    times: 1,
  },
  {
    name: "coordinator hands to writer",
    when: (r) => instructions(r).includes("You are the coordinator") && answered(r, "researcher") === 1 && answered(r, "writer") === 0,
    reply: { tool: "writer", args: { task: "Write two sentences: sparse attention, key paper Longformer (2020)." } },
    times: 1,
  },
  {
    name: "coordinator answers",
    when: (r) => instructions(r).includes("You are the coordinator") && answered(r, "writer") === 1,
    reply: { tool: "final_answer", args: { response: "Sparse attention lets each token attend to a few positions; Longformer (2020) made it practical." } },
    times: 1,
  },
  {
    name: "researcher searches",
    when: (r) => instructions(r).includes("You are the researcher") && answered(r, "web_search") === 0,
    reply: { tool: "web_search", args: { query: "sparse attention key paper" } },
    times: 1,
  },
  {
    name: "researcher answers",
    when: (r) => instructions(r).includes("You are the researcher") && answered(r, "web_search") === 1,
    reply: { tool: "final_answer", args: { response: "The key paper is Longformer (2020)." } },
    times: 1,
  },
  {
    name: "writer answers",
    when: (r) => instructions(r).includes("You are the writer"),
    reply: { tool: "final_answer", args: { response: "Sparse attention lets each token attend to a few positions. Longformer (2020) made it practical." } },
    times: 1,
  },
];

await live({
  script,
  async team() {
    process.env.OPENAI_API_ENDPOINT = process.env.OPENAI_BASE_URL;
    const provider = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
    provider.register();
    const instrumentation = new BeeAIInstrumentation();
    registerInstrumentations({ instrumentations: [instrumentation] });
    instrumentation.manuallyInstrument(beeaiFramework);

    /** A ToolCallingAgent with its name and instructions (as workflows/agent.js sets them). */
    const makeAgent = (name, description, instructions, tools = []) =>
      new ToolCallingAgent({
        llm: new OpenAIChatModel("gpt-4o-mini"),
        memory: new UnconstrainedMemory(),
        tools,
        meta: { name, description },
        templates: {
          system: (template) =>
            template.fork((config) => {
              config.defaults.instructions = instructions;
            }),
        },
      });
    /** A tool that runs an agent on a task and returns its answer. */
    const agentTool = (name, description, agent) =>
      new DynamicTool({
        name,
        description,
        inputSchema: z.object({ task: z.string() }),
        handler: async ({ task }) => new StringToolOutput((await agent.run({ prompt: task })).result.text),
      });

    const webSearch = new DynamicTool({
      name: "web_search",
      description: "Searches the web.",
      inputSchema: z.object({ query: z.string() }),
      handler: async ({ query }) => new StringToolOutput(`Top result for ${query}: Longformer (2020).`),
    });
    const researcher = makeAgent("researcher", "Finds the key paper on a topic.", "You are the researcher. Search, then name the key paper.", [webSearch]);
    const writer = makeAgent("writer", "Writes a short answer.", "You are the writer. Write two sentences.");
    const coordinator = makeAgent("coordinator", "Delegates to the researcher and the writer.", "You are the coordinator. Ask the researcher, then the writer, then answer.", [
      agentTool("researcher", "Asks the researcher agent.", researcher),
      agentTool("writer", "Asks the writer agent.", writer),
    ]);

    const response = await coordinator.run({ prompt: "Explain sparse attention and name the key paper." });
    console.error(`coordinator: ${String(response.result.text).slice(0, 80)}`);
    await provider.shutdown();
  },
});
