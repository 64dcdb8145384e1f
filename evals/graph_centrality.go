package evals

import (
	"math"
	"slices"
)

// The path-based metrics' normalisation (the searches are in
// graph_paths.go), the spectral ones (eigenvector centrality, PageRank)
// and clustering, each equal to networkx's (see graph_metrics.go).

// betweenness applies nx.betweenness_centrality's normalisation for
// digraphs: × 1/((n-1)(n-2)), none for n <= 2 (where every value is 0).
func (g *digraph) betweenness(raw []float64) []float64 {
	n := len(g.names)
	out := slices.Clone(raw)
	if n <= 2 {
		return out
	}
	scale := 1 / float64((n-1)*(n-2))
	for i := range out {
		out[i] *= scale
	}
	return out
}

// closeness is nx.closeness_centrality for a digraph: it searches the
// reversed graph, so a node's closeness rests on the distances from the
// nodes that reach it; (r/total) × (r/(n-1)) with r such nodes (the
// Wasserman–Faust improvement, networkx's default), 0 when none reaches it.
func (g *digraph) closeness(ps pathStats) []float64 {
	n := len(g.names)
	out := make([]float64, n)
	for v := range n {
		if ps.distSum[v] > 0 && n > 1 {
			r := float64(ps.reach[v])
			c := r / float64(ps.distSum[v])
			c *= r / float64(n-1)
			out[v] = c
		}
	}
	return out
}

// eigenvectorCentrality is nx.eigenvector_centrality with its defaults:
// unweighted, start vector all ones (normalised to sum 1), iterating with
// A+I on in-edges, normalising by the Euclidean norm, stopping when the L1
// change is below n × 1e-6, and failing (ok false) after 100 iterations or
// on the null graph. A+I makes the iteration converge on graphs whose
// adjacency matrix is periodic, but on a DAG A is nilpotent, every
// eigenvalue of A+I is 1, and the vector creeps towards the sinks too slowly
// to converge: networkx raises, and so does this.
func (g *digraph) eigenvectorCentrality() ([]float64, bool) {
	n := len(g.names)
	if n == 0 {
		return nil, false
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = 1 / float64(n)
	}
	xlast := make([]float64, n)
	tol := float64(n) * eigenTol
	for range eigenMaxIter {
		x, xlast = xlast, x
		for v := range n {
			// x[v] = xlast[v] + Σ xlast[u] over in-edges u→v, added in
			// the order networkx visits u.
			s := xlast[v]
			for _, u := range g.pred(int32(v)) {
				s += xlast[u]
			}
			x[v] = s
		}
		norm := hypot(x)
		if norm == 0 {
			norm = 1
		}
		var diff float64
		for i := range x {
			x[i] /= norm
			diff += math.Abs(x[i] - xlast[i])
		}
		if diff < tol {
			return x, true
		}
	}
	return nil, false
}

// hypot is the Euclidean norm of x, scaled so no square overflows, standing
// in for Python's math.hypot(*x).
func hypot(x []float64) float64 {
	var mx float64
	for _, v := range x {
		mx = max(mx, math.Abs(v))
	}
	if mx == 0 || math.IsInf(mx, 0) || math.IsNaN(mx) {
		return mx
	}
	var s float64
	for _, v := range x {
		r := v / mx
		s += r * r
	}
	return mx * math.Sqrt(s)
}

// pagerank is nx.pagerank (its scipy implementation) with its defaults:
// alpha 0.85, weight = the edge's call count, uniform start and
// teleportation vectors, the rank of dangling nodes (no out-edges) spread
// uniformly, stopping when the L1 change is below n × 1e-6, failing after
// 100 iterations. networkx returns {} for the null graph.
func (g *digraph) pagerank() ([]float64, bool) {
	n := len(g.names)
	if n == 0 {
		return nil, true
	}
	// Row-normalise: A[u][v] = (1/outweight(u)) × w(u,v), as networkx's
	// Q @ A with Q = diag(1/S).
	inv := make([]float64, n)
	var dangling []int32
	for u := range n {
		var s float64
		for k := g.outStart[u]; k < g.outStart[u+1]; k++ {
			s += float64(g.outCount[k])
		}
		if s != 0 {
			inv[u] = 1.0 / s
		} else {
			dangling = append(dangling, int32(u))
		}
	}
	// inA[k] is A[u][v] for the k-th in-edge u→v.
	inA := make([]float64, len(g.in))
	for u := range n {
		for k := g.outStart[u]; k < g.outStart[u+1]; k++ {
			v := g.out[k]
			// Find the slot of u in v's in-list (sorted), once per edge.
			lo, hi := int(g.inStart[v]), int(g.inStart[v+1])
			j, _ := slices.BinarySearch(g.in[lo:hi], int32(u))
			inA[lo+j] = inv[u] * float64(g.outCount[k])
		}
	}
	// Runtime values, not constants: Go folds constant expressions exactly,
	// and 1-0.85 must round as Python computes it.
	alpha := pagerankAlpha
	oneMinusAlpha := 1 - alpha
	p := 1.0 / float64(n)
	x := make([]float64, n)
	for i := range x {
		x[i] = p
	}
	xlast := make([]float64, n)
	tol := float64(n) * pagerankTol
	for range pagerankMaxIter {
		x, xlast = xlast, x
		var dsum float64
		for _, d := range dangling {
			dsum += xlast[d]
		}
		var diff float64
		for v := range n {
			var y float64
			lo := g.inStart[v]
			for k, u := range g.pred(int32(v)) {
				y += xlast[u] * inA[int(lo)+k]
			}
			x[v] = alpha*(y+dsum*p) + oneMinusAlpha*p
			diff += math.Abs(x[v] - xlast[v])
		}
		if diff < tol {
			return x, true
		}
	}
	return nil, false
}

// clustering is nx.clustering for an unweighted digraph (Fagiolo 2007):
// T / (2 (d_tot(d_tot-1) - 2 d_bi)), where T counts directed triangles
// through the node, d_tot = in + out degree and d_bi the reciprocated
// neighbours, self-loops ignored; 0 when T is 0.
func (g *digraph) clustering() []float64 {
	n := len(g.names)
	out := make([]float64, n)
	// inP[k] == i+1 marks k as a predecessor of i, inS[k] == i+1 as a
	// successor: the sets ipreds and isuccs of networkx's code, without
	// clearing between nodes.
	inP := make([]int32, n)
	inS := make([]int32, n)
	for i := range n {
		mark := int32(i + 1)
		np, ns, nb := 0, 0, 0
		for _, k := range g.pred(int32(i)) {
			if int(k) != i {
				inP[k] = mark
				np++
			}
		}
		for _, k := range g.succ(int32(i)) {
			if int(k) != i {
				inS[k] = mark
				ns++
				if inP[k] == mark {
					nb++
				}
			}
		}
		count := func(k int32) int {
			c := 0
			if inP[k] == mark {
				c++
			}
			if inS[k] == mark {
				c++
			}
			return c
		}
		t := 0
		visit := func(j int32) {
			for _, k := range g.pred(j) {
				if k != j {
					t += count(k)
				}
			}
			for _, k := range g.succ(j) {
				if k != j {
					t += count(k)
				}
			}
		}
		// chain(ipreds, isuccs): a reciprocated neighbour is visited twice.
		for _, j := range g.pred(int32(i)) {
			if int(j) != i {
				visit(j)
			}
		}
		for _, j := range g.succ(int32(i)) {
			if int(j) != i {
				visit(j)
			}
		}
		dt := np + ns
		den := (dt*(dt-1) - 2*nb) * 2
		if t != 0 && den != 0 {
			out[i] = float64(t) / float64(den)
		}
	}
	return out
}
