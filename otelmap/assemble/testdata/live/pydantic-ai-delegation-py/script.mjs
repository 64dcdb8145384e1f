// The fake model's script for team.py: the coordinator calls research, then
// write, then answers; the researcher searches once and reports; the writer
// writes. Keyed on each agent's instructions and the tool results it holds.
export const script = [
  { name: "coordinator asks the researcher", when: { system: "You are the coordinator", toolResults: 0 }, reply: { tool: "research", args: { topic: "solar panel prices" } }, times: 1 },
  { name: "coordinator asks the writer", when: { system: "You are the coordinator", toolResults: 1 }, reply: { tool: "write", args: { findings: "solar panel prices fell 90% in a decade" } }, times: 1 },
  { name: "coordinator answers", when: { system: "You are the coordinator", toolResults: 2 }, reply: { text: "Report: solar panels got 90% cheaper." }, times: 1 },
  { name: "researcher searches", when: { system: "You are the researcher", toolResults: 0 }, reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher reports", when: { system: "You are the researcher", toolResults: 1 }, reply: { text: "Findings: solar panel prices fell 90% in a decade." }, times: 1 },
  { name: "writer writes", when: { system: "You are the writer" }, reply: { text: "Solar panels got 90% cheaper in a decade." }, times: 1 },
];
