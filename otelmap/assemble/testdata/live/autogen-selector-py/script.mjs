// The fake model's script for team.py: the selector picks the planner, the
// researcher and the writer in turn (keyed on the history its prompt holds);
// the researcher calls search_web and reflects on the result; the writer
// answers and says TERMINATE.
export const PLANNER = "You are the planner.";
export const RESEARCHER = "You are the researcher.";
export const WRITER = "You are the writer.";
export const SELECTOR = "Select the next speaker of this team.";

// The prompt lists the roles first ("planner: Plans the work."); only the
// history after "Conversation so far:" tells who has spoken.
const said = (r, who) => (r.system.split("Conversation so far:")[1] ?? "").includes(`${who}:`);
export const script = [
  { name: "selector picks planner", when: (r) => r.system.includes(SELECTOR) && !said(r, "planner"), reply: { text: "planner" }, times: 1 },
  { name: "selector picks researcher", when: (r) => r.system.includes(SELECTOR) && said(r, "planner") && !said(r, "researcher"), reply: { text: "researcher" }, times: 1 },
  { name: "selector picks writer", when: (r) => r.system.includes(SELECTOR) && said(r, "researcher"), reply: { text: "writer" }, times: 1 },
  { name: "planner plans", when: (r) => r.system.startsWith(PLANNER), reply: { text: "Plan: the researcher finds current prices, then the writer writes the report." }, times: 1 },
  { name: "researcher searches", when: (r) => r.system.startsWith(RESEARCHER) && r.toolResults === 0, reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher reports", when: (r) => r.system.startsWith(RESEARCHER) && r.toolResults === 1, reply: { text: "Findings: solar panel prices fell 90% in a decade." }, times: 1 },
  { name: "writer answers", when: (r) => r.system.startsWith(WRITER), reply: { text: "Report: solar panels got 90% cheaper. TERMINATE" }, times: 1 },
];
