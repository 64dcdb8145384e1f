// The fake model's script for team.py (Gemini generateContent). ADK sends each
// agent its own instruction as systemInstruction, so rules are keyed on the
// agent's instruction and on the function responses its request holds (a
// transferred agent sees the session's history, the earlier agents' calls too).
const responded = (r, name, arg) =>
  (r.body.contents ?? []).some((c) => (c.parts ?? []).some((p) => p.functionResponse?.name === name && (!arg || JSON.stringify(p.functionResponse).includes(arg))));
const transferred = (r, to) =>
  (r.body.contents ?? []).some((c) => (c.parts ?? []).some((p) => p.functionCall?.name === "transfer_to_agent" && p.functionCall.args?.agent_name === to));

export const script = [
  {
    name: "coordinator asks the summarizer tool",
    when: (r) => r.system.includes("You are the coordinator") && !responded(r, "summarizer"),
    reply: { tool: "summarizer", args: { request: "Summarize the topic: sparse attention in long-context models." } },
    times: 1,
  },
  {
    name: "coordinator transfers to the researcher",
    when: (r) => r.system.includes("You are the coordinator") && responded(r, "summarizer") && !transferred(r, "researcher"),
    reply: { tool: "transfer_to_agent", args: { agent_name: "researcher" } },
    times: 1,
  },
  {
    name: "summarizer answers",
    when: (r) => r.system.includes("You are the summarizer"),
    reply: { text: "Sparse attention restricts each token to a subset of positions, cutting cost from quadratic to near-linear." },
    times: 1,
  },
  {
    name: "researcher looks the paper up",
    when: (r) => r.system.includes("You are the researcher") && !responded(r, "lookup_paper"),
    reply: { tool: "lookup_paper", args: { topic: "sparse attention" } },
    times: 1,
  },
  {
    name: "researcher transfers to the writer",
    when: (r) => r.system.includes("You are the researcher") && responded(r, "lookup_paper") && !transferred(r, "writer"),
    reply: { tool: "transfer_to_agent", args: { agent_name: "writer" } },
    times: 1,
  },
  {
    name: "writer answers",
    when: (r) => r.system.includes("You are the writer"),
    reply: { text: "Sparse attention cuts the cost of long contexts; the key paper is Longformer (2020)." },
    times: 1,
  },
];
