package assemble

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Agents that share a trace are connected by it (docs/trace-assembly.md,
// "Agents that share a trace"). Spans end up in one trace because one
// started the others: a call, a handoff, a nesting, a message, or some
// span around them (a workflow, a manager, a runtime, the application's
// own span). When the rules read no edge into an agent, the graph does not
// say how control reached it, and a label drawn from it ("isolated",
// "single_agent") speaks of a team it did not see whole.
//
// The rule is on the graph, whatever the framework: an agent (a real one:
// not a virtual caller, the assessor or a tool server) that no call reaches
// is a top of the graph. One top is how a trace begins (the agent the
// application ran). An agent reached only from outside the team (the
// virtual user, an unknown caller, the assessor) is an entry. A top beside
// another top or an entry is unexplained: the trace joins them and no span
// says how. Each such trace counts its tops (Coverage.UnwiredAgents), and
// a warning names them with the span that holds them all, the connecting
// node the spans do show.

// unwiredAgents finds the tops of the graph that share the trace with
// another top or an entry and returns how many tops there are, with a
// warning naming them and the span around them.
func (a *assembler) unwiredAgents() (int, []string) {
	comp := a.teamComponents()
	reached := make([]bool, len(a.idents))  // by a call from a team agent outside its component
	external := make([]bool, len(a.idents)) // by a call from outside the team
	for k := range a.calls {
		c := &a.calls[k]
		if c.class == classDropped || c.caller == c.callee {
			continue
		}
		switch {
		case !a.teamAgent(c.caller):
			external[comp[c.callee]] = true
		case comp[c.caller] != comp[c.callee]:
			reached[comp[c.callee]] = true
		}
	}
	var tops []int32
	entries, groups := 0, 0 // components reached from outside the team only; components of tops
	counted := make([]bool, len(a.idents))
	for k := range a.idents {
		// Agents that call each other in a ring (a component) reach one
		// another, but not from outside the ring: a ring no call from
		// the rest of the team reaches is a top as one agent is.
		r := comp[k]
		if !a.teamAgent(int32(k)) || reached[r] {
			continue
		}
		if external[r] {
			if !counted[r] {
				entries++
				counted[r] = true
			}
			continue
		}
		tops = append(tops, int32(k))
		if !counted[r] {
			groups++
			counted[r] = true
		}
	}
	if len(tops) == 0 || groups+entries < 2 {
		return 0, nil
	}
	first := make([]int32, len(a.idents)) // each top's first span
	for k := range first {
		first[k] = -1
	}
	for i := range a.nodes {
		n := &a.nodes[i]
		if n.agent < 0 || int(n.agent) >= len(first) {
			continue
		}
		if f := first[n.agent]; f < 0 || a.earlier(int32(i), f) {
			first[n.agent] = int32(i)
		}
	}
	slices.SortFunc(tops, func(x, y int32) int { return cmp.Compare(a.idents[x].name, a.idents[y].name) })
	names := make([]string, len(tops))
	around := int32(-2) // not yet known; -1: no span holds them all
	for k, t := range tops {
		names[k] = a.idents[t].name
		if f := first[t]; f >= 0 {
			switch around {
			case -2:
				around = a.nodes[f].parent
			case -1:
			default:
				around = a.commonAncestor(around, f)
			}
		}
	}
	var w string
	list := strings.Join(names, ", ")
	switch {
	case around >= 0 && a.nodes[around].flags&fWorkflow != 0:
		w = fmt.Sprintf("%d agents (%s) ran under the orchestration span %016x %q and no span says who passed control to whom: the graph lacks those edges",
			len(tops), list, a.nodes[around].id, a.span(around).Name)
	case around >= 0:
		w = fmt.Sprintf("%d agents (%s) ran under the span %016x %q, which connects them, and no call, handoff, nesting or message says how control reached them: the graph lacks those edges",
			len(tops), list, a.nodes[around].id, a.span(around).Name)
	default:
		w = fmt.Sprintf("%d agents (%s) share the trace with no span above them in common, and no call, handoff, nesting or message says how control reached them: the graph lacks those edges",
			len(tops), list)
	}
	if entries > 0 {
		w += fmt.Sprintf(" (beside %d %s called from outside the team)", entries, pluralWord(entries, "agent", "agents"))
	}
	return len(tops), []string{w}
}

// teamComponents returns, for each identity, the strongly connected
// component of the team's calls it is in (named by one of its members):
// agents that reach each other by calls. An identity outside the team is a
// component of its own.
func (a *assembler) teamComponents() []int32 {
	n := len(a.idents)
	out := make([][]int32, n)
	for k := range a.calls {
		c := &a.calls[k]
		if c.class != classDropped && c.caller != c.callee && a.teamAgent(c.caller) && a.teamAgent(c.callee) {
			out[c.caller] = append(out[c.caller], c.callee)
		}
	}
	// Tarjan's algorithm, iterative: a trace may hold thousands of agents.
	state := make([]int32, 3*n)
	index, low, comp := state[:n], state[n:2*n], state[2*n:]
	for k := range index {
		index[k], comp[k] = -1, -1
	}
	onStack := make([]bool, n)
	var stack []int32
	type frame struct{ v, next int32 }
	var work []frame // one root's walk, reused by the next
	next := int32(0)
	for root := range n {
		if index[root] >= 0 {
			continue
		}
		work = append(work[:0], frame{v: int32(root)})
		index[root], low[root] = next, next
		next++
		stack = append(stack, int32(root))
		onStack[root] = true
		for len(work) > 0 {
			f := &work[len(work)-1]
			if int(f.next) < len(out[f.v]) {
				w := out[f.v][f.next]
				f.next++
				switch {
				case index[w] < 0:
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					work = append(work, frame{v: w})
				case onStack[w]:
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			work = work[:len(work)-1]
			if len(work) > 0 {
				u := work[len(work)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = v
					if w == v {
						break
					}
				}
			}
		}
	}
	return comp
}

// teamAgent reports whether identity k is an agent of the team the graph
// judges: one that did a step or took part in a call, not a virtual
// caller, the assessor or a tool server.
func (a *assembler) teamAgent(k int32) bool {
	x := &a.idents[k]
	return x.used && !(x.virtual && !x.real) && !x.assessor && !x.tool
}

// commonAncestor returns the deepest span that is x or an ancestor of x
// and an ancestor of y (or y), -1 if none.
func (a *assembler) commonAncestor(x, y int32) int32 {
	for x >= 0 && y >= 0 && x != y {
		if a.nodes[x].depth >= a.nodes[y].depth {
			x = a.nodes[x].parent
		} else {
			y = a.nodes[y].parent
		}
	}
	if x != y {
		return -1
	}
	return x
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
