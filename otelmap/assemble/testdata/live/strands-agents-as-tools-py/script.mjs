// The fake model's script for team.py (Chat Completions): the orchestrator
// calls the researcher tool, then the writer tool, then answers; the
// researcher searches once and reports; the writer writes.
export const script = [
  { name: "orchestrator asks the researcher", when: { system: "You are the orchestrator", toolResults: 0 }, reply: { tool: "researcher", args: { input: "How did solar panel prices change?" } }, times: 1 },
  { name: "orchestrator asks the writer", when: { system: "You are the orchestrator", toolResults: 1 }, reply: { tool: "writer", args: { input: "Write a short report: solar panel prices fell 90% in a decade." } }, times: 1 },
  { name: "orchestrator answers", when: { system: "You are the orchestrator", toolResults: 2 }, reply: { text: "Report: solar panels got 90% cheaper in a decade." }, times: 1 },
  { name: "researcher searches", when: { system: "You are the researcher", toolResults: 0 }, reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher reports", when: { system: "You are the researcher", toolResults: 1 }, reply: { text: "Findings: solar panel prices fell 90% in a decade." }, times: 1 },
  { name: "writer writes", when: { system: "You are the writer" }, reply: { text: "Solar panels got 90% cheaper in a decade." }, times: 1 },
];
