package assemble

import (
	"strings"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// LangGraph node runs and LangChain agents, named only by the metadata
// OpenInference records on every run (recognize/openinference.go reads it,
// Reading.LangChainMeta): which runs are agents' is known once the parents
// are.

// lcAgentRun is a LangChain run that names the createAgent agent it runs
// in (metadata.lc_agent_name).
type lcAgentRun struct {
	span int32
	name string
}

// langGraphNode keeps node i as a candidate LangGraph agent run when its
// name is its node's, at the top of the graph, and as a run of a named
// LangChain agent when its metadata names one.
func (a *assembler) langGraphNode(i int32, sp *otelmap.Span, m recognize.LangChainMeta) {
	if m.Agent != "" {
		a.lcRuns = append(a.lcRuns, lcAgentRun{span: i, name: m.Agent})
	}
	if m.Node == "" || m.Node != sp.Name || strings.Contains(m.NS, "|") {
		return
	}
	a.lgNodes = append(a.lgNodes, i)
}

// resolveLangGraph makes agent spans of the candidate node runs that come
// in pairs: a run directly under a run of the same node. Called once the
// parents are known, before structure.
func (a *assembler) resolveLangGraph() {
	a.resolveLCAgents()
	if len(a.lgNodes) == 0 {
		return
	}
	cand := make(map[int32]bool, len(a.lgNodes))
	for _, i := range a.lgNodes {
		cand[i] = true
	}
	for _, i := range a.lgNodes {
		p := a.nodes[i].parent
		if p < 0 || !cand[p] || a.span(p).Name != a.span(i).Name || a.nodes[p].proc != a.nodes[i].proc {
			continue
		}
		for _, x := range [2]int32{p, i} {
			n := &a.nodes[x]
			if n.selfIdent >= 0 && n.flags&fAgent != 0 {
				continue
			}
			n.selfIdent = a.intern(a.span(x).Name)
			a.note(n.selfIdent, recognize.RankSpanName, false)
			n.flags |= fAgent | fMarker | fStep
			n.flags &^= fAgentLike
			n.op, n.callType, n.role = recognize.OpInvoke, recognize.CallAgent, recognize.RoleInternal
		}
	}
}

// resolveLCAgents makes agent spans of the outermost runs of each named
// LangChain agent (LangChain v1 createAgent({name}) puts lc_agent_name in
// the metadata of every run inside the agent): a run whose parent in its
// process is not a run of the same agent. Runs inside it are its work; a
// sub-agent run from the caller's tool names itself, so its outermost run
// sits in the caller's TOOL span, a call by nesting. The TOOL span's
// tool.name is the tool's, not the sub-agent's.
func (a *assembler) resolveLCAgents() {
	if len(a.lcRuns) == 0 {
		return
	}
	nameOf := make(map[int32]string, len(a.lcRuns))
	for _, r := range a.lcRuns {
		nameOf[r.span] = r.name
	}
	for _, r := range a.lcRuns {
		n := &a.nodes[r.span]
		if p := n.parent; p >= 0 && a.nodes[p].proc == n.proc && nameOf[p] == r.name {
			continue
		}
		if n.flags&fAgent != 0 && n.selfIdent >= 0 {
			continue // named by a rule of its own
		}
		if n.op == recognize.OpLLM || n.op == recognize.OpTool {
			continue // a model or tool call is no agent's run, whatever its metadata
		}
		n.selfIdent = a.intern(r.name)
		a.note(n.selfIdent, recognize.RankOpenInference, false)
		n.flags |= fAgent | fMarker | fStep
		n.flags &^= fAgentLike
		n.op, n.callType, n.role = recognize.OpInvoke, recognize.CallAgent, recognize.RoleInternal
	}
}
