package evals

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
)

// The all-pairs searches the path-based metrics rest on (betweenness,
// closeness, the average shortest path length and the diameter): one
// breadth-first search per source, direction-optimizing, with Brandes'
// dependency accumulation.

// pathStats is what one breadth-first search from every node yields.
type pathStats struct {
	bc      []float64 // raw betweenness: Brandes' dependency sums
	reach   []int64   // reach[v]: nodes other than v with a path to v
	distSum []int64   // distSum[v]: sum of their distances to v
	lsccSum int64     // sum of distances between nodes of the largest SCC
	lsccMax int32     // largest such distance
	// searchesBottomUp counts the searches that found a level bottom up,
	// searchesRedone those done again top down (see search); for the
	// tests.
	searchesBottomUp, searchesRedone int
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
	// order is the BFS order, level after level; levels[l] is where level
	// l starts in it. It has one slot more than the nodes, which the
	// search writes to whether or not a node is new (see search).
	order  []int32
	levels []int32
	// dag holds one list of nodes per order[i], ending at dagEnd[i]: for
	// a node of a level searched from (top down), its successors one step
	// further from the source, the shortest-path DAG's out-edges; for a
	// node of a level found bottom up, its predecessors one step nearer.
	// One slot more than the edges, as order.
	dag    []int32
	dagEnd []int32
	// unvisited are the nodes not reached yet, in index order, once the
	// search goes bottom up; acc is the walk back's sum for the nodes of
	// the level before a level found bottom up.
	unvisited []int32
	acc       []float64
	lsccSum   int64
	lsccMax   int32
	// noBottomUp searches top down all the way (for the tests); the
	// counters are pathStats'.
	noBottomUp                       bool
	searchesBottomUp, searchesRedone int
}

func newBFSWorker(g *digraph) *bfsWorker {
	n := len(g.names)
	w := &bfsWorker{
		nodes:     make([]bfsNode, n),
		distSum:   make([]int64, n),
		order:     make([]int32, n+1),
		dag:       make([]int32, len(g.out)+1),
		dagEnd:    make([]int32, n),
		unvisited: make([]int32, 0, n),
		acc:       make([]float64, n),
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
	return g.allPairsWith(ctx, inLSCC, wantBC, true)
}

// allPairsWith is allPairs, with bottomUp false searching top down only.
func (g *digraph) allPairsWith(ctx context.Context, inLSCC []bool, wantBC, bottomUp bool) (pathStats, error) {
	n := len(g.names)
	chunks := 1
	if n >= 256 {
		chunks = min(64, n/128)
	}
	workers := 1 // runtime.GOMAXPROCS takes the scheduler's lock: asked only when there is a choice
	if chunks > 1 {
		workers = min(runtime.GOMAXPROCS(0), chunks)
	}
	chunkBC := make([][]float64, chunks)
	ws := make([]*bfsWorker, workers)
	errs := make([]error, workers)
	next := make(chan int, chunks)
	for c := range chunks {
		next <- c
	}
	close(next)
	run := func(wi int) {
		w := ws[wi]
		// The graph is the participants' doing: a panic here is this
		// evaluation's error (Registry.evaluate logs it), not the
		// process's end.
		defer func() {
			if r := recover(); r != nil {
				errs[wi] = fmt.Errorf("centrality worker failed unexpectedly: %v\n%s", r, debug.Stack())
			}
		}()
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
	}
	for wi := range workers {
		ws[wi] = newBFSWorker(g)
		ws[wi].noBottomUp = !bottomUp
	}
	if workers == 1 {
		// One chunk (every graph under 256 nodes, every trace's but the
		// largest): a goroutine would cost more than the searches, and
		// waking a second core to run it more still.
		run(0)
	} else {
		var wg sync.WaitGroup
		for wi := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run(wi)
			}()
		}
		wg.Wait()
	}
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
		ps.searchesBottomUp += w.searchesBottomUp
		ps.searchesRedone += w.searchesRedone
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
// A level is found top down (from the out-edges of the level before) or,
// once that would read more edges than the in-edges of the nodes not yet
// reached, bottom up (from those in-edges; Beamer et al., "Direction-
// optimizing breadth-first search", 2012): in a small-world graph most of
// a search's edges lead from its widest level to nodes already reached,
// and bottom up reads none of them. Either way the sums are taken in the
// order they always were: a node's sigma is a sum of whole numbers, exact
// in any order below 2^53 (a search that finds a larger one bottom up is
// done again top down), and a node's dependency still sums its successors
// in out-list order (pushed from the level after it in index order, which
// is the out-lists' order). So the result is bit for bit that of a search
// top down all the way.
func (w *bfsWorker) search(g *digraph, s int32, bc []float64, inLSCC []bool) {
	queued, firstBottomUp, exact := w.forward(g, s, !w.noBottomUp)
	if !exact {
		w.searchesRedone++
		w.clear(queued)
		queued, firstBottomUp, _ = w.forward(g, s, false)
	}
	if firstBottomUp >= 0 {
		w.searchesBottomUp++
	}
	if bc != nil {
		w.walkBack(bc, firstBottomUp)
	}
	// The distances into each node, for closeness and the path metrics,
	// then a clean slate for the next source.
	nodes, distSum := w.nodes, w.distSum
	lsccSum, lsccMax := w.lsccSum, w.lsccMax
	lscc := inLSCC != nil && inLSCC[s]
	for _, t := range w.order[1:queued] {
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
	}
	w.lsccSum, w.lsccMax = lsccSum, lsccMax
	w.clear(queued)
}

// clear resets the nodes of order[:queued] for the next search.
func (w *bfsWorker) clear(queued int) {
	for _, t := range w.order[:queued] {
		w.nodes[t].dist = -1
		w.nodes[t].val = 0
	}
}

// forward is the BFS from s, level after level, bottom up once that is
// cheaper if bottomUp allows. It returns how many nodes it reached, the
// first level it found bottom up (-1 for none), and false if a sigma
// found bottom up reached 2^53, where its sum might round otherwise than
// top down (the search is then done again top down).
func (w *bfsWorker) forward(g *digraph, s int32, bottomUp bool) (queued int, firstBottomUp int32, exact bool) {
	nodes := w.nodes
	n := len(nodes)
	w.order[0] = s
	nodes[s].dist = 0
	nodes[s].val = 1
	levels := append(w.levels[:0], 0)
	queued, firstBottomUp, exact = 1, -1, true
	dagged := 0
	// The cost of the next level each way: the out-edges of the level
	// searched from, the in-edges of the nodes not reached yet (and a look
	// at every node, to list them, the first time).
	frontierOut := g.outDegree(s)
	unreachedIn := len(g.in) - g.inDegree(s)
	for level := int32(0); ; level++ {
		lo, hi := levels[level], int32(queued)
		if lo == hi {
			break
		}
		levels = append(levels, hi)
		if bottomUp && firstBottomUp < 0 && unreachedIn+n < frontierOut {
			firstBottomUp = level + 1
			w.unvisited = w.unvisited[:0]
			for v := range nodes {
				if nodes[v].dist < 0 {
					w.unvisited = append(w.unvisited, int32(v))
				}
			}
			// The level searched from keeps no successor lists.
			for i := lo; i < hi; i++ {
				w.dagEnd[i] = int32(dagged)
			}
		}
		if firstBottomUp >= 0 {
			queued, dagged = w.bottomUp(g, level, queued, dagged)
			for _, t := range w.order[hi:queued] {
				exact = exact && nodes[t].val < 1<<53
			}
			if !exact {
				w.levels = levels
				return queued, firstBottomUp, false
			}
		} else {
			queued, dagged = w.topDown(g, lo, hi, queued, dagged)
		}
		frontierOut = 0
		for _, t := range w.order[hi:queued] {
			frontierOut += g.outDegree(t)
			unreachedIn -= g.inDegree(t)
		}
	}
	w.levels = levels
	return queued, firstBottomUp, true
}

// topDown finds the level after order[lo:hi] from its out-edges. The loop
// over edges has no branch that depends on the graph: whether a successor
// is new, and whether it is one step further, are as good as random, and
// mispredicting them was most of the search's time. Each edge writes its
// successor into the next slot of order and of the DAG and moves each end
// on only if it belongs there; it adds sigma(v), or +0 (which leaves a sum
// of non-negative numbers as it was), to the successor's sigma, in the
// order networkx adds them.
func (w *bfsWorker) topDown(g *digraph, lo, hi int32, queued, dagged int) (int, int) {
	nodes, order, dag, dagEnd := w.nodes, w.order, w.dag, w.dagEnd
	for head := lo; head < hi; head++ {
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
	return queued, dagged
}

// bottomUp finds the level after level from the in-edges of the nodes not
// reached yet, in index order; each node found gets its predecessors on
// the level as its DAG list, and sigma their sum.
func (w *bfsWorker) bottomUp(g *digraph, level int32, queued, dagged int) (int, int) {
	nodes, order, dag, dagEnd := w.nodes, w.order, w.dag, w.dagEnd
	left := w.unvisited[:0]
	for _, t := range w.unvisited {
		var sigma float64
		start := dagged
		for _, v := range g.pred(t) {
			nv := &nodes[v]
			onDAG := nv.dist == level
			sigma += math.Float64frombits(math.Float64bits(nv.val) & -uint64(b2i(onDAG)))
			dag[dagged] = v
			dagged += b2i(onDAG)
		}
		if dagged == start {
			left = append(left, t)
			continue
		}
		nt := &nodes[t]
		nt.dist, nt.val = level+1, sigma
		order[queued] = t
		dagEnd[queued] = int32(dagged)
		queued++
	}
	w.unvisited = left
	return queued, dagged
}

// walkBack is Brandes' dependency accumulation over the levels the search
// found, deepest first, adding each node's dependency to bc. A level
// before one found bottom up has its sums pushed to it from that level's
// predecessor lists, in index order; any other level pulls them from its
// successor lists.
func (w *bfsWorker) walkBack(bc []float64, firstBottomUp int32) {
	nodes, order, dag, dagEnd, levels, acc := w.nodes, w.order, w.dag, w.dagEnd, w.levels, w.acc
	deepest := int32(len(levels) - 2) // levels ends with the end of the deepest level
	for level := deepest; level > 0; level-- {
		lo, hi := levels[level], levels[level+1]
		if firstBottomUp >= 0 && level+1 >= firstBottomUp && level < deepest {
			for _, v := range order[lo:hi] {
				acc[v] = 0
			}
			for i := hi; i < levels[level+2]; i++ {
				x := nodes[order[i]].val
				for _, v := range dag[dagEnd[i-1]:dagEnd[i]] {
					acc[v] += x
				}
			}
			for _, v := range order[lo:hi] {
				nv := &nodes[v]
				delta := nv.val * acc[v]
				bc[v] += delta
				nv.val = (1 + delta) / nv.val
			}
			continue
		}
		for i := lo; i < hi; i++ {
			var sum float64
			if firstBottomUp < 0 || level < firstBottomUp {
				for _, t := range dag[dagEnd[i-1]:dagEnd[i]] {
					sum += nodes[t].val
				}
			}
			nv := &nodes[order[i]]
			delta := nv.val * sum
			bc[order[i]] += delta
			nv.val = (1 + delta) / nv.val
		}
	}
}

// b2i is 1 for true, 0 for false, without a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
