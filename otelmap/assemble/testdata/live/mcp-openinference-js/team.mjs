// MCP with OpenInference's MCP instrumentation (@arizeai/openinference-
// instrumentation-mcp), which makes no span of its own: it puts the
// client's trace context into each request's params._meta and runs the
// server's handling in it, so that both sides' own spans join one trace.
// The client: a research agent (an OpenInference AGENT span) that asks
// the weather MCP server, over streamable HTTP on loopback, for three
// forecasts through the TypeScript SDK's Client, each call in an
// OpenInference TOOL span; the third city has no forecast and the tool
// fails. The server runs in a process of its own (server.mjs). No model is
// called: the script is empty.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { live } from "../harness/index.mjs";
import { NodeTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { SpanStatusCode } from "@opentelemetry/api";
import { MCPInstrumentation } from "@arizeai/openinference-instrumentation-mcp";
import { SemanticConventions, OpenInferenceSpanKind } from "@arizeai/openinference-semantic-conventions";
import * as clientStreamableHTTPModule from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";

export const script = [];

await live({
  script,
  async team() {
    const server = spawn(process.execPath, [new URL("server.mjs", import.meta.url).pathname], { stdio: ["ignore", "pipe", "inherit"], env: process.env });
    const [line] = await once(server.stdout, "data");
    const url = String(line).trim();

    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ "service.name": "research-agent" }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    provider.register();
    new MCPInstrumentation().manuallyInstrument({ clientStreamableHTTPModule });
    const tracer = provider.getTracer("research-agent");

    const client = new Client({ name: "research-agent", version: "1.0.0" });
    await client.connect(new clientStreamableHTTPModule.StreamableHTTPClientTransport(new URL(url)));
    const answers = await tracer.startActiveSpan("researcher", {
      attributes: { [SemanticConventions.OPENINFERENCE_SPAN_KIND]: OpenInferenceSpanKind.AGENT, [SemanticConventions.AGENT_NAME]: "researcher" },
    }, async (agent) => {
      const out = [];
      for (const city of ["Paris", "Oslo", "Atlantis"]) {
        out.push(await tracer.startActiveSpan("get_forecast", {
          attributes: {
            [SemanticConventions.OPENINFERENCE_SPAN_KIND]: OpenInferenceSpanKind.TOOL,
            [SemanticConventions.TOOL_NAME]: "get_forecast",
            [SemanticConventions.INPUT_VALUE]: JSON.stringify({ city }),
          },
        }, async (span) => {
          const res = await client.callTool({ name: "get_forecast", arguments: { city } });
          const text = res.content?.[0]?.text ?? "";
          if (res.isError) span.setStatus({ code: SpanStatusCode.ERROR, message: text });
          span.setAttribute(SemanticConventions.OUTPUT_VALUE, text);
          span.end();
          return text;
        }));
      }
      agent.end();
      return out;
    });
    if (!answers[0].includes("sunny") || !answers[1].includes("rain") || !answers[2].includes("no forecast")) {
      throw new Error(`unexpected answers: ${JSON.stringify(answers)}`);
    }
    await client.close();
    server.kill("SIGTERM");
    await once(server, "exit");
    await provider.shutdown();
  },
});
