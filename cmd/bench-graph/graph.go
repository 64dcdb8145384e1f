package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/coordbench/coordbench/tracedata"
)

// graphIn is a graph as the Python side reads it.
type graphIn struct {
	ID    string   `json:"id"`
	Nodes []string `json:"nodes"`
	Edges [][3]any `json:"edges"`
}

// newGraph is the graph of n nodes of a run: one random stream per size,
// so a graph does not depend on which other sizes were asked for, and the
// Go worker, which draws it again, gets the same one.
func newGraph(o options, n int) graphIn {
	_, g := randomGraph(rand.New(rand.NewPCG(o.seed, uint64(n))), n, o.degree)
	return g
}

// newTrace is newGraph's graph as the Go evaluator reads it.
func newTrace(o options, n int) *tracedata.TraceData {
	tr, _ := randomGraph(rand.New(rand.NewPCG(o.seed, uint64(n))), n, o.degree)
	return tr
}

// randomGraph draws degree×n distinct directed edges without self-loops
// (capped at n(n-1)), weights 1..5.
func randomGraph(r *rand.Rand, n, degree int) (*tracedata.TraceData, graphIn) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%05d", i)
	}
	m := min(degree*n, n*(n-1))
	type pair struct{ u, v int }
	seen := make(map[pair]bool, m)
	var pairs []pair
	for len(pairs) < m {
		p := pair{r.IntN(n), r.IntN(n)}
		if p.u == p.v || seen[p] {
			continue
		}
		seen[p] = true
		pairs = append(pairs, p)
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if a.u != b.u {
			return a.u - b.u
		}
		return a.v - b.v
	})
	tr := &tracedata.TraceData{TraceID: fmt.Sprintf("bench-%d", n)}
	for _, name := range names {
		tr.Agents = append(tr.Agents, tracedata.Agent{Name: name, IdentifiedBy: tracedata.IdentityAgentName})
	}
	g := graphIn{ID: strconv.Itoa(n), Nodes: names}
	for _, p := range pairs {
		w := 1 + r.IntN(5)
		tr.Interactions = append(tr.Interactions, tracedata.Interaction{From: names[p.u], To: names[p.v], Count: w})
		g.Edges = append(g.Edges, [3]any{names[p.u], names[p.v], w})
	}
	return tr, g
}
