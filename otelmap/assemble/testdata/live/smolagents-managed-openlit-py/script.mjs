// The fake model's script for team.py (Chat Completions). Each agent's system
// prompt carries its instructions ("ROLE: <name>."); the manager's second step
// is told apart by the researcher's findings in its history, the researcher's
// second step by its search result.
const has = (r, s) => JSON.stringify(r.body.messages ?? []).includes(s);
const STEP1 = "Thought: I ask the researcher first.\n<code>\nfindings = researcher(task=\"How did solar panel prices change?\")\nprint(findings)\n</code>";
const STEP2 = "Thought: Now the writer turns the findings into the report.\n<code>\nreport = writer(task=\"Write a short report from these findings: \" + findings)\nfinal_answer(report)\n</code>";
export const script = [
  { name: "manager calls the researcher", when: (r) => r.system.includes("ROLE: manager") && !has(r, "prices fell 90% in a decade"), reply: { text: STEP1 }, times: 1 },
  { name: "manager calls the writer", when: (r) => r.system.includes("ROLE: manager") && has(r, "prices fell 90% in a decade"), reply: { text: STEP2 }, times: 1 },
  { name: "researcher searches", when: (r) => r.system.includes("ROLE: researcher") && !has(r, "prices fell 90%"), reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher answers", when: (r) => r.system.includes("ROLE: researcher") && has(r, "prices fell 90%"), reply: { tool: "final_answer", args: { answer: "Findings: solar panel prices fell 90% in a decade." } }, times: 1 },
  { name: "writer answers", when: (r) => r.system.includes("ROLE: writer"), reply: { tool: "final_answer", args: { answer: "Report: solar panels got 90% cheaper in a decade." } }, times: 1 },
];
