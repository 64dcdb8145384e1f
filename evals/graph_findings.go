package evals

// The graph evaluator's findings and label, as docs/evaluators.md states
// them ("The graph evaluator's findings and label"). scripts/label_oracle.py
// implements the same text in Python; graph_label_oracle_test.go holds the
// two to each other.

import (
	"context"
	"fmt"
)

// judgedGraph is the graph the findings judge: the measured nodes and one
// link per ordered pair of distinct measured nodes with at least one call.
type judgedGraph struct {
	n       int
	links   int   // m
	calls   int   // W: the calls along the links
	callees []int // distinct agents each node calls
	callers []int // distinct agents that call each node
	part    []int // calls(v): calls along the links with v at either end
	// connected: the links, read without direction, connect all nodes.
	connected bool
}

// judgeGraph reads the judged graph off the measured digraph: self-loops
// are left out, everything else is a link.
func judgeGraph(g *digraph) judgedGraph {
	n := len(g.names)
	j := judgedGraph{n: n, callees: make([]int, n), callers: make([]int, n), part: make([]int, n)}
	parent := make([]int32, n)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	components := n
	for u := range n {
		for k := g.outStart[u]; k < g.outStart[u+1]; k++ {
			v, w := g.out[k], g.outCount[k]
			if int(v) == u {
				continue
			}
			j.links++
			j.calls = satAdd(j.calls, w)
			j.callees[u]++
			j.callers[v]++
			j.part[u] = satAdd(j.part[u], w)
			j.part[v] = satAdd(j.part[v], w)
			if a, b := find(int32(u)), find(v); a != b {
				parent[a] = b
				components--
			}
		}
	}
	j.connected = components <= 1
	return j
}

// share is calls(v) / W, 0 when there are no calls.
func (j *judgedGraph) share(v int) float64 {
	if j.calls == 0 {
		return 0
	}
	return float64(j.part[v]) / float64(j.calls)
}

// overShare reports 10·calls(v) > 7·W without overflow: share(v) > 0.7 as
// an exact ratio.
func (j *judgedGraph) overShare(v int) bool {
	p, w := float64(j.part[v]), float64(j.calls)
	// Counts far below 2^53 compare exactly as floats; beyond that the
	// saturated ints are already approximate.
	return j.calls > 0 && 10*p > 7*w
}

// densityAbove reports 10·m > 3·n(n−1): link density > 0.3, exactly.
func (j *judgedGraph) densityAbove() bool {
	return j.n >= 2 && 10*float64(j.links) > 3*float64(j.n)*float64(j.n-1)
}

// linkDensity is m / (n(n−1)).
func (j *judgedGraph) linkDensity() float64 {
	if j.n < 2 {
		return 0
	}
	return float64(j.links) / (float64(j.n) * float64(j.n-1))
}

// judge derives the findings and the label from the measured graph g
// (docs/evaluators.md). Betweenness is taken from the metrics when they
// hold it, else computed: the judgement never depends on graph_metrics.
func (r *GraphResult) judge(ctx context.Context, g *digraph) error {
	j := judgeGraph(g)
	for i := range r.Nodes {
		r.Nodes[i].InteractionShare = 0
	}
	idx := make(map[string]int, len(r.Nodes))
	for i, nd := range r.Nodes {
		idx[nd.Name] = i
	}
	for v, name := range g.names {
		r.Nodes[idx[name]].InteractionShare = j.share(v)
	}

	switch j.n {
	case 0:
		r.Label = LabelInsufficientEvidence
		return nil
	case 1:
		r.Label = LabelSingleAgent
		return nil
	}

	bc := r.Metrics.BetweennessCentrality
	if bc == nil {
		ps, err := g.allPairs(ctx, nil, true)
		if err != nil {
			return err
		}
		bc = g.nodeMap(g.betweenness(ps.bc))
	}

	var negative bool
	add := func(f GraphFinding) {
		r.Findings = append(r.Findings, f)
		negative = true
	}

	var isolated []string
	for v, name := range g.names {
		if j.callees[v] == 0 && j.callers[v] == 0 {
			isolated = append(isolated, name)
		}
	}
	if len(isolated) > 0 {
		add(GraphFinding{
			Kind:   FindingIsolated,
			Agents: isolated,
			Detail: fmt.Sprintf("%d agent(s) neither called nor were called by another measured agent", len(isolated)),
		})
	}

	vals := map[string]float64{}
	var agents []string
	for _, name := range g.names {
		if b := bc[name]; b-BottleneckBetweenness > BottleneckTolerance {
			vals[name] = b
			agents = append(agents, name)
		}
	}
	if len(agents) > 0 {
		add(GraphFinding{
			Kind: FindingBottleneck, Agents: agents, Values: vals, Threshold: BottleneckBetweenness,
			Detail: "agent(s) on more than half of the shortest paths between other agents",
		})
	}

	vals, agents = map[string]float64{}, nil
	for v, name := range g.names {
		star := j.callees[v] >= OverCentralizedMinSpokes || j.callers[v] >= OverCentralizedMinSpokes
		if star && j.overShare(v) {
			vals[name] = j.share(v)
			agents = append(agents, name)
		}
	}
	if len(agents) > 0 {
		add(GraphFinding{
			Kind: FindingOverCentralized, Agents: agents, Values: vals, Threshold: OverCentralizedShare,
			Detail: "agent(s) at the centre of a star, taking part as caller or callee in more than 70% of the calls",
		})
	}

	if !negative && j.connected && j.links >= j.n && j.densityAbove() {
		d := j.linkDensity()
		r.Findings = append(r.Findings, GraphFinding{
			Kind: FindingHealthySpread, Agents: []string{}, Value: &d, Threshold: HealthyDensity,
			Detail: "every agent connected, more links than a chain, and more than 30% of the possible directed links between agents used",
		})
	}

	r.Label = LabelSparse
	for _, c := range []struct{ finding, label string }{
		{FindingIsolated, LabelIsolated},
		{FindingBottleneck, LabelBottleneck},
		{FindingOverCentralized, LabelOverCentralized},
		{FindingHealthySpread, LabelHealthy},
	} {
		if r.hasFinding(c.finding) {
			r.Label = c.label
			break
		}
	}
	return nil
}

func (r *GraphResult) hasFinding(kind string) bool {
	for _, f := range r.Findings {
		if f.Kind == kind {
			return true
		}
	}
	return false
}
