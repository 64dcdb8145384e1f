// VoltAgent (@voltagent/core 2.10): sub-agents three deep, a sub-agent
// called twice, a tool that fails. The cases the voltagent program does not
// show, run for real to check the built-in voltagent family
// (otelmap/assemble/recognize_voltagent.go).
//
//   supervisor (subAgents: [lead])
//     delegate_task {targetAgents: ["lead"]}, then answers;
//   lead (subAgents: [researcher, writer])
//     delegate_task {targetAgents: ["researcher"]} (topic A), then again
//     (topic B), then delegate_task {targetAgents: ["writer"]}, then answers;
//   researcher (tools: [web_search])
//     topic A: calls web_search, which throws (the tool fails), then answers;
//     topic B: answers without a tool;
//   writer answers.
//
// In a sub-agent's sub-agent VoltAgent writes agent.parent.id = lead but
// agent.parent.name = entity.name = supervisor (AgentTraceContext takes the
// name from the parent span's entity.name, the root agent's on every span
// of a sub-agent's run): the delegation must be read by nesting.
//
// Telemetry, model and NODE_ENV as in ../voltagent/team.mjs.

import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { z } from "zod";
import { live } from "../harness/index.mjs";

/** How many outputs of calls to the named function the request holds (Responses API). */
const calls = (req, name) => {
  const input = Array.isArray(req.body.input) ? req.body.input : [];
  const ids = new Set(input.filter((it) => it.type === "function_call" && it.name === name).map((it) => it.call_id));
  return input.filter((it) => it.type === "function_call_output" && ids.has(it.call_id)).length;
};
const delegate = (task, target) => ({ tool: "delegate_task", args: { task, targetAgents: [target], context: {} } });
const TOPIC_A = "Find the key paper on sparse attention.";
const TOPIC_B = "Find the key paper on linear attention.";

const script = [
  { name: "supervisor delegates to lead", when: (r) => r.system.includes("You are the supervisor") && calls(r, "delegate_task") === 0,
    reply: delegate("Research sparse and linear attention and write it up.", "lead"), times: 1 },
  { name: "supervisor answers", when: (r) => r.system.includes("You are the supervisor") && calls(r, "delegate_task") === 1,
    reply: { text: "Sparse: Longformer (2020). Linear: Performer (2020)." }, times: 1 },
  { name: "lead delegates topic A to researcher", when: (r) => r.system.includes("You are the lead") && calls(r, "delegate_task") === 0,
    reply: delegate(TOPIC_A, "researcher"), times: 1 },
  { name: "lead delegates topic B to researcher", when: (r) => r.system.includes("You are the lead") && calls(r, "delegate_task") === 1,
    reply: delegate(TOPIC_B, "researcher"), times: 1 },
  { name: "lead delegates to writer", when: (r) => r.system.includes("You are the lead") && calls(r, "delegate_task") === 2,
    reply: delegate("Write one sentence on each: Longformer, Performer.", "writer"), times: 1 },
  { name: "lead answers", when: (r) => r.system.includes("You are the lead") && calls(r, "delegate_task") === 3,
    reply: { text: "Longformer (2020) for sparse, Performer (2020) for linear attention." }, times: 1 },
  { name: "researcher searches topic A", when: (r) => r.system.includes("You are the researcher") && r.lastUser.includes(TOPIC_A) && calls(r, "web_search") === 0,
    reply: { tool: "web_search", args: { query: "sparse attention key paper" } }, times: 1 },
  { name: "researcher answers topic A after the failed search", when: (r) => r.system.includes("You are the researcher") && r.lastUser.includes(TOPIC_A) && calls(r, "web_search") === 1,
    reply: { text: "The search failed; from memory: Longformer (2020)." }, times: 1 },
  { name: "researcher answers topic B", when: (r) => r.system.includes("You are the researcher") && r.lastUser.includes(TOPIC_B),
    reply: { text: "Performer (2020)." }, times: 1 },
  { name: "writer answers", when: { system: "You are the writer" },
    reply: { text: "Longformer made sparse attention practical; Performer made attention linear." }, times: 1 },
];

await live({
  script,
  async team() {
    process.env.NODE_ENV = "production";
    const { Agent, VoltAgent, VoltAgentObservability, createTool } = await import("@voltagent/core");
    const { createOpenAI } = await import("@ai-sdk/openai");
    const openai = createOpenAI();

    const processor = new BatchSpanProcessor(new OTLPTraceExporter());
    const observability = new VoltAgentObservability({ spanProcessors: [processor] });

    const webSearch = createTool({
      name: "web_search",
      description: "Searches the web.",
      parameters: z.object({ query: z.string() }),
      execute: async () => {
        throw new Error("search backend unavailable");
      },
    });
    const researcher = new Agent({
      name: "researcher",
      purpose: "Finds the key paper on a topic.",
      instructions: "You are the researcher. Search, then name the key paper.",
      model: openai("gpt-4o-mini"),
      tools: [webSearch],
    });
    const writer = new Agent({
      name: "writer",
      purpose: "Writes a short answer.",
      instructions: "You are the writer. Write one sentence per paper.",
      model: openai("gpt-4o-mini"),
    });
    const lead = new Agent({
      name: "lead",
      purpose: "Leads the research and the write-up.",
      instructions: "You are the lead. Delegate each topic to the researcher, then the write-up to the writer, then answer.",
      model: openai("gpt-4o-mini"),
      subAgents: [researcher, writer],
    });
    const supervisor = new Agent({
      name: "supervisor",
      instructions: "You are the supervisor. Delegate the work to the lead, then answer.",
      model: openai("gpt-4o-mini"),
      subAgents: [lead],
    });
    new VoltAgent({ agents: { supervisor, lead, researcher, writer }, observability });

    const result = await supervisor.generateText("Name the key papers on sparse and linear attention.");
    console.error(`supervisor: ${String(result.text).slice(0, 80)}`);
    await observability.forceFlush?.();
    await observability.shutdown?.();
    await processor.shutdown();
  },
});
