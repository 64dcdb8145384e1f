// The fake model's script for team.py: the Editor (allow_delegation, so
// CrewAI gives it the native tools delegate_work_to_coworker and
// ask_question_to_coworker) delegates to the Researcher, then to the
// Writer, then answers. Keyed on the agent's system prompt ("You are
// <role>. <backstory>") and the tool results it holds.
const EDITOR = "You are Editor.";
const RESEARCHER = "You are Researcher.";
const WRITER = "You are Writer.";

export const script = [
  {
    name: "editor delegates research",
    when: { system: EDITOR, toolResults: 0 },
    reply: { tool: "delegate_work_to_coworker", args: { task: "Find facts about solar panel prices", context: "A short report on solar panel prices is needed.", coworker: "Researcher" } },
    times: 1,
  },
  {
    name: "editor delegates writing",
    when: { system: EDITOR, toolResults: 1 },
    reply: { tool: "delegate_work_to_coworker", args: { task: "Write a two-sentence report", context: "Facts: solar panel prices fell 90% since 2010.", coworker: "Writer" } },
    times: 1,
  },
  { name: "editor answers", when: { system: EDITOR, toolResults: 2 }, reply: { text: "Solar panels got 90% cheaper since 2010. They are now the cheapest power in many places." }, times: 1 },
  { name: "researcher searches", when: { system: RESEARCHER, toolResults: 0 }, reply: { tool: "search_web", args: { query: "solar panel prices" } }, times: 1 },
  { name: "researcher answers", when: { system: RESEARCHER, toolResults: 1 }, reply: { text: "Solar panel prices fell 90% since 2010." }, times: 1 },
  { name: "writer answers", when: { system: WRITER, toolResults: 0 }, reply: { text: "Solar panels got 90% cheaper since 2010. They are now the cheapest power in many places." }, times: 1 },
];
