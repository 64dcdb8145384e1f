package evals

// The graph evaluator (docs/evaluators.md, tier 1): the agent graph of a trace,
// the networkx metrics on it, the findings and a label. The metric computations
// live in graph_metrics.go; this file builds the graph from the trace, holds the
// result types and turns the metrics into findings.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/coordbench/coordbench/tracedata"
)

// GraphEvaluatorName is the graph evaluator's name in the registry, the
// request config and the result JSON.
const GraphEvaluatorName = "graph"

// The graph metrics, by the name networkx gives the function that computes
// them. The names are the metrics' JSON keys and the keys of
// Config.GraphMetrics.
const (
	MetricDegreeCentrality                  = "degree_centrality"
	MetricBetweennessCentrality             = "betweenness_centrality"
	MetricClosenessCentrality               = "closeness_centrality"
	MetricEigenvectorCentrality             = "eigenvector_centrality"
	MetricPageRank                          = "pagerank"
	MetricClustering                        = "clustering"
	MetricDensity                           = "density"
	MetricAverageClustering                 = "average_clustering"
	MetricNumberWeaklyConnectedComponents   = "number_weakly_connected_components"
	MetricNumberStronglyConnectedComponents = "number_strongly_connected_components"
	MetricAverageShortestPathLength         = "average_shortest_path_length"
	MetricDiameter                          = "diameter"
)

// GraphMetricNames lists every graph metric, per-node metrics first, so a UI
// or a config validator can enumerate them.
var GraphMetricNames = []string{
	MetricDegreeCentrality, MetricBetweennessCentrality, MetricClosenessCentrality,
	MetricEigenvectorCentrality, MetricPageRank, MetricClustering,
	MetricDensity, MetricAverageClustering,
	MetricNumberWeaklyConnectedComponents, MetricNumberStronglyConnectedComponents,
	MetricAverageShortestPathLength, MetricDiameter,
}

// Scopes of the path metrics: networkx defines the average shortest path
// length and the diameter of a digraph only when it is strongly connected;
// otherwise the evaluator computes them on the largest strongly connected
// component and says so.
const (
	ScopeGraph      = "graph"
	ScopeLargestSCC = "largest_scc"
	ScopeNone       = "none" // the empty graph: no value at all
)

// Finding kinds.
const (
	FindingIsolated        = "isolated"
	FindingBottleneck      = "bottleneck"
	FindingOverCentralized = "over_centralized"
	FindingHealthySpread   = "healthy_spread"
)

// Labels, one per trace (docs/evaluators.md, "Label"): for two or more
// measured agents the first that holds of isolated, bottleneck,
// over_centralized, healthy, else sparse; single_agent for one measured
// agent, insufficient_evidence for none.
const (
	LabelIsolated        = "isolated"
	LabelBottleneck      = "bottleneck"
	LabelOverCentralized = "over_centralized"
	LabelHealthy         = "healthy"
	LabelSparse          = "sparse"
	// LabelSingleAgent: one measured agent has no one to coordinate with;
	// nothing is judged.
	LabelSingleAgent = "single_agent"
	// LabelInsufficientEvidence: the evidence does not support a label. The
	// graph evaluator gives it when no agent is measured at all; the
	// coverage rules (another part of issue 13) may give it too.
	LabelInsufficientEvidence = "insufficient_evidence"
)

// Labels lists every label the graph evaluator gives.
var Labels = []string{
	LabelIsolated, LabelBottleneck, LabelOverCentralized, LabelHealthy, LabelSparse,
	LabelSingleAgent, LabelInsufficientEvidence,
}

// Thresholds of the findings (the rules are in
// docs/evaluators.md#3-findings-n--2).
const (
	// BottleneckBetweenness: an agent with a larger normalised betweenness
	// lies on more than half of all shortest paths between other agents.
	BottleneckBetweenness = 0.5
	// BottleneckTolerance: betweenness is a float sum, so it counts as
	// above BottleneckBetweenness only when above it by more than this (a
	// 3-chain's middle agent, at exactly 0.5, is no bottleneck however the
	// sum rounds).
	BottleneckTolerance = 1e-9
	// OverCentralizedShare: an agent taking part in more than this share of
	// the calls between measured agents (as caller or callee) is
	// over-centralized, if it is also the centre of a star
	// (OverCentralizedMinSpokes). Calls are read from the interactions,
	// not from betweenness: an orchestrator that only calls out has
	// betweenness 0 yet is in every call.
	OverCentralizedShare = 0.7
	// OverCentralizedMinSpokes: the centre of a star calls at least this
	// many distinct agents, or is called by at least this many. It
	// separates a centre from a relay: in a->b->c agent b is in every call
	// because three agents with two links leave no other way.
	OverCentralizedMinSpokes = 2
	// HealthyDensity: more than this share of the possible directed links
	// between distinct agents is used.
	HealthyDensity = 0.3
)

// GraphEvaluator is the graph evaluator. It is stateless; the zero value is
// ready to use.
type GraphEvaluator struct{}

// Name implements Evaluator.
func (GraphEvaluator) Name() string { return GraphEvaluatorName }

// Tier implements Evaluator: graph runs first, so later tiers (the judge)
// can read its result.
func (GraphEvaluator) Tier() int { return 1 }

// Evaluate implements Evaluator; the Result is a *GraphResult.
func (GraphEvaluator) Evaluate(ctx context.Context, trace *tracedata.TraceData, in Inputs) (Result, error) {
	res, err := EvaluateGraph(ctx, trace, in)
	if err != nil {
		// Return a nil interface, not a typed nil *GraphResult.
		return nil, err
	}
	return res, nil
}

// GraphResult is the graph evaluator's result. It encodes deterministically:
// slices are sorted by agent name, maps are keyed by agent name (and
// encoding/json sorts map keys), and no NaN or Inf reaches the JSON.
type GraphResult struct {
	// Nodes are every node drawn, measured or not, sorted by name.
	Nodes []GraphNode `json:"nodes"`
	// Edges are every edge drawn, sorted by (from, to).
	Edges []GraphEdge `json:"edges"`
	// IncludeVirtualNodes echoes the config: whether virtual nodes and the
	// assessor were measured.
	IncludeVirtualNodes bool `json:"include_virtual_nodes"`
	// MeasuredNodes and MeasuredEdges size the graph the metrics are
	// computed on; Interactions is the number of calls along its edges.
	MeasuredNodes int `json:"measured_nodes"`
	MeasuredEdges int `json:"measured_edges"`
	Interactions  int `json:"interactions"`
	// Empty is true when no node is measured: networkx has no value for
	// most metrics of the null graph, and the metrics say so with nulls.
	Empty   bool         `json:"empty"`
	Metrics GraphMetrics `json:"metrics"`
	// Findings are the findings that hold, in the order isolated,
	// bottleneck, over_centralized, healthy_spread.
	Findings []GraphFinding `json:"findings"`
	// Label is one of Labels.
	Label string `json:"label"`
	// Evidence says how far the trace supports the label; when it does not,
	// Label is insufficient_evidence (evidence.go).
	Evidence *Evidence `json:"evidence,omitempty"`
	// Warnings name what was odd in the trace's graph (interactions with a
	// non-positive count, agents named twice, edges to unknown agents).
	Warnings []string `json:"warnings,omitempty"`
}

// GraphNode is one node of the drawn graph.
type GraphNode struct {
	Name    string `json:"name"`
	Virtual bool   `json:"virtual,omitempty"`
	Role    string `json:"role,omitempty"`
	// Participant marks an agent named in Inputs.Participants.
	Participant bool `json:"participant,omitempty"`
	// NoAgent marks a participant the trace has no agent for: it took no
	// part, and is an isolated node.
	NoAgent bool `json:"no_agent,omitempty"`
	// Measured is whether the node is in the graph the metrics are computed
	// on: real agents always, virtual nodes and the assessor only with
	// Config.IncludeVirtualNodes.
	Measured bool `json:"measured"`
	// CallsOut and CallsIn count the calls the node made and received,
	// along every drawn edge.
	CallsOut int `json:"calls_out"`
	CallsIn  int `json:"calls_in"`
	// InteractionShare is the share of the calls between distinct measured
	// agents the node takes part in, as caller or callee (what
	// over_centralized judges); 0 for nodes that are not measured and when
	// there are no such calls.
	InteractionShare float64 `json:"interaction_share"`
}

// GraphEdge is one edge of the drawn graph: every call From made to To.
type GraphEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Weight is the number of calls (Interaction.Count).
	Weight int `json:"weight"`
	// Measured is whether both ends are measured, so the edge counts in the
	// metrics.
	Measured bool `json:"measured"`
}

// GraphMetrics holds the metrics with networkx's semantics for a
// nx.DiGraph built from the measured nodes and edges. A metric switched off
// by Config.MetricEnabled is left out of the JSON.
type GraphMetrics struct {
	// DegreeCentrality is nx.degree_centrality: (in + out degree) / (n - 1).
	DegreeCentrality map[string]float64 `json:"degree_centrality,omitzero"`
	// BetweennessCentrality is nx.betweenness_centrality, normalised by
	// (n-1)(n-2).
	BetweennessCentrality map[string]float64 `json:"betweenness_centrality,omitzero"`
	// ClosenessCentrality is nx.closeness_centrality: distances *to* the
	// node, Wasserman–Faust scaled.
	ClosenessCentrality map[string]float64 `json:"closeness_centrality,omitzero"`
	// EigenvectorCentrality is nx.eigenvector_centrality (in-edges,
	// unweighted). When the power iteration does not converge in 100 steps
	// (any digraph whose A+I has no dominant eigenvalue, e.g. a DAG with an
	// edge), networkx raises; every node is then null and
	// EigenvectorCentralityConverged false.
	EigenvectorCentrality          map[string]*float64 `json:"eigenvector_centrality,omitzero"`
	EigenvectorCentralityConverged *bool               `json:"eigenvector_centrality_converged,omitempty"`
	// PageRank is nx.pagerank with weight = number of calls; null per node
	// and PageRankConverged false if it fails to converge.
	PageRank          map[string]*float64 `json:"pagerank,omitzero"`
	PageRankConverged *bool               `json:"pagerank_converged,omitempty"`
	// Clustering is nx.clustering for digraphs (Fagiolo's directed
	// triangles).
	Clustering map[string]float64 `json:"clustering,omitzero"`

	Density                           Scalar `json:"density,omitzero"`
	AverageClustering                 Scalar `json:"average_clustering,omitzero"`
	NumberWeaklyConnectedComponents   Scalar `json:"number_weakly_connected_components,omitzero"`
	NumberStronglyConnectedComponents Scalar `json:"number_strongly_connected_components,omitzero"`
	// AverageShortestPathLength and Diameter are over the whole graph when
	// it is strongly connected, else over its largest strongly connected
	// component (Scope says which, LargestSCC lists that component).
	AverageShortestPathLength      Scalar   `json:"average_shortest_path_length,omitzero"`
	AverageShortestPathLengthScope string   `json:"average_shortest_path_length_scope,omitempty"`
	Diameter                       Scalar   `json:"diameter,omitzero"`
	DiameterScope                  string   `json:"diameter_scope,omitempty"`
	LargestSCC                     []string `json:"largest_scc,omitempty"`
}

// Scalar is a graph-level metric value. The zero Scalar is a metric switched
// off and is left out of the JSON (omitzero); a Scalar that is on but Null
// encodes as null, for values networkx does not define (the average
// clustering of the null graph).
type Scalar struct {
	On    bool
	Null  bool
	Value float64
}

// IsZero reports whether the metric is off, for the omitzero tag option.
func (s Scalar) IsZero() bool { return !s.On }

// Valid reports whether the scalar holds a number.
func (s Scalar) Valid() bool { return s.On && !s.Null }

// MarshalJSON encodes the value, or null; NaN and Inf become null too, so
// the JSON always encodes.
func (s Scalar) MarshalJSON() ([]byte, error) {
	return s.appendJSON(make([]byte, 0, 24))
}

// UnmarshalJSON decodes a number or null; a decoded Scalar is on.
func (s *Scalar) UnmarshalJSON(b []byte) error {
	*s = Scalar{On: true}
	if string(b) == "null" {
		s.Null = true
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("graph metric: %w", err)
	}
	s.Value = v
	return nil
}

func scalar(v float64) Scalar { return Scalar{On: true, Value: v} }

// GraphFinding is one finding about the agent graph.
type GraphFinding struct {
	Kind string `json:"kind"`
	// Agents are the agents concerned, sorted; empty for graph-wide
	// findings (healthy_spread).
	Agents []string `json:"agents"`
	// Values holds, per agent concerned, the measure behind the finding
	// (betweenness for bottleneck, share of calls for over_centralized).
	Values map[string]float64 `json:"values,omitempty"`
	// Value is the graph-level measure (for healthy_spread the density of
	// links between distinct agents).
	Value *float64 `json:"value,omitempty"`
	// Threshold is the bound the measure exceeded.
	Threshold float64 `json:"threshold,omitempty"`
	Detail    string  `json:"detail"`
}

// Headline keys: a fixed set, so span attributes and metrics built from
// them have bounded cardinality. A metric that is off, or null, reads 0.
var graphHeadlineKeys = []string{
	"nodes", "edges", "interactions", "density", "average_clustering",
	"max_betweenness_centrality", "max_degree_centrality",
	"weakly_connected_components", "strongly_connected_components",
	"average_shortest_path_length", "diameter", "isolated_agents",
	"max_interaction_share",
}

// Headline implements Result.
func (r *GraphResult) Headline() map[string]float64 {
	h := make(map[string]float64, len(graphHeadlineKeys))
	for _, k := range graphHeadlineKeys {
		h[k] = 0
	}
	if r == nil {
		return h
	}
	val := func(s Scalar) float64 {
		if s.Valid() && !math.IsNaN(s.Value) && !math.IsInf(s.Value, 0) {
			return s.Value
		}
		return 0
	}
	m := r.Metrics
	h["nodes"] = float64(r.MeasuredNodes)
	h["edges"] = float64(r.MeasuredEdges)
	h["interactions"] = float64(r.Interactions)
	h["density"] = val(m.Density)
	h["average_clustering"] = val(m.AverageClustering)
	h["max_betweenness_centrality"] = maxValue(m.BetweennessCentrality)
	h["max_degree_centrality"] = maxValue(m.DegreeCentrality)
	h["weakly_connected_components"] = val(m.NumberWeaklyConnectedComponents)
	h["strongly_connected_components"] = val(m.NumberStronglyConnectedComponents)
	h["average_shortest_path_length"] = val(m.AverageShortestPathLength)
	h["diameter"] = val(m.Diameter)
	for _, f := range r.Findings {
		switch f.Kind {
		case FindingIsolated:
			h["isolated_agents"] = float64(len(f.Agents))
		}
	}
	for _, n := range r.Nodes {
		h["max_interaction_share"] = max(h["max_interaction_share"], n.InteractionShare)
	}
	return h
}

func maxValue(m map[string]float64) float64 {
	var best float64
	for _, v := range m {
		if v > best {
			best = v
		}
	}
	return best
}

// EvaluateGraph builds the agent graph of trace and computes the enabled
// metrics, the findings and the label. It fails only on a nil trace or a
// cancelled context.
func EvaluateGraph(ctx context.Context, trace *tracedata.TraceData, in Inputs) (*GraphResult, error) {
	if trace == nil {
		return nil, errors.New("graph: nil trace")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("graph: %w", err)
	}
	cfg := in.Config
	res := buildDrawnGraph(trace, in.Participants, cfg.IncludeVirtualNodes)

	g, calls := res.metricGraph()
	res.MeasuredNodes = len(g.names)
	res.MeasuredEdges = g.m
	res.Interactions = calls
	res.Empty = len(g.names) == 0

	metrics, err := computeGraphMetrics(ctx, g, cfg)
	if err != nil {
		return nil, fmt.Errorf("graph: %w", err)
	}
	res.Metrics = metrics
	if err := res.judge(ctx, g); err != nil {
		return nil, fmt.Errorf("graph: %w", err)
	}
	res.applyEvidence(trace, in)
	return res, nil
}

// buildDrawnGraph collects every node and edge of the trace, measured or
// not. Participants without an agent become isolated measured nodes.
func buildDrawnGraph(trace *tracedata.TraceData, participants []string, includeVirtual bool) *GraphResult {
	res := &GraphResult{IncludeVirtualNodes: includeVirtual, Findings: []GraphFinding{}}
	warn := map[string]bool{}
	nodes := map[string]*GraphNode{}
	for i := range trace.Agents {
		a := &trace.Agents[i]
		if a.Name == "" {
			warn["agent with an empty name ignored"] = true
			continue
		}
		if _, dup := nodes[a.Name]; dup {
			warn[fmt.Sprintf("agent %q listed twice; the first is used", a.Name)] = true
			continue
		}
		nodes[a.Name] = &GraphNode{
			Name:     a.Name,
			Virtual:  a.Virtual,
			Role:     a.Role,
			Measured: a.Measured() || includeVirtual,
		}
	}
	for _, p := range participants {
		if p == "" {
			continue
		}
		if n, ok := nodes[p]; ok {
			n.Participant = true
			continue
		}
		nodes[p] = &GraphNode{Name: p, Participant: true, NoAgent: true, Measured: true}
	}
	type key struct{ from, to string }
	weights := make(map[key]int, len(trace.Interactions))
	for _, it := range trace.Interactions {
		if it.From == "" || it.To == "" {
			warn["interaction with an empty endpoint ignored"] = true
			continue
		}
		if it.Count <= 0 {
			warn[fmt.Sprintf("interaction %s -> %s with count %d ignored", it.From, it.To, it.Count)] = true
			continue
		}
		for _, name := range []string{it.From, it.To} {
			if _, ok := nodes[name]; !ok {
				warn[fmt.Sprintf("interaction names %q, which is not among the trace's agents; added as a measured node", name)] = true
				nodes[name] = &GraphNode{Name: name, Measured: true}
			}
		}
		k := key{it.From, it.To}
		if _, dup := weights[k]; dup {
			warn[fmt.Sprintf("interaction %s -> %s listed twice; counts added", it.From, it.To)] = true
		}
		// Saturate rather than overflow on absurd counts.
		if w := weights[k]; w > math.MaxInt-it.Count {
			weights[k] = math.MaxInt
		} else {
			weights[k] = w + it.Count
		}
	}
	// Sized once and sorted by name before the nodes are copied: nodes
	// are 80 bytes, names 16 (every trace draws its graph).
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	res.Nodes = make([]GraphNode, len(names))
	for i, name := range names {
		res.Nodes[i] = *nodes[name]
	}
	idx := make(map[string]int, len(res.Nodes))
	for i, n := range res.Nodes {
		idx[n.Name] = i
	}
	// Edges sorted by (from, to): by the ends' places in the sorted nodes,
	// which is their names' order and cheaper to compare.
	type indexed struct{ from, to, w int }
	sorted := make([]indexed, 0, len(weights))
	for k, w := range weights {
		sorted = append(sorted, indexed{idx[k.from], idx[k.to], w})
	}
	slices.SortFunc(sorted, func(a, b indexed) int {
		if a.from != b.from {
			return cmp.Compare(a.from, b.from)
		}
		return cmp.Compare(a.to, b.to)
	})
	res.Edges = make([]GraphEdge, len(sorted))
	for i, e := range sorted {
		from, to := &res.Nodes[e.from], &res.Nodes[e.to]
		res.Edges[i] = GraphEdge{From: from.Name, To: to.Name, Weight: e.w, Measured: from.Measured && to.Measured}
		from.CallsOut = satAdd(from.CallsOut, e.w)
		to.CallsIn = satAdd(to.CallsIn, e.w)
	}
	for w := range warn {
		res.Warnings = append(res.Warnings, w)
	}
	sort.Strings(res.Warnings)
	return res
}

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// metricGraph returns the measured subgraph, its nodes indexed in name
// order (the order the networkx oracle adds them in), and its number of
// calls.
func (r *GraphResult) metricGraph() (*digraph, int) {
	var names []string
	idx := map[string]int32{}
	for _, n := range r.Nodes {
		if n.Measured {
			idx[n.Name] = int32(len(names))
			names = append(names, n.Name)
		}
	}
	var edges []wedge
	calls := 0
	for _, e := range r.Edges {
		if !e.Measured {
			continue
		}
		edges = append(edges, wedge{from: idx[e.From], to: idx[e.To], w: e.Weight})
		calls = satAdd(calls, e.Weight)
	}
	return newDigraph(names, edges), calls
}
