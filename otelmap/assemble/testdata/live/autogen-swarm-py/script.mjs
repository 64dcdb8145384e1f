// The fake model's script for team.py: triage hands off to the researcher,
// which searches once and hands off to the writer, which answers and says
// TERMINATE.
export const TRIAGE = "You are triage.";
export const RESEARCHER = "You are the researcher.";
export const WRITER = "You are the writer.";

const searched = (r) => r.toolResultTexts.some((t) => t.includes("prices fell"));
export const script = [
  { name: "triage hands off", when: (r) => r.system.startsWith(TRIAGE), reply: { tool: "transfer_to_researcher", args: {} }, times: 1 },
  { name: "researcher searches", when: (r) => r.system.startsWith(RESEARCHER) && !searched(r), reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher hands off", when: (r) => r.system.startsWith(RESEARCHER) && searched(r), reply: { tool: "transfer_to_writer", args: {} }, times: 1 },
  { name: "writer answers", when: (r) => r.system.startsWith(WRITER), reply: { text: "Report: solar panels got 90% cheaper. TERMINATE" }, times: 1 },
];
