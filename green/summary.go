package green

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/coordbench/coordbench/tracedata"
)

// Summary renders r as Markdown for people: the score, and per task its
// trace id, outcome, how much of the trace was observed, the graph's label
// and findings, the judge's score, and the coordination graph as a Mermaid
// flowchart. It is the text part of the A2A result artifact (DESIGN §4), so
// it must never be valid JSON: it always starts with a heading.
//
// Evaluator results are read through a JSON round trip into generic maps,
// so the summary depends only on their documented keys, not their Go types.
func Summary(r *Result) string {
	var b strings.Builder
	if r == nil {
		b.WriteString("# coordbench result\n\nNo result.\n")
		return b.String()
	}
	title := "coordbench result"
	if r.Domain != "" {
		title += ": " + r.Domain
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	writeScoreLine(&b, r)
	if len(r.Tasks) == 0 {
		b.WriteString("No tasks were assessed.\n")
	}
	for i := range r.Tasks {
		writeTask(&b, i, &r.Tasks[i])
	}
	if len(r.Warnings) > 0 {
		b.WriteString("## Warnings\n\n")
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "- %s\n", oneLine(w))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// writeScoreLine writes the leaderboard numbers that are set, and the task
// count with how many passed.
func writeScoreLine(b *strings.Builder, r *Result) {
	var parts []string
	if r.Score != nil {
		s := "**Score: " + fmtNum(*r.Score)
		if r.MaxScore != nil {
			s += " / " + fmtNum(*r.MaxScore)
		}
		parts = append(parts, s+"**")
	}
	judged, passed := 0, 0
	for _, t := range r.Tasks {
		if t.Outcome != nil {
			judged++
			if t.Outcome.Success {
				passed++
			}
		}
	}
	switch {
	case r.PassRate != nil:
		parts = append(parts, fmt.Sprintf("pass rate %s%% (%d of %d tasks)", fmtNum(*r.PassRate*100), passed, judged))
	case judged > 0:
		parts = append(parts, fmt.Sprintf("%d of %d tasks passed", passed, judged))
	default:
		parts = append(parts, plural(len(r.Tasks), "task", "tasks"))
	}
	if r.TimeUsed != nil {
		parts = append(parts, fmt.Sprintf("%s s", fmtNum(*r.TimeUsed)))
	}
	b.WriteString(strings.Join(parts, " · "))
	b.WriteString("\n\n")
}

func writeTask(b *strings.Builder, i int, t *TaskResult) {
	name := t.TaskID
	if name == "" {
		name = strconv.Itoa(i + 1)
	}
	fmt.Fprintf(b, "## Task %s\n\n", oneLine(name))
	fmt.Fprintf(b, "- Trace: `%s`\n", t.TraceID)
	switch {
	case t.Outcome == nil:
		b.WriteString("- Outcome: not judged\n")
	case t.Outcome.Success:
		fmt.Fprintf(b, "- Outcome: **pass** — %s\n", oneLine(t.Outcome.Summary))
	default:
		fmt.Fprintf(b, "- Outcome: **fail** — %s\n", oneLine(t.Outcome.Summary))
	}
	fmt.Fprintf(b, "- Coverage: %s\n", coverageLine(t.Coverage))
	if g, ok := t.Evaluations["graph"]; ok {
		writeGraph(b, asMap(g))
	}
	if j, ok := t.Evaluations["judge"]; ok {
		writeJudge(b, asMap(j))
	}
	if len(t.EvaluatorErrors) > 0 {
		names := make([]string, 0, len(t.EvaluatorErrors))
		for n := range t.EvaluatorErrors {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintf(b, "- Evaluator %s failed: %s\n", n, oneLine(t.EvaluatorErrors[n]))
		}
	}
	b.WriteString("\n")
	writeMermaid(b, t.Agents, t.Interactions, absentParticipants(t))
}

// absentParticipants are the participants the graph evaluator drew as
// isolated nodes because the trace has no agent of theirs: they took no
// part, and the graph should show it.
func absentParticipants(t *TaskResult) []string {
	g, ok := t.Evaluations["graph"]
	if !ok {
		return nil
	}
	nodes, _ := asMap(g)["nodes"].([]any)
	var absent []string
	for _, n := range nodes {
		node, _ := n.(map[string]any)
		if name, _ := node["name"].(string); name != "" && node["no_agent"] == true {
			absent = append(absent, name)
		}
	}
	return absent
}

// coverageLine says how much of the trace's interactions was observed, so
// a reader knows how far to trust the graph (DESIGN §3).
func coverageLine(c tracedata.Coverage) string {
	var s string
	if c.Interactions == 0 {
		s = "no interactions observed"
	} else {
		s = fmt.Sprintf("%d of %d interactions seen from both sides", c.BothSides, c.Interactions)
		for _, part := range []struct {
			n    int
			what string
		}{
			{c.InProcess, "in process"},
			{c.ClientOnly, "client side only"},
			{c.ServerOnly, "server side only"},
			{c.ExtensionOnly, "through the Traceability Extension only"},
		} {
			if part.n > 0 {
				s += fmt.Sprintf(", %d %s", part.n, part.what)
			}
		}
		s += fmt.Sprintf(" (%s%% complete)", fmtNum(c.Complete*100))
	}
	if c.Spans > 0 {
		sources := make([]string, 0, len(c.SpansBySource))
		for src := range c.SpansBySource {
			sources = append(sources, src)
		}
		slices.Sort(sources)
		var by []string
		for _, src := range sources {
			by = append(by, fmt.Sprintf("%d %s", c.SpansBySource[src], src))
		}
		s += "; " + plural(c.Spans, "span", "spans")
		if len(by) > 0 {
			s += ": " + strings.Join(by, ", ")
		}
	}
	return s
}

// writeGraph writes the graph evaluator's label and findings.
func writeGraph(b *strings.Builder, g map[string]any) {
	if g == nil {
		return
	}
	if label := describe(g["label"]); label != "" {
		fmt.Fprintf(b, "- Coordination: **%s**\n", label)
	}
	findings, _ := g["findings"].([]any)
	if len(findings) == 0 {
		return
	}
	b.WriteString("- Findings:\n")
	for _, f := range findings {
		if d := describe(f); d != "" {
			fmt.Fprintf(b, "  - %s\n", d)
		}
	}
}

// writeJudge writes the judge's overall score and which judge answered.
func writeJudge(b *strings.Builder, j map[string]any) {
	if j == nil {
		return
	}
	score, ok := j["overall_score"].(float64)
	if !ok {
		return
	}
	s := fmt.Sprintf("- Judge: overall score %s", fmtNum(score))
	if src, _ := j["source"].(string); src != "" {
		s += " (" + src
		if why, _ := j["fallback_reason"].(string); why != "" {
			s += ": " + oneLine(why)
		}
		s += ")"
	}
	b.WriteString(s + "\n")
}

// describe renders a label or a finding whatever its shape: a string as
// is, an object by its kind and its message (whichever keys it has), else
// compact JSON.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return oneLine(x)
	case map[string]any:
		kind := firstString(x, "kind", "type", "name", "label", "id")
		text := firstString(x, "message", "detail", "description", "summary", "reason", "explanation")
		if kind != "" {
			if who := findingAgents(x); who != "" {
				kind += " (" + who + ")"
			}
		}
		switch {
		case kind != "" && text != "":
			return kind + ": " + text
		case kind != "":
			return kind
		case text != "":
			return text
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return oneLine(string(raw))
}

// findingAgents names the agents a finding is about, from "agent" or
// "agents".
func findingAgents(m map[string]any) string {
	if a := firstString(m, "agent"); a != "" {
		return a
	}
	list, _ := m["agents"].([]any)
	var names []string
	for _, v := range list {
		if s, ok := v.(string); ok && s != "" {
			names = append(names, oneLine(s))
		}
	}
	return strings.Join(names, ", ")
}

func firstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return oneLine(s)
		}
	}
	return ""
}

// asMap turns an evaluator result into its JSON object form, or nil.
func asMap(v any) map[string]any {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// writeMermaid draws the agent graph: one node per agent, the assessor and
// virtual nodes styled apart from the agents under test, participants that
// took no part (absent) as dashed isolated nodes, and one edge per
// interaction labelled with its number of calls (and errors).
func writeMermaid(b *strings.Builder, agents []tracedata.Agent, interactions []tracedata.Interaction, absent []string) {
	if len(agents) == 0 && len(interactions) == 0 && len(absent) == 0 {
		b.WriteString("No agents observed.\n\n")
		return
	}
	ids := newMermaidIDs()
	b.WriteString("```mermaid\nflowchart LR\n")
	var assessors, virtuals []string
	node := func(name, class string) {
		if ids.has(name) {
			return
		}
		id := ids.id(name)
		fmt.Fprintf(b, "  %s[\"%s\"]\n", id, mermaidText(name))
		switch class {
		case "assessor":
			assessors = append(assessors, id)
		case "virtual":
			virtuals = append(virtuals, id)
		}
	}
	for _, a := range agents {
		class := ""
		switch {
		case a.Role == tracedata.RoleAssessor:
			class = "assessor"
		case a.Virtual:
			class = "virtual"
		}
		node(a.Name, class)
	}
	for _, in := range interactions {
		node(in.From, "")
		node(in.To, "")
	}
	var absentIDs []string
	for _, name := range absent {
		if !ids.has(name) {
			node(name, "")
			absentIDs = append(absentIDs, ids.id(name))
		}
	}
	for _, in := range interactions {
		label := plural(in.Count, "call", "calls")
		if in.Errors > 0 {
			label += ", " + plural(in.Errors, "error", "errors")
		}
		fmt.Fprintf(b, "  %s -->|\"%s\"| %s\n", ids.id(in.From), label, ids.id(in.To))
	}
	if len(assessors) > 0 {
		b.WriteString("  classDef assessor fill:#e7f0fd,stroke:#1f6feb,stroke-width:2px\n")
		fmt.Fprintf(b, "  class %s assessor\n", strings.Join(assessors, ","))
	}
	if len(virtuals) > 0 {
		b.WriteString("  classDef virtual fill:#f6f8fa,stroke:#8c959f,stroke-dasharray:5 5\n")
		fmt.Fprintf(b, "  class %s virtual\n", strings.Join(virtuals, ","))
	}
	if len(absentIDs) > 0 {
		b.WriteString("  classDef absent fill:#fff8c5,stroke:#9a6700,stroke-dasharray:3 3\n")
		fmt.Fprintf(b, "  class %s absent\n", strings.Join(absentIDs, ","))
	}
	b.WriteString("```\n\n")
}

// mermaidIDs gives every agent name a Mermaid node id made of letters,
// digits and underscores only (agent names hold dashes, dots, colons and
// anything else a service.name may), distinct even when two names sanitise
// alike.
type mermaidIDs struct {
	byName map[string]string
	used   map[string]bool
}

func newMermaidIDs() *mermaidIDs {
	return &mermaidIDs{byName: map[string]string{}, used: map[string]bool{}}
}

func (m *mermaidIDs) has(name string) bool { _, ok := m.byName[name]; return ok }

func (m *mermaidIDs) id(name string) string {
	if id, ok := m.byName[name]; ok {
		return id
	}
	var sb strings.Builder
	sb.WriteString("n_")
	for _, r := range name {
		if r < 128 && (r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	id := sb.String()
	for i := 2; m.used[id]; i++ {
		id = sb.String() + "_" + strconv.Itoa(i)
	}
	m.used[id] = true
	m.byName[name] = id
	return id
}

// mermaidText makes a name safe inside a quoted Mermaid label.
func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "\n", " ", "\r", " ", "<", "#lt;", ">", "#gt;").Replace(s)
}

// oneLine keeps free text from breaking a Markdown list item.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// fmtNum prints a number with at most two decimals and no trailing zeros.
func fmtNum(x float64) string {
	return strconv.FormatFloat(round(x, 2), 'f', -1, 64)
}
