// VoltAgent (@voltagent/core 2.10): one agent, no sub-agents. The team
// that is not one: the built-in voltagent family
// (otelmap/assemble/recognize_voltagent.go) must read one agent with its
// model and tool calls, all of it read, and no call.
//
//   assistant (tools: [calculator]): calls calculator once, then answers.
//
// Telemetry, model and NODE_ENV as in ../voltagent/team.mjs.

import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { z } from "zod";
import { live } from "../harness/index.mjs";

const script = [
  { name: "assistant calculates", when: { system: "You are the assistant", toolResults: 0 },
    reply: { tool: "calculator", args: { a: 6, b: 7 } }, times: 1 },
  { name: "assistant answers", when: { system: "You are the assistant", toolResults: 1 },
    reply: { text: "6 times 7 is 42." }, times: 1 },
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

    const calculator = createTool({
      name: "calculator",
      description: "Multiplies two numbers.",
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: async ({ a, b }) => String(a * b),
    });
    const assistant = new Agent({
      name: "assistant",
      instructions: "You are the assistant. Use the calculator.",
      model: openai("gpt-4o-mini"),
      tools: [calculator],
    });
    new VoltAgent({ agents: { assistant }, observability });

    const result = await assistant.generateText("What is 6 times 7?");
    console.error(`assistant: ${String(result.text).slice(0, 80)}`);
    await observability.forceFlush?.();
    await observability.shutdown?.();
    await processor.shutdown();
  },
});
