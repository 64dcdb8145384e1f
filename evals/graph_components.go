package evals

import "slices"

// The connected components, over the compact adjacency rather than a
// gonum graph: a trace's graph has a handful of agents, and building
// gonum's map-based graph for them was most of the metrics' time
// (BenchmarkConnector in the Collector connector: gonum's graph and
// ConnectedComponents were 0.09 s of computeGraphMetrics' 0.14 s). The
// components are sets, so these give what gonum's topo.ConnectedComponents
// and topo.TarjanSCC give, whatever order they are found in
// (graph_components_test.go holds them to gonum's).

// weakComponents is nx.number_weakly_connected_components: union-find
// over the edges, directions ignored.
func (g *digraph) weakComponents() int {
	n := len(g.names)
	parent := make([]int32, n)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(v int32) int32 {
		for parent[v] != v {
			parent[v] = parent[parent[v]]
			v = parent[v]
		}
		return v
	}
	comps := n
	for u := range n {
		for _, v := range g.succ(int32(u)) {
			if a, b := find(int32(u)), find(v); a != b {
				parent[max(a, b)] = min(a, b)
				comps--
			}
		}
	}
	return comps
}

// strongComponents returns the strongly connected components
// (nx.strongly_connected_components), each sorted by node index, by
// Tarjan's algorithm without recursion.
func (g *digraph) strongComponents() [][]int32 {
	n := len(g.names)
	const unseen = -1
	index := make([]int32, n)
	low := make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = unseen
	}
	type frame struct{ v, next int32 }
	var frames []frame
	var stack []int32
	var comps [][]int32
	next := int32(0)
	visit := func(v int32) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		frames = append(frames, frame{v, g.outStart[v]})
	}
	for s := range int32(n) {
		if index[s] != unseen {
			continue
		}
		visit(s)
		for len(frames) > 0 {
			f := &frames[len(frames)-1]
			v := f.v
			if f.next < g.outStart[v+1] {
				w := g.out[f.next]
				f.next++
				switch {
				case index[w] == unseen:
					visit(w)
				case onStack[w]:
					low[v] = min(low[v], index[w])
				}
				continue
			}
			frames = frames[:len(frames)-1]
			if len(frames) > 0 {
				u := frames[len(frames)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			k := len(stack) - 1
			for stack[k] != v {
				k--
			}
			comp := slices.Clone(stack[k:])
			for _, w := range comp {
				onStack[w] = false
			}
			stack = stack[:k]
			slices.Sort(comp)
			comps = append(comps, comp)
		}
	}
	return comps
}
