package evals

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
)

// The path-based metrics (all-pairs BFS: path lengths, betweenness,
// closeness) and the spectral ones (eigenvector centrality, PageRank) and
// clustering, each equal to networkx's (see graph_metrics.go).

// pathStats is what one breadth-first search from every node yields.
type pathStats struct {
	bc      []float64 // raw betweenness: Brandes' dependency sums
	reach   []int64   // reach[v]: nodes other than v with a path to v
	distSum []int64   // distSum[v]: sum of their distances to v
	lsccSum int64     // sum of distances between nodes of the largest SCC
	lsccMax int32     // largest such distance
}

// bfsNode is one node's state in a worker's searches, kept small and
// together so a visit touches one cache line.
type bfsNode struct {
	// val is sigma, the number of shortest paths from the source, during
	// the BFS; once the walk back has passed the node it is
	// (1 + delta)/sigma, all its predecessors need of it.
	val   float64
	dist  int32 // -1: not reached
	reach int32 // sources that reach this node, over the worker's searches
}

// bfsWorker holds one goroutine's scratch space for the searches.
type bfsWorker struct {
	nodes   []bfsNode
	distSum []int64 // per node: sum of distances from the sources reaching it
	// order is the BFS order; one slot more than the nodes, which the
	// search writes to whether or not a node is new (see search).
	order []int32
	// dag lists, for order[i], its successors one step further from the
	// source (the shortest-path DAG's out-edges), ending at dagEnd[i]; one
	// slot more than the edges, as order.
	dag     []int32
	dagEnd  []int32
	lsccSum int64
	lsccMax int32
}

func newBFSWorker(g *digraph) *bfsWorker {
	n := len(g.names)
	w := &bfsWorker{
		nodes:   make([]bfsNode, n),
		distSum: make([]int64, n),
		order:   make([]int32, n+1),
		dag:     make([]int32, len(g.out)+1),
		dagEnd:  make([]int32, n),
	}
	for i := range w.nodes {
		w.nodes[i].dist = -1
	}
	return w
}

// allPairs runs one BFS per source (Brandes' algorithm when wantBC), from
// which betweenness, closeness (distances into each node, summed over
// sources), and the path metrics on the largest SCC all follow. A shortest
// path between two nodes of one SCC stays inside it, so distances within
// the component are read off the whole graph's searches.
//
// The sources are split into chunks fixed by n alone; chunks run in
// parallel, each summing betweenness into its own array, and the arrays are
// added in chunk order. Integer sums commute. So the result does not depend
// on GOMAXPROCS or scheduling: the same graph gives the same bits.
func (g *digraph) allPairs(ctx context.Context, inLSCC []bool, wantBC bool) (pathStats, error) {
	n := len(g.names)
	chunks := 1
	if n >= 256 {
		chunks = min(64, n/128)
	}
	workers := min(runtime.GOMAXPROCS(0), chunks)
	chunkBC := make([][]float64, chunks)
	ws := make([]*bfsWorker, workers)
	errs := make([]error, workers)
	next := make(chan int, chunks)
	for c := range chunks {
		next <- c
	}
	close(next)
	var wg sync.WaitGroup
	for wi := range workers {
		w := newBFSWorker(g)
		ws[wi] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				if err := ctx.Err(); err != nil {
					errs[wi] = err
					return
				}
				var bc []float64
				if wantBC {
					bc = make([]float64, n)
				}
				lo, hi := c*n/chunks, (c+1)*n/chunks
				for s := lo; s < hi; s++ {
					w.search(g, int32(s), bc, inLSCC)
					if s%64 == 63 && ctx.Err() != nil {
						errs[wi] = ctx.Err()
						return
					}
				}
				chunkBC[c] = bc
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return pathStats{}, fmt.Errorf("all-pairs shortest paths: %w", err)
		}
	}
	ps := pathStats{reach: make([]int64, n), distSum: make([]int64, n)}
	if wantBC {
		ps.bc = chunkBC[0]
		for _, bc := range chunkBC[1:] {
			for i, v := range bc {
				ps.bc[i] += v
			}
		}
	}
	for _, w := range ws {
		for i, nd := range w.nodes {
			ps.reach[i] += int64(nd.reach)
			ps.distSum[i] += w.distSum[i]
		}
		ps.lsccSum += w.lsccSum
		ps.lsccMax = max(ps.lsccMax, w.lsccMax)
	}
	return ps, nil
}

// search is one BFS from s, networkx's _single_source_shortest_path_basic,
// followed (when bc is not nil) by Brandes' dependency accumulation. networkx
// pushes each node's dependency onto its predecessors; this pulls it from the
// successors one step further, delta(v) = sigma(v) × Σ (1+delta(t))/sigma(t),
// reading them from the list of shortest-path edges the BFS recorded, so the
// walk back neither rescans out-lists nor writes to other nodes. The sum is
// the same; its rounding differs from networkx's by an ulp or so (the oracle
// test sees 1e-17).
//
// The loop over edges has no branch that depends on the graph: whether a
// successor is new, and whether it is one step further, are as good as
// random in a BFS, and mispredicting them was most of the search's time.
// Each edge writes its successor into the next slot of order and of the
// DAG and moves each end on only if it belongs there; it adds sigma(v), or
// +0 (which leaves a sum of non-negative numbers as it was), to the
// successor's sigma. The sums are taken in networkx's order, as before.
func (w *bfsWorker) search(g *digraph, s int32, bc []float64, inLSCC []bool) {
	nodes, distSum, dagEnd := w.nodes, w.distSum, w.dagEnd
	order, dag := w.order, w.dag
	order[0] = s
	queued, dagged := 1, 0
	nodes[s].dist = 0
	nodes[s].val = 1
	for head := 0; head < queued; head++ {
		v := order[head]
		dv := nodes[v].dist + 1
		sv := math.Float64bits(nodes[v].val)
		for _, t := range g.succ(v) {
			nt := &nodes[t]
			d := nt.dist
			isNew := d < 0
			if isNew {
				d = dv
			}
			nt.dist = d
			order[queued] = t
			queued += b2i(isNew)
			onDAG := d == dv
			nt.val += math.Float64frombits(sv & -uint64(b2i(onDAG)))
			dag[dagged] = t
			dagged += b2i(onDAG)
		}
		dagEnd[head] = int32(dagged)
	}
	if bc != nil {
		for i := queued - 1; i > 0; i-- {
			var acc float64
			for _, t := range dag[dagEnd[i-1]:dagEnd[i]] {
				acc += nodes[t].val
			}
			nv := &nodes[order[i]]
			delta := nv.val * acc
			bc[order[i]] += delta
			nv.val = (1 + delta) / nv.val
		}
	}
	// The distances into each node, for closeness and the path metrics,
	// then a clean slate for the next source.
	lsccSum, lsccMax := w.lsccSum, w.lsccMax
	lscc := inLSCC != nil && inLSCC[s]
	for _, t := range order[1:queued] {
		nt := &nodes[t]
		d := nt.dist
		nt.reach++
		distSum[t] += int64(d)
		if lscc {
			in := inLSCC[t]
			lsccSum += int64(d) & -int64(b2i(in))
			if in && d > lsccMax {
				lsccMax = d
			}
		}
		nt.dist = -1
		nt.val = 0
	}
	nodes[s].dist = -1
	nodes[s].val = 0
	w.lsccSum, w.lsccMax = lsccSum, lsccMax
}

// b2i is 1 for true, 0 for false, without a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

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
