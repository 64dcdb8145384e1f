// The fake model's script for team.py: the orchestrator calls the research
// tool (the researcher agent, which searches once and answers), then the
// write tool (the writer agent, which answers), then answers.
export const ORCHESTRATOR = "You are the orchestrator. Use your specialists' tools, then answer.";
export const RESEARCHER = "You are the researcher. Find facts with search_web.";
export const WRITER = "You are the writer. Turn notes into a short report.";

export const script = [
  { name: "orchestrator asks research", when: { system: ORCHESTRATOR, toolResults: 0 }, reply: { tool: "research", args: { input: "solar panel prices" } }, times: 1 },
  { name: "orchestrator asks writing", when: { system: ORCHESTRATOR, toolResults: 1 }, reply: { tool: "write", args: { input: "panels got 90% cheaper" } }, times: 1 },
  { name: "orchestrator answers", when: { system: ORCHESTRATOR, toolResults: 2 }, reply: { text: "Report: solar panels got 90% cheaper." }, times: 1 },
  { name: "researcher searches", when: { system: RESEARCHER, toolResults: 0 }, reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher answers", when: { system: RESEARCHER, toolResults: 1 }, reply: { text: "Panels got 90% cheaper since 2010." }, times: 1 },
  { name: "writer answers", when: { system: WRITER, toolResults: 0 }, reply: { text: "Solar panels got 90% cheaper." }, times: 1 },
];
