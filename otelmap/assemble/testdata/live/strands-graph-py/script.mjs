// The fake model's script for team.py (Chat Completions): the coordinator
// plans, the researcher searches once and reports, the writer writes; each
// keyed on its system prompt and the tool results its request holds.
export const script = [
  { name: "coordinator plans", when: { system: "You are the coordinator" }, reply: { text: "Plan: find how solar panel prices changed, then write a short report." }, times: 1 },
  { name: "researcher searches", when: { system: "You are the researcher", toolResults: 0 }, reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher reports", when: { system: "You are the researcher", toolResults: 1 }, reply: { text: "Findings: solar panel prices fell 90% in a decade." }, times: 1 },
  { name: "writer writes", when: { system: "You are the writer" }, reply: { text: "Report: solar panels got 90% cheaper in a decade." }, times: 1 },
];
