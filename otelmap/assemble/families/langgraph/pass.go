package langgraph

import "github.com/coordbench/coordbench/otelmap/assemble/recognize"

// Resolve makes agent spans of the outermost runs of each named LangChain
// agent, then of the candidate graph node runs that come in pairs: a run
// directly under a run of the same node in its process.
func (m *reader) Resolve(t recognize.Tree) {
	m.resolveAgents(t)
	if len(m.nodes) == 0 {
		return
	}
	cand := make(map[int32]bool, len(m.nodes))
	for _, i := range m.nodes {
		cand[i] = true
	}
	for _, i := range m.nodes {
		p := t.Parent(i)
		if p < 0 || !cand[p] || t.Span(p).Name != t.Span(i).Name || t.Process(p) != t.Process(i) {
			continue
		}
		for _, x := range [2]int32{p, i} {
			if !t.Named(x) {
				t.MakeAgent(x, t.Span(x).Name, idSpanName)
			}
		}
	}
}

// resolveAgents makes agent spans of the outermost runs of each named
// LangChain agent: a run whose parent in its process is not a run of the
// same agent, that no rule of its own named, and that is no model or tool
// call (whatever its metadata).
func (m *reader) resolveAgents(t recognize.Tree) {
	if len(m.runs) == 0 {
		return
	}
	nameOf := make(map[int32]string, len(m.runs))
	for _, r := range m.runs {
		nameOf[r.span] = r.name
	}
	for _, r := range m.runs {
		if p := t.Parent(r.span); p >= 0 && t.Process(p) == t.Process(r.span) && nameOf[p] == r.name {
			continue
		}
		if t.Named(r.span) {
			continue // named by a rule of its own
		}
		if op := t.Op(r.span); op == recognize.OpLLM || op == recognize.OpTool {
			continue
		}
		t.MakeAgent(r.span, r.name, idAgentName)
	}
}
