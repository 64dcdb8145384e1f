// A2A JS SDK (@a2a-js/sdk 1.3.0): a coordinator agent calling two
// specialist agents over real A2A (JSON-RPC over HTTP on 127.0.0.1), each
// agent an A2A server with an agent card in a process of its own, with its
// own service.name (agent.mjs). Nothing here knows coordbench: each process
// is traced as a Node user would trace a service, with the OpenTelemetry JS
// SDK and its HTTP, undici and Express instrumentations (telemetry.mjs),
// exporting OTLP/HTTP JSON.
//
//   user (this process, not traced) --A2A--> coordinator
//   coordinator --A2A--> researcher  (twice, concurrently: two tool calls in one model turn)
//   coordinator --A2A--> writer      (once)
//
// Every model call is a Chat Completions request by fetch to the fake
// model, which is not traced (a remote API, as a real provider would be).
//
// `node team.mjs CAPTURE shared-ports` (or `shared-paths`) hosts the two
// specialists in one process (service.name specialists), each on a port of
// its own or mounted under /researcher and /writer of one port: the same
// team, as a user who runs several A2A agents in one Node service deploys
// it (captures-shared-ports/, captures-shared-paths/; read by
// TestA2AHostedTogether, not re-run by run.sh).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { randomUUID } from "node:crypto";
import { Role } from "@a2a-js/sdk";
import { ClientFactory } from "@a2a-js/sdk/client";
import { live } from "../harness/index.mjs";

export const script = [
  {
    name: "coordinator asks the researcher two questions at once",
    when: { system: "You are the coordinator", toolResults: 0 },
    reply: { tools: [
      { name: "ask_researcher", args: { question: "Which paper introduced sparse attention for long documents?" } },
      { name: "ask_researcher", args: { question: "What year was it published?" } },
    ] },
    times: 1,
  },
  {
    name: "coordinator asks the writer",
    when: { system: "You are the coordinator", toolResults: 2 },
    reply: { tool: "ask_writer", args: { notes: "Longformer introduced sparse attention for long documents in 2020." } },
    times: 1,
  },
  {
    name: "coordinator answers",
    when: { system: "You are the coordinator", toolResults: 3 },
    reply: { text: "Longformer (2020) made sparse attention practical for long documents." },
    times: 1,
  },
  {
    name: "researcher: which paper",
    when: { system: "You are the researcher", user: "Which paper" },
    reply: { text: "Longformer (Beltagy et al.)." },
    times: 1,
  },
  {
    name: "researcher: which year",
    when: { system: "You are the researcher", user: "What year" },
    reply: { text: "2020." },
    times: 1,
  },
  {
    name: "writer writes",
    when: { system: "You are the writer" },
    reply: { text: "Longformer made sparse attention practical for long documents. It was published in 2020." },
    times: 1,
  },
];

/** Starts one process hosting roles and returns it with their base URLs. */
async function startAgents(roles, service, layout, env = {}) {
  const child = spawn(process.execPath, ["--import", "./telemetry.mjs", "agent.mjs", roles.join(","), layout], {
    cwd: new URL(".", import.meta.url).pathname,
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, OTEL_SERVICE_NAME: service, ...env },
  });
  const [line] = await Promise.race([
    once(child.stdout, "data"),
    once(child, "exit").then(([code]) => { throw new Error(`${service} exited (${code}) before listening`); }),
  ]);
  return { child, urls: JSON.parse(String(line)), role: service };
}

async function stop(agent) {
  const exited = once(agent.child, "exit");
  agent.child.kill("SIGTERM");
  const [code] = await exited;
  if (code !== 0) throw new Error(`agent ${agent.role} exited with ${code}`);
}

await live({
  script,
  async team({ args }) {
    const mode = args[0] ?? "separate";
    const procs = [];
    let urls = {};
    if (mode === "separate") {
      for (const role of ["researcher", "writer"]) {
        procs.push(await startAgents([role], role, "ports"));
        Object.assign(urls, procs.at(-1).urls);
      }
    } else if (mode === "shared-ports" || mode === "shared-paths") {
      procs.push(await startAgents(["researcher", "writer"], "specialists", mode.slice("shared-".length)));
      urls = procs[0].urls;
    } else {
      throw new Error(`team.mjs: unknown mode ${mode}`);
    }
    const coordinator = await startAgents(["coordinator"], "coordinator", "ports", { RESEARCHER_URL: urls.researcher, WRITER_URL: urls.writer });
    procs.unshift(coordinator);
    try {
      const client = await new ClientFactory().createFromUrl(coordinator.urls.coordinator);
      const answer = await client.sendMessage({
        tenant: "",
        message: {
          role: Role.ROLE_USER, messageId: randomUUID(), contextId: "", taskId: "", metadata: {}, extensions: [], referenceTaskIds: [],
          parts: [{ content: { $case: "text", value: "Who made sparse attention practical, and when?" }, metadata: undefined, filename: "", mediaType: "text/plain" }],
        },
        configuration: undefined,
        metadata: undefined,
      });
      const text = (answer.parts ?? []).map((p) => p.content?.value ?? "").join("");
      if (!text.includes("Longformer (2020)")) throw new Error(`unexpected answer: ${JSON.stringify(answer)}`);
    } finally {
      // Coordinator first: its spans end last. Each shutdown flushes its batch.
      for (const p of procs) await stop(p);
    }
  },
});
