package groundtruth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/internal/testenv"
)

// The ground truth's labels come from the label oracle
// (scripts/label_oracle.py: docs/evaluators.md's rules in Python with
// networkx, written without reading the Go evaluator). These tests hold the
// file, the oracle and the Go graph evaluator to each other.

const assessor = "coordbench-green"

// TestGroundTruthLabelOracle: the label oracle, given each topology's graph
// (Topology.Calls, in Go, independently of the derivation script), gives the
// file's label and findings, and so does the Go evaluator, agent for agent,
// on the topology's trace (Topology.Trace).
func TestGroundTruthLabelOracle(t *testing.T) {
	py := testenv.NeedPython(t, "networkx")
	script := testenv.RepoFile(t, "scripts/label_oracle.py")
	gt, err := groundtruth.Default()
	if err != nil {
		t.Fatal(err)
	}
	type node struct {
		Name     string `json:"name"`
		Assessor bool   `json:"assessor,omitempty"`
	}
	type graph struct {
		ID    string   `json:"id"`
		Nodes []node   `json:"nodes"`
		Edges [][3]any `json:"edges"`
	}
	var req struct {
		Graphs []graph `json:"graphs"`
	}
	for _, sc := range gt.Scenarios {
		g := graph{ID: sc.ID, Nodes: []node{{Name: assessor, Assessor: true}}, Edges: [][3]any{{assessor, sc.Topology.Entry, 1}}}
		for _, a := range sc.Topology.Agents {
			g.Nodes = append(g.Nodes, node{Name: a.Name})
		}
		for _, c := range sc.Topology.Calls() {
			g.Edges = append(g.Edges, [3]any{c.From, c.To, 1})
		}
		req.Graphs = append(req.Graphs, g)
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script)
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("label oracle: %v\n%s", err, stderr.String())
	}
	type finding struct {
		Kind   string   `json:"kind"`
		Agents []string `json:"agents"`
	}
	var resp struct {
		Results map[string]struct {
			Label    string    `json:"label"`
			Findings []finding `json:"findings"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("oracle answer: %v", err)
	}
	agree := 0
	for i := range gt.Scenarios {
		sc := &gt.Scenarios[i]
		want, ok := resp.Results[sc.ID]
		if !ok {
			t.Errorf("%s: no oracle result", sc.ID)
			continue
		}
		var kinds []string
		for _, f := range want.Findings {
			kinds = append(kinds, f.Kind)
		}
		if want.Label != sc.Expected.Label || !slices.Equal(kinds, sc.Expected.Findings) {
			t.Errorf("%s: the oracle gives %s %v, the file %s %v (run scripts/derive_ground_truth_labels.py)",
				sc.ID, want.Label, kinds, sc.Expected.Label, sc.Expected.Findings)
		}
		td, names := sc.Topology.Trace(sc.ID, assessor)
		res, err := evals.EvaluateGraph(context.Background(), td, evals.Inputs{Participants: names})
		if err != nil {
			t.Fatalf("%s: %v", sc.ID, err)
		}
		var got []finding
		for _, f := range res.Findings {
			got = append(got, finding{f.Kind, f.Agents})
		}
		if res.Label != want.Label || !slices.EqualFunc(got, want.Findings, func(a, b finding) bool {
			return a.Kind == b.Kind && slices.Equal(a.Agents, b.Agents)
		}) {
			t.Errorf("%s: Go gives %s %+v, the oracle %s %+v", sc.ID, res.Label, got, want.Label, want.Findings)
			continue
		}
		agree++
	}
	t.Logf("Go agrees with the label oracle on %d of %d ground-truth topologies", agree, len(gt.Scenarios))
}

// TestGroundTruthLabelsDerived: the file is what
// scripts/derive_ground_truth_labels.py makes of it.
func TestGroundTruthLabelsDerived(t *testing.T) {
	py := testenv.NeedPython(t, "networkx")
	script := testenv.RepoFile(t, "scripts/derive_ground_truth_labels.py")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, script, "--check", "--file", testenv.RepoFile(t, "groundtruth/ground_truth.json")).CombinedOutput()
	if err != nil {
		t.Errorf("%s --check: %v\n%s", script, err, out)
	}
}
