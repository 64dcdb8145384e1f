// The fake model's script for team.py: ResearchAgent searches and hands off
// to WriteAgent, which hands off to ReviewAgent, which answers. The agents
// share one chat history, so rules key on the agent's system prompt and on
// which tool results the history already holds, not on their count.
const RESEARCH = "You are the ResearchAgent.";
const WRITE = "You are the WriteAgent.";
const REVIEW = "You are the ReviewAgent.";
const has = (r, s) => r.toolResultTexts.some((t) => t.includes(s));

export const script = [
  { name: "research searches", when: (r) => r.system.includes(RESEARCH) && !has(r, "prices fell"), reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "research hands off", when: (r) => r.system.includes(RESEARCH) && has(r, "prices fell"), reply: { tool: "handoff", args: { to_agent: "WriteAgent", reason: "The facts are in; the report needs writing." } }, times: 1 },
  { name: "write hands off", when: (r) => r.system.includes(WRITE) && has(r, "Agent WriteAgent is now handling"), reply: { text: "Report: solar panels got 90% cheaper since 2010.", tool: "handoff", args: { to_agent: "ReviewAgent", reason: "Report: solar panels got 90% cheaper since 2010." } }, times: 1 },
  { name: "review answers", when: (r) => r.system.includes(REVIEW) && has(r, "Agent ReviewAgent is now handling"), reply: { text: "Approved. Report: solar panels got 90% cheaper since 2010." }, times: 1 },
];
