package assemble

import (
	"github.com/coordbench/coordbench/otelmap"
)

// Span links as caller evidence. Some frameworks join a message, a handoff
// or a task to the span that caused it only by a link, the parent being
// the runtime's loop or the workflow's run (docs/trace-assembly.md, "Agents
// run beside each other"): a runtime's publish (PRODUCER) and process
// (CONSUMER) spans both link to the span opened where the sending agent
// created the message; a workflow's next executor links to the send
// (PRODUCER) span of the executor that handed off.
//
// A link counts only when it points at a span of the same trace. The first
// such link of a span is its link; its sender is the agent doing the work
// of the linked span (senderOf). Links are read:
//
//  1. on a call's sides (the top client span of a client chain, an entry):
//     the sender of the link, not the agent around the span, is the caller;
//  2. for an agent span no other rule gives a caller (calls_evidence.go):
//     the first link on it or on its ancestors up to its segment's root
//     names the caller; the call is in-process when the linked span is in
//     the same process, both sides otherwise.

// keepLink remembers the first link of node i's span to a span of this
// trace, as evidence of who caused it.
func (a *assembler) keepLink(i int32, sp *otelmap.Span) {
	for _, l := range sp.Links() {
		if j, ok := a.heldSpan(l.TraceID, l.SpanID); ok && j != i {
			if a.linkOf == nil {
				a.linkOf = make(map[int32]int32)
			}
			a.linkOf[i] = j
			return
		}
	}
}

// link returns node i's link, or -1.
func (a *assembler) linked(i int32) int32 {
	if a.linkOf == nil {
		return -1
	}
	if j, ok := a.linkOf[i]; ok {
		return j
	}
	return -1
}

// senderOf returns the agent that sent what span x records: the agent whose
// span x is in; else, for a span beside an agent's run rather than inside
// it (a workflow executor's send span, a sibling of the agent span under
// the executor's span), that agent: the latest agent span among x's
// siblings that started no later than x, else the earliest; else the
// identity of x's segment root.
func (a *assembler) senderOf(x int32) int32 {
	n := &a.nodes[x]
	if n.agentSpan >= 0 {
		return n.agent
	}
	if p := n.parent; p >= 0 {
		best, first := int32(-1), int32(-1)
		for _, k := range a.children(p) {
			kn := &a.nodes[k]
			if kn.parent != p || kn.proc != n.proc || !kn.isAgentSpan() {
				continue
			}
			if first < 0 || a.earlier(k, first) {
				first = k
			}
			if kn.start <= n.start && (best < 0 || a.earlier(best, k)) {
				best = k
			}
		}
		if best < 0 {
			best = first
		}
		if best >= 0 {
			return a.nodes[best].selfIdent
		}
	}
	return a.rootAgent(n.segRoot)
}
