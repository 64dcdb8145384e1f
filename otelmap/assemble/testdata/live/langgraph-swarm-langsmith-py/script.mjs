// The fake model's script for team.py (as ../langgraph-swarm-js): keyed on
// the agent (its prompt) and on where it stands (its last tool result).
const lastToolResult = (req) => req.toolResultTexts.at(-1) ?? "";
const is = (prompt) => (r) => r.system.includes(prompt);

export const script = [
  {
    name: "coordinator-to-researcher",
    when: (r) => is("You are the coordinator")(r) && r.toolResults === 0,
    reply: { tool: "transfer_to_researcher", args: {} },
    times: 1,
  },
  {
    name: "coordinator-to-writer",
    when: (r) => is("You are the coordinator")(r) && lastToolResult(r) === "Successfully transferred to coordinator",
    reply: { tool: "transfer_to_writer", args: {} },
    times: 1,
  },
  {
    name: "researcher-searches",
    when: (r) => is("You are the researcher")(r) && lastToolResult(r) === "Successfully transferred to researcher",
    reply: { tool: "web_search", args: { query: "solar capacity added in 2024" } },
    times: 1,
  },
  {
    name: "researcher-back-to-coordinator",
    when: (r) => is("You are the researcher")(r) && lastToolResult(r).startsWith("Search results:"),
    reply: { tool: "transfer_to_coordinator", args: {} },
    times: 1,
  },
  {
    name: "writer-answers",
    when: (r) => is("You are the writer")(r) && lastToolResult(r) === "Successfully transferred to writer",
    reply: { text: "Report: the world added about 600 GW of solar capacity in 2024." },
    times: 1,
  },
];
