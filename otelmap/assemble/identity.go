package assemble

import (
	"cmp"
	"slices"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// This file names agents: the identities (candidate graph nodes), the rank
// by which each was identified, and the agent doing the work of every span.

// identity is one agent name, a candidate graph node.
type identity struct {
	name     string
	id       string // smallest gen_ai.agent.id seen with the name
	rank     recognize.Rank
	real     bool // seen on a route that proves it emitted spans or was named by one
	virtual  bool // seen as server.address, "user" or "unknown" caller
	assessor bool
	tool     bool // a tool server (toolservers.go)
	used     bool
	steps    int
	errors   int
	aliases  []string // names of proxies that stood for it (calls_proxy.go)
}

func (a *assembler) intern(name string) int32 {
	if ix, ok := a.identIx[name]; ok {
		return ix
	}
	ix := int32(len(a.idents))
	a.idents = append(a.idents, identity{name: name, rank: recognize.RankNone})
	a.identIx[name] = ix
	return ix
}

// note records a route by which an identity was named.
func (a *assembler) note(ix int32, rank recognize.Rank, virtual bool) {
	x := &a.idents[ix]
	x.rank = min(x.rank, rank)
	if virtual {
		x.virtual = true
	} else {
		x.real = true
	}
}

// isAgentSpan reports an INTERNAL or SERVER agent span that names its
// agent: the agent doing the work below it. A CLIENT agent span names its
// callee instead.
func (n *node) isAgentSpan() bool {
	return n.role != recognize.RoleClient && n.flags&fAgent != 0 && n.selfIdent >= 0
}

// pendingAgent stands for an identity not known yet: a segment root whose
// agent is whoever caused it (rootIdentity).
const pendingAgent int32 = -5

// identify names the agent doing the work of every span: the nearest
// INTERNAL or SERVER agent span at or above it within its segment, else the
// identity of the segment's root.
func (a *assembler) identify() {
	for _, i := range a.order {
		n := &a.nodes[i]
		switch {
		case n.isAgentSpan():
			n.agent, n.agentSpan = n.selfIdent, i
		case n.segRoot == i:
			n.agent = a.rootIdentity(i)
		default:
			p := &a.nodes[n.parent]
			n.agent, n.agentSpan = p.agent, p.agentSpan
		}
	}
	if len(a.pending) == 0 {
		return
	}
	// By span id, so that where a cycle of causes is cut does not depend on
	// the input order.
	slices.SortFunc(a.pending, func(x, y int32) int { return cmp.Compare(a.nodes[x].id, a.nodes[y].id) })
	for _, r := range a.pending {
		a.rootAgent(r)
	}
	// The work itself, outside any agent span, is no agent's: the
	// application's or the runtime's, the virtual "user".
	user := a.userIdent()
	for _, r := range a.pending {
		a.nodes[r].agent = user
	}
	for _, i := range a.order {
		if n := &a.nodes[i]; n.agentSpan < 0 {
			n.agent = a.nodes[n.segRoot].agent
		}
	}
}

// rootIdentity names the agent of a segment root that is not itself an
// agent span. An entry is the server side of a call, named as the callee of
// a paired call is: the first agent span below it in its process
// (breadth-first, earliest start), else the agent the client chain named.
//
// Past that, in a process whose spans name agents (INTERNAL or SERVER agent
// spans), service.name is the host of agents rather than an agent, and the
// root's work is: the process's agent when its spans name exactly one;
// else, at a root of the trace, the work of the application that started
// the run (the virtual "user"); else, for a message consumed (a CONSUMER
// span, or one linked to its sender) or a span started from another
// process without a call, the work of whoever caused it: the sender of its
// link, the caller of the call it received, the agent of its parent (a
// runtime or router passing messages between the agents it hosts, such as
// a group chat's manager), resolved once all roots are known
// (rootAgent). Such a root passes calls on for whoever caused it, but its
// own work (the manager's LLM calls) is no agent's: its steps are the
// virtual "user"'s. A request served outside any agent span of a process with
// several agents (a server span under which no agent span runs) stays the
// service's, as in a process whose spans name no agent: its service.name,
// else "unknown".
func (a *assembler) rootIdentity(r int32) int32 {
	n := &a.nodes[r]
	if n.flags&fToolServer != 0 {
		return a.toolServerIdent(r)
	}
	if n.flags&fServiceAgent != 0 {
		ix := a.intern(a.procs[n.proc].service)
		a.note(ix, recognize.RankService, false)
		return ix
	}
	if n.flags&fEntry != 0 {
		if b := a.firstAgentBelow(r); b >= 0 {
			return a.nodes[b].selfIdent
		}
		if p := n.parent; p >= 0 && a.nodes[p].role == recognize.RoleClient {
			if s := a.chainOf(p).nameSpan; s >= 0 {
				return a.nodes[s].selfIdent
			}
		}
	}
	if pr := &a.procs[n.proc]; pr.agent >= 0 {
		linked := a.linked(r) >= 0
		switch {
		case !pr.manyAgents:
			return pr.agent
		case n.flags&(fHasParentID|fEntry) == 0 && !linked:
			return a.userIdent()
		case n.flags&fEntry == 0 || linked || a.span(r).Kind == trace.SpanKindConsumer:
			a.pending = append(a.pending, r)
			return pendingAgent
		}
	}
	if svc := a.procs[n.proc].service; svc != "" {
		ix := a.intern(svc)
		rank := recognize.RankService
		if n.flags&fExt != 0 {
			rank = recognize.RankExtension
		}
		a.note(ix, rank, false)
		return ix
	}
	a.unknownService = true
	ix := a.intern(tracedata.UnknownAgent)
	a.note(ix, recognize.RankUnknown, false)
	return ix
}

// userIdent returns the virtual "user".
func (a *assembler) userIdent() int32 {
	ix := a.intern(tracedata.UserAgent)
	a.note(ix, recognize.RankUser, true)
	return ix
}

// rootAgent returns the agent segment root r's work counts as caused by,
// for the calls it passes on: its identity, or for a root left pending by
// rootIdentity, whoever caused it (resolved on first use and kept). A cycle
// of such roots (each caused by the other, through broken links) ends at
// "user".
func (a *assembler) rootAgent(r int32) int32 {
	if c, ok := a.cause[r]; ok {
		return c
	}
	n := &a.nodes[r]
	if n.agent != pendingAgent {
		return n.agent
	}
	if n.flags&fResolving != 0 || a.depth >= maxCauseDepth {
		return a.userIdent()
	}
	n.flags |= fResolving
	a.depth++
	ident := a.causeOf(r)
	a.depth--
	if a.cause == nil {
		a.cause = make(map[int32]int32)
	}
	a.cause[r] = ident
	return ident
}

// maxCauseDepth bounds how many pending roots rootAgent resolves one
// through another (recursively), so that a long chain of messages linked
// against their order cannot exhaust the stack; past it the cause is
// "user".
const maxCauseDepth = 10_000

// causeOf returns the agent that caused segment root r: the sender of its
// link, else the caller of the client chain it answers, else the agent of
// its parent; "unknown" when its parent is missing, "user" at a root.
func (a *assembler) causeOf(r int32) int32 {
	n := &a.nodes[r]
	if l := a.linked(r); l >= 0 {
		return a.senderOf(l)
	}
	switch p := n.parent; {
	case p >= 0 && a.nodes[p].role == recognize.RoleClient:
		return a.chainCaller(a.chainOf(p))
	case p >= 0:
		return a.agentOf(p)
	case n.flags&fHasParentID != 0:
		ix := a.intern(tracedata.UnknownAgent)
		a.note(ix, recognize.RankUnknown, true)
		return ix
	}
	return a.userIdent()
}

// agentOf returns the agent doing the work of span x, resolving a pending
// segment root.
func (a *assembler) agentOf(x int32) int32 {
	if n := &a.nodes[x]; n.agentSpan >= 0 {
		return n.agent
	}
	return a.rootAgent(a.nodes[x].segRoot)
}

// chainCaller returns the caller of a client chain: the sender of the top
// span's link when it has one (a message published from the runtime's
// loop, linked to where it was created), else the agent doing the work of
// the top span.
func (a *assembler) chainCaller(ch *chain) int32 {
	if l := a.linked(ch.top); l >= 0 {
		return a.senderOf(l)
	}
	return a.agentOf(ch.top)
}

// firstAgentBelow searches r's segment breadth-first for an agent span,
// taking the earliest start (then smallest span id) of the first level
// that has one. It does not enter client chains, whose agent spans name
// callees, nor other entries.
func (a *assembler) firstAgentBelow(r int32) int32 {
	pr := a.nodes[r].proc
	level := append(a.scratch[:0], r)
	next := a.scratch2[:0]
	best := int32(-1)
	for len(level) > 0 && best < 0 {
		next = next[:0]
		for _, x := range level {
			if a.nodes[x].role == recognize.RoleClient {
				continue
			}
			for _, k := range a.children(x) {
				kn := &a.nodes[k]
				if kn.parent != x || kn.proc != pr || kn.flags&fEntry != 0 {
					continue
				}
				if kn.isAgentSpan() && (best < 0 || a.earlier(k, best)) {
					best = k
				}
				next = append(next, k)
			}
		}
		level, next = next, level
	}
	a.scratch, a.scratch2 = level[:0], next[:0]
	return best
}
