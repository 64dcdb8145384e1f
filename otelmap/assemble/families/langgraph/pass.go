package langgraph

import "github.com/coordbench/coordbench/otelmap/assemble/recognize"

// Resolve makes agent spans of the outermost runs of each named LangChain
// agent, then of the compiled agent graphs run as nodes: the node's run
// and, under it through runs of the same node and namespace only, a run of
// the same name whose own nodes run one namespace deeper (the graph's
// run), with every run between them.
func (m *reader) Resolve(t recognize.Tree) {
	m.resolveAgents(t)
	if len(m.nodeRuns) == 0 {
		return
	}
	at := make(map[int32]int, len(m.nodeRuns))
	for k, g := range m.nodeRuns {
		at[g.span] = k
	}
	// A graph's run: a run whose children are nodes one namespace inside
	// its own.
	ranGraph := make(map[int32]bool)
	for _, in := range m.inner {
		p := t.Parent(in.span)
		if k, ok := at[p]; ok && t.Process(p) == t.Process(in.span) && under(in.ns, m.nodeRuns[k].ns) {
			ranGraph[p] = true
		}
	}
	var chain []int32
	for _, g := range m.nodeRuns {
		if !g.named || !ranGraph[g.span] {
			continue
		}
		chain = append(chain[:0], g.span)
		for p := t.Parent(g.span); p >= 0 && t.Process(p) == t.Process(g.span); p = t.Parent(p) {
			k, ok := at[p]
			if !ok || m.nodeRuns[k].node != g.node || m.nodeRuns[k].ns != g.ns {
				break
			}
			chain = append(chain, p)
			if !m.nodeRuns[k].named {
				continue // a wrapper between the node's run and the graph's
			}
			for _, x := range chain {
				if !t.Named(x) {
					t.ForgetUnnamed(x)
					t.MakeAgent(x, g.node, idSpanName)
				}
			}
			break
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
