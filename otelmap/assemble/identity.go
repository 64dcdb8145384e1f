package assemble

import "github.com/coordbench/coordbench/tracedata"

// This file names agents: the identities (candidate graph nodes), the rank
// by which each was identified, and the agent doing the work of every span.

// Identity ranks, in DESIGN §3's order: the lowest rank an identity was
// seen with says how it was identified.
const (
	rankAgentName uint8 = iota
	rankAgentID
	rankService
	rankExtension
	rankServerAddr
	rankUser
	rankUnknown
	rankNone
)

// rankName is the tracedata name of a rank, "" for rankNone.
func rankName(rank uint8) string {
	switch rank {
	case rankAgentName:
		return tracedata.IdentityAgentName
	case rankAgentID:
		return tracedata.IdentityAgentID
	case rankService:
		return tracedata.IdentityServiceName
	case rankExtension:
		return tracedata.IdentityExtension
	case rankServerAddr:
		return tracedata.IdentityServerAddr
	case rankUser:
		return tracedata.IdentityUser
	case rankUnknown:
		return tracedata.IdentityUnknown
	}
	return ""
}

// identity is one agent name, a candidate graph node.
type identity struct {
	name     string
	id       string // smallest gen_ai.agent.id seen with the name
	rank     uint8
	real     bool // seen on a route that proves it emitted spans or was named by one
	virtual  bool // seen as server.address, "user" or "unknown" caller
	assessor bool
	used     bool
	steps    int
	errors   int
}

func (a *assembler) intern(name string) int32 {
	if ix, ok := a.identIx[name]; ok {
		return ix
	}
	ix := int32(len(a.idents))
	a.idents = append(a.idents, identity{name: name, rank: rankNone})
	a.identIx[name] = ix
	return ix
}

// note records a route by which an identity was named.
func (a *assembler) note(ix int32, rank uint8, virtual bool) {
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
	return n.role != roleClient && n.flags&fAgent != 0 && n.selfIdent >= 0
}

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
}

// rootIdentity names the agent of a segment root that is not itself an
// agent span. An entry is the server side of a call, named as the callee of
// a paired call is: the first agent span below it in its process
// (breadth-first, earliest start), else the agent the client chain named.
// Otherwise, and failing those, the process's service.name, else "unknown".
func (a *assembler) rootIdentity(r int32) int32 {
	n := &a.nodes[r]
	if n.flags&fEntry != 0 {
		if b := a.firstAgentBelow(r); b >= 0 {
			return a.nodes[b].selfIdent
		}
		if p := n.parent; p >= 0 && a.nodes[p].role == roleClient {
			if s := a.chainOf(p).nameSpan; s >= 0 {
				return a.nodes[s].selfIdent
			}
		}
	}
	if svc := a.procs[n.proc].service; svc != "" {
		ix := a.intern(svc)
		rank := rankService
		if n.flags&fExt != 0 {
			rank = rankExtension
		}
		a.note(ix, rank, false)
		return ix
	}
	a.unknownService = true
	ix := a.intern(tracedata.UnknownAgent)
	a.note(ix, rankUnknown, false)
	return ix
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
			if a.nodes[x].role == roleClient {
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
