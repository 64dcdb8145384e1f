// The fake model's script for team.py: triage hands off to the researcher,
// which searches once and hands off to the writer, which answers.
export const TRIAGE = "You are triage. Route the request to the right specialist.";
export const RESEARCHER = "You are the researcher. Find facts with search_web, then hand off to the writer.";
export const WRITER = "You are the writer. Turn the findings into a short report.";

const searched = (req) => req.toolResultTexts.some((t) => t.includes("prices fell"));
export const script = [
  { name: "triage hands off", when: (r) => r.system.includes(TRIAGE) && r.toolResults === 0, reply: { tool: "transfer_to_researcher", args: {} }, times: 1 },
  { name: "researcher searches", when: (r) => r.system.includes(RESEARCHER) && !searched(r), reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher hands off", when: (r) => r.system.includes(RESEARCHER) && searched(r), reply: { tool: "transfer_to_writer", args: {} }, times: 1 },
  { name: "writer answers", when: (r) => r.system.includes(WRITER), reply: { text: "Report: solar panels got 90% cheaper." }, times: 1 },
];
