package assemble

import (
	"encoding/binary"
	"math"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/spanorder"
)

// This file indexes the spans as a tree: one node per span id, parents,
// processes and times resolved, children lists, and a parents-first order
// in which every later phase visits the spans.

// proc is one process: spans of one resource, or of resources with the same
// non-empty service.name.
type proc struct {
	service  string
	assessor bool
	// agent is the agent the process's agent spans name, -1 if none;
	// manyAgents says they name more than one (structure).
	agent      int32
	manyAgents bool
}

// index keeps the spans of the trace, one per span id. Of duplicates it
// keeps the one spanLess puts first, whatever the input order.
func (a *assembler) index(spans []otelmap.Span) {
	a.spans = spans
	a.nodes = slices.Grow(a.nodes[:0], len(spans))
	a.byID.Reset(len(spans))
	for i := range spans {
		sp := &spans[i]
		if !a.inTrace(sp.TraceID) {
			a.otherTrace++
			continue
		}
		if !sp.SpanID.IsValid() {
			a.invalidID++
			continue
		}
		id := binary.BigEndian.Uint64(sp.SpanID[:])
		if j, dup := a.byID.Put(id, int32(len(a.nodes))); dup {
			a.dups++
			// Of one id in two traces read together (joined), the span of
			// the trace read first is kept: a trace joined to the task's
			// cannot replace one of its spans by repeating the id.
			if r, rj := a.traceRank(sp.TraceID), a.traceRank(a.span(j).TraceID); r < rj || r == rj && spanorder.Less(sp, a.span(j)) {
				a.nodes[j].sp = int32(i)
			}
			continue
		}
		a.nodes = append(a.nodes, node{sp: int32(i), id: id})
	}
}

// link resolves parents, processes and times, and reads each span through
// the recognizers (scan.go) for what assembly decides by.
func (a *assembler) link() {
	for i := range a.nodes {
		n := &a.nodes[i]
		sp := a.span(int32(i))
		n.parent, n.selfIdent, n.segRoot, n.topClient, n.chain = -1, -1, -1, -1, -1
		n.clientAnc, n.stepAnc, n.entry, n.agent, n.agentSpan, n.call, n.stepIx = -1, -1, -1, -1, -1, -1, -1
		n.depth = -1
		if sp.ParentSpanID.IsValid() {
			n.flags |= fHasParentID
			// A parent id names a span of the span's own trace: in traces
			// read together (joined), a span of another trace with that id
			// is not its parent.
			if j, ok := a.byID.Get(binary.BigEndian.Uint64(sp.ParentSpanID[:])); ok && (len(a.joined) == 0 || a.span(j).TraceID == sp.TraceID) {
				n.parent = j
			} else {
				n.flags |= fParentMissing
				a.missingParents++
			}
		}
		n.start, n.end = unixNano(sp.Start), unixNano(sp.End)
		switch {
		case n.start == 0 || n.end == 0:
			a.noTime++
		case n.end < n.start:
			a.endBeforeStart++
		}
		if sp.StatusError {
			n.flags |= fFailed
		}
		if sp.Source == otelmap.SourceExtension {
			n.flags |= fExt
		}
		n.proc = a.procOf(sp.ResourceOrEmpty())
		a.scan(int32(i))
	}
}

// Times outside what UnixNano can hold, and the Unix epoch itself (what a
// zero OTLP timestamp decodes to), count as unset. Read only.
var (
	minTime = time.Unix(0, 0)
	maxTime = time.Unix(0, math.MaxInt64)
)

func unixNano(t time.Time) int64 {
	if !t.After(minTime) || !t.Before(maxTime) {
		return 0
	}
	return t.UnixNano()
}

// procOf returns the process of a resource: resources are compared by
// pointer (the spans of one batch share one), then by service.name, since
// the spans of one process arrive in many batches and by several roads.
func (a *assembler) procOf(r *otelmap.Resource) int32 {
	if r == a.lastRes {
		return a.lastProc
	}
	p, ok := a.procByRe[r]
	if !ok {
		if r.ServiceName != "" {
			p, ok = a.procBySv[r.ServiceName]
		}
		if !ok {
			p = int32(len(a.procs))
			a.procs = append(a.procs, proc{service: r.ServiceName, agent: -1})
			if r.ServiceName != "" {
				a.procBySv[r.ServiceName] = p
			}
		}
		a.procByRe[r] = p
		for _, kv := range r.Attrs {
			if kv.Key == otelmap.AttrRole && kv.Value.Type() == attribute.STRING && kv.Value.AsString() == otelmap.RoleAssessor {
				a.procs[p].assessor = true
			}
		}
	}
	a.lastRes, a.lastProc = r, p
	return p
}

// resortParentsFirst redoes sortParentsFirst after a family moved a span
// under another parent (Tree.RunBy): the children lists and the order are
// stale. No cycle is left to cut (RunBy makes none).
func (a *assembler) resortParentsFirst() {
	for i := range a.nodes {
		a.nodes[i].depth = -1
	}
	a.sortParentsFirst()
}

// sortParentsFirst builds the children lists and a parents-first order of all spans.
// Parent links that form cycles are cut at the cycle's smallest span id, so
// the cut does not depend on input order either.
func (a *assembler) sortParentsFirst() {
	m := len(a.nodes)
	a.kidsOff = slices.Grow(a.kidsOff[:0], m+1)[:m+1]
	clear(a.kidsOff)
	for i := range a.nodes {
		if p := a.nodes[i].parent; p >= 0 {
			a.kidsOff[p+1]++
		}
	}
	for i := 1; i <= m; i++ {
		a.kidsOff[i] += a.kidsOff[i-1]
	}
	a.kids = slices.Grow(a.kids[:0], int(a.kidsOff[m]))[:a.kidsOff[m]] // every place is written below
	fill := slices.Clone(a.kidsOff[:m])
	for i := range a.nodes {
		if p := a.nodes[i].parent; p >= 0 {
			a.kids[fill[p]] = int32(i)
			fill[p]++
		}
	}
	a.order = slices.Grow(a.order[:0], m)
	for i := range a.nodes {
		if a.nodes[i].parent < 0 {
			a.nodes[i].depth = 0
			a.order = append(a.order, int32(i))
		}
	}
	a.bfs(0)
	if len(a.order) < m {
		a.cutCycles()
	}
}

// children returns the nodes whose parent link pointed at x when the lists
// were built; a child whose link was cut since is among them, so callers
// check kid.parent == x.
func (a *assembler) children(x int32) []int32 { return a.kids[a.kidsOff[x]:a.kidsOff[x+1]] }

// bfs extends a.order from position h with the descendants of the nodes in
// it. A child whose parent link was cut is not its old parent's child.
func (a *assembler) bfs(h int) {
	for ; h < len(a.order); h++ {
		x := a.order[h]
		d := a.nodes[x].depth + 1
		for _, k := range a.children(x) {
			if a.nodes[k].parent == x && a.nodes[k].depth < 0 {
				a.nodes[k].depth = d
				a.order = append(a.order, k)
			}
		}
	}
}

// cutCycles finds the cycles among the spans bfs did not reach (in a graph
// where every node has at most one parent, only nodes on or below a cycle
// are unreachable from a root) and cuts each at its smallest span id.
func (a *assembler) cutCycles() {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]uint8, len(a.nodes))
	var path []int32
	for u := range a.nodes {
		if a.nodes[u].depth >= 0 || state[u] != unseen {
			continue
		}
		path = path[:0]
		x := int32(u)
		for x >= 0 && a.nodes[x].depth < 0 && state[x] == unseen {
			state[x] = onPath
			path = append(path, x)
			x = a.nodes[x].parent
		}
		if x >= 0 && state[x] == onPath {
			cyc := path[slices.Index(path, x):]
			cut := cyc[0]
			for _, c := range cyc {
				if a.nodes[c].id < a.nodes[cut].id {
					cut = c
				}
			}
			a.nodes[cut].parent = -1
			a.nodes[cut].depth = 0
			a.cycles = append(a.cycles, a.nodes[cut].id)
			h := len(a.order)
			a.order = append(a.order, cut)
			a.bfs(h)
		}
		for _, p := range path {
			state[p] = done
		}
	}
}

// earlier orders spans by start, then span id.
func (a *assembler) earlier(i, j int32) bool {
	x, y := &a.nodes[i], &a.nodes[j]
	if x.start != y.start {
		return x.start < y.start
	}
	return x.id < y.id
}

// higher orders spans by depth, then start, then span id.
func (a *assembler) higher(i, j int32) bool {
	if di, dj := a.nodes[i].depth, a.nodes[j].depth; di != dj {
		return di < dj
	}
	return a.earlier(i, j)
}
