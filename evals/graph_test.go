package evals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/graph/network"

	"github.com/coordbench/coordbench/tracedata"
)

// traceOf builds a trace of real agents from "from->to" or "from->to*count"
// edges; every name in agents and edges becomes an agent.
func traceOf(t testing.TB, agents []string, edges ...string) *tracedata.TraceData {
	t.Helper()
	var es []dedge
	names := slices.Clone(agents)
	for _, e := range edges {
		from, rest, ok := strings.Cut(e, "->")
		if !ok {
			t.Fatalf("bad edge %q", e)
		}
		to, count := rest, 1
		if i := strings.IndexByte(rest, '*'); i >= 0 {
			to = rest[:i]
			if _, err := fmt.Sscan(rest[i+1:], &count); err != nil {
				t.Fatalf("bad edge %q: %v", e, err)
			}
		}
		es = append(es, dedge{from, to, count})
		names = append(names, from, to)
	}
	slices.Sort(names)
	return buildCase("t", slices.Compact(names), es, nil, nil, nil, false).trace
}

func evalGraph(t testing.TB, tr *tracedata.TraceData, in Inputs) *GraphResult {
	t.Helper()
	res, err := EvaluateGraph(context.Background(), tr, in)
	if err != nil {
		t.Fatalf("EvaluateGraph: %v", err)
	}
	return res
}

func findingAgents(res *GraphResult) map[string][]string {
	m := map[string][]string{}
	for _, f := range res.Findings {
		m[f.Kind] = f.Agents
	}
	return m
}

func TestGraphFindingsAndLabels(t *testing.T) {
	leaves := []string{"w1", "w2", "w3", "w4"}
	var biStar, outStar, mesh []string
	for _, l := range leaves {
		biStar = append(biStar, "hub->"+l+"*2", l+"->hub")
		outStar = append(outStar, "hub->"+l)
	}
	for _, u := range leaves {
		for _, v := range leaves {
			if u != v {
				mesh = append(mesh, u+"->"+v)
			}
		}
	}
	tests := []struct {
		name         string
		trace        *tracedata.TraceData
		participants []string
		findings     map[string][]string
		label        string
	}{{
		// Every leaf-to-leaf path goes through the hub (betweenness 1), and
		// the hub, calling four agents, is in every call.
		name:  "bidirectional star",
		trace: traceOf(t, nil, biStar...),
		findings: map[string][]string{
			FindingBottleneck: {"hub"}, FindingOverCentralized: {"hub"},
		},
		label: LabelBottleneck,
	}, {
		// The hub only calls out: no path passes through it, so no
		// bottleneck, but it is in every call.
		name:     "orchestrator calling workers",
		trace:    traceOf(t, nil, outStar...),
		findings: map[string][]string{FindingOverCentralized: {"hub"}},
		label:    LabelOverCentralized,
	}, {
		name:     "fan-out to two",
		trace:    traceOf(t, nil, "c->r1", "c->r2"),
		findings: map[string][]string{FindingOverCentralized: {"c"}},
		label:    LabelOverCentralized,
	}, {
		name:     "fan-in from two",
		trace:    traceOf(t, nil, "r1->c", "r2->c*3"),
		findings: map[string][]string{FindingOverCentralized: {"c"}},
		label:    LabelOverCentralized,
	}, {
		// b and c each on 2 of the 6 ordered pairs' paths (1/3), b in 2 of
		// 3 calls (67%), 3 links for 4 agents.
		name:     "chain of four",
		trace:    traceOf(t, nil, "a->b", "b->c", "c->d"),
		findings: map[string][]string{},
		label:    LabelSparse,
	}, {
		// b's betweenness is exactly 0.5, not above; it is in both calls but
		// relays (one caller, one callee), and two links cannot spread over
		// three agents.
		name:     "chain of three",
		trace:    traceOf(t, nil, "a->b", "b->c"),
		findings: map[string][]string{},
		label:    LabelSparse,
	}, {
		// A relay carrying most calls is still a pipeline stage.
		name:     "chain of three with a busy relay",
		trace:    traceOf(t, nil, "a->b*9", "b->c*9"),
		findings: map[string][]string{},
		label:    LabelSparse,
	}, {
		name:         "participant that took no part",
		trace:        traceOf(t, nil, "a->b", "b->a"),
		participants: []string{"a", "b", "c"},
		findings:     map[string][]string{FindingIsolated: {"c"}},
		label:        LabelIsolated,
	}, {
		name:         "fan-out beside an idle reviewer",
		trace:        traceOf(t, nil, "c->r1", "c->r2"),
		participants: []string{"c", "r1", "r2", "r3"},
		findings:     map[string][]string{FindingIsolated: {"r3"}, FindingOverCentralized: {"c"}},
		label:        LabelIsolated,
	}, {
		name:     "full mesh",
		trace:    traceOf(t, nil, mesh...),
		findings: map[string][]string{FindingHealthySpread: {}},
		label:    LabelHealthy,
	}, {
		// A reviewer consults another: 3 links of 6, shares 2/3.
		name:     "consult",
		trace:    traceOf(t, nil, "c->r1", "c->r2", "r1->r2"),
		findings: map[string][]string{FindingHealthySpread: {}},
		label:    LabelHealthy,
	}, {
		// Two agents calling each other: a mesh of two.
		name:     "two agents both ways",
		trace:    traceOf(t, nil, "a->b*7", "b->a"),
		findings: map[string][]string{FindingHealthySpread: {}},
		label:    LabelHealthy,
	}, {
		// One agent calling another: a chain of two.
		name:     "one call between two agents",
		trace:    traceOf(t, nil, "a->b*7"),
		findings: map[string][]string{},
		label:    LabelSparse,
	}, {
		// Two groups that never talk: no healthy spread however dense.
		name:     "two separate meshes",
		trace:    traceOf(t, nil, "a->b", "b->a", "c->d", "d->c"),
		findings: map[string][]string{},
		label:    LabelSparse,
	}, {
		// A self-call is no interaction between agents.
		name:     "self-calls left out",
		trace:    traceOf(t, nil, "a->a*5", "a->b"),
		findings: map[string][]string{},
		label:    LabelSparse,
	}, {
		name:     "single agent",
		trace:    traceOf(t, []string{"solo"}),
		findings: map[string][]string{},
		label:    LabelSingleAgent,
	}, {
		// A ring of three: hub has 8 of 10 calls (80%) but relays, with one
		// caller (y) and one callee (x); 3 links of 6 connect everyone.
		name:     "call counts, not edges",
		trace:    traceOf(t, nil, "hub->x*4", "y->hub*4", "x->y*2"),
		findings: map[string][]string{FindingHealthySpread: {}},
		label:    LabelHealthy,
	}, {
		// The same with a second callee makes hub a star's centre.
		name:     "call counts at a star's centre",
		trace:    traceOf(t, nil, "hub->x*4", "hub->y*4", "x->y*2"),
		findings: map[string][]string{FindingOverCentralized: {"hub"}},
		label:    LabelOverCentralized,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := evalGraph(t, tc.trace, Inputs{Participants: tc.participants})
			got := findingAgents(res)
			if len(got) != len(tc.findings) {
				t.Errorf("findings %v, want %v", got, tc.findings)
			}
			for kind, want := range tc.findings {
				if g, ok := got[kind]; !ok || !slices.Equal(g, want) {
					t.Errorf("finding %s: %v (present %v), want %v", kind, g, ok, want)
				}
			}
			if res.Label != tc.label {
				t.Errorf("label %q, want %q", res.Label, tc.label)
			}
		})
	}
}

func TestGraphStarValues(t *testing.T) {
	var es []string
	for _, l := range []string{"w1", "w2", "w3", "w4"} {
		es = append(es, "hub->"+l+"*2", l+"->hub")
	}
	res := evalGraph(t, traceOf(t, nil, es...), Inputs{})
	m := res.Metrics
	if b := m.BetweennessCentrality["hub"]; b != 1 {
		t.Errorf("hub betweenness %v, want 1", b)
	}
	if d := m.Density.Value; d != 0.4 {
		t.Errorf("density %v, want 0.4", d)
	}
	if d := m.Diameter.Value; d != 2 || m.DiameterScope != ScopeGraph {
		t.Errorf("diameter %v scope %q, want 2 over the graph", d, m.DiameterScope)
	}
	for _, f := range res.Findings {
		if f.Kind == FindingOverCentralized && f.Values["hub"] != 1 {
			t.Errorf("hub share %v, want 1", f.Values["hub"])
		}
	}
	var sum float64
	for _, v := range m.PageRank {
		sum += *v
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("pagerank sums to %v", sum)
	}
}

// TestGraphVirtualNodes: virtual callers and the assessor are drawn but not
// measured, unless the config says so.
func TestGraphVirtualNodes(t *testing.T) {
	c := buildCase("v", []string{"orch", "w1", "w2"},
		[]dedge{{"user", "orch", 1}, {"green", "orch", 1}, {"orch", "w1", 1}, {"orch", "w2", 1}},
		[]string{"user"}, []string{"green"}, nil, false)
	res := evalGraph(t, c.trace, Inputs{})
	if res.MeasuredNodes != 3 || res.MeasuredEdges != 2 || res.Interactions != 2 || len(res.Nodes) != 5 || len(res.Edges) != 4 {
		t.Fatalf("measured %d nodes %d edges %d calls, drawn %d nodes %d edges", res.MeasuredNodes, res.MeasuredEdges, res.Interactions, len(res.Nodes), len(res.Edges))
	}
	for _, n := range res.Nodes {
		want := n.Name != "user" && n.Name != "green"
		if n.Measured != want {
			t.Errorf("node %s measured %v", n.Name, n.Measured)
		}
		if _, in := res.Metrics.DegreeCentrality[n.Name]; in != want {
			t.Errorf("node %s in the metrics: %v", n.Name, in)
		}
	}
	if res.Nodes[slices.IndexFunc(res.Nodes, func(n GraphNode) bool { return n.Name == "green" })].Role != tracedata.RoleAssessor {
		t.Error("assessor role not carried over")
	}
	for _, e := range res.Edges {
		if want := e.From == "orch"; e.Measured != want {
			t.Errorf("edge %s->%s measured %v", e.From, e.To, e.Measured)
		}
	}

	res = evalGraph(t, c.trace, Inputs{Config: Config{IncludeVirtualNodes: true}})
	if res.MeasuredNodes != 5 || res.MeasuredEdges != 4 || !res.IncludeVirtualNodes {
		t.Errorf("with virtual nodes: %d nodes %d edges", res.MeasuredNodes, res.MeasuredEdges)
	}
}

// TestGraphMetricSwitches: a metric switched off is absent from the JSON,
// and the findings do not change.
func TestGraphMetricSwitches(t *testing.T) {
	tr := traceOf(t, nil, "a->b", "b->c", "c->a", "a->c")
	res := evalGraph(t, tr, Inputs{Config: Config{GraphMetrics: map[string]bool{
		MetricBetweennessCentrality: false, MetricDensity: false, MetricEigenvectorCentrality: false,
	}}})
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Metrics map[string]json.RawMessage `json:"metrics"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, name := range GraphMetricNames {
		off := name == MetricBetweennessCentrality || name == MetricDensity || name == MetricEigenvectorCentrality
		if _, present := doc.Metrics[name]; present == off {
			t.Errorf("metric %s present %v", name, present)
		}
	}
	if _, present := doc.Metrics["eigenvector_centrality_converged"]; present {
		t.Error("eigenvector flag present with the metric off")
	}
	if full := evalGraph(t, tr, Inputs{}); !reflect.DeepEqual(full.Findings, res.Findings) || full.Label != res.Label {
		t.Errorf("with metrics off: %s %+v; with all on: %s %+v", res.Label, res.Findings, full.Label, full.Findings)
	}

	all := map[string]bool{}
	for _, name := range GraphMetricNames {
		all[name] = false
	}
	res = evalGraph(t, tr, Inputs{Config: Config{GraphMetrics: all}})
	b, err = json.Marshal(res.Metrics)
	if err != nil || string(b) != "{}" {
		t.Errorf("all metrics off: %s %v", b, err)
	}
}

// TestGraphEmpty: the null graph reports what networkx returns and null
// where it raises, flagged empty.
func TestGraphEmpty(t *testing.T) {
	for _, tr := range []*tracedata.TraceData{
		{},
		buildCase("e", nil, []dedge{{"user", "green", 1}}, []string{"user"}, []string{"green"}, nil, false).trace,
	} {
		res := evalGraph(t, tr, Inputs{})
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		m := doc["metrics"].(map[string]any)
		want := map[string]any{
			"empty":                                      true,
			"metrics.density":                            0.0,
			"metrics.average_clustering":                 nil,
			"metrics.average_shortest_path_length":       nil,
			"metrics.average_shortest_path_length_scope": ScopeNone,
			"metrics.diameter":                           nil,
			"metrics.eigenvector_centrality_converged":   false,
			"metrics.pagerank_converged":                 true,
			"metrics.number_weakly_connected_components": 0.0,
			"label": LabelInsufficientEvidence,
		}
		for k, v := range want {
			var got any
			var present bool
			if name, ok := strings.CutPrefix(k, "metrics."); ok {
				got, present = m[name]
			} else {
				got, present = doc[k]
			}
			if !present || got != v {
				t.Errorf("%s = %v (present %v), want %v", k, got, present, v)
			}
		}
		if pr, ok := m["pagerank"].(map[string]any); !ok || len(pr) != 0 {
			t.Errorf("pagerank %v, want {}", m["pagerank"])
		}
	}
}

// TestGraphDeterministic: the same trace gives the same bytes, whatever
// GOMAXPROCS, also on a graph big enough for the parallel all-pairs pass.
func TestGraphDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	names := nodeNames(r, 700)
	tr := buildCase("d", names, randomEdges(r, names, 6.0/700), nil, nil, nil, false).trace
	encode := func() []byte {
		b, err := json.Marshal(evalGraph(t, tr, Inputs{}))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first := encode()
	prev := runtime.GOMAXPROCS(1)
	single := encode()
	runtime.GOMAXPROCS(max(prev, 4))
	many := encode()
	runtime.GOMAXPROCS(prev)
	if !bytes.Equal(first, single) || !bytes.Equal(first, many) || !bytes.Equal(first, encode()) {
		t.Error("the same trace encoded differently")
	}
	if bytes.Contains(first, []byte("NaN")) || bytes.Contains(first, []byte("Inf")) {
		t.Error("NaN or Inf in the JSON")
	}
}

// TestGraphJSONRoundTrip: a result decodes from its JSON and encodes to the
// same bytes (Scalar's null and omitted states survive).
func TestGraphJSONRoundTrip(t *testing.T) {
	for _, tr := range []*tracedata.TraceData{{}, traceOf(t, []string{"z"}, "a->b", "b->c")} {
		b1, err := json.Marshal(evalGraph(t, tr, Inputs{Config: Config{GraphMetrics: map[string]bool{MetricDiameter: false}}}))
		if err != nil {
			t.Fatal(err)
		}
		var back GraphResult
		if err := json.Unmarshal(b1, &back); err != nil {
			t.Fatal(err)
		}
		b2, err := json.Marshal(&back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b1, b2) {
			t.Errorf("round trip changed the JSON:\n%s\n%s", b1, b2)
		}
	}
}

func TestGraphHeadline(t *testing.T) {
	star := evalGraph(t, traceOf(t, nil, "hub->a", "a->hub", "hub->b", "b->hub"), Inputs{})
	empty := evalGraph(t, &tracedata.TraceData{}, Inputs{})
	off := evalGraph(t, traceOf(t, nil, "a->b"), Inputs{Config: Config{GraphMetrics: map[string]bool{MetricDensity: false}}})
	keys := func(m map[string]float64) []string {
		var ks []string
		for k, v := range m {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("headline %s = %v", k, v)
			}
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	want := keys(star.Headline())
	for _, r := range []*GraphResult{empty, off, nil} {
		if got := keys(r.Headline()); !slices.Equal(got, want) {
			t.Errorf("headline keys %v, want %v", got, want)
		}
	}
	h := star.Headline()
	if h["max_betweenness_centrality"] != 1 || h["density"] != 4.0/6 || h["max_interaction_share"] != 1 || h["nodes"] != 3 {
		t.Errorf("headline %v", h)
	}
}

// TestGraphRegistered: the evaluator is registered as "graph", tier 1.
func TestGraphRegistered(t *testing.T) {
	for _, e := range NewRegistry(Options{}).Evaluators() {
		if e.Name() == GraphEvaluatorName {
			if e.Tier() != 1 {
				t.Errorf("tier %d", e.Tier())
			}
			res, err := e.Evaluate(context.Background(), traceOf(t, nil, "a->b"), Inputs{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := res.(*GraphResult); !ok {
				t.Errorf("result %T", res)
			}
			return
		}
	}
	t.Fatal("graph evaluator not registered")
}

func TestGraphErrors(t *testing.T) {
	if _, err := (GraphEvaluator{}).Evaluate(context.Background(), nil, Inputs{}); err == nil {
		t.Error("nil trace: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := rand.New(rand.NewPCG(1, 2))
	names := nodeNames(r, 400)
	tr := buildCase("c", names, randomEdges(r, names, 0.02), nil, nil, nil, false).trace
	res, err := (GraphEvaluator{}).Evaluate(ctx, tr, Inputs{})
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Errorf("cancelled: %v, %v", res, err)
	}
}

// TestGraphOddTraces: malformed traces give warnings and a result, never a
// panic.
func TestGraphOddTraces(t *testing.T) {
	tr := &tracedata.TraceData{
		Agents: []tracedata.Agent{{Name: "a"}, {Name: "a", Virtual: true}, {Name: ""}, {Name: "b"}},
		Interactions: []tracedata.Interaction{
			{From: "a", To: "b", Count: 2}, {From: "a", To: "b", Count: 3},
			{From: "b", To: "ghost", Count: 1}, {From: "b", To: "a", Count: 0},
			{From: "", To: "a", Count: 1}, {From: "a", To: "a", Count: -4},
			{From: "b", To: "b", Count: math.MaxInt}, {From: "b", To: "b", Count: math.MaxInt},
		},
	}
	res := evalGraph(t, tr, Inputs{Participants: []string{"", "a", "c"}})
	if len(res.Warnings) < 5 {
		t.Errorf("warnings %q", res.Warnings)
	}
	if res.MeasuredNodes != 4 || res.Edges[0].Weight != 5 {
		t.Errorf("nodes %v edges %v", res.Nodes, res.Edges)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Error(err)
	}
}

// TestGraphBetweennessMatchesGonum cross-checks the CSR Brandes against
// gonum's network.Betweenness (unnormalised) without needing Python.
func TestGraphBetweennessMatchesGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20; i++ {
		names := nodeNames(r, 2+r.IntN(300))
		c := buildCase("g", names, randomEdges(r, names, (1+4*r.Float64())/float64(len(names))), nil, nil, nil, false)
		res := evalGraph(t, c.trace, Inputs{})
		g, _ := res.metricGraph()
		ps, err := g.allPairs(context.Background(), nil, true)
		if err != nil {
			t.Fatal(err)
		}
		want := network.Betweenness(g.gonum())
		for v, b := range ps.bc {
			if math.Abs(b-want[int64(v)]) > 1e-9*max(1, b) {
				t.Fatalf("graph %d node %s: betweenness %v, gonum %v", i, g.names[v], b, want[int64(v)])
			}
		}
		n := float64(len(names))
		for name, b := range res.Metrics.BetweennessCentrality {
			if n > 2 && (b < 0 || b > 1+1e-12) {
				t.Errorf("betweenness[%s] = %v outside [0, 1]", name, b)
			}
		}
	}
}

// FuzzGraph: any graph the bytes describe evaluates without panic to JSON
// without NaN, with the label one of the five or insufficient_evidence.
func FuzzGraph(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 2, 0}, uint8(3), false)
	f.Add([]byte{0, 0, 0, 1}, uint8(1), true)
	f.Add([]byte{}, uint8(0), false)
	f.Add([]byte{5, 4, 4, 3, 3, 2, 2, 1, 1, 0}, uint8(6), false)
	f.Fuzz(func(t *testing.T, data []byte, nodes uint8, include bool) {
		n := int(nodes%40) + 0
		tr := &tracedata.TraceData{}
		for i := range n {
			a := tracedata.Agent{Name: fmt.Sprintf("a%d", i)}
			if i%7 == 3 {
				a.Virtual = true
			}
			if i%11 == 5 {
				a.Role = tracedata.RoleAssessor
			}
			tr.Agents = append(tr.Agents, a)
		}
		for i := 0; i+1 < len(data); i += 2 {
			tr.Interactions = append(tr.Interactions, tracedata.Interaction{
				From: fmt.Sprintf("a%d", int(data[i])%max(n, 1)), To: fmt.Sprintf("a%d", int(data[i+1])%(n+2)),
				Count: int(data[i]^data[i+1])%4 - 1,
			})
		}
		res, err := EvaluateGraph(context.Background(), tr, Inputs{Participants: []string{"p"}, Config: Config{IncludeVirtualNodes: include}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("NaN")) {
			t.Fatal("NaN in JSON")
		}
		if !slices.Contains(Labels, res.Label) {
			t.Fatalf("label %q", res.Label)
		}
	})
}

// requireSamePathStats fails unless a and b hold the same bits.
func requireSamePathStats(t *testing.T, what string, a, b pathStats) {
	t.Helper()
	if len(a.bc) != len(b.bc) || a.lsccSum != b.lsccSum || a.lsccMax != b.lsccMax ||
		!slices.Equal(a.reach, b.reach) || !slices.Equal(a.distSum, b.distSum) {
		t.Fatalf("%s: path stats differ: %+v, top down %+v", what, a, b)
	}
	for v := range a.bc {
		if math.Float64bits(a.bc[v]) != math.Float64bits(b.bc[v]) {
			t.Fatalf("%s: node %d: betweenness %v (%#x), top down %v (%#x)", what, v,
				a.bc[v], math.Float64bits(a.bc[v]), b.bc[v], math.Float64bits(b.bc[v]))
		}
	}
}

// TestGraphBottomUpSearchMatchesTopDown: the searches that find their
// last levels bottom up give the bits a search top down all the way gives,
// on graphs of every density, with self-loops, several components, and
// the largest SCC's path sums.
func TestGraphBottomUpSearchMatchesTopDown(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	searches, bottomUp := 0, 0
	for i := range 120 {
		n := 2 + r.IntN(400)
		var edges []wedge
		p := []float64{0.5 / float64(n), 3 / float64(n), 10 / float64(n), 0.2, 0.6}[i%5]
		for u := range n {
			for v := range n {
				if (u != v || r.IntN(20) == 0) && r.Float64() < p {
					edges = append(edges, wedge{from: int32(u), to: int32(v), w: 1 + r.IntN(3)})
				}
			}
		}
		g := newDigraph(make([]string, n), edges)
		inLSCC := make([]bool, n)
		for v := range n {
			inLSCC[v] = r.IntN(3) > 0
		}
		got, err := g.allPairsWith(context.Background(), inLSCC, true, true)
		if err != nil {
			t.Fatal(err)
		}
		want, err := g.allPairsWith(context.Background(), inLSCC, true, false)
		if err != nil {
			t.Fatal(err)
		}
		requireSamePathStats(t, fmt.Sprintf("graph %d (%d nodes, %d edges)", i, n, len(edges)), got, want)
		if want.searchesBottomUp != 0 {
			t.Fatalf("graph %d: %d searches went bottom up with bottom up off", i, want.searchesBottomUp)
		}
		searches += n
		bottomUp += got.searchesBottomUp
	}
	t.Logf("%d of %d searches found levels bottom up", bottomUp, searches)
	if bottomUp < searches/4 {
		t.Fatalf("only %d of %d searches went bottom up: the test no longer exercises it", bottomUp, searches)
	}
}

// TestGraphBottomUpSearchHugeSigma: where the paths from a source number
// 2^53 or more, a sum of sigmas taken bottom up may round otherwise than
// top down, so such a search is done again top down. The graph: a chain of
// layers of six nodes, each joined to four of the next at random (some
// 4^40 paths through it, of many different counts per node), then a wide
// level of nodes that reach each other and a few sinks, which makes the
// search go bottom up.
func TestGraphBottomUpSearchHugeSigma(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const layers, width, wide, sinks = 40, 6, 1500, 20
	n := 1 + layers*width + wide + sinks
	var edges []wedge
	layer := func(l, i int) int32 { return int32(1 + l*width + i) }
	for i := range width {
		edges = append(edges, wedge{from: 0, to: layer(0, i), w: 1})
	}
	for l := range layers - 1 {
		for i := range width {
			for _, j := range r.Perm(width)[:4] {
				edges = append(edges, wedge{from: layer(l, i), to: layer(l+1, j), w: 1})
			}
		}
	}
	firstWide := int32(1 + layers*width)
	for k := range wide {
		for i := range width {
			if r.IntN(2) == 0 || i == k%width {
				edges = append(edges, wedge{from: layer(layers-1, i), to: firstWide + int32(k), w: 1})
			}
		}
	}
	for k := range wide {
		for range 6 {
			edges = append(edges, wedge{from: firstWide + int32(k), to: firstWide + int32(r.IntN(wide)), w: 1})
		}
		if r.IntN(4) == 0 {
			edges = append(edges, wedge{from: firstWide + int32(k), to: firstWide + wide + int32(r.IntN(sinks)), w: 1})
		}
	}
	slices.SortFunc(edges, func(a, b wedge) int {
		if a.from != b.from {
			return int(a.from - b.from)
		}
		return int(a.to - b.to)
	})
	edges = slices.CompactFunc(edges, func(a, b wedge) bool { return a.from == b.from && a.to == b.to })
	g := newDigraph(make([]string, n), edges)
	got, err := g.allPairsWith(context.Background(), nil, true, true)
	if err != nil {
		t.Fatal(err)
	}
	want, err := g.allPairsWith(context.Background(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	requireSamePathStats(t, "layered graph", got, want)
	if got.searchesRedone == 0 {
		t.Fatalf("no search was done again top down (%d went bottom up): the graph no longer has 2^53 paths where it goes bottom up", got.searchesBottomUp)
	}
	t.Logf("%d searches went bottom up, %d of them done again top down", got.searchesBottomUp, got.searchesRedone)
}
