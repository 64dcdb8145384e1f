package evals

// The graph metrics, each computed to equal what networkx (the oracle of
// graph_oracle_test.go) returns with default arguments on the same
// nx.DiGraph, over a compact adjacency (CSR). gonum has most of these
// algorithms, but its semantics differ from networkx's in several
// (normalisation, incoming-distance closeness, Fagiolo clustering, the A+I
// power iteration of eigenvector centrality, PageRank's dangling-node rule),
// and its map-based graph and Brandes are too slow for the benchmarks (the
// components: graph_components.go); the tests hold the computations here to
// networkx (graph_oracle_test.go) and, for betweenness and the components,
// to gonum. Each follows networkx's code step by step, down to the order
// floating-point sums are taken in where that is cheap, so results agree
// to a few ulps.

import (
	"context"
	"math"
	"slices"
)

// networkx's defaults for the iterative metrics.
const (
	eigenMaxIter    = 100
	eigenTol        = 1e-6
	pagerankAlpha   = 0.85
	pagerankMaxIter = 100
	pagerankTol     = 1e-6
)

// wedge is a weighted edge between node indices.
type wedge struct {
	from, to int32
	w        int
}

// digraph is the measured graph in compressed sparse row form, nodes
// indexed in name order. Out-lists and in-lists are sorted by node index,
// which is the order a nx.DiGraph built by adding nodes and edges in name
// order iterates them in; following that order keeps sums in the same
// order as networkx. Self-loops are kept: networkx counts them in degree,
// density, eigenvector centrality and PageRank, and ignores them elsewhere.
type digraph struct {
	names    []string
	m        int     // edges, self-loops included
	outStart []int32 // out[outStart[v]:outStart[v+1]] are v's successors
	out      []int32
	outCount []int // the calls along each out-edge
	inStart  []int32
	in       []int32
}

// newDigraph builds the graph; edges must be sorted by (from, to) and
// unique.
func newDigraph(names []string, edges []wedge) *digraph {
	n := len(names)
	g := &digraph{
		names:    names,
		m:        len(edges),
		outStart: make([]int32, n+1),
		out:      make([]int32, len(edges)),
		outCount: make([]int, len(edges)),
		inStart:  make([]int32, n+1),
		in:       make([]int32, len(edges)),
	}
	for _, e := range edges {
		g.outStart[e.from+1]++
		g.inStart[e.to+1]++
	}
	for i := 0; i < n; i++ {
		g.outStart[i+1] += g.outStart[i]
		g.inStart[i+1] += g.inStart[i]
	}
	fill := slices.Clone(g.inStart[:n])
	for k, e := range edges {
		// edges are sorted by from, so k runs through out-lists in order.
		g.out[k] = e.to
		g.outCount[k] = e.w
		g.in[fill[e.to]] = e.from // and each in-list fills in from order
		fill[e.to]++
	}
	return g
}

func (g *digraph) succ(v int32) []int32 { return g.out[g.outStart[v]:g.outStart[v+1]] }
func (g *digraph) pred(v int32) []int32 { return g.in[g.inStart[v]:g.inStart[v+1]] }

func (g *digraph) outDegree(v int32) int { return int(g.outStart[v+1] - g.outStart[v]) }
func (g *digraph) inDegree(v int32) int  { return int(g.inStart[v+1] - g.inStart[v]) }

// degree is networkx's DiGraph degree: in + out, a self-loop counting twice.
func (g *digraph) degree(v int32) int {
	return int(g.outStart[v+1]-g.outStart[v]) + int(g.inStart[v+1]-g.inStart[v])
}

// computeGraphMetrics computes the metrics cfg enables.
func computeGraphMetrics(ctx context.Context, g *digraph, cfg Config) (GraphMetrics, error) {
	var m GraphMetrics
	on := cfg.MetricEnabled
	n := len(g.names)

	if on(MetricDegreeCentrality) {
		m.DegreeCentrality = g.degreeCentrality()
	}
	if on(MetricEigenvectorCentrality) {
		vals, ok := g.eigenvectorCentrality()
		m.EigenvectorCentrality = g.optionalMap(vals, ok)
		m.EigenvectorCentralityConverged = &ok
	}
	if on(MetricPageRank) {
		vals, ok := g.pagerank()
		m.PageRank = g.optionalMap(vals, ok)
		m.PageRankConverged = &ok
	}
	if on(MetricClustering) || on(MetricAverageClustering) {
		cc := g.clustering()
		if on(MetricClustering) {
			m.Clustering = g.nodeMap(cc)
		}
		if on(MetricAverageClustering) {
			// nx.average_clustering divides by zero on the null graph.
			if n == 0 {
				m.AverageClustering = Scalar{On: true, Null: true}
			} else {
				var sum float64
				for _, c := range cc {
					sum += c
				}
				m.AverageClustering = scalar(sum / float64(n))
			}
		}
	}
	if on(MetricDensity) {
		d := 0.0
		if g.m > 0 && n > 1 {
			d = float64(g.m) / float64(n*(n-1))
		}
		m.Density = scalar(d)
	}
	if err := ctx.Err(); err != nil {
		return m, err
	}

	wantPaths := on(MetricAverageShortestPathLength) || on(MetricDiameter)
	if on(MetricNumberWeaklyConnectedComponents) {
		m.NumberWeaklyConnectedComponents = scalar(float64(g.weakComponents()))
	}
	var scc []int32
	var sccCount int
	if on(MetricNumberStronglyConnectedComponents) || wantPaths {
		scc, sccCount = g.strongComponents()
		if on(MetricNumberStronglyConnectedComponents) {
			m.NumberStronglyConnectedComponents = scalar(float64(sccCount))
		}
	}

	wantBC := on(MetricBetweennessCentrality)
	wantCloseness := on(MetricClosenessCentrality)
	if !wantBC && !wantCloseness && !wantPaths {
		return m, nil
	}
	if n == 0 {
		// networkx returns {} for the centralities of the null graph and
		// raises for its path metrics.
		if wantBC {
			m.BetweennessCentrality = map[string]float64{}
		}
		if wantCloseness {
			m.ClosenessCentrality = map[string]float64{}
		}
		if on(MetricAverageShortestPathLength) {
			m.AverageShortestPathLength = Scalar{On: true, Null: true}
			m.AverageShortestPathLengthScope = ScopeNone
		}
		if on(MetricDiameter) {
			m.Diameter = Scalar{On: true, Null: true}
			m.DiameterScope = ScopeNone
		}
		return m, nil
	}

	var inLSCC []bool
	var lscc []int32
	if wantPaths {
		lscc = largestComponent(scc, sccCount)
		inLSCC = make([]bool, n)
		for _, v := range lscc {
			inLSCC[v] = true
		}
	}
	ps, err := g.allPairs(ctx, inLSCC, wantBC)
	if err != nil {
		return m, err
	}
	if wantBC {
		m.BetweennessCentrality = g.nodeMap(g.betweenness(ps.bc))
	}
	if wantCloseness {
		m.ClosenessCentrality = g.nodeMap(g.closeness(ps))
	}
	if wantPaths {
		scope := ScopeGraph
		if len(lscc) != n {
			scope = ScopeLargestSCC
			for _, v := range lscc {
				m.LargestSCC = append(m.LargestSCC, g.names[v])
			}
		}
		if on(MetricAverageShortestPathLength) {
			// nx.average_shortest_path_length: 0 for the one-node graph,
			// else the sum over ordered pairs / (k(k-1)).
			k := len(lscc)
			aspl := 0.0
			if k > 1 {
				aspl = float64(ps.lsccSum) / float64(k*(k-1))
			}
			m.AverageShortestPathLength = scalar(aspl)
			m.AverageShortestPathLengthScope = scope
		}
		if on(MetricDiameter) {
			m.Diameter = scalar(float64(ps.lsccMax))
			m.DiameterScope = scope
		}
	}
	return m, nil
}

// nodeMap keys per-node values by name; NaN and Inf (which no metric here
// produces) become 0 so the JSON always encodes.
func (g *digraph) nodeMap(vals []float64) map[string]float64 {
	out := make(map[string]float64, len(vals))
	for i, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		out[g.names[i]] = v
	}
	return out
}

// optionalMap keys per-node values by name, every one null when the
// iteration failed (networkx raised).
func (g *digraph) optionalMap(vals []float64, ok bool) map[string]*float64 {
	out := make(map[string]*float64, len(g.names))
	for i, name := range g.names {
		if ok && i < len(vals) && !math.IsNaN(vals[i]) && !math.IsInf(vals[i], 0) {
			v := vals[i]
			out[name] = &v
		} else {
			out[name] = nil
		}
	}
	return out
}

// degreeCentrality is nx.degree_centrality: degree × 1/(n-1), and 1 for
// every node of a graph of at most one node.
func (g *digraph) degreeCentrality() map[string]float64 {
	n := len(g.names)
	out := make(map[string]float64, n)
	if n <= 1 {
		for _, name := range g.names {
			out[name] = 1
		}
		return out
	}
	s := 1.0 / (float64(n) - 1.0)
	for i, name := range g.names {
		out[name] = float64(g.degree(int32(i))) * s
	}
	return out
}
