// Prints a capture's spans as a tree (name, kind, status, chosen attributes),
// for writing FINDINGS.md:  node tree.mjs CAPTURE [ATTR_PREFIX...]
// Without prefixes, attributes of the ai., gen_ai., openinference-style and
// agent namespaces are shown, values cut at 80 characters.
import { readFileSync } from "node:fs";

const [, , file, ...prefixes] = process.argv;
if (!file) {
  console.error("usage: node tree.mjs CAPTURE [ATTR_PREFIX...]");
  process.exit(2);
}
const show = prefixes.length ? prefixes : ["ai.telemetry.functionId", "ai.toolCall.name", "ai.operationId", "gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.tool.name", "openinference.span.kind", "agent.name", "graph.node", "tool.name", "llm.model_name"];
const kinds = ["UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"];
const spans = [];
for (const line of readFileSync(file, "utf8").split("\n")) {
  if (!line.trim()) continue;
  for (const rs of JSON.parse(line).resourceSpans ?? []) {
    const svc = rs.resource?.attributes?.find((a) => a.key === "service.name")?.value?.stringValue;
    for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, svc, scope: ss.scope?.name });
  }
}
const val = (v) => v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue ?? JSON.stringify(v.arrayValue ?? v.kvlistValue ?? v);
const byParent = new Map();
const ids = new Set(spans.map((s) => s.spanId));
for (const s of spans) {
  const p = s.parentSpanId && ids.has(s.parentSpanId) ? s.parentSpanId : "";
  if (!byParent.has(p)) byParent.set(p, []);
  byParent.get(p).push(s);
}
for (const l of byParent.values()) l.sort((a, b) => (BigInt(a.startTimeUnixNano) < BigInt(b.startTimeUnixNano) ? -1 : 1));
function walk(parent, depth) {
  for (const s of byParent.get(parent) ?? []) {
    const attrs = (s.attributes ?? []).filter((a) => show.some((p) => a.key.startsWith(p))).map((a) => `${a.key}=${String(val(a.value)).slice(0, 80)}`);
    const status = s.status?.code ? ` status=${s.status.code === 2 ? "ERROR" : "OK"}${s.status.message ? `(${s.status.message.slice(0, 60)})` : ""}` : "";
    const root = depth === 0 ? ` trace=${s.traceId.slice(0, 8)} svc=${s.svc}${s.parentSpanId ? " parent-missing" : ""}` : "";
    console.log(`${"  ".repeat(depth)}${s.name} [${kinds[s.kind ?? 0]}]${status}${root} ${attrs.join(" ")}`);
    walk(s.spanId, depth + 1);
  }
}
walk("", 0);
