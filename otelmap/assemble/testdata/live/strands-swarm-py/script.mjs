// The fake model's script for team.py (Chat Completions): the coordinator
// hands off to the researcher; the researcher searches once and hands off to
// the writer; the writer answers. Keyed on each agent's system prompt (Strands
// appends the swarm's context to it) and the tool results its request holds.
// An agent that has handed off is asked once more and ends its turn.
const searched = (r) => r.toolResultTexts.some((t) => t.includes("prices fell"));
const handedOff = (r) => r.toolResultTexts.some((t) => t.includes("Handing off to"));
export const script = [
  { name: "coordinator hands off", when: (r) => r.system.startsWith("You are the coordinator") && !handedOff(r), reply: { tool: "handoff_to_agent", args: { agent_name: "researcher", message: "Find how solar panel prices changed." } }, times: 1 },
  { name: "researcher searches", when: (r) => r.system.startsWith("You are the researcher") && !searched(r), reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher hands off", when: (r) => r.system.startsWith("You are the researcher") && searched(r) && !handedOff(r), reply: { tool: "handoff_to_agent", args: { agent_name: "writer", message: "Write the report: prices fell 90% in a decade." } }, times: 1 },
  { name: "agent done after handing off", when: (r) => handedOff(r) && !r.system.startsWith("You are the writer"), reply: { text: "Handed off." }, times: 2 },
  { name: "writer answers", when: (r) => r.system.startsWith("You are the writer"), reply: { text: "Report: solar panels got 90% cheaper in a decade." }, times: 1 },
];
