// The OpenTelemetry set-up each agent process loads before anything else
// (`node --import ./telemetry.mjs agent.mjs ROLE`), as the OpenTelemetry JS
// docs describe it for an ESM application (sdk-node README "Initialize the
// SDK"; opentelemetry-js doc/esm-support.md: register the
// @opentelemetry/instrumentation/hook.mjs loader so that ESM imports of
// instrumented packages are patched too).
//
// NodeSDK with the instrumentations a Node A2A service needs: HTTP
// (node:http server side, where Express listens), undici (global fetch, the
// A2A client's transport and the model calls) and Express. The A2A JS SDK
// 1.3.0 has no tracing of its own (no OpenTelemetry import, no span in
// dist/; its README offers client CallInterceptors for "distributed-tracing
// headers", which the undici instrumentation's W3C propagation already
// covers). The service name comes from OTEL_SERVICE_NAME, the trace
// exporter is OTLP/HTTP JSON to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; NodeSDK
// puts it behind a BatchSpanProcessor. SIGTERM shuts the SDK down (flushing
// the batch) and exits.
import { register } from "node:module";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import { ExpressInstrumentation } from "@opentelemetry/instrumentation-express";

register("@opentelemetry/instrumentation/hook.mjs", import.meta.url);

const sdk = new NodeSDK({
  traceExporter: new OTLPTraceExporter(),
  instrumentations: [new HttpInstrumentation(), new UndiciInstrumentation(), new ExpressInstrumentation()],
});
sdk.start();

process.on("SIGTERM", () => {
  sdk.shutdown().then(
    () => process.exit(0),
    (err) => {
      console.error(`telemetry: shutdown: ${err}`);
      process.exit(1);
    },
  );
});
