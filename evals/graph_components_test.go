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

// TestGraphComponentsMatchGonum holds the component metrics to gonum's
// topo package on random digraphs of every density, with self-loops and
// isolated nodes: the number of weakly and of strongly connected
// components, the strongly connected components themselves, and the
// largest one chosen (the path metrics' scope).
func TestGraphComponentsMatchGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for i := range 300 {
		n := r.IntN(200)
		p := []float64{0, 0.5, 1, 2, 5}[i%5] / float64(max(n, 1))
		var edges []wedge
		for u := range n {
			for v := range n {
				if (u != v || r.IntN(10) == 0) && r.Float64() < p {
					edges = append(edges, wedge{from: int32(u), to: int32(v), w: 1})
				}
			}
		}
		g := newDigraph(make([]string, n), edges)
		dg := g.gonum()
		if got, want := g.weakComponents(), len(topo.ConnectedComponents(graph.Undirect{G: dg})); got != want {
			t.Fatalf("graph %d (%d nodes, %d edges): %d weakly connected components, gonum %d", i, n, len(edges), got, want)
		}
		comp, count := g.strongComponents()
		var want [][]int32
		for _, c := range topo.TarjanSCC(dg) {
			ids := make([]int32, len(c))
			for j, v := range c {
				ids[j] = int32(v.ID())
			}
			slices.Sort(ids)
			want = append(want, ids)
		}
		if count != len(want) {
			t.Fatalf("graph %d: %d strongly connected components, gonum %d", i, count, len(want))
		}
		for _, c := range want {
			for _, v := range c {
				if comp[v] != comp[c[0]] {
					t.Fatalf("graph %d: nodes %d and %d of one gonum component in components %d and %d", i, c[0], v, comp[c[0]], comp[v])
				}
			}
		}
		// The largest, ties to the smallest node, from gonum's.
		var best []int32
		for _, c := range want {
			if best == nil || len(c) > len(best) || (len(c) == len(best) && c[0] < best[0]) {
				best = c
			}
		}
		if got := largestComponent(comp, count); !slices.Equal(got, best) {
			t.Fatalf("graph %d: largest strongly connected component %v, from gonum's %v", i, got, best)
		}
	}
}
