// The fake model's script for team.py (Chat Completions): the leader routes
// the question to the researcher and the writing request to the writer (keyed
// on the request's last user text); the researcher searches once and reports;
// the writer writes. In route mode the member's answer ends the team's run.
export const script = [
  { name: "leader routes the question", when: { system: "ROLE leader", user: "How did solar panel prices change?", toolResults: 0 }, reply: { tool: "delegate_task_to_member", args: { member_id: "researcher", task: "Find how solar panel prices changed." } }, times: 1 },
  { name: "leader routes the writing", when: { system: "ROLE leader", user: "Write a short report", toolResults: 0 }, reply: { tool: "delegate_task_to_member", args: { member_id: "writer", task: "Write a short report: solar panel prices fell 90% in a decade." } }, times: 1 },
  { name: "researcher searches", when: { system: "ROLE researcher", toolResults: 0 }, reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher reports", when: { system: "ROLE researcher", toolResults: 1 }, reply: { text: "Findings: solar panel prices fell 90% in a decade." }, times: 1 },
  { name: "writer writes", when: { system: "ROLE writer" }, reply: { text: "Report: solar panels got 90% cheaper in a decade." }, times: 1 },
];
