// The fake model's script for team.py: SK's handoff orchestration. Each
// agent's request carries its own instructions and the Handoff plugin's
// functions ("Handoff-transfer_to_<agent>", "Handoff-complete_task"); SK
// names a plugin function "<plugin>-<function>" on the wire.
export const TRIAGE = "You are triage. Route the request to the right specialist.";
export const RESEARCHER = "You are the researcher. Find facts with search_web, then hand off to the writer.";
export const WRITER = "You are the writer. Turn the findings into a short report and complete the task.";

const searched = (r) => r.toolResultTexts.some((t) => t.includes("prices fell"));
export const script = [
  { name: "triage hands off", when: (r) => r.system.includes(TRIAGE), reply: { tool: "Handoff-transfer_to_researcher", args: {} }, times: 1 },
  { name: "researcher searches", when: (r) => r.system.includes(RESEARCHER) && !searched(r), reply: { tool: "SearchPlugin-search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher hands off", when: (r) => r.system.includes(RESEARCHER) && searched(r), reply: { tool: "Handoff-transfer_to_writer", args: {} }, times: 1 },
  { name: "writer completes", when: (r) => r.system.includes(WRITER), reply: { tool: "Handoff-complete_task", args: { task_summary: "Report: solar panels got 90% cheaper." } }, times: 1 },
];
