// The MCP server of the program: the TypeScript SDK's McpServer over
// streamable HTTP on 127.0.0.1 (stateful sessions), in a process of its own
// with its own tracer provider (service.name weather-mcp). Its tool
// handlers run in OpenInference TOOL spans; OpenInference's MCP
// instrumentation on the server transport runs each request in the context
// the client put in params._meta, so those spans are children of the
// client's. Prints its URL on stdout once listening.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { NodeTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { SpanStatusCode } from "@opentelemetry/api";
import { MCPInstrumentation } from "@arizeai/openinference-instrumentation-mcp";
import { SemanticConventions, OpenInferenceSpanKind } from "@arizeai/openinference-semantic-conventions";
import * as serverStreamableHTTPModule from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ "service.name": "weather-mcp" }),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
});
provider.register();
new MCPInstrumentation().manuallyInstrument({ serverStreamableHTTPModule });
const tracer = provider.getTracer("weather-mcp");

const forecasts = { Paris: "sunny, 21 C", Oslo: "rain, 9 C" };

function newServer() {
  const server = new McpServer({ name: "weather", version: "1.0.0" });
  server.registerTool(
    "get_forecast",
    { description: "Tomorrow's forecast for a city", inputSchema: { city: z.string() } },
    async ({ city }) =>
      tracer.startActiveSpan("get_forecast", {
        attributes: {
          [SemanticConventions.OPENINFERENCE_SPAN_KIND]: OpenInferenceSpanKind.TOOL,
          [SemanticConventions.TOOL_NAME]: "get_forecast",
          [SemanticConventions.INPUT_VALUE]: JSON.stringify({ city }),
        },
      }, async (span) => {
        try {
          const f = forecasts[city];
          if (!f) throw new Error(`no forecast for ${city}`);
          span.setAttribute(SemanticConventions.OUTPUT_VALUE, f);
          return { content: [{ type: "text", text: f }] };
        } catch (err) {
          span.recordException(err);
          span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
          throw err;
        } finally {
          span.end();
        }
      }),
  );
  return server;
}

const { StreamableHTTPServerTransport } = serverStreamableHTTPModule;
const transports = {};
const httpServer = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? transports[sid] : undefined;
  if (!transport) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => { transports[id] = transport; },
    });
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
});

process.on("SIGTERM", async () => {
  httpServer.close();
  await provider.shutdown();
  process.exit(0);
});
httpServer.listen(0, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${httpServer.address().port}/mcp`);
});
