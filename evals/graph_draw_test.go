package evals

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/coordbench/coordbench/tracedata"
)

// TestDrawnGraphAgreesWithMaps holds buildDrawnGraph and metricGraph (a
// slice of nodes, edges merged by sorting) to the map-based code they
// replaced, kept here as the reference, on random traces with every
// oddity the drawing warns about: agents without a name or listed twice,
// participants with and without an agent, interactions with an empty
// end, a count of zero or less, an end no agent names, a pair listed
// twice, counts that saturate, and graphs past smallDrawing nodes.
func TestDrawnGraphAgreesWithMaps(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 7))
	for c := range 3000 {
		size := r.IntN(8)
		if c%10 == 0 {
			size = smallDrawing - 4 + r.IntN(40)
		}
		name := func() string {
			if r.IntN(40) == 0 {
				return ""
			}
			return "agent-" + strconv.Itoa(r.IntN(size+3))
		}
		trace := &tracedata.TraceData{}
		for range size {
			trace.Agents = append(trace.Agents, tracedata.Agent{
				Name: name(), Virtual: r.IntN(5) == 0,
				Role: []string{"", tracedata.RoleAssessor, tracedata.RoleToolServer}[r.IntN(3)],
			})
		}
		var participants []string
		for range r.IntN(3) {
			participants = append(participants, name())
		}
		for range r.IntN(3 * (size + 1)) {
			count := 1 + r.IntN(5)
			switch r.IntN(30) {
			case 0:
				count = -r.IntN(2)
			case 1:
				count = math.MaxInt - r.IntN(3)
			}
			trace.Interactions = append(trace.Interactions, tracedata.Interaction{From: name(), To: name(), Count: count})
		}
		include := r.IntN(3) == 0
		got, want := buildDrawnGraph(trace, participants, include), referenceDrawnGraph(trace, participants, include)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: drawn\n%+v\nthe maps draw\n%+v", c, got, want)
		}
		g, calls := got.metricGraph()
		wg, wcalls := referenceMetricGraph(want)
		if calls != wcalls || !reflect.DeepEqual(g, wg) {
			t.Fatalf("case %d: metric graph %+v (%d calls), the maps' %+v (%d)", c, g, calls, wg, wcalls)
		}
	}
}

// referenceDrawnGraph is buildDrawnGraph as it was, with maps.
func referenceDrawnGraph(trace *tracedata.TraceData, participants []string, includeVirtual bool) *GraphResult {
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
	slices.Sort(res.Warnings)
	return res
}

// referenceMetricGraph is metricGraph as it was, with a map.
func referenceMetricGraph(r *GraphResult) (*digraph, int) {
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
