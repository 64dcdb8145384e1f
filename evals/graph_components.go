package evals

// The component metrics (nx.number_weakly_connected_components,
// nx.number_strongly_connected_components, and the largest strongly
// connected component the path metrics fall back to), over the digraph's
// own adjacency. gonum's topo package computes the same components
// (TestGraphComponentsMatchGonum holds these to it), but over its
// map-based graph, which had to be built for it: at 3,000 nodes and 30,000
// edges building it and walking it took a fifth of the evaluator's CPU once
// the searches were fast (docs/performance.md).

// weakComponents is the number of weakly connected components, by
// union-find over the edges.
func (g *digraph) weakComponents() int {
	n := len(g.names)
	parent := make([]int32, n)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(v int32) int32 {
		for parent[v] != v {
			parent[v] = parent[parent[v]] // path halving
			v = parent[v]
		}
		return v
	}
	count := n
	for u := range n {
		for _, v := range g.succ(int32(u)) {
			if a, b := find(int32(u)), find(v); a != b {
				parent[max(a, b)] = min(a, b)
				count--
			}
		}
	}
	return count
}

// strongComponents labels each node with its strongly connected
// component (Tarjan's algorithm, without recursion) and returns the labels
// and the number of components.
func (g *digraph) strongComponents() (comp []int32, count int) {
	n := len(g.names)
	index := make([]int32, n) // order of discovery, from 1; 0: not yet
	low := make([]int32, n)
	comp = make([]int32, n)
	onStack := make([]bool, n)
	var stack []int32
	type frame struct{ v, next int32 } // next: the out-edge to follow next
	var frames []frame
	seen := int32(0)
	visit := func(v int32) {
		seen++
		index[v], low[v] = seen, seen
		stack = append(stack, v)
		onStack[v] = true
		frames = append(frames, frame{v, g.outStart[v]})
	}
	for root := range int32(n) {
		if index[root] != 0 {
			continue
		}
		visit(root)
		for len(frames) > 0 {
			f := &frames[len(frames)-1]
			v := f.v
			if f.next < g.outStart[v+1] {
				w := g.out[f.next]
				f.next++
				if index[w] == 0 {
					visit(w)
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			frames = frames[:len(frames)-1]
			if len(frames) > 0 {
				p := frames[len(frames)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = int32(count)
					if w == v {
						break
					}
				}
				count++
			}
		}
	}
	return comp, count
}

// largestComponent returns the nodes of the largest component of the
// labelling comp (count components), in index order; among equally large
// ones the one whose smallest node index (so smallest name) is least, so
// the choice does not depend on the order the components were found in.
func largestComponent(comp []int32, count int) []int32 {
	if len(comp) == 0 {
		return nil
	}
	size := make([]int32, count)
	first := make([]int32, count) // smallest node + 1; 0: none seen yet
	for v, c := range comp {
		size[c]++
		if first[c] == 0 {
			first[c] = int32(v) + 1
		}
	}
	best := int32(0)
	for c := range int32(count) {
		if size[c] > size[best] || (size[c] == size[best] && first[c] < first[best]) {
			best = c
		}
	}
	out := make([]int32, 0, size[best])
	for v, c := range comp {
		if c == best {
			out = append(out, int32(v))
		}
	}
	return out
}
