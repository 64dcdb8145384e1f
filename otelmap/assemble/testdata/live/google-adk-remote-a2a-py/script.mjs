// The fake model's script for team.py: the coordinator asks the researcher
// (its AgentTool, a remote agent), then transfers to the writer (a remote
// sub-agent); each remote agent answers once. ADK sends each agent its
// instruction as systemInstruction; the coordinator's rules are keyed on the
// function responses its request already holds.
const hasResponse = (req, name) =>
  (req.body.contents ?? []).some((c) => (c.parts ?? []).some((p) => p.functionResponse?.name === name));

export const script = [
  {
    name: "coordinator asks the researcher",
    when: (r) => r.system.includes("You are the coordinator") && !hasResponse(r, "researcher"),
    reply: { tool: "researcher", args: { request: "Which paper made sparse attention practical for long documents, and when?" } },
    times: 1,
  },
  {
    name: "coordinator transfers to the writer",
    when: (r) => r.system.includes("You are the coordinator") && hasResponse(r, "researcher") && !hasResponse(r, "transfer_to_agent"),
    reply: { tool: "transfer_to_agent", args: { agent_name: "writer" } },
    times: 1,
  },
  { name: "researcher answers", when: { system: "You are the researcher" }, reply: { text: "Longformer (Beltagy et al., 2020)." }, times: 1 },
  {
    name: "writer writes",
    when: { system: "You are the writer" },
    reply: { text: "Longformer made sparse attention practical for long documents. It was published in 2020." },
    times: 1,
  },
];
