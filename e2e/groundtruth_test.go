package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/internal/testenv"
)

// The ground truth's expected metrics are networkx's values for each
// topology's graph (each agent calling each of its peers once, the
// assessor left out). These tests hold the file to that: networkx as the
// oracle, and the Go graph evaluator on the same graph.

func loadGroundTruth(t *testing.T) *groundtruth.GroundTruth {
	t.Helper()
	gt, err := groundtruth.Default()
	if err != nil {
		t.Fatal(err)
	}
	return gt
}

// TestGroundTruthCoverage: one scenario per paper of the data set, every
// label of the graph evaluator at least twice, every pattern used, and
// every road of spans (OTLP, extension steps, both, neither) among the
// agents.
func TestGroundTruthCoverage(t *testing.T) {
	gt := loadGroundTruth(t)
	if len(gt.Scenarios) != 20 {
		t.Errorf("%d scenarios, want one per PeerRead paper (20)", len(gt.Scenarios))
	}
	labels, patterns, roadsSeen, papers := map[string]int{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, sc := range gt.Scenarios {
		labels[sc.Expected.Label]++
		patterns[sc.Topology.Pattern] = true
		for _, r := range roads(sc.Topology) {
			roadsSeen[r] = true
		}
		ref := sc.Paper.Ref()
		if papers[ref] {
			t.Errorf("paper %s used twice", ref)
		}
		papers[ref] = true
		if sc.Expected.Metrics == nil {
			t.Errorf("%s: no expected metrics", sc.ID)
		}
	}
	for _, l := range []string{evals.LabelIsolated, evals.LabelBottleneck, evals.LabelOverCentralized, evals.LabelHealthy, evals.LabelSparse} {
		if labels[l] < 2 {
			t.Errorf("label %s occurs %d times, want at least 2 (%v)", l, labels[l], labels)
		}
	}
	for _, p := range []string{"fan_out", "chain", "hub", "consult", "isolated"} {
		if !patterns[p] {
			t.Errorf("pattern %s unused", p)
		}
	}
	for _, r := range []string{"otlp", "steps", "otlp+steps", "none"} {
		if !roadsSeen[r] {
			t.Errorf("no agent reports by %s", r)
		}
	}
	// Every paper of the data set has a scenario.
	t.Run("peerread", func(t *testing.T) {
		dir := testenv.SharedData(t, "peerread")
		files, _ := filepath.Glob(filepath.Join(dir, "*", "*", "reviews", "*.json"))
		for _, f := range files {
			rel, _ := filepath.Rel(dir, f)
			parts := strings.Split(rel, string(filepath.Separator))
			ref := parts[0] + "/" + parts[1] + "/" + strings.TrimSuffix(parts[3], ".json")
			if !papers[ref] {
				t.Errorf("paper %s of the data set has no scenario", ref)
			}
		}
	})
}

// TestGroundTruthMetricsGoEvaluator: the Go graph evaluator on each
// topology's graph gives the file's label, findings and metrics.
func TestGroundTruthMetricsGoEvaluator(t *testing.T) {
	gt := loadGroundTruth(t)
	for i := range gt.Scenarios {
		sc := &gt.Scenarios[i]
		td, names := sc.Topology.Trace(sc.ID, "coordbench-green")
		res, err := evals.EvaluateGraph(context.Background(), td, evals.Inputs{Participants: names})
		if err != nil {
			t.Fatalf("%s: %v", sc.ID, err)
		}
		var kinds []string
		for _, f := range res.Findings {
			kinds = append(kinds, f.Kind)
		}
		if res.Label != sc.Expected.Label || !slices.Equal(kinds, sc.Expected.Findings) {
			t.Errorf("%s: Go gives %s %v, the file %s %v", sc.ID, res.Label, kinds, sc.Expected.Label, sc.Expected.Findings)
		}
		if sc.Expected.Metrics == nil {
			continue
		}
		for _, m := range CompareMetrics(sc.Expected.Metrics, &res.Metrics) {
			t.Errorf("%s: %s", sc.ID, m)
		}
	}
}

// TestGroundTruthMetricsNetworkx: networkx, given each topology's graph,
// computes the file's metrics. The oracle is evals/testdata's script; it
// needs /usr/bin/python3 with networkx (skipped without, failed under
// CI=true).
func TestGroundTruthMetricsNetworkx(t *testing.T) {
	requireNetworkx(t)
	gt := loadGroundTruth(t)
	type graphIn struct {
		ID    string   `json:"id"`
		Nodes []string `json:"nodes"`
		Edges [][3]any `json:"edges"`
	}
	var req struct {
		Graphs []graphIn `json:"graphs"`
	}
	for _, sc := range gt.Scenarios {
		g := graphIn{ID: sc.ID, Edges: [][3]any{}}
		for _, a := range sc.Topology.Agents {
			g.Nodes = append(g.Nodes, a.Name)
		}
		for _, c := range sc.Topology.Calls() {
			g.Edges = append(g.Edges, [3]any{c.From, c.To, 1})
		}
		sort.Strings(g.Nodes)
		req.Graphs = append(req.Graphs, g)
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", filepath.Join("..", "evals", "testdata", "networkx_oracle.py"))
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("networkx oracle: %v\n%s", err, stderr.String())
	}
	var resp struct {
		Networkx string `json:"networkx"`
		Results  map[string]struct {
			Density                           *float64           `json:"density"`
			AverageClustering                 *float64           `json:"average_clustering"`
			NumberWeaklyConnectedComponents   *float64           `json:"number_weakly_connected_components"`
			NumberStronglyConnectedComponents *float64           `json:"number_strongly_connected_components"`
			BetweennessCentrality             map[string]float64 `json:"betweenness_centrality"`
			DegreeCentrality                  map[string]float64 `json:"degree_centrality"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("oracle answer: %v", err)
	}
	t.Logf("networkx %s", resp.Networkx)
	for _, sc := range gt.Scenarios {
		want := sc.Expected.Metrics
		nx, ok := resp.Results[sc.ID]
		if want == nil || !ok || nx.Density == nil || nx.AverageClustering == nil ||
			nx.NumberWeaklyConnectedComponents == nil || nx.NumberStronglyConnectedComponents == nil {
			t.Errorf("%s: file %v, networkx %+v", sc.ID, want, nx)
			continue
		}
		check := func(name string, file, oracle float64) {
			if math.Abs(file-oracle) > metricTolerance {
				t.Errorf("%s: %s is %v in the file, %v by networkx", sc.ID, name, file, oracle)
			}
		}
		check("density", want.Density, *nx.Density)
		check("average_clustering", want.AverageClustering, *nx.AverageClustering)
		check("number_weakly_connected_components", float64(want.NumberWeaklyConnectedComponents), *nx.NumberWeaklyConnectedComponents)
		check("number_strongly_connected_components", float64(want.NumberStronglyConnectedComponents), *nx.NumberStronglyConnectedComponents)
		for _, per := range []struct {
			name         string
			file, oracle map[string]float64
		}{
			{"betweenness_centrality", want.BetweennessCentrality, nx.BetweennessCentrality},
			{"degree_centrality", want.DegreeCentrality, nx.DegreeCentrality},
		} {
			for _, k := range unionKeys(per.file, per.oracle) {
				fv, fok := per.file[k]
				ov, ook := per.oracle[k]
				if !fok || !ook {
					t.Errorf("%s: %s[%s] in the file %v, by networkx %v", sc.ID, per.name, k, fok, ook)
					continue
				}
				check(fmt.Sprintf("%s[%s]", per.name, k), fv, ov)
			}
		}
	}
}

// requireNetworkx skips (or, with CI=true, fails) when /usr/bin/python3
// cannot import networkx, as the evaluator's oracle tests do.
func requireNetworkx(t *testing.T) {
	t.Helper()
	testenv.NeedPython(t, "networkx", "scipy")
}
