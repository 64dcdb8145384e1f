package evals

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"
)

// gonum returns g as a gonum graph, self-loops left out (simple graphs have
// none, and no component depends on them).
func (g *digraph) gonum() *simple.WeightedDirectedGraph {
	dg := simple.NewWeightedDirectedGraph(0, math.Inf(1))
	for i := range g.names {
		dg.AddNode(simple.Node(int64(i)))
	}
	for u := range g.names {
		for k := g.outStart[u]; k < g.outStart[u+1]; k++ {
			if v := g.out[k]; int(v) != u {
				dg.SetWeightedEdge(dg.NewWeightedEdge(simple.Node(int64(u)), simple.Node(int64(v)), float64(g.outCount[k])))
			}
		}
	}
	return dg
}

// componentIndices turns gonum's components into sorted index lists,
// sorted by their first index.
func componentIndices(comps [][]graph.Node) [][]int32 {
	out := make([][]int32, len(comps))
	for i, c := range comps {
		idx := make([]int32, len(c))
		for j, v := range c {
			idx[j] = int32(v.ID())
		}
		slices.Sort(idx)
		out[i] = idx
	}
	slices.SortFunc(out, func(a, b []int32) int { return int(a[0] - b[0]) })
	return out
}

// randomDigraph has n nodes and about n·degree edges, self-loops and
// parallel pairs among them, built as newDigraph wants its edges.
func randomDigraph(rng *rand.Rand, n int, degree float64) *digraph {
	names := make([]string, n)
	for i := range names {
		names[i] = string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	slices.Sort(names)
	seen := map[[2]int32]bool{}
	var edges []wedge
	for range int(float64(n) * degree) {
		e := [2]int32{int32(rng.IntN(n)), int32(rng.IntN(n))}
		if !seen[e] {
			seen[e] = true
			edges = append(edges, wedge{from: e[0], to: e[1], w: 1 + rng.IntN(3)})
		}
	}
	slices.SortFunc(edges, func(a, b wedge) int {
		if a.from != b.from {
			return int(a.from - b.from)
		}
		return int(a.to - b.to)
	})
	return newDigraph(names, edges)
}

// TestComponentsAgreeWithGonum: the weakly and strongly connected
// components found over the compact adjacency are gonum's (topo's
// ConnectedComponents and TarjanSCC, the algorithms they replace), on
// graphs from empty to 2,000 nodes, sparse to dense, with self-loops,
// isolated nodes and long cycles; and the largest strongly connected
// component chosen from them is the same.
func TestComponentsAgreeWithGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 4))
	var graphs []*digraph
	for _, n := range []int{0, 1, 2, 3, 5, 8, 13, 40, 200, 2000} {
		for _, degree := range []float64{0, 0.5, 1, 1.5, 3, 10} {
			graphs = append(graphs, randomDigraph(rng, n, degree))
		}
	}
	// A cycle through every node and a chain: one component each way.
	for _, n := range []int{7, 3000} {
		var cycle, chain []wedge
		for i := range int32(n) {
			cycle = append(cycle, wedge{from: i, to: (i + 1) % int32(n), w: 1})
			if i+1 < int32(n) {
				chain = append(chain, wedge{from: i, to: i + 1, w: 1})
			}
		}
		slices.SortFunc(cycle, func(a, b wedge) int { return int(a.from - b.from) })
		names := randomDigraph(rng, n, 0).names
		graphs = append(graphs, newDigraph(names, cycle), newDigraph(names, chain))
	}
	for k, g := range graphs {
		dg := g.gonum()
		if got, want := g.weakComponents(), len(topo.ConnectedComponents(graph.Undirect{G: dg})); got != want {
			t.Errorf("graph %d (%d nodes, %d edges): %d weak components, gonum %d", k, len(g.names), g.m, got, want)
		}
		got := g.strongComponents()
		want := componentIndices(topo.TarjanSCC(dg))
		slices.SortFunc(got, func(a, b []int32) int { return int(a[0] - b[0]) })
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("graph %d (%d nodes, %d edges): strong components differ from gonum's:\n%v\n%v", k, len(g.names), g.m, got, want)
		}
		if a, b := largestComponent(g.strongComponents()), largestComponent(want); !slices.Equal(a, b) {
			t.Errorf("graph %d: largest strong component %v, from gonum's %v", k, a, b)
		}
	}
}
