package evals

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/tracedata"
)

// The label oracle (scripts/label_oracle.py) is docs/evaluators.md's rules
// written in Python from the text alone; these tests require the Go
// evaluator to agree with it exactly, label and findings (kinds and agents).

// labelNode is a node of the oracle's input.
type labelNode struct {
	Name     string `json:"name"`
	Assessor bool   `json:"assessor,omitempty"`
	Virtual  bool   `json:"virtual,omitempty"`
	// participantOnly: in the Go trace a participant without an agent.
	participantOnly bool
}

// labelGraph is one graph as the oracle reads it.
type labelGraph struct {
	ID                  string      `json:"id"`
	Nodes               []labelNode `json:"nodes"`
	Edges               [][3]any    `json:"edges"`
	IncludeVirtualNodes bool        `json:"include_virtual_nodes"`
}

// labelOracleResult is the oracle's answer for one graph.
type labelOracleResult struct {
	Measured []string `json:"measured"`
	Label    string   `json:"label"`
	Findings []struct {
		Kind   string   `json:"kind"`
		Agents []string `json:"agents"`
	} `json:"findings"`
}

// trace returns the trace and the inputs the Go evaluator gets for g.
func (g labelGraph) trace() (*tracedata.TraceData, Inputs) {
	td := &tracedata.TraceData{TraceID: g.ID}
	var participants []string
	for _, n := range g.Nodes {
		switch {
		case n.participantOnly:
			participants = append(participants, n.Name)
		case n.Assessor:
			td.Agents = append(td.Agents, tracedata.Agent{Name: n.Name, Role: tracedata.RoleAssessor})
		default:
			td.Agents = append(td.Agents, tracedata.Agent{Name: n.Name, Virtual: n.Virtual})
		}
	}
	for _, e := range g.Edges {
		td.Interactions = append(td.Interactions, tracedata.Interaction{From: e[0].(string), To: e[1].(string), Count: e[2].(int)})
	}
	return td, Inputs{Participants: participants, Config: Config{IncludeVirtualNodes: g.IncludeVirtualNodes}}
}

// runLabelOracle runs scripts/label_oracle.py on the graphs.
func runLabelOracle(t *testing.T, graphs []labelGraph) map[string]labelOracleResult {
	t.Helper()
	py := testenv.NeedPython(t, "networkx")
	script := testenv.RepoFile(t, "scripts/label_oracle.py")
	body, err := json.Marshal(map[string]any{"graphs": graphs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script)
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(script), err, stderr.String())
	}
	var resp struct {
		Networkx string                       `json:"networkx"`
		Results  map[string]labelOracleResult `json:"results"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("oracle answer: %v", err)
	}
	t.Logf("label oracle with networkx %s: %d graphs", resp.Networkx, len(resp.Results))
	return resp.Results
}

// compareLabels checks the Go evaluator against the oracle on every graph
// and returns how many agree.
func compareLabels(t *testing.T, graphs []labelGraph, want map[string]labelOracleResult) (agree int, labels map[string]int) {
	t.Helper()
	labels = map[string]int{}
	for _, g := range graphs {
		exp, ok := want[g.ID]
		if !ok {
			t.Errorf("%s: no oracle result", g.ID)
			continue
		}
		td, in := g.trace()
		res, err := EvaluateGraph(context.Background(), td, in)
		if err != nil {
			t.Errorf("%s: %v", g.ID, err)
			continue
		}
		type finding struct {
			Kind   string
			Agents []string
		}
		var got, wantF []finding
		for _, f := range res.Findings {
			got = append(got, finding{f.Kind, f.Agents})
		}
		for _, f := range exp.Findings {
			wantF = append(wantF, finding{f.Kind, f.Agents})
		}
		if res.Label != exp.Label || !reflect.DeepEqual(got, wantF) || res.MeasuredNodes != len(exp.Measured) {
			t.Errorf("%s: Go %s %v (%d measured), oracle %s %v (measured %v); graph %+v",
				g.ID, res.Label, got, res.MeasuredNodes, exp.Label, wantF, exp.Measured, g)
			continue
		}
		agree++
		labels[res.Label]++
	}
	return agree, labels
}

// randomLabelGraphs returns n seeded random graphs of 0 to 12 agents: plain
// random digraphs of every density, the common shapes and two separate
// groups, perturbed, with
// repeated calls, self-calls, calls of no count, participants without
// agents, endpoints no agent names, and the assessor and virtual callers
// measured or not.
func randomLabelGraphs(n int) []labelGraph {
	r := rand.New(rand.NewPCG(13, 2026))
	var gs []labelGraph
	for len(gs) < n {
		k := len(gs)
		size := k % 13 // every size 0..12, evenly
		names := nodeNames(r, size)
		g := labelGraph{ID: fmt.Sprintf("r%03d-n%d", k, size), Nodes: []labelNode{}, Edges: [][3]any{}}
		for _, name := range names {
			g.Nodes = append(g.Nodes, labelNode{Name: name, participantOnly: r.IntN(8) == 0})
		}
		calls := func() int {
			switch r.IntN(6) {
			case 0:
				return 2 + r.IntN(20) // a busy link
			default:
				return 1
			}
		}
		link := func(u, v string) { g.Edges = append(g.Edges, [3]any{u, v, calls()}) }
		switch shape := r.IntN(7); {
		case size < 2 || shape == 0:
			p := []float64{0.05, 0.15, 0.3, 0.5, 0.8}[r.IntN(5)]
			for _, u := range names {
				for _, v := range names {
					if u != v && r.Float64() < p {
						link(u, v)
					}
				}
			}
		case shape == 1: // chain
			for i := 0; i+1 < size; i++ {
				link(names[i], names[i+1])
			}
		case shape == 2: // fan-out or fan-in
			out := r.IntN(2) == 0
			for _, w := range names[1:] {
				if out {
					link(names[0], w)
				} else {
					link(w, names[0])
				}
			}
		case shape == 3: // star
			for _, w := range names[1:] {
				link(names[0], w)
				link(w, names[0])
			}
		case shape == 4: // mesh
			for _, u := range names {
				for _, v := range names {
					if u != v {
						link(u, v)
					}
				}
			}
		case shape == 5: // two groups that never talk, each a mesh
			for i, u := range names {
				for j, v := range names {
					if i != j && (i < size/2) == (j < size/2) {
						link(u, v)
					}
				}
			}
		default: // ring
			for i := range names {
				link(names[i], names[(i+1)%size])
			}
		}
		// Perturb: drop a link, add one, leave an agent idle.
		if len(g.Edges) > 0 && r.IntN(4) == 0 {
			i := r.IntN(len(g.Edges))
			g.Edges = slices.Delete(g.Edges, i, i+1)
		}
		if size >= 2 && r.IntN(4) == 0 {
			link(names[r.IntN(size)], names[r.IntN(size)]) // may be a self-call
		}
		if r.IntN(5) == 0 {
			g.Nodes = append(g.Nodes, labelNode{Name: "idle", participantOnly: true})
		}
		if size >= 1 && r.IntN(3) == 0 {
			g.Nodes = append(g.Nodes, labelNode{Name: "coordbench-green", Assessor: true})
			g.Edges = append(g.Edges, [3]any{"coordbench-green", names[0], 1})
		}
		if size >= 1 && r.IntN(6) == 0 {
			g.Nodes = append(g.Nodes, labelNode{Name: "user", Virtual: true})
			g.Edges = append(g.Edges, [3]any{"user", names[r.IntN(size)], 1})
		}
		if size >= 1 && r.IntN(10) == 0 {
			// An endpoint no agent names, and a call of no count.
			g.Edges = append(g.Edges, [3]any{names[0], "stranger", 1}, [3]any{names[r.IntN(size)], names[0], 0})
		}
		if size >= 2 && r.IntN(10) == 0 {
			// The same pair listed twice: the calls add up.
			g.Edges = append(g.Edges, [3]any{names[0], names[1], 1}, [3]any{names[0], names[1], 2})
		}
		g.IncludeVirtualNodes = r.IntN(4) == 0
		gs = append(gs, g)
	}
	return gs
}

// TestGraphLabelOracleRandom: the Go evaluator and the label oracle agree
// on 400 random graphs of 0 to 12 agents.
func TestGraphLabelOracleRandom(t *testing.T) {
	graphs := randomLabelGraphs(400)
	want := runLabelOracle(t, graphs)
	agree, labels := compareLabels(t, graphs, want)
	t.Logf("Go agrees with the label oracle on %d of %d random graphs; labels %v", agree, len(graphs), labels)
	// The graphs must exercise every label.
	for _, l := range Labels {
		if labels[l] == 0 && !t.Failed() {
			t.Errorf("no random graph is labelled %s: %v", l, labels)
		}
	}
}

// TestGraphLabelOracleShapes: the oracle and Go agree on the common shapes'
// names (docs/evaluators.md section 5), which are written down here too.
func TestGraphLabelOracleShapes(t *testing.T) {
	shape := func(kind string, n int) labelGraph {
		names := []string{"c"}
		for i := 1; i < n; i++ {
			names = append(names, fmt.Sprintf("r%d", i))
		}
		g := labelGraph{ID: fmt.Sprintf("%s-%d", kind, n), Edges: [][3]any{}}
		for _, name := range names {
			g.Nodes = append(g.Nodes, labelNode{Name: name})
		}
		for i, u := range names {
			for j, v := range names {
				var on bool
				switch kind {
				case "chain":
					on = j == i+1
				case "fan-out":
					on = i == 0 && j > 0
				case "fan-in":
					on = j == 0 && i > 0
				case "star":
					on = (i == 0) != (j == 0)
				case "mesh":
					on = i != j
				}
				if on {
					g.Edges = append(g.Edges, [3]any{u, v, 1})
				}
			}
		}
		return g
	}
	wantAt := map[string]string{"chain": LabelSparse, "fan-out": LabelOverCentralized, "fan-in": LabelOverCentralized,
		"star": LabelBottleneck, "mesh": LabelHealthy}
	var graphs []labelGraph
	for kind := range wantAt {
		for n := 2; n <= 8; n++ {
			graphs = append(graphs, shape(kind, n))
		}
	}
	slices.SortFunc(graphs, func(a, b labelGraph) int { return cmpString(a.ID, b.ID) })
	for _, g := range graphs {
		td, in := g.trace()
		res := evalGraph(t, td, in)
		kind, n := g.ID[:len(g.ID)-2], len(g.Nodes)
		want := wantAt[kind]
		if n == 2 { // a fan-out or fan-in of one worker is a chain; a star of one a mesh
			want = map[string]string{"chain": LabelSparse, "fan-out": LabelSparse, "fan-in": LabelSparse,
				"star": LabelHealthy, "mesh": LabelHealthy}[kind]
		}
		if res.Label != want {
			t.Errorf("%s: label %s, want %s", g.ID, res.Label, want)
		}
	}
	agree, _ := compareLabels(t, graphs, runLabelOracle(t, graphs))
	t.Logf("Go agrees with the label oracle on %d of %d shapes", agree, len(graphs))
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
