// A loopback OTLP/HTTP receiver: the program's own exporter sends its spans
// here (POST /v1/traces, OTLP/JSON, gzip or not) and every request body is
// kept, compacted to one line, so the capture file is JSON Lines of
// ExportTraceServiceRequest documents: what `green assess` reads.
//
// JSON bodies are kept as sent. Protobuf bodies (OpenTelemetry Python's
// OTLP/HTTP exporter speaks nothing else) are turned into the OTLP/JSON of
// the same request by the Go command in otlpjson/ (the Collector's pdata),
// named by LIVE_OTLPJSON (pylive.mjs builds it); without it they are
// refused (415) with a message, so a Node program must use the OTLP/HTTP
// JSON exporter (@opentelemetry/exporter-trace-otlp-http).

import http from "node:http";
import { once } from "node:events";
import { gunzipSync, inflateSync } from "node:zlib";
import { writeFile, mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { execFileSync } from "node:child_process";

export async function startCapture() {
  /** @type {string[]} */
  const lines = [];
  const problems = [];
  let spans = 0;
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    let body = Buffer.concat(chunks);
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (req.method !== "POST" || url.pathname !== "/v1/traces") {
      // Metrics and logs exporters may post here too; they are not kept.
      res.writeHead(url.pathname.startsWith("/v1/") ? 200 : 404, { "content-type": "application/json" });
      res.end("{}");
      return;
    }
    try {
      const enc = String(req.headers["content-encoding"] ?? "");
      if (enc === "gzip") body = gunzipSync(body);
      else if (enc === "deflate") body = inflateSync(body);
      const type = String(req.headers["content-type"] ?? "");
      const converter = process.env.LIVE_OTLPJSON;
      if (type.includes("protobuf") && converter) {
        body = execFileSync(converter, { input: body, maxBuffer: 1 << 30 });
      } else if (!type.includes("json")) {
        problems.push(`refused a ${type || "untyped"} body: use the OTLP/HTTP JSON exporter`);
        res.writeHead(415, { "content-type": "application/json" });
        res.end(JSON.stringify({ code: 3, message: "this receiver keeps OTLP/JSON only" }));
        return;
      }
      const doc = JSON.parse(body.toString("utf8"));
      for (const rs of doc.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans += (ss.spans ?? []).length;
      lines.push(JSON.stringify(doc));
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    } catch (err) {
      problems.push(`bad OTLP body: ${err}`);
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ code: 3, message: String(err) }));
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    /** The full traces URL, for exporters configured with `url`. */
    tracesURL: `${origin}/v1/traces`,
    problems,
    spanCount: () => spans,
    requestCount: () => lines.length,
    /** Writes the capture (JSON Lines, one export request a line). */
    async write(path) {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, lines.map((l) => l + "\n").join(""));
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}
