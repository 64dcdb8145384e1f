// The fake model's script for team.py (the langgraph-supervisor README's
// team): keyed on the agent (its prompt) and on where it stands (the tool
// results it holds), never on arrival order.
const lastToolResult = (req) => req.toolResultTexts.at(-1) ?? "";

export const script = [
  {
    name: "supervisor-delegates-research",
    when: (r) => r.system.includes("team supervisor") && r.toolResults === 0,
    reply: { tool: "transfer_to_research_expert", args: {} },
    times: 1,
  },
  {
    name: "supervisor-delegates-math",
    when: (r) => r.system.includes("team supervisor") && lastToolResult(r).includes("transferred back to supervisor") && !r.toolResultTexts.some((t) => t.includes("transferred to math_expert")),
    reply: { tool: "transfer_to_math_expert", args: {} },
    times: 1,
  },
  {
    name: "supervisor-answers",
    when: (r) => r.system.includes("team supervisor") && lastToolResult(r).includes("transferred back to supervisor") && r.toolResultTexts.some((t) => t.includes("transferred to math_expert")),
    reply: { text: "The five FAANG companies employed 1,977,586 people in 2024." },
    times: 1,
  },
  {
    name: "research-searches",
    when: (r) => r.system.includes("world class researcher") && lastToolResult(r).includes("transferred to research_expert"),
    reply: { tool: "web_search", args: { query: "FAANG headcount 2024" } },
    times: 1,
  },
  {
    name: "research-answers",
    when: (r) => r.system.includes("world class researcher") && lastToolResult(r).includes("Here are the headcounts"),
    reply: { text: "Meta 67,317; Apple 164,000; Amazon 1,551,000; Netflix 14,000; Google 181,269." },
    times: 1,
  },
  {
    name: "math-adds",
    when: (r) => r.system.includes("math expert. Always") && lastToolResult(r).includes("transferred to math_expert"),
    reply: { tool: "add", args: { a: 1796317, b: 181269 } },
    times: 1,
  },
  {
    name: "math-answers",
    when: (r) => r.system.includes("math expert. Always") && /^\d+(\.0)?$/.test(lastToolResult(r)),
    reply: { text: "The combined headcount is 1,977,586." },
    times: 1,
  },
];
