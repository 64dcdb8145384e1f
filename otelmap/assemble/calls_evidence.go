package assemble

import (
	"cmp"
	"slices"

	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// This file finds the callers of loose agent spans: agent spans that are
// not nested in another agent's span, not run under a client span and not
// the work of a received call (nestedCalls), such as the next agent of a
// handoff run as a sibling of the first under a workflow span. A caller is
// taken from, in this order:
//
//  1. a handoff span (recognize/handoff.go) in the same process that
//     starts no later than the agent span and points at it: the first
//     agent span after the handoff named as its target, or, when the
//     handoff names none, the first agent span after it of another agent;
//     of an agent recorded as spans nested in each other, the outermost.
//     The caller is the agent doing the handoff's work (else the agent the
//     handoff names as its source). A handoff whose first matching agent
//     span already has a caller (nested in the caller's span, as some
//     frameworks run a transfer) adds nothing;
//  2. the callers the agent span names itself (recognize.CallerNamer: a
//     graph's edge recorded on its target), each only if an agent span of
//     the trace runs as it;
//  3. the first span link on the agent span or on its ancestors up to its
//     segment's root (links.go).
//
// Each gives one call per agent span, in process (both sides when a link
// crosses processes), with the agent span's duration as its latency. An
// agent span with none of these is a root of the graph: no call.

// namedCaller is an agent span naming its caller.
type namedCaller struct {
	span int32
	name string
	rank recognize.Rank // the rule that named the caller
}

// evidenceCalls makes the calls of loose agent spans.
func (a *assembler) evidenceCalls() {
	if len(a.loose) == 0 {
		if len(a.handoffs) > 0 {
			a.handoffCalls(nil, nil) // for the count of unmet handoffs
		}
		return
	}
	loose := make(map[int32]bool, len(a.loose))
	for _, i := range a.loose {
		loose[i] = true
	}
	called := make(map[int32]bool)
	a.handoffCalls(loose, called)
	// An agent span may name several callers (a graph node fed by
	// several sources): each is a call; the span counts as called once
	// all are made.
	named := map[int32]bool{}
	var runs map[int32]bool // the identities some agent span runs as
	for _, nc := range a.callerNames {
		if loose[nc.span] && !called[nc.span] {
			if runs == nil {
				runs = a.agentsRun()
			}
			if ix, ok := a.identIx[nc.name]; !ok || !runs[ix] {
				// A caller no agent span of the trace runs as (a graph
				// node's id that is not its agent's name, a caller in a
				// trace not held) is no one the graph can show.
				a.callersUnknown++
				continue
			}
			caller := a.intern(nc.name)
			a.note(caller, nc.rank, false)
			if a.looseCall(nc.span, caller, -1, a.nodes[nc.span].proc) {
				named[nc.span] = true
			}
		}
	}
	for b := range named {
		called[b] = true
	}
	for _, b := range a.loose {
		if called[b] {
			continue
		}
		root := a.nodes[b].segRoot
		for x := b; x >= 0; x = a.nodes[x].parent {
			if l := a.linked(x); l >= 0 {
				if a.looseCall(b, a.senderOf(l), a.nodes[l].agentSpan, a.nodes[l].proc) {
					called[b] = true
				}
				break
			}
			if x == root {
				break
			}
		}
	}
}

// agentsRun returns the identities that some agent span of the trace runs
// as.
func (a *assembler) agentsRun() map[int32]bool {
	runs := make(map[int32]bool)
	for i := range a.nodes {
		if n := &a.nodes[i]; n.isAgentSpan() {
			runs[n.selfIdent] = true
		}
	}
	return runs
}

// looseCall adds the call from caller to loose agent span b, unless it is
// a self-call; from is the process the evidence came from.
func (a *assembler) looseCall(b, caller, callerSpan, from int32) bool {
	n := &a.nodes[b]
	if caller == n.selfIdent || caller < 0 {
		return false
	}
	cl := call{caller: caller, callee: n.selfIdent, callerSpan: callerSpan, calleeSpan: b, class: classInProcess,
		failed: n.flags&fFailed != 0, start: n.start, key: n.id, latencyMS: durationMS(n)}
	switch {
	case n.flags&fExt != 0:
		cl.class = classExtension
	case from != n.proc:
		cl.class = classBoth
	}
	n.call = a.addCall(cl)
	return true
}

// handoffCalls resolves each handoff, in start order, to its target agent
// span and, when that span is loose and has no caller yet, makes the call.
func (a *assembler) handoffCalls(loose, called map[int32]bool) {
	var agents []int32
	for i := range a.nodes {
		if a.nodes[i].isAgentSpan() {
			agents = append(agents, int32(i))
		}
	}
	// By process, then start: the order is only searched, never reported,
	// so process numbers (which follow the input order) may order it.
	slices.SortFunc(agents, func(x, y int32) int {
		if c := cmp.Compare(a.nodes[x].proc, a.nodes[y].proc); c != 0 {
			return c
		}
		return a.compareStart(x, y)
	})
	hs := slices.Clone(a.handoffs)
	slices.SortFunc(hs, func(x, y handoff) int { return a.compareStart(x.span, y.span) })
	for _, h := range hs {
		hn := &a.nodes[h.span]
		from := a.agentOf(h.span)
		if hn.agentSpan < 0 && h.from != "" {
			from = a.intern(h.from)
			a.note(from, h.fromRank, false)
		}
		to := normName(h.to)
		k, _ := slices.BinarySearchFunc(agents, h.span, func(x, h int32) int {
			xn, hn := &a.nodes[x], &a.nodes[h]
			return cmp.Or(cmp.Compare(xn.proc, hn.proc), cmp.Compare(xn.start, hn.start))
		})
		target := int32(-1)
		for ; k < len(agents) && a.nodes[agents[k]].proc == hn.proc; k++ {
			t := agents[k]
			tn := &a.nodes[t]
			if t == hn.agentSpan {
				continue
			}
			if to != "" && normName(a.idents[tn.selfIdent].name) != to || to == "" && tn.selfIdent == from {
				continue
			}
			target = t
			break
		}
		if target < 0 {
			if to != "" {
				a.handoffsUnmet++
			}
			continue
		}
		target = a.outermostOfAgent(target)
		if loose[target] && !called[target] && a.looseCall(target, from, hn.agentSpan, hn.proc) {
			called[target] = true
		}
	}
}

// outermostOfAgent returns the outermost of the agent spans of one agent
// that hold span t, one directly inside the other in one process. An agent
// may be recorded as several such spans (a graph's node run and the
// agent's compiled graph run under it), and tracers that stamp
// whole milliseconds start them at the same time, so which is "first"
// after a handoff is a coin toss; the call is into the agent's run, the
// outermost span.
func (a *assembler) outermostOfAgent(t int32) int32 {
	for {
		n := &a.nodes[t]
		p := n.parent
		if p < 0 {
			return t
		}
		pn := &a.nodes[p]
		if pn.proc != n.proc || !pn.isAgentSpan() || pn.selfIdent != n.selfIdent {
			return t
		}
		t = p
	}
}

// compareStart orders spans by start, then span id.
func (a *assembler) compareStart(x, y int32) int {
	if c := cmp.Compare(a.nodes[x].start, a.nodes[y].start); c != 0 {
		return c
	}
	return cmp.Compare(a.nodes[x].id, a.nodes[y].id)
}

// handoff is a handoff span, kept aside for calls_evidence.go.
type handoff struct {
	span     int32
	to       string         // the target agent, "" when not named
	from     string         // the handing-off agent when the span names it
	fromRank recognize.Rank // the rule that named it
}

// normName folds an agent name for matching a handoff's target: ASCII
// lower case, spaces, dashes and dots as underscores, so that the OpenAI
// Agents SDK's transfer_to_billing_agent finds "Billing Agent".
func normName(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'A' <= c && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c == ' ' || c == '-' || c == '.':
			b[i] = '_'
		}
	}
	return string(b)
}
