package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/tracedata"
)

var update = flag.Bool("update", false, "rewrite the golden files testdata/result.json and testdata/summary.md from fullResult")

// goldenPath holds fullResult as coordbench.result/v2 encodes it: the
// document a client of an earlier build may have stored.
var goldenPath = filepath.Join("testdata", "result.json")

// fullResult is summaryFixture with every built-in evaluation filled in,
// an evaluation of an evaluator this package does not know, a participant
// that took no part, and a step.
func fullResult() *Result {
	res := summaryFixture()
	res.Inputs = []string{"coordinator=http://127.0.0.1:9019/"}
	start := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	t := &res.Tasks[0]
	t.Steps = []tracedata.Step{{
		StepID: "s1", TraceID: t.TraceID, CallType: tracedata.CallAgent, Name: "invoke_agent reviewer-1",
		Latency: 812, StartTime: start, EndTime: start.Add(812 * time.Millisecond),
		Agent: "reviewer-1", Caller: "coordinator", LatencyMS: 812.5, Output: "accept",
		Parameters: map[string]any{"n": 3.0, "s": "x"},
	}}
	density, p95, redundancy, diversity := 0.5, 812.5, 0.25, 0.75
	graph := t.Evaluations[evalGraph].(*evals.GraphResult)
	graph.Nodes = []evals.GraphNode{
		{Name: "coordinator", Role: "coordinator", Participant: true, Measured: true, CallsOut: 5, InteractionShare: 1},
		{Name: "ghost", Participant: true, NoAgent: true, Measured: true},
		{Name: "reviewer-1", Measured: true, CallsIn: 3, InteractionShare: 0.6},
	}
	graph.Edges = []evals.GraphEdge{{From: "coordinator", To: "reviewer-1", Weight: 3, Measured: true}}
	graph.MeasuredNodes, graph.MeasuredEdges, graph.Interactions = 3, 1, 5
	graph.Metrics = evals.GraphMetrics{
		DegreeCentrality:  map[string]float64{"coordinator": 1, "reviewer-1": 0.5},
		PageRank:          map[string]*float64{"coordinator": &density, "ghost": nil},
		Density:           evals.Scalar{On: true, Value: density},
		AverageClustering: evals.Scalar{On: true, Null: true},
	}
	graph.Findings[0].Values = map[string]float64{"coordinator": 1}
	graph.Findings[2].Value = &density
	graph.Findings[2].Threshold = 0.3
	graph.Warnings = []string{"agent \"x\" listed twice; the first is used"}
	t.Evaluations[evalLatency] = &evals.LatencyResult{
		Note:    "milliseconds",
		Steps:   evals.LatencySteps{Counted: 4, SameCall: 1},
		Overall: &evals.LatencyStats{Count: 4, AvgMS: 400, P50MS: 300, P95MS: p95, P99MS: p95, MaxMS: p95},
		Agents: map[string]evals.AgentLatency{"reviewer-1": {
			LatencyStats: evals.LatencyStats{Count: 3, MaxMS: p95}, Measured: true,
			ByCallType: map[string]evals.LatencyStats{"AGENT": {Count: 3, MaxMS: p95}},
		}},
		Edges:        []evals.EdgeLatency{{From: "coordinator", To: "reviewer-1", LatencyStats: evals.LatencyStats{Count: 3}}},
		SlowestAgent: &evals.SlowestAgent{Name: "reviewer-1", P95MS: p95},
		CriticalPath: &evals.CriticalPath{DurationMS: p95, Steps: []evals.CriticalStep{{StepID: "s1", Agent: "reviewer-1", DurationMS: p95, SelfMS: p95}},
			AgentShare: map[string]float64{"reviewer-1": 1}},
	}
	jr := t.Evaluations[evalJudge].(*judge.Result)
	jr.Model, jr.Attempts, jr.AttemptErrors = "gpt-4o-mini", 2, []string{"timeout after 1m0s", "HTTP 500"}
	jr.Usage = &judge.Usage{InputTokens: 900, OutputTokens: 120}
	jr.Prompt = &judge.PromptInfo{Bytes: 4096, StepsIncluded: 7, StepsOmitted: 2, Truncated: true}
	jr.CoordinationQuality, jr.Reasoning = "fair", "one coordinator"
	jr.Strengths, jr.Weaknesses = []string{"fast"}, []string{"central"}
	jr.FailureModes = []judge.FailureMode{{Mode: "FM-2.4", Evidence: "reviewer-1 withheld"}}
	jr.Adjustments = []judge.ScoreAdjustment{{Rule: "errors", Delta: -0.1, Detail: "1 failed call"}}
	t.Evaluations[evalText] = &evals.TextResult{
		Available: true, Method: evals.TextMethod,
		Content:    evals.TextContent{StepsWithContent: 4, StepsWithoutContent: 1},
		Redundancy: &redundancy, Diversity: &diversity,
		MostSimilar: &evals.TextPair{Agents: [2]string{"reviewer-1", "reviewer.1"}, Similarity: redundancy},
		Agents: map[string]evals.TextAgent{
			"reviewer-1": {Steps: 2, Messages: 1, Chars: 6, Terms: 1, Redundancy: &redundancy, Excerpt: "accept"},
			"reviewer.1": {Steps: 2, Messages: 1, Chars: 6, Terms: 1, Redundancy: &redundancy, Excerpt: "reject"},
		},
		AgentsWithoutContent: []string{"coordinator"},
		Pairs:                []evals.TextPair{{Agents: [2]string{"reviewer-1", "reviewer.1"}, Similarity: redundancy}},
	}
	t.Evaluations["zeta"] = RawEvaluation(`{"x":[1,2.5,"three"],"y":null}`)
	return res
}

// TestDecodeRoundTrip: a result encodes, decodes to the same types and
// encodes again to the same bytes, and its summary does not change.
func TestDecodeRoundTrip(t *testing.T) {
	res := fullResult()
	first, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(first)
	if err != nil {
		t.Fatal(err)
	}
	second, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("round trip changed the result:\n%s\n%s", first, second)
	}
	ev := back.Tasks[0].Evaluations
	if _, ok := ev[evalGraph].(*evals.GraphResult); !ok {
		t.Errorf("graph decoded as %T", ev[evalGraph])
	}
	if _, ok := ev[evalLatency].(*evals.LatencyResult); !ok {
		t.Errorf("latency decoded as %T", ev[evalLatency])
	}
	if _, ok := ev[evalJudge].(*judge.Result); !ok {
		t.Errorf("judge decoded as %T", ev[evalJudge])
	}
	if _, ok := ev[evalText].(*evals.TextResult); !ok {
		t.Errorf("text decoded as %T", ev[evalText])
	}
	if _, ok := ev["zeta"].(RawEvaluation); !ok {
		t.Errorf("zeta decoded as %T", ev["zeta"])
	}
	if back.Tasks[1].Evaluations != nil {
		t.Errorf("a task without evaluations decoded with %v", back.Tasks[1].Evaluations)
	}
	if got, want := Summary(back), Summary(res); got != want {
		t.Errorf("summary changed in the round trip:\n%s\nwant:\n%s", got, want)
	}

	// Under one key, evaluations cannot collide with the task's own keys.
	var task map[string]json.RawMessage
	var doc struct{ Tasks []json.RawMessage }
	if err := json.Unmarshal(first, &doc); err != nil || json.Unmarshal(doc.Tasks[0], &task) != nil {
		t.Fatalf("encoded task: %v", err)
	}
	for _, name := range []string{evalGraph, evalLatency, evalJudge, evalText, "zeta"} {
		if _, ok := task[name]; ok {
			t.Errorf("evaluation %q is a key of the task itself", name)
		}
	}
	if _, ok := task["evaluations"]; !ok {
		t.Errorf("task keys %v lack evaluations", task)
	}

	// null, even under a built-in evaluator's name, stays null.
	nulls, err := Decode([]byte(`{"schema":"` + Schema + `","tasks":[{"trace_id":"t","agents":[],"interactions":[],"steps":[],"coverage":{},"evaluations":{"graph":null,"zeta":null}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := json.Marshal(nulls.Tasks[0].Evaluations); err != nil || string(raw) != `{"graph":null,"zeta":null}` {
		t.Errorf("null evaluations encode as %s (%v)", raw, err)
	}
}

// TestDecodeGolden: a document stored before today decodes to fullResult,
// encodes back to the same bytes and summarises as fullResult does. A JSON
// tag renamed in a result type fails here, rather than dropping a field or
// a summary line silently: the layout is the schema's, and changing it
// means a new schema and `go test ./report -update`.
func TestDecodeGolden(t *testing.T) {
	want, err := json.MarshalIndent(fullResult(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(goldenPath, append(want, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(golden), want) {
		t.Errorf("fullResult no longer encodes as %s: the result layout changed\n%s", goldenPath, want)
	}
	res, err := Decode(golden)
	if err != nil {
		t.Fatal(err)
	}
	again, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(golden), again) {
		t.Errorf("%s does not round-trip:\n%s", goldenPath, again)
	}
	if got, want := Summary(res), Summary(fullResult()); got != want {
		t.Errorf("summary of %s:\n%s\nwant:\n%s", goldenPath, got, want)
	}
}

// TestDecodeRefuses: other documents, other schemas (v1 included) and
// evaluations of the wrong shape are errors.
func TestDecodeRefuses(t *testing.T) {
	for _, bad := range []string{
		`{"schema":"other/v1","tasks":[]}`,
		`{"schema":"coordbench.result/v1","tasks":[]}`,
		`[]`,
		`{"schema":`,
		`{"schema":"` + Schema + `","tasks":[{"evaluations":{"graph":3}}]}`,
		`{"schema":"` + Schema + `","tasks":[{"evaluations":[]}]}`,
	} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}
