// The fake model's script for team.py (Chat Completions): the leader delegates
// to the researcher, then to the writer, then answers; the researcher searches
// once and reports; the writer writes. Keyed on each agent's instructions and
// the tool results its request holds.
export const script = [
  { name: "leader delegates to the researcher", when: { system: "ROLE leader", toolResults: 0 }, reply: { tool: "delegate_task_to_member", args: { member_id: "researcher", task: "Find how solar panel prices changed." } }, times: 1 },
  { name: "leader delegates to the writer", when: { system: "ROLE leader", toolResults: 1 }, reply: { tool: "delegate_task_to_member", args: { member_id: "writer", task: "Write a short report: solar panel prices fell 90% in a decade." } }, times: 1 },
  { name: "leader answers", when: { system: "ROLE leader", toolResults: 2 }, reply: { text: "Report: solar panels got 90% cheaper in a decade." }, times: 1 },
  { name: "researcher searches", when: { system: "ROLE researcher", toolResults: 0 }, reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher reports", when: { system: "ROLE researcher", toolResults: 1 }, reply: { text: "Findings: solar panel prices fell 90% in a decade." }, times: 1 },
  { name: "writer writes", when: { system: "ROLE writer" }, reply: { text: "Solar panels got 90% cheaper in a decade." }, times: 1 },
];
