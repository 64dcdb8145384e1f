package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/internal/textutil"
	"github.com/coordbench/coordbench/tracedata"
)

// Summary renders r as Markdown for people: the score, and per task its trace
// id, outcome, how much of the trace was observed, the graph's label and
// findings, the judge's score, the participants that took no part (one that
// could not be reached with the full cause), and the coordination graph as a
// Mermaid flowchart; then one line per number saying what it means. It is the
// text part of the A2A result artifact
// (docs/green-agent.md#the-result-artifact), so it must never be valid JSON: it
// always starts with a heading.
//
// Evaluator results are read through their Go types (*evals.GraphResult,
// *judge.Result), as the evaluators return them and Decode restores
// them; a result of another type under those names is not rendered.
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
	addrs := participantAddrs(r.Inputs)
	for i := range r.Tasks {
		writeTask(&b, i, &r.Tasks[i], addrs)
	}
	writeLegend(&b, r)
	if len(r.Warnings) > 0 {
		b.WriteString("## Warnings\n\n")
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "- %s\n", textutil.OneLine(w))
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
		s := "**Score: " + textutil.Number(*r.Score)
		if r.MaxScore != nil {
			s += " / " + textutil.Number(*r.MaxScore)
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
		parts = append(parts, fmt.Sprintf("pass rate %s%% (%d of %d tasks)", textutil.Number(*r.PassRate*100), passed, judged))
	case judged > 0:
		parts = append(parts, fmt.Sprintf("%d of %d tasks passed", passed, judged))
	default:
		parts = append(parts, textutil.Plural(len(r.Tasks), "task", "tasks"))
	}
	if r.TimeUsed != nil {
		parts = append(parts, fmt.Sprintf("%s s", textutil.Number(*r.TimeUsed)))
	}
	b.WriteString(strings.Join(parts, " · "))
	b.WriteString("\n\n")
}

func writeTask(b *strings.Builder, i int, t *TaskResult, addrs map[string]string) {
	name := t.TaskID
	if name == "" {
		name = strconv.Itoa(i + 1)
	}
	fmt.Fprintf(b, "## Task %s\n\n", textutil.OneLine(name))
	fmt.Fprintf(b, "- Trace: `%s`\n", t.TraceID)
	switch {
	case t.Outcome == nil:
		b.WriteString("- Outcome: not judged\n")
	case t.Outcome.Success:
		fmt.Fprintf(b, "- Outcome: **pass** — %s\n", textutil.OneLine(t.Outcome.Summary))
	default:
		fmt.Fprintf(b, "- Outcome: **fail** — %s\n", textutil.OneLine(t.Outcome.Summary))
	}
	fmt.Fprintf(b, "- Coverage: %s\n", coverageLine(t.Coverage))
	if d := DescribeSetAside(t.SetAside); d != "" {
		fmt.Fprintf(b, "- ⚠ Provenance: %s (see docs/trace-assembly.md#provenance)\n", d)
	}
	absent := absentParticipants(t)
	unreached := unreachedParticipants(t, absent, addrs)
	writeAbsent(b, absent, unreached)
	if g := graphResult(t); g != nil {
		writeGraph(b, g)
	}
	if j, ok := t.Evaluations[evalJudge].(*judge.Result); ok && j != nil {
		writeJudge(b, j)
	}
	if len(t.EvaluatorErrors) > 0 {
		names := make([]string, 0, len(t.EvaluatorErrors))
		for n := range t.EvaluatorErrors {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintf(b, "- Evaluator %s failed: %s\n", n, textutil.OneLine(t.EvaluatorErrors[n]))
		}
	}
	b.WriteString("\n")
	writeMermaid(b, t.Agents, t.Interactions, absent, unreached)
}

// absentParticipants are the participants the graph evaluator drew as
// isolated nodes because the trace has no agent of theirs: they took no
// part, and the graph should show it.
func absentParticipants(t *TaskResult) []string {
	g := graphResult(t)
	if g == nil {
		return nil
	}
	var absent []string
	for _, n := range g.Nodes {
		if n.Name != "" && n.NoAgent {
			absent = append(absent, n.Name)
		}
	}
	return absent
}

// graphResult is the task's graph evaluation, or nil.
func graphResult(t *TaskResult) *evals.GraphResult {
	g, _ := t.Evaluations[evalGraph].(*evals.GraphResult)
	return g
}

// coverageLine says how much of the trace's interactions was observed, so
// a reader knows how far to trust the graph (docs/trace-assembly.md#coverage).
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
		s += fmt.Sprintf(" (%s%% complete)", textutil.Number(c.Complete*100))
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
		s += "; " + textutil.Plural(c.Spans, "span", "spans")
		if len(by) > 0 {
			s += ": " + strings.Join(by, ", ")
		}
	}
	return s
}

// writeGraph writes the graph evaluator's label and findings.
func writeGraph(b *strings.Builder, g *evals.GraphResult) {
	if label := textutil.OneLine(g.Label); label != "" {
		fmt.Fprintf(b, "- Coordination: **%s**\n", label)
	}
	if len(g.Findings) == 0 {
		return
	}
	b.WriteString("- Findings:\n")
	for _, f := range g.Findings {
		if d := describeFinding(f); d != "" {
			fmt.Fprintf(b, "  - %s\n", d)
		}
	}
}

// describeFinding renders a finding as its kind, the agents it is about in
// parentheses, and its detail after a colon, whichever of them it has.
func describeFinding(f evals.GraphFinding) string {
	kind, detail := textutil.OneLine(f.Kind), textutil.OneLine(f.Detail)
	if kind != "" {
		var names []string
		for _, a := range f.Agents {
			if a != "" {
				names = append(names, textutil.OneLine(a))
			}
		}
		if len(names) > 0 {
			kind += " (" + strings.Join(names, ", ") + ")"
		}
	}
	switch {
	case kind != "" && detail != "":
		return kind + ": " + detail
	case kind != "":
		return kind
	}
	return detail
}

// writeJudge writes the judge's overall score and which judge answered.
func writeJudge(b *strings.Builder, j *judge.Result) {
	s := fmt.Sprintf("- Judge: overall score %s", textutil.Number(j.OverallScore))
	if j.Source != "" {
		s += " (" + j.Source
		if why := j.FallbackReason; why != "" {
			s += ": " + textutil.OneLine(why)
		}
		s += ")"
	}
	b.WriteString(s + "\n")
}

// writeMermaid draws the agent graph: one node per agent, the assessor and
// virtual nodes styled apart from the agents under test, participants that
// took no part (absent) as dashed isolated nodes, and one edge per
// interaction labelled with its number of calls (and errors). A
// participant that could not be reached is one node, named by its role
// and labelled with its address, not a role node and an address node.
func writeMermaid(b *strings.Builder, agents []tracedata.Agent, interactions []tracedata.Interaction, absent []string, unreached map[string]unreached) {
	if len(agents) == 0 && len(interactions) == 0 && len(absent) == 0 {
		b.WriteString("No agents observed.\n\n")
		return
	}
	// name is the node an agent or an interaction's end is drawn as.
	name := func(n string) string {
		if u, ok := unreached[n]; ok {
			return u.role
		}
		return n
	}
	ids := newMermaidIDs()
	b.WriteString("```mermaid\nflowchart LR\n")
	classes := map[string][]string{}
	node := func(n, label, class string) {
		if ids.has(n) {
			return
		}
		id := ids.id(n)
		fmt.Fprintf(b, "  %s[\"%s\"]\n", id, mermaidText(label))
		if class != "" {
			classes[class] = append(classes[class], id)
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
		if u, ok := unreached[a.Name]; ok {
			node(u.role, u.role+" ("+u.addr+", not reached)", "absent")
			continue
		}
		node(a.Name, a.Name, class)
	}
	for _, in := range interactions {
		node(name(in.From), name(in.From), "")
		node(name(in.To), name(in.To), "")
	}
	for _, n := range absent {
		node(n, n, "absent")
	}
	for _, in := range interactions {
		label := textutil.Plural(in.Count, "call", "calls")
		if in.Errors > 0 {
			label += ", " + textutil.Plural(in.Errors, "error", "errors")
		}
		fmt.Fprintf(b, "  %s -->|\"%s\"| %s\n", ids.id(name(in.From)), label, ids.id(name(in.To)))
	}
	for _, c := range []struct{ class, style string }{
		{"assessor", "fill:#e7f0fd,stroke:#1f6feb,stroke-width:2px"},
		{"virtual", "fill:#f6f8fa,stroke:#8c959f,stroke-dasharray:5 5"},
		{"absent", "fill:#fff8c5,stroke:#9a6700,stroke-dasharray:3 3"},
	} {
		if len(classes[c.class]) > 0 {
			fmt.Fprintf(b, "  classDef %s %s\n", c.class, c.style)
			fmt.Fprintf(b, "  class %s %s\n", strings.Join(classes[c.class], ","), c.class)
		}
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
