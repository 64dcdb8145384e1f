// The fake model's script for team.py (and a2a-sdk-bare-py): the
// coordinator asks the researcher two questions at once, then the writer,
// then answers; each specialist asks the model once per message. The
// a2a-js program's script, rule for rule.
export const script = [
  {
    name: "coordinator asks the researcher two questions at once",
    when: { system: "You are the coordinator", toolResults: 0 },
    reply: { tools: [
      { name: "ask_researcher", args: { question: "Which paper introduced sparse attention for long documents?" } },
      { name: "ask_researcher", args: { question: "What year was it published?" } },
    ] },
    times: 1,
  },
  {
    name: "coordinator asks the writer",
    when: { system: "You are the coordinator", toolResults: 2 },
    reply: { tool: "ask_writer", args: { notes: "Longformer introduced sparse attention for long documents in 2020." } },
    times: 1,
  },
  {
    name: "coordinator answers",
    when: { system: "You are the coordinator", toolResults: 3 },
    reply: { text: "Longformer (2020) made sparse attention practical for long documents." },
    times: 1,
  },
  { name: "researcher: which paper", when: { system: "You are the researcher", user: "Which paper" }, reply: { text: "Longformer (Beltagy et al.)." }, times: 1 },
  { name: "researcher: which year", when: { system: "You are the researcher", user: "What year" }, reply: { text: "2020." }, times: 1 },
  {
    name: "writer writes",
    when: { system: "You are the writer" },
    reply: { text: "Longformer made sparse attention practical for long documents. It was published in 2020." },
    times: 1,
  },
];
