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
		if got, best := largestComponent(comp, count), largestOf(want); !slices.Equal(got, best) {
			t.Fatalf("graph %d: largest strongly connected component %v, from gonum's %v", i, got, best)
		}
	}
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

// componentLists turns a labelling (strongComponents') into index lists
// as componentIndices gives gonum's: each sorted, sorted by first index.
func componentLists(comp []int32, count int) [][]int32 {
	out := make([][]int32, count)
	for v, c := range comp {
		out[c] = append(out[c], int32(v))
	}
	slices.SortFunc(out, func(a, b []int32) int { return int(a[0] - b[0]) })
	return out
}

// largestOf is the largest of sorted index lists, ties to the one with the
// smallest node: the rule largestComponent follows, applied to gonum's.
func largestOf(comps [][]int32) []int32 {
	var best []int32
	for _, c := range comps {
		if best == nil || len(c) > len(best) || (len(c) == len(best) && c[0] < best[0]) {
			best = c
		}
	}
	return best
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
		comp, count := g.strongComponents()
		got := componentLists(comp, count)
		want := componentIndices(topo.TarjanSCC(dg))
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("graph %d (%d nodes, %d edges): strong components differ from gonum's:\n%v\n%v", k, len(g.names), g.m, got, want)
		}
		if a, b := largestComponent(comp, count), largestOf(want); !slices.Equal(a, b) {
			t.Errorf("graph %d: largest strong component %v, from gonum's %v", k, a, b)
		}
	}
}
