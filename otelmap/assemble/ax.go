package assemble

import "github.com/coordbench/coordbench/otelmap/assemble/recognize"

// Ax's child agents (recognize/ax.go reads the spans): an AxAgent's run
// names no agent of its own; the Ax native tool call it runs in names it.

// resolveAx makes agent spans of the AxAgent runs whose parent, in the same
// process, is an Ax native tool call: the agent is the one that function
// names, called by whoever made the tool call (by nesting, like any
// sub-agent run from a tool). Every other AxAgent run stays an agent no
// attribute names: at a trace's root it is cut off from its caller (a child
// called from an AxAgent's JavaScript runtime) or the top of the run, and
// its ax.program.id ("root", "root.researcher") is a path, not a name.
// Called once the parents are known, before structure.
func (a *assembler) resolveAx() {
	for _, i := range a.axRuns {
		n := &a.nodes[i]
		p := n.parent
		if p < 0 || a.nodes[p].proc != n.proc {
			continue
		}
		name, ok := a.axTools[p]
		if !ok {
			continue
		}
		n.selfIdent = a.intern(name)
		a.note(n.selfIdent, recognize.RankAx, false)
		n.flags |= fAgent | fMarker | fStep
		n.flags &^= fAgentLike | fUnnamedAgent | fWorkflow
		n.op, n.callType, n.role = recognize.OpInvoke, recognize.CallAgent, recognize.RoleInternal
		a.axBodies = append(a.axBodies, i)
	}
}

// markAxCallers counts the caller of an Ax native tool call that ran an
// agent as an unnamed agent (the AxGen: Ax records no name for it) when
// the call is in no agent's run and its service does not stand for it
// (outside.go): that call has no caller, so the graph is not called
// complete without it. Runs after serviceCallers.
func (a *assembler) markAxCallers() {
	for _, b := range a.axBodies {
		if a.nodes[b].flags&fServiceCall != 0 {
			continue
		}
		t := a.nodes[b].parent
		x := a.nodes[t].parent
		for x >= 0 && a.nodes[x].proc == a.nodes[t].proc && a.nodes[x].flags&fAgent == 0 {
			x = a.nodes[x].parent
		}
		if x >= 0 && a.nodes[x].flags&fAgent != 0 {
			continue
		}
		g := &a.nodes[t]
		if p := g.parent; p >= 0 && a.nodes[p].proc == g.proc {
			g = &a.nodes[p]
		}
		if g.flags&fAgentLike == 0 {
			g.flags |= fAgentLike
			a.agentLike++
		}
		g.flags |= fUnnamedAgent
	}
}
