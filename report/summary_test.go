package report

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/tracedata"
)

func summaryFixture() *Result {
	score, maxScore, pass, used := 50.0, 100.0, 0.5, 1.234
	return &Result{
		Schema: Schema, Domain: "demo",
		Score: &score, MaxScore: &maxScore, PassRate: &pass, TimeUsed: &used,
		Tasks: []TaskResult{
			{
				TaskID:  "paper-1",
				TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
				Agents: []tracedata.Agent{
					{Name: "api.example.com", Virtual: true},
					{Name: "coordbench-green", Role: tracedata.RoleAssessor},
					{Name: "coordinator"},
					{Name: "reviewer-1"},
					{Name: "reviewer.1"}, // sanitises like reviewer-1
				},
				Interactions: []tracedata.Interaction{
					{From: "coordbench-green", To: "coordinator", Count: 1, BothSides: 1},
					{From: "coordinator", To: "api.example.com", Count: 1, ClientOnly: 1},
					{From: "coordinator", To: "reviewer-1", Count: 3, Errors: 1, BothSides: 3},
					{From: "coordinator", To: "reviewer.1", Count: 1, BothSides: 1},
				},
				Coverage: tracedata.Coverage{
					Interactions: 6, BothSides: 5, ClientOnly: 1, Complete: 5.0 / 6,
					Spans: 30, SpansBySource: map[string]int{"in_process": 8, "otlp": 22},
				},
				Outcome: &evals.Outcome{Success: true, Score: 1, Summary: "expected accept, the team answered accept"},
				Evaluations: map[string]evals.Result{
					"graph": &evals.GraphResult{Label: "centralized", Findings: []evals.GraphFinding{
						{Kind: "over_centralized", Agents: []string{"coordinator"}, Detail: "coordinator takes part in 100% of interactions"},
						{Kind: "bottleneck", Agents: []string{"reviewer-1"}},
						{Kind: "healthy_spread", Agents: []string{}},
					}},
					"judge": &judge.Result{Source: judge.SourceRules, FallbackReason: "no AGENTBEATS_LLM_API_KEY", OverallScore: 0.72},
				},
			},
			{
				TaskID:  "paper-2",
				TraceID: "00000000000000000000000000000002",
				Agents:  []tracedata.Agent{},
				Outcome: &evals.Outcome{Success: false, Summary: "expected reject,\nthe team answered accept"},
				Coverage: tracedata.Coverage{
					Complete: 1,
				},
				EvaluatorErrors: map[string]string{"latency": "boom"},
			},
		},
		Warnings: []string{"task paper-2: trace did not settle"},
	}
}

func TestSummary(t *testing.T) {
	md := Summary(summaryFixture())
	if json.Valid([]byte(md)) {
		t.Fatal("summary is valid JSON; the A2A text part must not be")
	}
	if !strings.HasPrefix(md, "# coordbench result: demo\n") {
		t.Errorf("summary does not start with its title:\n%s", md)
	}
	for _, want := range []string{
		"**Score: 50 / 100** · pass rate 50% (1 of 2 tasks) · 1.23 s",
		"## Task paper-1",
		"- Trace: `4bf92f3577b34da6a3ce929d0e0e4736`",
		"- Outcome: **pass** — expected accept, the team answered accept",
		"- Coverage: 5 of 6 interactions seen from both sides, 1 client side only (83.33% complete); 30 spans: 8 in_process, 22 otlp",
		"- Coordination: **centralized**",
		"  - over_centralized (coordinator): coordinator takes part in 100% of interactions",
		"  - bottleneck (reviewer-1)\n",
		"  - healthy_spread\n",
		"- Judge: overall score 0.72 (rule-based: no AGENTBEATS_LLM_API_KEY)",
		"- Outcome: **fail** — expected reject, the team answered accept",
		"- Coverage: no interactions observed",
		"- Evaluator latency failed: boom",
		"No agents observed.",
		"## Warnings\n\n- task paper-2: trace did not settle",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}

	block := mermaidBlock(t, md)
	for _, want := range []string{
		"flowchart LR",
		`n_coordbench_green["coordbench-green"]`,
		`n_api_example_com["api.example.com"]`,
		`n_reviewer_1["reviewer-1"]`,
		`n_reviewer_1_2["reviewer.1"]`,
		`n_coordbench_green -->|"1 call"| n_coordinator`,
		`n_coordinator -->|"1 call"| n_api_example_com`,
		`n_coordinator -->|"3 calls, 1 error"| n_reviewer_1`,
		`n_coordinator -->|"1 call"| n_reviewer_1_2`,
		"class n_coordbench_green assessor",
		"class n_api_example_com virtual",
	} {
		if !strings.Contains(block, want) {
			t.Errorf("mermaid block lacks %q:\n%s", want, block)
		}
	}
	if n := strings.Count(block, "-->"); n != 4 {
		t.Errorf("mermaid block has %d edges, want 4:\n%s", n, block)
	}
}

// mermaidBlock returns the body of the first (and here only) mermaid block.
func mermaidBlock(t *testing.T, md string) string {
	t.Helper()
	_, rest, ok := strings.Cut(md, "```mermaid\n")
	if !ok {
		t.Fatalf("no mermaid block:\n%s", md)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("mermaid block not closed:\n%s", md)
	}
	if strings.Contains(rest[len(block):], "```mermaid") {
		t.Fatalf("more than one mermaid block:\n%s", md)
	}
	return block
}

func TestSummaryEdgeCases(t *testing.T) {
	if md := Summary(nil); json.Valid([]byte(md)) || !strings.HasPrefix(md, "# ") {
		t.Errorf("Summary(nil) = %q", md)
	}
	md := Summary(&Result{Schema: Schema, Tasks: []TaskResult{}})
	if !strings.Contains(md, "No tasks were assessed.") || json.Valid([]byte(md)) {
		t.Errorf("empty result summary = %q", md)
	}
	// Names that would break Mermaid are quoted safely.
	ids := newMermaidIDs()
	if id := ids.id(`a "b" <c>`); id != "n_a__b___c_" {
		t.Errorf("id = %q", id)
	}
	if got := mermaidText(`a "b" <c>`); got != "a #quot;b#quot; #lt;c#gt;" {
		t.Errorf("mermaidText = %q", got)
	}
}

// summaryGoldenPath is the Markdown summary of fullResult, every section of
// it: a change to the summary shows as a diff of this file in review.
const summaryGoldenPath = "testdata/summary.md"

// TestSummaryGolden: the summary of fullResult is testdata/summary.md, byte
// for byte (`go test ./report -update` rewrites it after a deliberate
// change; read the diff before committing it).
func TestSummaryGolden(t *testing.T) {
	got := Summary(fullResult())
	if *update {
		if err := os.WriteFile(summaryGoldenPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(summaryGoldenPath)
	if err != nil {
		t.Fatalf("%v (run `go test ./report -update` to write it)", err)
	}
	if got != string(want) {
		t.Errorf("the summary of fullResult is not %s (run `go test ./report -update` after a deliberate change):\n%s", summaryGoldenPath, lineDiff(string(want), got))
	}
}

// lineDiff names the first line where got leaves want, with both lines.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl || i >= len(w) || i >= len(g) {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, wl, gl)
		}
	}
	return "(same lines)"
}
