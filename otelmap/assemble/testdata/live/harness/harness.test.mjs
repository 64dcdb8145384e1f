// Tests of the harness with plain fetch: each wire format answers as the
// script says, keyed on the request (not on arrival order), streams parse
// into the same reply, strays are refused, and the receiver keeps OTLP/JSON.
import { test } from "node:test";
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { readFile, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeModel, startCapture } from "./index.mjs";

const script = [
  { name: "boss-first", when: { system: "You are boss", toolResults: 0 }, reply: { tool: "ask_worker", args: { q: "x" } }, times: 1 },
  { name: "boss-last", when: { system: "You are boss", toolResults: 1 }, reply: { text: "all done" } },
  { name: "worker", when: { system: /worker/ }, reply: { text: "worked" } },
];

async function post(url, body) {
  const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: r.status, text: await r.text() };
}

function sseData(text) {
  return text.split(/\r?\n\r?\n/).map((b) => b.split(/\r?\n/).find((l) => l.startsWith("data: "))).filter(Boolean).map((l) => l.slice(6)).filter((d) => d !== "[DONE]").map((d) => JSON.parse(d));
}

test("chat completions: keyed replies, stream and not", async () => {
  const m = await startFakeModel(script);
  try {
    const worker = await post(`${m.openaiBaseURL}/chat/completions`, { model: "m", messages: [{ role: "system", content: "I am the worker" }, { role: "user", content: "go" }] });
    assert.equal(JSON.parse(worker.text).choices[0].message.content, "worked");
    const first = JSON.parse((await post(`${m.openaiBaseURL}/chat/completions`, { model: "m", tools: [{ type: "function", function: { name: "ask_worker" } }], messages: [{ role: "system", content: "You are boss" }, { role: "user", content: "go" }] })).text);
    const call = first.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, "ask_worker");
    assert.deepEqual(JSON.parse(call.function.arguments), { q: "x" });
    assert.equal(first.choices[0].finish_reason, "tool_calls");
    const last = await post(`${m.openaiBaseURL}/chat/completions`, { model: "m", stream: true, stream_options: { include_usage: true }, messages: [{ role: "system", content: "You are boss" }, { role: "user", content: "go" }, { role: "assistant", tool_calls: [call] }, { role: "tool", tool_call_id: call.id, content: "worked" }] });
    const chunks = sseData(last.text);
    assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join(""), "all done");
    assert.ok(chunks.at(-1).usage.total_tokens > 0);
    assert.ok(last.text.trimEnd().endsWith("data: [DONE]"));
    m.assertScript();
  } finally {
    await m.close();
  }
});

test("responses: function calls and text, streamed", async () => {
  const m = await startFakeModel(script);
  try {
    const r = await post(`${m.openaiBaseURL}/responses`, { model: "m", instructions: "You are boss", input: "go", stream: true });
    const events = sseData(r.text);
    assert.equal(events[0].type, "response.created");
    const done = events.at(-1);
    assert.equal(done.type, "response.completed");
    const fc = done.response.output.find((o) => o.type === "function_call");
    assert.equal(fc.name, "ask_worker");
    assert.equal(events.filter((e) => e.type === "response.function_call_arguments.delta").map((e) => e.delta).join(""), fc.arguments);
    const r2 = JSON.parse((await post(`${m.openaiBaseURL}/responses`, { model: "m", input: [{ role: "developer", content: "You are boss" }, { role: "user", content: "go" }, { type: "function_call", call_id: fc.call_id, name: fc.name, arguments: fc.arguments }, { type: "function_call_output", call_id: fc.call_id, output: "worked" }] })).text);
    assert.equal(r2.output[0].content[0].text, "all done");
  } finally {
    await m.close();
  }
});

test("gemini and anthropic", async () => {
  const m = await startFakeModel(script);
  try {
    const g = JSON.parse((await post(`${m.geminiBaseURL}/v1beta/models/gemini-2.5-flash:generateContent`, { systemInstruction: { parts: [{ text: "You are boss" }] }, contents: [{ role: "user", parts: [{ text: "go" }] }] })).text);
    assert.equal(g.candidates[0].content.parts[0].functionCall.name, "ask_worker");
    const gs = await post(`${m.geminiBaseURL}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, { systemInstruction: { parts: [{ text: "a worker" }] }, contents: [{ role: "user", parts: [{ text: "go" }] }] });
    assert.equal(sseData(gs.text)[0].candidates[0].content.parts[0].text, "worked");
    const a = await post(`${m.anthropicBaseURL}/v1/messages`, { model: "c", stream: true, system: [{ type: "text", text: "You are boss" }], messages: [{ role: "user", content: "go" }, { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "ask_worker", input: {} }] }, { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "worked" }] }] });
    const deltas = sseData(a.text).filter((e) => e.type === "content_block_delta").map((e) => e.delta.text).join("");
    assert.equal(deltas, "all done");
  } finally {
    await m.close();
  }
});

test("a stray request is refused and fails the script", async () => {
  const m = await startFakeModel(script);
  try {
    const r = await post(`${m.openaiBaseURL}/chat/completions`, { model: "m", messages: [{ role: "system", content: "nobody" }] });
    assert.equal(r.status, 400);
    assert.throws(() => m.assertScript(), /not followed/);
  } finally {
    await m.close();
  }
});

test("times is enforced", async () => {
  const m = await startFakeModel(script);
  try {
    assert.throws(() => m.assertScript(), /boss-first answered 0 requests, want 1/);
  } finally {
    await m.close();
  }
});

test("capture keeps OTLP/JSON bodies, gzip too, and refuses protobuf", async () => {
  const c = await startCapture();
  try {
    const doc = { resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ scope: { name: "t" }, spans: [{ traceId: "0102030405060708090a0b0c0d0e0f10", spanId: "0102030405060708", name: "s", kind: 1, startTimeUnixNano: "1", endTimeUnixNano: "2" }] }] }] };
    let r = await fetch(c.tracesURL, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(doc, null, 2) });
    assert.equal(r.status, 200);
    r = await fetch(c.tracesURL, { method: "POST", headers: { "content-type": "application/json", "content-encoding": "gzip" }, body: gzipSync(JSON.stringify(doc)) });
    assert.equal(r.status, 200);
    r = await fetch(c.tracesURL, { method: "POST", headers: { "content-type": "application/x-protobuf" }, body: new Uint8Array([1, 2]) });
    assert.equal(r.status, 415);
    assert.equal(c.spanCount(), 2);
    const path = join(await mkdtemp(join(tmpdir(), "live-")), "x", "run.otlp.json");
    await c.write(path);
    const lines = (await readFile(path, "utf8")).trimEnd().split("\n");
    assert.equal(lines.length, 2);
    assert.deepEqual(JSON.parse(lines[0]), doc);
  } finally {
    await c.close();
  }
});

// A protobuf body (what OpenTelemetry Python's OTLP/HTTP exporter sends) is
// kept as the OTLP/JSON of the same request, through the otlpjson command
// (the Collector's pdata); without the command it is refused.
test("capture: protobuf bodies become OTLP/JSON through otlpjson", async () => {
  const { execFileSync } = await import("node:child_process");
  const { dirname } = await import("node:path");
  const { fileURLToPath } = await import("node:url");
  const here = dirname(fileURLToPath(import.meta.url));
  const bin = join(await mkdtemp(join(tmpdir(), "otlpjson-")), "otlpjson");
  execFileSync("go", ["build", "-o", bin, "./otlpjson"], { cwd: here });
  // ExportTraceServiceRequest{resource_spans: [{scope_spans: [{spans: [
  // {trace_id, span_id, name: "chat", kind: CLIENT}]}]}]}, encoded by hand.
  const len = (field, bytes) => Buffer.concat([Buffer.from([(field << 3) | 2, bytes.length]), bytes]);
  const traceId = Buffer.from("0102030405060708090a0b0c0d0e0f10", "hex");
  const spanId = Buffer.from("a1a2a3a4a5a6a7a8", "hex");
  const span = Buffer.concat([len(1, traceId), len(2, spanId), len(5, Buffer.from("chat")), Buffer.from([6 << 3, 3])]);
  const body = len(1, len(2, len(2, span)));
  const send = (capture) => fetch(capture.tracesURL, { method: "POST", headers: { "content-type": "application/x-protobuf" }, body });

  const saved = process.env.LIVE_OTLPJSON;
  delete process.env.LIVE_OTLPJSON;
  const refusing = await startCapture();
  try {
    assert.equal((await send(refusing)).status, 415);
    assert.equal(refusing.problems.length, 1);
  } finally {
    await refusing.close();
  }
  process.env.LIVE_OTLPJSON = bin;
  const c = await startCapture();
  try {
    assert.equal((await send(c)).status, 200);
    assert.deepEqual(c.problems, []);
    assert.equal(c.spanCount(), 1);
    const out = join(await mkdtemp(join(tmpdir(), "capture-")), "run.otlp.json");
    await c.write(out);
    const doc = JSON.parse((await readFile(out, "utf8")).trim());
    const got = doc.resourceSpans[0].scopeSpans[0].spans[0];
    assert.equal(got.traceId, "0102030405060708090a0b0c0d0e0f10");
    assert.equal(got.spanId, "a1a2a3a4a5a6a7a8");
    assert.equal(got.name, "chat");
    assert.equal(got.kind, 3);
  } finally {
    await c.close();
    if (saved === undefined) delete process.env.LIVE_OTLPJSON;
    else process.env.LIVE_OTLPJSON = saved;
  }
});
