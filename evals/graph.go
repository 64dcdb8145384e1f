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
	"strconv"
	"strings"

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
//
// Every trace draws its graph, most of a few agents: the nodes are found
// by name in a slice (a map past smallDrawing nodes), the edges merged by
// sorting, not through maps.
func buildDrawnGraph(trace *tracedata.TraceData, participants []string, includeVirtual bool) *GraphResult {
	res := &GraphResult{IncludeVirtualNodes: includeVirtual, Findings: []GraphFinding{}}
	var warn []string
	d := drawing{nodes: make([]GraphNode, 0, len(trace.Agents)+len(participants))}
	for i := range trace.Agents {
		a := &trace.Agents[i]
		if a.Name == "" {
			warn = append(warn, "agent with an empty name ignored")
			continue
		}
		if d.find(a.Name) >= 0 {
			warn = append(warn, fmt.Sprintf("agent %q listed twice; the first is used", a.Name))
			continue
		}
		d.add(GraphNode{
			Name:     a.Name,
			Virtual:  a.Virtual,
			Role:     a.Role,
			Measured: a.Measured() || includeVirtual,
		})
	}
	for _, p := range participants {
		if p == "" {
			continue
		}
		if k := d.find(p); k >= 0 {
			d.nodes[k].Participant = true
			continue
		}
		d.add(GraphNode{Name: p, Participant: true, NoAgent: true, Measured: true})
	}
	// Edges by the ends' places in d.nodes, in the interactions' order.
	type drawn struct {
		from, to int32
		w        int
	}
	edges := make([]drawn, 0, len(trace.Interactions))
	for _, it := range trace.Interactions {
		if it.From == "" || it.To == "" {
			warn = append(warn, "interaction with an empty endpoint ignored")
			continue
		}
		if it.Count <= 0 {
			warn = append(warn, fmt.Sprintf("interaction %s -> %s with count %d ignored", it.From, it.To, it.Count))
			continue
		}
		var ends [2]int32
		for k, name := range [2]string{it.From, it.To} {
			if ends[k] = d.find(name); ends[k] < 0 {
				warn = append(warn, fmt.Sprintf("interaction names %q, which is not among the trace's agents; added as a measured node", name))
				ends[k] = d.add(GraphNode{Name: name, Measured: true})
			}
		}
		edges = append(edges, drawn{ends[0], ends[1], it.Count})
	}
	// The nodes sorted by name (their order, then each one's place in
	// it), before the 80-byte nodes are copied.
	n := len(d.nodes)
	perm := make([]int32, 2*n)
	order, rank := perm[:n], perm[n:]
	for k := range order {
		order[k] = int32(k)
	}
	slices.SortFunc(order, func(x, y int32) int { return strings.Compare(d.nodes[x].Name, d.nodes[y].Name) })
	inOrder := true // most often: the agents come sorted by name and no participant is added
	for i, k := range order {
		rank[k] = int32(i)
		inOrder = inOrder && int(k) == i
	}
	if inOrder {
		res.Nodes = d.nodes[:n:n]
	} else {
		res.Nodes = make([]GraphNode, n)
		for i, k := range order {
			res.Nodes[i] = d.nodes[k]
		}
	}
	// Edges sorted by (from, to): by the ends' places in the sorted nodes,
	// which is their names' order and cheaper to compare. Counts of one
	// pair listed twice are added (saturating: the sum of positive counts
	// in any order).
	for k := range edges {
		edges[k].from, edges[k].to = rank[edges[k].from], rank[edges[k].to]
	}
	slices.SortFunc(edges, func(a, b drawn) int {
		if a.from != b.from {
			return cmp.Compare(a.from, b.from)
		}
		return cmp.Compare(a.to, b.to)
	})
	res.Edges = make([]GraphEdge, 0, len(edges))
	for k, e := range edges {
		from, to := &res.Nodes[e.from], &res.Nodes[e.to]
		if k > 0 && e.from == edges[k-1].from && e.to == edges[k-1].to {
			warn = append(warn, fmt.Sprintf("interaction %s -> %s listed twice; counts added", from.Name, to.Name))
			last := &res.Edges[len(res.Edges)-1]
			last.Weight = satAdd(last.Weight, e.w)
		} else {
			res.Edges = append(res.Edges, GraphEdge{From: from.Name, To: to.Name, Weight: e.w, Measured: from.Measured && to.Measured})
		}
		from.CallsOut = satAdd(from.CallsOut, e.w)
		to.CallsIn = satAdd(to.CallsIn, e.w)
	}
	slices.Sort(warn)
	res.Warnings = slices.Compact(warn)
	return res
}

// smallDrawing is the most nodes drawing finds by a linear scan.
const smallDrawing = 32

// drawing is the nodes buildDrawnGraph draws, found by name.
type drawing struct {
	nodes  []GraphNode
	byName map[string]int32 // past smallDrawing nodes
}

// find returns the place of the node named name, -1 when there is none.
func (d *drawing) find(name string) int32 {
	if d.byName != nil {
		if k, ok := d.byName[name]; ok {
			return k
		}
		return -1
	}
	for k := range d.nodes {
		if d.nodes[k].Name == name {
			return int32(k)
		}
	}
	return -1
}

// add appends n (not drawn yet) and returns its place.
func (d *drawing) add(n GraphNode) int32 {
	k := int32(len(d.nodes))
	d.nodes = append(d.nodes, n)
	switch {
	case d.byName != nil:
		d.byName[n.Name] = k
	case len(d.nodes) > smallDrawing:
		d.byName = make(map[string]int32, 2*len(d.nodes))
		for j := range d.nodes {
			d.byName[d.nodes[j].Name] = int32(j)
		}
	}
	return k
}

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// metricGraph returns the measured subgraph, its nodes indexed in name
// order (the order the networkx oracle adds them in), and its number of
// calls. r.Nodes are sorted by name and unique (buildDrawnGraph): an
// edge's ends are found by binary search.
func (r *GraphResult) metricGraph() (*digraph, int) {
	var names []string                      // nil when no node is measured
	measured := make([]int32, len(r.Nodes)) // by place in r.Nodes; -1 for a node not measured
	for i, n := range r.Nodes {
		measured[i] = -1
		if n.Measured {
			if names == nil {
				names = make([]string, 0, len(r.Nodes)-i)
			}
			measured[i] = int32(len(names))
			names = append(names, n.Name)
		}
	}
	place := func(name string) int32 {
		i, _ := slices.BinarySearchFunc(r.Nodes, name, func(n GraphNode, name string) int { return strings.Compare(n.Name, name) })
		return measured[i]
	}
	var edges []wedge
	calls := 0
	for _, e := range r.Edges {
		if !e.Measured {
			continue
		}
		if edges == nil {
			edges = make([]wedge, 0, len(r.Edges))
		}
		edges = append(edges, wedge{from: place(e.From), to: place(e.To), w: e.Weight})
		calls = satAdd(calls, e.Weight)
	}
	return newDigraph(names, edges), calls
}
