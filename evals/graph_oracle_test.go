package evals

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/tracedata"
)

// oracleCase is one random graph: the trace the evaluator sees and the
// measured graph networkx sees.
type oracleCase struct {
	id    string
	trace *tracedata.TraceData
	in    Inputs
	// nodes and edges of the measured graph, worked out here independently
	// of the evaluator, for the oracle.
	nodes []string
	edges [][3]any
}

// namePool mixes case, digits and non-ASCII, so ordering by name is
// exercised: Go's byte order and Python's code-point order must agree.
var namePool = []string{
	"alpha", "Alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
	"iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma",
	"tau", "upsilon", "phi", "chi", "psi", "omega", "agent-9", "agent-10", "émile",
	"Zoë", "planner", "coder", "critic", "reviewer", "writer", "searcher",
}

func nodeNames(r *rand.Rand, n int) []string {
	names := make([]string, 0, n)
	perm := r.Perm(len(namePool))
	for i := 0; i < n; i++ {
		if i < len(perm) {
			names = append(names, namePool[perm[i]])
		} else {
			names = append(names, fmt.Sprintf("n%04d", i))
		}
	}
	return names
}

type dedge struct {
	from, to string
	w        int
}

// buildCase makes the trace and the measured graph. virtual and assessor
// name agents drawn but not measured (unless include), participants may
// name agents the trace lacks.
func buildCase(id string, agents []string, edges []dedge, virtual, assessor, participants []string, include bool) oracleCase {
	tr := &tracedata.TraceData{TraceID: id}
	measured := map[string]bool{}
	for _, a := range agents {
		tr.Agents = append(tr.Agents, tracedata.Agent{Name: a, IdentifiedBy: tracedata.IdentityAgentName})
		measured[a] = true
	}
	for _, a := range virtual {
		tr.Agents = append(tr.Agents, tracedata.Agent{Name: a, IdentifiedBy: tracedata.IdentityUser, Virtual: true})
		measured[a] = include
	}
	for _, a := range assessor {
		tr.Agents = append(tr.Agents, tracedata.Agent{Name: a, IdentifiedBy: tracedata.IdentityServiceName, Role: tracedata.RoleAssessor})
		measured[a] = include
	}
	for _, p := range participants {
		if _, ok := measured[p]; !ok {
			measured[p] = true
		}
	}
	sort.Slice(tr.Agents, func(i, j int) bool { return tr.Agents[i].Name < tr.Agents[j].Name })
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].from != edges[j].from {
			return edges[i].from < edges[j].from
		}
		return edges[i].to < edges[j].to
	})
	c := oracleCase{id: id, trace: tr, in: Inputs{Participants: participants, Config: Config{IncludeVirtualNodes: include}}}
	for _, e := range edges {
		tr.Interactions = append(tr.Interactions, tracedata.Interaction{From: e.from, To: e.to, Count: e.w})
		tr.Coverage.Interactions += e.w
		if measured[e.from] && measured[e.to] {
			c.edges = append(c.edges, [3]any{e.from, e.to, e.w})
		}
	}
	for name, m := range measured {
		if m {
			c.nodes = append(c.nodes, name)
		}
	}
	sort.Strings(c.nodes)
	if c.edges == nil {
		c.edges = [][3]any{}
	}
	if c.nodes == nil {
		c.nodes = []string{}
	}
	return c
}

// randomEdges draws each ordered pair (no self-loops) with probability p.
func randomEdges(r *rand.Rand, names []string, p float64) []dedge {
	var es []dedge
	for _, u := range names {
		for _, v := range names {
			if u != v && r.Float64() < p {
				es = append(es, dedge{u, v, 1 + r.IntN(5)})
			}
		}
	}
	return es
}

// randomDAG orders the nodes at random and draws forward edges only.
func randomDAG(r *rand.Rand, names []string, p float64) []dedge {
	order := slices.Clone(names)
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	var es []dedge
	for i := range order {
		for j := i + 1; j < len(order); j++ {
			if r.Float64() < p {
				es = append(es, dedge{order[i], order[j], 1 + r.IntN(5)})
			}
		}
	}
	return es
}

func complete(names []string) []dedge {
	var es []dedge
	for _, u := range names {
		for _, v := range names {
			if u != v {
				es = append(es, dedge{u, v, 1})
			}
		}
	}
	return es
}

// oracleCases returns the random graphs of the oracle test, from a fixed
// seed.
func oracleCases() []oracleCase {
	r := rand.New(rand.NewPCG(20260101, 6))
	var cs []oracleCase
	add := func(c oracleCase) { cs = append(cs, c) }
	id := func(kind string) string { return fmt.Sprintf("%02d-%s", len(cs), kind) }

	// Degenerate graphs.
	add(buildCase(id("empty"), nil, nil, nil, nil, nil, false))
	add(buildCase(id("only-virtual"), nil, []dedge{{"user", "green", 1}}, []string{"user"}, []string{"green"}, nil, false))
	add(buildCase(id("one-node"), []string{"solo"}, nil, nil, nil, nil, false))
	add(buildCase(id("one-participant"), nil, nil, nil, nil, []string{"absent"}, false))
	add(buildCase(id("one-edge"), []string{"a", "b"}, []dedge{{"a", "b", 3}}, nil, nil, nil, false))
	add(buildCase(id("reciprocal-pair"), []string{"a", "b"}, []dedge{{"a", "b", 2}, {"b", "a", 5}}, nil, nil, nil, false))
	add(buildCase(id("two-isolated"), []string{"a", "b"}, nil, nil, nil, nil, false))

	// Regular shapes.
	for n := 2; n <= 6; n++ {
		names := nodeNames(r, n)
		add(buildCase(id(fmt.Sprintf("complete-%d", n)), names, complete(names), nil, nil, nil, false))
	}
	{
		names := nodeNames(r, 5)
		var chain, cycle, biStar, outStar []dedge
		for i := 0; i+1 < len(names); i++ {
			chain = append(chain, dedge{names[i], names[i+1], 1})
		}
		cycle = append(slices.Clone(chain), dedge{names[4], names[0], 2})
		for _, leaf := range names[1:] {
			biStar = append(biStar, dedge{names[0], leaf, 2}, dedge{leaf, names[0], 1})
			outStar = append(outStar, dedge{names[0], leaf, 1})
		}
		add(buildCase(id("chain"), names, chain, nil, nil, nil, false))
		add(buildCase(id("cycle"), names, cycle, nil, nil, nil, false))
		add(buildCase(id("bidirectional-star"), names, biStar, nil, nil, nil, false))
		add(buildCase(id("out-star-dag"), names, outStar, nil, nil, nil, false))
	}

	// DAGs: eigenvector centrality fails to converge.
	for i := 0; i < 8; i++ {
		names := nodeNames(r, 3+r.IntN(10))
		add(buildCase(id("dag"), names, randomDAG(r, names, 0.2+0.4*r.Float64()), nil, nil, nil, false))
	}
	// Random digraphs, sparse to dense, often with isolated nodes.
	for i := 0; i < 15; i++ {
		names := nodeNames(r, 2+r.IntN(29))
		add(buildCase(id("random"), names, randomEdges(r, names, 0.03+0.45*r.Float64()), nil, nil, nil, false))
	}
	// Mostly reciprocal edges.
	for i := 0; i < 3; i++ {
		names := nodeNames(r, 4+r.IntN(10))
		var es []dedge
		for _, e := range randomEdges(r, names, 0.15) {
			if e.from < e.to {
				es = append(es, e)
				if r.Float64() < 0.7 {
					es = append(es, dedge{e.to, e.from, 1 + r.IntN(5)})
				}
			}
		}
		add(buildCase(id("reciprocal"), names, es, nil, nil, nil, false))
	}
	// Several components: disjoint random pieces plus isolated nodes.
	for i := 0; i < 5; i++ {
		names := nodeNames(r, 8+r.IntN(20))
		var es []dedge
		lo := 0
		for lo < len(names) {
			hi := min(len(names), lo+1+r.IntN(7))
			es = append(es, randomEdges(r, names[lo:hi], 0.5)...)
			lo = hi
		}
		add(buildCase(id("components"), names, es, nil, nil, nil, false))
	}
	// Virtual callers and the assessor: drawn, not measured.
	for i := 0; i < 5; i++ {
		names := nodeNames(r, 3+r.IntN(8))
		es := randomEdges(r, names, 0.3)
		es = append(es, dedge{"user", names[0], 1}, dedge{"green-agent", names[len(names)-1], 2}, dedge{names[1], "user", 1})
		add(buildCase(id("virtual"), names, es, []string{"user"}, []string{"green-agent"}, nil, false))
	}
	// ... and measured with IncludeVirtualNodes.
	for i := 0; i < 3; i++ {
		names := nodeNames(r, 3+r.IntN(8))
		es := randomEdges(r, names, 0.3)
		es = append(es, dedge{"user", names[0], 1}, dedge{"green-agent", names[len(names)-1], 2})
		add(buildCase(id("include-virtual"), names, es, []string{"user"}, []string{"green-agent"}, nil, true))
	}
	// Participants the trace has no agent for: isolated nodes.
	for i := 0; i < 3; i++ {
		names := nodeNames(r, 3+r.IntN(8))
		parts := append(slices.Clone(names[:2]), "no-show", "absent-agent")
		add(buildCase(id("participants"), names, randomEdges(r, names, 0.4), nil, nil, parts, false))
	}
	// Self-loops: networkx counts them in degree, density, eigenvector and
	// PageRank and skips them in clustering and paths.
	for i := 0; i < 3; i++ {
		names := nodeNames(r, 3+r.IntN(8))
		es := randomEdges(r, names, 0.3)
		for _, n := range names[:2] {
			es = append(es, dedge{n, n, 1 + r.IntN(3)})
		}
		add(buildCase(id("self-loops"), names, es, nil, nil, nil, false))
	}
	// Large enough for the parallel, chunked all-pairs pass.
	for i := 0; i < 2; i++ {
		names := nodeNames(r, 300+r.IntN(100))
		add(buildCase(id("large"), names, randomEdges(r, names, 5.0/float64(len(names))), nil, nil, nil, false))
	}
	return cs
}

// oracleOut is one graph's metrics as networkx (or the evaluator's JSON,
// decoded into the same shape) reports them.
type oracleOut struct {
	Empty    bool     `json:"empty"`
	Nodes    int      `json:"nodes"`
	Edges    int      `json:"edges"`
	Isolates []string `json:"isolates"`

	DegreeCentrality               map[string]*float64 `json:"degree_centrality"`
	BetweennessCentrality          map[string]*float64 `json:"betweenness_centrality"`
	ClosenessCentrality            map[string]*float64 `json:"closeness_centrality"`
	EigenvectorCentrality          map[string]*float64 `json:"eigenvector_centrality"`
	EigenvectorCentralityConverged bool                `json:"eigenvector_centrality_converged"`
	PageRank                       map[string]*float64 `json:"pagerank"`
	PageRankConverged              bool                `json:"pagerank_converged"`
	Clustering                     map[string]*float64 `json:"clustering"`

	Density                           *float64 `json:"density"`
	AverageClustering                 *float64 `json:"average_clustering"`
	NumberWeaklyConnectedComponents   *float64 `json:"number_weakly_connected_components"`
	NumberStronglyConnectedComponents *float64 `json:"number_strongly_connected_components"`
	AverageShortestPathLength         *float64 `json:"average_shortest_path_length"`
	AverageShortestPathLengthScope    string   `json:"average_shortest_path_length_scope"`
	Diameter                          *float64 `json:"diameter"`
	DiameterScope                     string   `json:"diameter_scope"`
	LargestSCC                        []string `json:"largest_scc"`
}

// requireNetworkx skips (or, with CI=true, fails) when /usr/bin/python3
// cannot import networkx.
func requireNetworkx(t testing.TB) {
	t.Helper()
	testenv.NeedPython(t, "networkx", "scipy")
}

// runOracle sends every graph to networkx in one process call.
func runOracle(t *testing.T, cs []oracleCase) map[string]oracleOut {
	t.Helper()
	type graphIn struct {
		ID    string   `json:"id"`
		Nodes []string `json:"nodes"`
		Edges [][3]any `json:"edges"`
	}
	var req struct {
		Graphs []graphIn `json:"graphs"`
	}
	for _, c := range cs {
		req.Graphs = append(req.Graphs, graphIn{c.id, c.nodes, c.edges})
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", "testdata/networkx_oracle.py")
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("networkx oracle: %v\n%s", err, stderr.String())
	}
	var resp struct {
		Networkx string               `json:"networkx"`
		Results  map[string]oracleOut `json:"results"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("decoding the oracle's answer: %v", err)
	}
	t.Logf("networkx %s answered for %d graphs", resp.Networkx, len(resp.Results))
	return resp.Results
}

// TestGraphOracle checks every metric of the evaluator against networkx on
// more than 50 random graphs, fallback flags included, and the findings and
// label against the rules applied to networkx's numbers.
func TestGraphOracle(t *testing.T) {
	requireNetworkx(t)
	cs := oracleCases()
	if len(cs) < 50 {
		t.Fatalf("only %d oracle graphs", len(cs))
	}
	want := runOracle(t, cs)
	var failed, sccScope int
	for _, c := range cs {
		exp, ok := want[c.id]
		if !ok {
			t.Errorf("%s: no oracle result", c.id)
			continue
		}
		res, err := EvaluateGraph(context.Background(), c.trace, c.in)
		if err != nil {
			t.Errorf("%s: %v", c.id, err)
			continue
		}
		got := decodeAsOracle(t, res)
		compareOracle(t, c.id, got, exp)
		if !exp.EigenvectorCentralityConverged {
			failed++
		}
		if exp.AverageShortestPathLengthScope == ScopeLargestSCC {
			sccScope++
		}
	}
	for _, name := range GraphMetricNames {
		t.Logf("max |Go - networkx| %-38s %.3g", name, maxDiff[name])
	}
	t.Logf("%d graphs: %d eigenvector failures, %d path metrics on the largest SCC", len(cs), failed, sccScope)
	if failed == 0 || sccScope == 0 {
		t.Errorf("the oracle graphs do not exercise the fallbacks (eigenvector failures %d, largest-SCC scopes %d)", failed, sccScope)
	}
}

// decodeAsOracle runs the result through its JSON, as a consumer sees it.
func decodeAsOracle(t *testing.T, res *GraphResult) oracleOut {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	var doc struct {
		Empty         bool            `json:"empty"`
		MeasuredNodes int             `json:"measured_nodes"`
		MeasuredEdges int             `json:"measured_edges"`
		Metrics       json.RawMessage `json:"metrics"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	var out oracleOut
	if err := json.Unmarshal(doc.Metrics, &out); err != nil {
		t.Fatalf("decoding metrics: %v", err)
	}
	out.Empty, out.Nodes, out.Edges = doc.Empty, doc.MeasuredNodes, doc.MeasuredEdges
	return out
}

// maxDiff records, per metric, the largest difference seen from networkx.
var maxDiff = map[string]float64{}

func compareOracle(t *testing.T, id string, got, exp oracleOut) {
	t.Helper()
	const exact, iterative = 1e-9, 1e-6
	if got.Empty != exp.Empty || got.Nodes != exp.Nodes || got.Edges != exp.Edges {
		t.Errorf("%s: empty/nodes/edges = %v/%d/%d, networkx %v/%d/%d", id, got.Empty, got.Nodes, got.Edges, exp.Empty, exp.Nodes, exp.Edges)
	}
	nodeMaps := []struct {
		name     string
		got, exp map[string]*float64
		tol      float64
	}{
		{MetricDegreeCentrality, got.DegreeCentrality, exp.DegreeCentrality, exact},
		{MetricBetweennessCentrality, got.BetweennessCentrality, exp.BetweennessCentrality, exact},
		{MetricClosenessCentrality, got.ClosenessCentrality, exp.ClosenessCentrality, exact},
		{MetricClustering, got.Clustering, exp.Clustering, exact},
		{MetricPageRank, got.PageRank, exp.PageRank, iterative},
	}
	if got.EigenvectorCentralityConverged != exp.EigenvectorCentralityConverged {
		t.Errorf("%s: eigenvector_centrality_converged = %v, networkx %v", id, got.EigenvectorCentralityConverged, exp.EigenvectorCentralityConverged)
	} else if exp.EigenvectorCentralityConverged {
		nodeMaps = append(nodeMaps, struct {
			name     string
			got, exp map[string]*float64
			tol      float64
		}{MetricEigenvectorCentrality, got.EigenvectorCentrality, exp.EigenvectorCentrality, iterative})
	} else {
		for name, v := range got.EigenvectorCentrality {
			if v != nil {
				t.Errorf("%s: eigenvector_centrality[%s] = %v, want null as networkx raised", id, name, *v)
			}
		}
	}
	if got.PageRankConverged != exp.PageRankConverged {
		t.Errorf("%s: pagerank_converged = %v, networkx %v", id, got.PageRankConverged, exp.PageRankConverged)
	}
	for _, m := range nodeMaps {
		if len(m.got) != len(m.exp) {
			t.Errorf("%s: %s has %d nodes, networkx %d", id, m.name, len(m.got), len(m.exp))
		}
		for name, e := range m.exp {
			g, ok := m.got[name]
			if !ok {
				t.Errorf("%s: %s lacks %q", id, m.name, name)
				continue
			}
			if g != nil && e != nil {
				maxDiff[m.name] = max(maxDiff[m.name], math.Abs(*g-*e))
			}
			if !closeEnough(g, e, m.tol) {
				t.Errorf("%s: %s[%s] = %s, networkx %s", id, m.name, name, fmtPtr(g), fmtPtr(e))
			}
		}
	}
	scalars := []struct {
		name     string
		got, exp *float64
	}{
		{MetricDensity, got.Density, exp.Density},
		{MetricAverageClustering, got.AverageClustering, exp.AverageClustering},
		{MetricNumberWeaklyConnectedComponents, got.NumberWeaklyConnectedComponents, exp.NumberWeaklyConnectedComponents},
		{MetricNumberStronglyConnectedComponents, got.NumberStronglyConnectedComponents, exp.NumberStronglyConnectedComponents},
		{MetricAverageShortestPathLength, got.AverageShortestPathLength, exp.AverageShortestPathLength},
		{MetricDiameter, got.Diameter, exp.Diameter},
	}
	for _, s := range scalars {
		if s.got != nil && s.exp != nil {
			maxDiff[s.name] = max(maxDiff[s.name], math.Abs(*s.got-*s.exp))
		}
		if !closeEnough(s.got, s.exp, exact) {
			t.Errorf("%s: %s = %s, networkx %s", id, s.name, fmtPtr(s.got), fmtPtr(s.exp))
		}
	}
	if got.AverageShortestPathLengthScope != exp.AverageShortestPathLengthScope || got.DiameterScope != exp.DiameterScope {
		t.Errorf("%s: scopes %q/%q, networkx %q/%q", id, got.AverageShortestPathLengthScope, got.DiameterScope,
			exp.AverageShortestPathLengthScope, exp.DiameterScope)
	}
	if !slices.Equal(got.LargestSCC, exp.LargestSCC) {
		t.Errorf("%s: largest_scc %v, networkx %v", id, got.LargestSCC, exp.LargestSCC)
	}
}

func closeEnough(a, b *float64, tol float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return math.Abs(*a-*b) <= tol
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprintf("%.17g", *p)
}
