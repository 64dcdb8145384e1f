package groundtruth_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/groundtruth"
)

// TestGroundTruthTopologyLabels builds, for every entry, the graph in which
// each agent calls each of its peers once (plus the assessor's hand-off to
// the entry agent), runs the real graph evaluator on it, and checks the
// entry's expected label and findings. The labels in the file come from
// the label oracle (label_oracle_test.go); this test needs no Python.
func TestGroundTruthTopologyLabels(t *testing.T) {
	gt, err := groundtruth.Default()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]bool{}
	for i := range gt.Scenarios {
		sc := &gt.Scenarios[i]
		td, names := sc.Topology.Trace(sc.ID, assessor)
		res, err := evals.EvaluateGraph(context.Background(), td, evals.Inputs{Participants: names})
		if err != nil {
			t.Fatalf("%s: %v", sc.ID, err)
		}
		var kinds []string
		for _, f := range res.Findings {
			kinds = append(kinds, f.Kind)
		}
		if res.Label != sc.Expected.Label || !slices.Equal(kinds, sc.Expected.Findings) {
			t.Errorf("%s (%s): the graph evaluator gives label %q, findings %v; the file says %q, %v",
				sc.ID, sc.Topology.Pattern, res.Label, kinds, sc.Expected.Label, sc.Expected.Findings)
		}
		labels[res.Label] = true
	}
	if len(labels) < 4 {
		t.Errorf("the entries cover labels %v; want at least 4 different ones", labels)
	}
}

// coordValidGroundTruth returns a small, valid ground truth for mutation tests.
func coordValidGroundTruth() groundtruth.GroundTruth {
	accept := groundtruth.DecisionAccept
	return groundtruth.GroundTruth{Schema: groundtruth.Schema, Scenarios: []groundtruth.Entry{{
		ID: "a-1",
		Paper: groundtruth.Paper{Venue: "iclr_2017", Split: "test", ID: "1", Title: "T", Decision: &accept,
			MeanRecommendation: 7, RecommendationScale: groundtruth.RecommendationScale{Min: 1, Max: 10}, NormalizedRecommendation: 0.6667},
		Topology: groundtruth.Topology{Entry: "coordinator", Pattern: "fan_out", Agents: []groundtruth.TopologyAgent{
			{Name: "coordinator", Role: "coordinator", Peers: []string{"reviewer-1"}, ExportsSpans: true},
			{Name: "reviewer-1", Role: "reviewer"},
		}},
		Expected: groundtruth.Expectation{Decision: groundtruth.DecisionAccept, Label: "sparse", Findings: []string{}},
	}}}
}

func TestGroundTruthValidate(t *testing.T) {
	if g := coordValidGroundTruth(); g.Validate() != nil {
		t.Fatalf("the valid ground truth fails: %v", g.Validate())
	}
	reject := groundtruth.DecisionReject
	for _, tc := range []struct {
		name   string
		mutate func(g *groundtruth.GroundTruth)
		want   string
	}{
		{"schema", func(g *groundtruth.GroundTruth) { g.Schema = "v0" }, `schema "v0"`},
		{"empty", func(g *groundtruth.GroundTruth) { g.Scenarios = nil }, "no scenarios"},
		{"duplicate id", func(g *groundtruth.GroundTruth) { g.Scenarios = append(g.Scenarios, g.Scenarios[0]) }, `id "a-1" used twice`},
		{"id with comma", func(g *groundtruth.GroundTruth) { g.Scenarios[0].ID = "a,b" }, "without spaces or commas"},
		{"no title", func(g *groundtruth.GroundTruth) { g.Scenarios[0].Paper.Title = " " }, "title is required"},
		{"bad decision", func(g *groundtruth.GroundTruth) { s := "maybe"; g.Scenarios[0].Paper.Decision = &s }, `decision "maybe"`},
		{"expected differs from paper", func(g *groundtruth.GroundTruth) { g.Scenarios[0].Paper.Decision = &reject }, `paper's facts give "reject"`},
		{"derived decision", func(g *groundtruth.GroundTruth) {
			p := &g.Scenarios[0].Paper
			p.Decision, p.MeanRecommendation, p.NormalizedRecommendation = nil, 3, 2.0/9
		}, `paper's facts give "reject"`},
		{"mean off scale", func(g *groundtruth.GroundTruth) { g.Scenarios[0].Paper.MeanRecommendation = 11 }, "outside the scale"},
		{"normalised inconsistent", func(g *groundtruth.GroundTruth) { g.Scenarios[0].Paper.NormalizedRecommendation = 0.5 }, "normalized_recommendation 0.5"},
		{"bad label", func(g *groundtruth.GroundTruth) { g.Scenarios[0].Expected.Label = "chaos" }, `label "chaos"`},
		{"bad finding", func(g *groundtruth.GroundTruth) { g.Scenarios[0].Expected.Findings = []string{"star"} }, `finding "star"`},
		{"bad pattern", func(g *groundtruth.GroundTruth) { g.Scenarios[0].Topology.Pattern = "mesh" }, `pattern "mesh"`},
		{"unknown entry", func(g *groundtruth.GroundTruth) { g.Scenarios[0].Topology.Entry = "boss" }, `entry "boss"`},
		{"unknown peer", func(g *groundtruth.GroundTruth) { g.Scenarios[0].Topology.Agents[0].Peers = []string{"ghost"} }, `peer "ghost"`},
		{"self peer", func(g *groundtruth.GroundTruth) {
			g.Scenarios[0].Topology.Agents[0].Peers = []string{"coordinator"}
		}, "lists itself"},
		{"unobservable caller", func(g *groundtruth.GroundTruth) { g.Scenarios[0].Topology.Agents[0].ExportsSpans = false }, "cannot be seen"},
		{"bad role", func(g *groundtruth.GroundTruth) { g.Scenarios[0].Topology.Agents[1].Role = "critic" }, `role "critic"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := coordValidGroundTruth()
			tc.mutate(&g)
			err := g.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestGroundTruthLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := groundtruth.Load(filepath.Join(dir, "none.json")); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema": "coordbench.ground_truth/v1", "scenarios": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := groundtruth.Load(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("truncated file: %v", err)
	}
	// Unknown keys are ignored: later versions add them.
	g := coordValidGroundTruth()
	raw, _ := json.Marshal(g)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	m["generated_by"] = "a later issue"
	m["scenarios"].([]any)[0].(map[string]any)["expected"].(map[string]any)["metrics"] = map[string]any{"density": 0.5}
	raw, _ = json.Marshal(m)
	ext := filepath.Join(dir, "ext.json")
	if err := os.WriteFile(ext, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := groundtruth.Load(ext); err != nil {
		t.Errorf("a file with added keys: %v", err)
	}
}

// TestResolve: a path wins, then the variable, then the built-in file; a
// path or variable naming nothing is an error, never the built-in file.
func TestResolve(t *testing.T) {
	builtIn, err := groundtruth.Default()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	got, err := groundtruth.Resolve("", getenv)
	if err != nil || len(got.Scenarios) != len(builtIn.Scenarios) {
		t.Fatalf("Resolve with nothing set = %v, %v; want the built-in file", got, err)
	}
	dir := t.TempDir()
	small := coordValidGroundTruth()
	raw, _ := json.Marshal(small)
	file := filepath.Join(dir, "gt.json")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	env[groundtruth.EnvFile] = file
	if got, err := groundtruth.Resolve("", getenv); err != nil || len(got.Scenarios) != 1 {
		t.Errorf("Resolve with $%s = %v, %v; want the file's one entry", groundtruth.EnvFile, got, err)
	}
	env[groundtruth.EnvFile] = filepath.Join(dir, "none.json")
	if _, err := groundtruth.Resolve("", getenv); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("a variable naming nothing: %v", err)
	}
	if got, err := groundtruth.Resolve(file, getenv); err != nil || len(got.Scenarios) != 1 {
		t.Errorf("Resolve(path) = %v, %v; the path wins over the variable", got, err)
	}
}
