// A scripted fake model on 127.0.0.1 that speaks the wire formats the
// frameworks' own clients use: OpenAI Chat Completions and Responses (both
// streaming and not, with tool calls), Gemini generateContent and
// streamGenerateContent, and Anthropic Messages.
//
// Replies are chosen by a script keyed on what each request shows (which
// agent's system prompt it carries, how many tool results it holds), never
// by a global queue: concurrent agents get their own replies whatever the
// order in which their requests arrive.
//
// A script is a list of rules, tried in order; the first whose `when`
// matches answers:
//
//   { when: { system: "You are the researcher", toolResults: 0 },
//     reply: { tool: "search", args: { q: "x" } } }
//   { when: { system: /researcher/, toolResults: 1 }, reply: { text: "done" } }
//   { when: (req) => req.lastUser.includes("hi"), reply: (req) => ({ text: "..." }) }
//
// `when` keys (all given must hold): system (substring or RegExp of the
// system prompt / instructions), user (substring or RegExp of the last user
// text), toolResults (exact count of tool results in the request), tool
// (a tool the request offers), api ("chat", "responses", "gemini",
// "anthropic"). A reply is { text }, { tool, args } or
// { tools: [{ name, args }, ...] } (parallel calls), optionally with
// { text } beside tool calls. A rule may carry `times`: the number of
// requests it must answer in a run (checked by assertScript).
//
// A request no rule matches is answered with HTTP 400 and recorded as
// unmatched, so a program that strays from its script fails loudly.

import http from "node:http";
import { once } from "node:events";

/**
 * @typedef {{
 *   api: "chat"|"responses"|"gemini"|"anthropic",
 *   stream: boolean, model: string, system: string, lastUser: string,
 *   toolResults: number, toolResultTexts: string[], tools: string[],
 *   body: any, rule: number, alt?: string
 * }} NormalizedRequest
 */

/**
 * Starts the fake model.
 * @param {Array<{when: any, reply: any, times?: number, name?: string}>} script
 * @param {{log?: (line: string) => void}} [opts]
 */
export async function startFakeModel(script, opts = {}) {
  /** @type {NormalizedRequest[]} */
  const requests = [];
  /** @type {any[]} */
  const unmatched = [];
  let seq = 0;
  const server = http.createServer(async (req, res) => {
    try {
      const raw = await readBody(req);
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      const body = raw.length ? JSON.parse(raw.toString("utf8")) : {};
      const route = routeOf(req.method ?? "GET", url.pathname);
      if (!route) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `fake model: no route for ${req.method} ${url.pathname}` } }));
        unmatched.push({ path: url.pathname });
        return;
      }
      const norm = normalize(route, body, url);
      const idx = script.findIndex((r) => matches(r.when, norm));
      norm.rule = idx;
      requests.push(norm);
      if (idx < 0) {
        unmatched.push(summary(norm));
        opts.log?.(`fake model: no rule for ${JSON.stringify(summary(norm))}`);
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `fake model: no script rule matches ${JSON.stringify(summary(norm))}`, type: "invalid_request_error" } }));
        return;
      }
      const rule = script[idx];
      const reply = typeof rule.reply === "function" ? rule.reply(norm) : rule.reply;
      const n = ++seq;
      writers[route.api](res, norm, toCalls(reply, n), reply.text ?? "", n);
    } catch (err) {
      unmatched.push({ error: String(err) });
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `fake model: ${err}` } }));
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    /** OpenAI-style base URL (Chat Completions and Responses). */
    openaiBaseURL: `${origin}/v1`,
    /** Gemini base URL (the SDKs append /v1beta/models/...). */
    geminiBaseURL: origin,
    /** Anthropic base URL (the SDKs append /v1/messages). */
    anthropicBaseURL: origin,
    requests,
    unmatched,
    /** Throws unless every request matched a rule and every rule with `times` answered exactly that many. */
    assertScript() {
      const problems = [];
      if (unmatched.length) problems.push(`unmatched requests: ${JSON.stringify(unmatched)}`);
      script.forEach((r, i) => {
        if (r.times === undefined) return;
        const got = requests.filter((q) => q.rule === i).length;
        if (got !== r.times) problems.push(`rule ${r.name ?? i} answered ${got} requests, want ${r.times}`);
      });
      if (problems.length) throw new Error(`fake model script not followed: ${problems.join("; ")}`);
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}

function summary(n) {
  return { api: n.api, model: n.model, system: n.system.slice(0, 80), lastUser: n.lastUser.slice(0, 80), toolResults: n.toolResults, tools: n.tools };
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks);
}

function routeOf(method, path) {
  if (method !== "POST") return null;
  if (path.endsWith("/chat/completions")) return { api: "chat" };
  if (path.endsWith("/responses")) return { api: "responses" };
  if (path.endsWith("/messages")) return { api: "anthropic" };
  const g = path.match(/\/models\/([^/:]+):(generateContent|streamGenerateContent)$/);
  if (g) return { api: "gemini", model: decodeURIComponent(g[1]), stream: g[2] === "streamGenerateContent" };
  return null;
}

function test(pattern, s) {
  if (pattern instanceof RegExp) return pattern.test(s);
  return s.includes(pattern);
}

function matches(when, n) {
  if (typeof when === "function") return !!when(n);
  if (!when) return true;
  if (when.api !== undefined && when.api !== n.api) return false;
  if (when.system !== undefined && !test(when.system, n.system)) return false;
  if (when.user !== undefined && !test(when.user, n.lastUser)) return false;
  if (when.toolResults !== undefined && when.toolResults !== n.toolResults) return false;
  if (when.tool !== undefined && !n.tools.includes(when.tool)) return false;
  return true;
}

function textOf(content) {
  if (content == null) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : p.text ?? "")).join("");
  if (typeof content === "object" && "text" in content) return String(content.text);
  return "";
}

/** Reduces a request of any API to what scripts key on. */
function normalize(route, body, url) {
  /** @type {NormalizedRequest} */
  const n = { api: route.api, stream: false, model: body.model ?? route.model ?? "", system: "", lastUser: "", toolResults: 0, toolResultTexts: [], tools: [], body, rule: -1 };
  const systems = [];
  if (route.api === "chat") {
    n.stream = !!body.stream;
    for (const m of body.messages ?? []) {
      if (m.role === "system" || m.role === "developer") systems.push(textOf(m.content));
      else if (m.role === "user") n.lastUser = textOf(m.content);
      else if (m.role === "tool") n.toolResultTexts.push(textOf(m.content));
    }
    n.tools = (body.tools ?? []).map((t) => t.function?.name ?? t.name).filter(Boolean);
  } else if (route.api === "responses") {
    n.stream = !!body.stream;
    if (body.instructions) systems.push(textOf(body.instructions));
    const input = typeof body.input === "string" ? [{ role: "user", content: body.input }] : body.input ?? [];
    for (const it of input) {
      if (it.type === "function_call_output") n.toolResultTexts.push(textOf(it.output));
      else if (it.role === "system" || it.role === "developer") systems.push(textOf(it.content));
      else if (it.role === "user") n.lastUser = textOf(it.content);
    }
    n.tools = (body.tools ?? []).map((t) => t.name).filter(Boolean);
  } else if (route.api === "gemini") {
    n.stream = !!route.stream;
    n.alt = url.searchParams.get("alt") ?? "";
    if (body.systemInstruction) systems.push(textOf(body.systemInstruction.parts ?? body.systemInstruction));
    for (const c of body.contents ?? []) {
      for (const p of c.parts ?? []) {
        if (p.functionResponse) n.toolResultTexts.push(JSON.stringify(p.functionResponse.response ?? {}));
        else if (c.role === "user" && p.text) n.lastUser = p.text;
      }
    }
    n.tools = (body.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name));
  } else if (route.api === "anthropic") {
    n.stream = !!body.stream;
    if (body.system) systems.push(textOf(body.system));
    for (const m of body.messages ?? []) {
      if (typeof m.content === "string") {
        if (m.role === "user") n.lastUser = m.content;
        continue;
      }
      for (const b of m.content ?? []) {
        if (b.type === "tool_result") n.toolResultTexts.push(textOf(b.content));
        else if (m.role === "user" && b.type === "text") n.lastUser = b.text;
      }
    }
    n.tools = (body.tools ?? []).map((t) => t.name).filter(Boolean);
  }
  n.system = systems.join("\n");
  n.toolResults = n.toolResultTexts.length;
  return n;
}

function toCalls(reply, n) {
  const list = reply.tools ?? (reply.tool ? [{ name: reply.tool, args: reply.args ?? {} }] : []);
  return list.map((c, i) => ({ id: `call_${n}_${i}`, name: c.name, args: JSON.stringify(c.args ?? {}) }));
}

const usage = { input: 42, output: 7 };
const now = () => Math.floor(Date.now() / 1000);

function sse(res) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  return {
    data: (obj) => res.write(`data: ${JSON.stringify(obj)}\n\n`),
    event: (name, obj) => res.write(`event: ${name}\ndata: ${JSON.stringify(obj)}\n\n`),
    raw: (s) => res.write(s),
    end: () => res.end(),
  };
}

function json(res, obj) {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(obj));
}

const writers = {
  /** OpenAI Chat Completions. */
  chat(res, req, calls, text, n) {
    const id = `chatcmpl-${n}`;
    const model = req.model;
    const finish = calls.length ? "tool_calls" : "stop";
    const u = { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output };
    if (!req.stream) {
      const message = { role: "assistant", content: calls.length && !text ? null : text, refusal: null };
      if (calls.length) message.tool_calls = calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.args } }));
      return json(res, { id, object: "chat.completion", created: now(), model, choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], usage: u, system_fingerprint: "fp_fake" });
    }
    const s = sse(res);
    const chunk = (delta, finish_reason = null) => ({ id, object: "chat.completion.chunk", created: now(), model, system_fingerprint: "fp_fake", choices: [{ index: 0, delta, logprobs: null, finish_reason }] });
    s.data(chunk({ role: "assistant", content: "", refusal: null }));
    if (text) for (const part of split(text)) s.data(chunk({ content: part }));
    calls.forEach((c, i) => {
      s.data(chunk({ tool_calls: [{ index: i, id: c.id, type: "function", function: { name: c.name, arguments: "" } }] }));
      for (const part of split(c.args)) s.data(chunk({ tool_calls: [{ index: i, function: { arguments: part } }] }));
    });
    s.data(chunk({}, finish));
    if (req.body.stream_options?.include_usage) s.data({ id, object: "chat.completion.chunk", created: now(), model, choices: [], usage: u });
    s.raw("data: [DONE]\n\n");
    s.end();
  },

  /** OpenAI Responses. */
  responses(res, req, calls, text, n) {
    const id = `resp_${n}`;
    const output = [];
    if (text || !calls.length) output.push({ type: "message", id: `msg_${n}`, status: "completed", role: "assistant", content: [{ type: "output_text", text, annotations: [], logprobs: [] }] });
    for (const c of calls) output.push({ type: "function_call", id: `fc_${c.id}`, call_id: c.id, name: c.name, arguments: c.args, status: "completed" });
    const base = {
      id, object: "response", created_at: now(), model: req.model, status: "completed", error: null, incomplete_details: null,
      instructions: req.body.instructions ?? null, max_output_tokens: null, metadata: {}, parallel_tool_calls: true,
      previous_response_id: null, reasoning: { effort: null, summary: null }, store: false, temperature: 1, top_p: 1,
      text: { format: { type: "text" } }, tool_choice: req.body.tool_choice ?? "auto", tools: req.body.tools ?? [], truncation: "disabled", user: null,
      usage: { input_tokens: usage.input, input_tokens_details: { cached_tokens: 0 }, output_tokens: usage.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: usage.input + usage.output },
      output,
    };
    if (!req.stream) return json(res, base);
    const s = sse(res);
    let seqNo = 0;
    const ev = (type, obj) => s.event(type, { type, sequence_number: seqNo++, ...obj });
    const pending = { ...base, status: "in_progress", output: [], usage: null };
    ev("response.created", { response: pending });
    ev("response.in_progress", { response: pending });
    output.forEach((item, output_index) => {
      if (item.type === "message") {
        ev("response.output_item.added", { output_index, item: { ...item, status: "in_progress", content: [] } });
        ev("response.content_part.added", { item_id: item.id, output_index, content_index: 0, part: { type: "output_text", text: "", annotations: [], logprobs: [] } });
        for (const part of split(text)) ev("response.output_text.delta", { item_id: item.id, output_index, content_index: 0, delta: part, logprobs: [] });
        ev("response.output_text.done", { item_id: item.id, output_index, content_index: 0, text, logprobs: [] });
        ev("response.content_part.done", { item_id: item.id, output_index, content_index: 0, part: item.content[0] });
        ev("response.output_item.done", { output_index, item });
      } else {
        ev("response.output_item.added", { output_index, item: { ...item, arguments: "", status: "in_progress" } });
        for (const part of split(item.arguments)) ev("response.function_call_arguments.delta", { item_id: item.id, output_index, delta: part });
        ev("response.function_call_arguments.done", { item_id: item.id, output_index, arguments: item.arguments });
        ev("response.output_item.done", { output_index, item });
      }
    });
    ev("response.completed", { response: base });
    s.end();
  },

  /** Gemini generateContent / streamGenerateContent. */
  gemini(res, req, calls, text, n) {
    const parts = [];
    if (text) parts.push({ text });
    for (const c of calls) parts.push({ functionCall: { name: c.name, args: JSON.parse(c.args) } });
    if (!parts.length) parts.push({ text: "" });
    const u = { promptTokenCount: usage.input, candidatesTokenCount: usage.output, totalTokenCount: usage.input + usage.output };
    const full = { candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }], usageMetadata: u, modelVersion: req.model, responseId: `gem_${n}` };
    if (!req.stream) return json(res, full);
    // Without alt=sse, streamGenerateContent answers one JSON array.
    if (req.alt !== "sse") return json(res, [full]);
    const s = sse(res);
    s.raw(`data: ${JSON.stringify(full)}\r\n\r\n`);
    s.end();
  },

  /** Anthropic Messages. */
  anthropic(res, req, calls, text, n) {
    const id = `msg_${n}`;
    const content = [];
    if (text) content.push({ type: "text", text });
    for (const c of calls) content.push({ type: "tool_use", id: `toolu_${c.id}`, name: c.name, input: JSON.parse(c.args) });
    const stop_reason = calls.length ? "tool_use" : "end_turn";
    const u = { input_tokens: usage.input, output_tokens: usage.output };
    if (!req.stream) return json(res, { id, type: "message", role: "assistant", model: req.model, content, stop_reason, stop_sequence: null, usage: u });
    const s = sse(res);
    s.event("message_start", { type: "message_start", message: { id, type: "message", role: "assistant", model: req.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.input, output_tokens: 1 } } });
    content.forEach((b, index) => {
      if (b.type === "text") {
        s.event("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } });
        for (const part of split(b.text)) s.event("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: part } });
      } else {
        s.event("content_block_start", { type: "content_block_start", index, content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } });
        for (const part of split(JSON.stringify(b.input))) s.event("content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: part } });
      }
      s.event("content_block_stop", { type: "content_block_stop", index });
    });
    s.event("message_delta", { type: "message_delta", delta: { stop_reason, stop_sequence: null }, usage: { output_tokens: usage.output } });
    s.event("message_stop", { type: "message_stop" });
    s.end();
  },
};

/** Splits a string into two halves so streams carry more than one delta. */
function split(s) {
  if (s.length < 2) return [s];
  const mid = Math.ceil(s.length / 2);
  return [s.slice(0, mid), s.slice(mid)];
}
