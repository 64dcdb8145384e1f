package assemble

import (
	"math/bits"

	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// scan reads node i's span through the convention families (package
// recognize) and keeps what structure and identity depend on: the verdict
// in the node, what a few spans carry for later rules aside, and what the
// families' passes need (recognize.TreePass).
func (a *assembler) scan(i int32) {
	n := &a.nodes[i]
	sp := a.span(i)
	r := a.reader.Read(sp, n.id)
	n.role, n.op, n.callType = r.Role, r.Op, r.Step
	failed := r.Failed
	if (n.flags&fFailed != 0 || failed) && a.reg.ControlFlow(sp) {
		// An error status that moves control (a handoff's ParentCommand)
		// is no failure of the span, its step or its call.
		failed = false
		n.flags = n.flags&^fFailed | fControlFlow
	}
	if r.Marker {
		n.flags |= fMarker
	}
	if r.MCP {
		n.flags |= fMCP
	}
	if r.ClientMethod {
		n.flags |= fClientMethod
	}
	if failed {
		n.flags |= fFailed
	}
	if r.Ext {
		n.flags |= fExt
	}
	if r.HasAddr {
		n.flags |= fHasAddr
	}
	if r.ReceivedBlind {
		n.flags |= fReceivedBlind
	}
	if r.AgentLike {
		n.flags |= fAgentLike
		a.agentLike++
		if r.UnnamedAgent {
			n.flags |= fUnnamedAgent
		}
	}
	if r.Workflow {
		n.flags |= fWorkflow
	}
	if r.Agent {
		n.flags |= fAgent | fMarker
	}
	if n.callType != recognize.CallNone {
		n.flags |= fStep
	}
	if r.AgentName != "" {
		n.selfIdent = a.intern(r.AgentName)
		a.note(n.selfIdent, r.AgentRank, false)
		if id := r.AgentID; id != "" {
			if x := &a.idents[n.selfIdent]; x.id == "" || id < x.id {
				x.id = id
			}
		}
	}
	if r.Claimed == 0 {
		a.unrecognized++
	}
	if !r.Understood() {
		a.noteUnreadNamespaces(i, sp, r)
	}
	for c := r.Claimed; c != 0; c &= c - 1 {
		a.recognized[bits.TrailingZeros64(uint64(c))]++
	}
	// What later rules read from a few spans only is kept aside.
	if r.Handoff {
		a.handoffs = append(a.handoffs, handoff{span: i, to: r.HandoffTo, from: r.HandoffFrom, fromRank: r.HandoffFromRank})
	}
	if r.Agent {
		a.callers = a.reader.Callers(sp, a.callers[:0])
		for _, c := range a.callers {
			a.callerNames = append(a.callerNames, namedCaller{span: i, name: c.Name, rank: c.Rank})
		}
	}
	a.reader.Keep(sp, i)
	if len(sp.Links()) > 0 {
		a.keepLink(i, sp)
	}
}
