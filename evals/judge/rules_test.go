package judge

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/tracedata"
)

func judgeRule(t *testing.T, trace *tracedata.TraceData, in evals.Inputs) ruleVerdict {
	t.Helper()
	v := ruleJudge(trace, in)
	sum := 0.0
	for _, a := range v.Adjustments {
		sum += a.Delta
	}
	if want := judgeRound4(judgeClamp01(sum)); v.Score != want {
		t.Errorf("score %v is not the clamped sum of its adjustments %v", v.Score, want)
	}
	if v.Quality != judgeQualityFor(v.Score) {
		t.Errorf("quality %q for score %v", v.Quality, v.Score)
	}
	for _, fm := range v.FailureModes {
		if _, ok := canonicalMode(fm.Mode); !ok || fm.Evidence == "" {
			t.Errorf("failure mode %+v", fm)
		}
	}
	return v
}

func judgeModes(v ruleVerdict) []string {
	var out []string
	for _, fm := range v.FailureModes {
		out = append(out, fm.Mode)
	}
	return out
}

func judgeRules(v ruleVerdict) map[string]float64 {
	out := map[string]float64{}
	for _, a := range v.Adjustments {
		out[a.Rule] = a.Delta
	}
	return out
}

func judgeClose(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// A healthy, fully observed, successful run scores its outcome.
func TestJudgeRulesHealthy(t *testing.T) {
	trace := judgeTrace()
	trace.Steps[2].Error = ""
	trace.Interactions[0].Errors = 0
	trace.Coverage.Complete = 1
	in := judgeInputs()
	in.Prior = judgeGraphPrior("healthy")
	in.Outcome = &evals.Outcome{Success: true, Score: 1, Summary: "all tests passed"}
	v := judgeRule(t, trace, in)
	if v.Score != 1 || v.Quality != "excellent" || len(v.FailureModes) != 0 || len(v.Adjustments) != 1 {
		t.Errorf("verdict %+v", v)
	}
	joined := strings.Join(v.Strengths, " | ")
	for _, want := range []string{"the task succeeded (outcome score 1.00): all tests passed", "graph label healthy, density 0.33",
		"all 4 agent calls succeeded", "every call was observed from both sides", "all 3 agents took part"} {
		if !strings.Contains(joined, want) {
			t.Errorf("strengths %q lack %q", joined, want)
		}
	}
}

// The example trace: bottleneck, one of four calls failed, an absent
// participant, 75% coverage.
func TestJudgeRulesPenalties(t *testing.T) {
	in := judgeInputs()
	in.Participants = append(in.Participants, "tester")
	v := judgeRule(t, judgeTrace(), in)
	got := judgeRules(v)
	want := map[string]float64{"outcome": 0.8, "bottleneck": -0.15, "failed_calls": -0.075, "absent_agents": -0.1, "coverage": -0.025}
	if len(got) != len(want) {
		t.Errorf("adjustments %v, want %v", got, want)
	}
	for k, w := range want {
		if !judgeClose(got[k], w) {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
	if v.Score != 0.45 || v.Quality != "fair" {
		t.Errorf("score %v %q, want 0.45 fair", v.Score, v.Quality)
	}
	if !slices.Equal(judgeModes(v), []string{ModePrematureTermination, ModeInfoWithholding}) {
		t.Fatalf("modes %v", judgeModes(v))
	}
	if ev := v.FailureModes[0].Evidence; !strings.Contains(ev, "planner -> coder (step s3) failed after 300ms: deadline exceeded") {
		t.Errorf("FM-3.1 evidence %q", ev)
	}
	if ev := v.FailureModes[1].Evidence; !strings.HasPrefix(ev, "tester was named as a participant") {
		t.Errorf("FM-2.4 evidence %q", ev)
	}
	joined := strings.Join(v.Weaknesses, " | ")
	if !strings.Contains(joined, "bottleneck [planner=0.67]: agent(s) on more than half") {
		t.Errorf("bottleneck weakness lacks the graph finding: %q", joined)
	}
	if !strings.HasPrefix(v.Reasoning, "Rule-based verdict: start 0.80 (task succeeded") || !strings.HasSuffix(v.Reasoning, "score 0.45 (fair).") {
		t.Errorf("reasoning %q", v.Reasoning)
	}
}

// No outcome and no calls: a neutral start minus the missing coordination.
func TestJudgeRulesNothingObserved(t *testing.T) {
	trace := &tracedata.TraceData{TraceID: "empty", Coverage: tracedata.Coverage{Complete: 1}}
	v := judgeRule(t, trace, evals.Inputs{Participants: []string{"a", "b"}})
	got := judgeRules(v)
	if !judgeClose(got["outcome"], 0.5) || !judgeClose(got["no_interactions"], -0.3) || !judgeClose(got["absent_agents"], -0.2) {
		t.Errorf("adjustments %v", got)
	}
	if v.Score != 0 || v.Quality != "poor" {
		t.Errorf("score %v %q", v.Score, v.Quality)
	}
	if !slices.Equal(judgeModes(v), []string{ModeInfoWithholding, ModeInfoWithholding}) {
		t.Errorf("modes %v", judgeModes(v))
	}
	joined := strings.Join(v.Weaknesses, " | ")
	for _, want := range []string{"outcome is unknown", "no graph result", "no call between agents"} {
		if !strings.Contains(joined, want) {
			t.Errorf("weaknesses %q lack %q", joined, want)
		}
	}
	// The absent-agent penalty is capped.
	v = judgeRule(t, trace, evals.Inputs{Participants: []string{"a", "b", "c", "d", "e"}})
	if !judgeClose(judgeRules(v)["absent_agents"], ruleAbsentMax) {
		t.Errorf("absent penalty %v, want the cap", judgeRules(v)["absent_agents"])
	}
}

// The same message sent three times is step repetition; a failed task with
// every call successful is missing verification.
func TestJudgeRulesRepetitionAndVerification(t *testing.T) {
	trace := judgeTrace()
	trace.Steps[2].Error = ""
	trace.Interactions[0].Errors = 0
	extra := trace.Steps[3]
	extra.StepID = "s6"
	trace.Steps = append(trace.Steps, extra)
	trace.Interactions[0].Count = 3
	trace.Coverage.Complete = 1
	in := judgeInputs()
	in.Prior = judgeGraphPrior("over-centralised")
	in.Outcome = &evals.Outcome{Success: false, Score: 0.2, Summary: "2 of 5 tests failed"}
	v := judgeRule(t, trace, in)
	if !slices.Equal(judgeModes(v), []string{ModeStepRepetition, ModeNoVerification}) {
		t.Fatalf("modes %v", judgeModes(v))
	}
	if ev := v.FailureModes[0].Evidence; ev != `planner sent coder the same message 3 times: "implement merge sort"` {
		t.Errorf("FM-1.3 evidence %q", ev)
	}
	if ev := v.FailureModes[1].Evidence; !strings.HasSuffix(ev, "2 of 5 tests failed") {
		t.Errorf("FM-3.2 evidence %q", ev)
	}
	got := judgeRules(v)
	if !judgeClose(got["over_centralized"], -0.1) || !judgeClose(got["repetition"], -0.05) {
		t.Errorf("adjustments %v", got)
	}
	if v.Score != 0.05 || v.Quality != "poor" {
		t.Errorf("score %v %q", v.Score, v.Quality)
	}
}

// An isolated label with nobody absent (the agent talked only to the
// assessor) is scored once, with the graph's finding as evidence.
func TestJudgeRulesIsolatedLabel(t *testing.T) {
	in := judgeInputs()
	in.Prior = map[string]evals.Result{"graph": judgeFakeResult{
		"label":    "isolated",
		"findings": []any{map[string]any{"kind": "isolated", "agents": []any{"reviewer"}, "detail": "1 agent(s) neither called nor were called by another measured agent"}},
	}}
	v := judgeRule(t, judgeTrace(), in)
	if !judgeClose(judgeRules(v)["isolated"], ruleIsolatedLabel) || judgeRules(v)["absent_agents"] != 0 {
		t.Errorf("adjustments %v", judgeRules(v))
	}
	var fm *FailureMode
	for i := range v.FailureModes {
		if v.FailureModes[i].Mode == ModeInfoWithholding {
			fm = &v.FailureModes[i]
		}
	}
	if fm == nil || !strings.Contains(fm.Evidence, "isolated [reviewer]: 1 agent(s) neither called") {
		t.Errorf("FM-2.4 = %+v", fm)
	}
}

// An insufficient_evidence label is named among the weaknesses. Where the
// request named the participants, it costs what the worst shape verdict
// costs: a participant that keeps its coordination from being seen (by
// exporting nothing, or spans no rule reads) scores no better than with
// any label it hid. Offline, with no participants named, it costs nothing
// by itself.
func TestJudgeRulesInsufficientEvidence(t *testing.T) {
	withLabel := func(label string, participants bool) evals.Inputs {
		in := judgeInputs()
		in.Prior = map[string]evals.Result{"graph": judgeFakeResult{"label": label}}
		if !participants {
			in.Participants = nil
		}
		return in
	}
	v := judgeRule(t, judgeTrace(), withLabel(evals.LabelInsufficientEvidence, true))
	if !slices.ContainsFunc(v.Weaknesses, func(w string) bool { return strings.Contains(w, "too little evidence") }) {
		t.Errorf("weaknesses %q", v.Weaknesses)
	}
	if !judgeClose(judgeRules(v)["insufficient_evidence"], ruleInsufficientEvidence) {
		t.Errorf("adjustments %v: want insufficient_evidence %v", judgeRules(v), ruleInsufficientEvidence)
	}
	for _, label := range []string{evals.LabelHealthy, "bottleneck", "over_centralized", "sparse", "isolated", "single_agent"} {
		if hid := judgeRule(t, judgeTrace(), withLabel(label, true)); v.Score > hid.Score {
			t.Errorf("run: score %v with insufficient_evidence, above %v with %s: hiding the shape pays", v.Score, hid.Score, label)
		}
	}
	offline := judgeRule(t, judgeTrace(), withLabel(evals.LabelInsufficientEvidence, false))
	if base := judgeRule(t, judgeTrace(), withLabel(evals.LabelHealthy, false)); offline.Score != base.Score {
		t.Errorf("offline: score %v with insufficient_evidence, %v with healthy (which costs nothing): want the same", offline.Score, base.Score)
	}
	if _, ok := judgeRules(offline)["insufficient_evidence"]; ok {
		t.Errorf("offline adjustments %v: no insufficient_evidence term without participants", judgeRules(offline))
	}
}

type judgeUnencodable struct{ C chan int }

func (judgeUnencodable) Headline() map[string]float64 { return nil }

// The graph result is read defensively: any shape, or none.
func TestJudgeRulesGraphShapes(t *testing.T) {
	cases := []struct {
		name  string
		prior map[string]evals.Result
		want  judgeGraphView
	}{
		{"none", nil, judgeGraphView{}},
		{"unencodable", map[string]evals.Result{"graph": judgeUnencodable{}}, judgeGraphView{}},
		{"not an object", map[string]evals.Result{"graph": judgeFakeResult(nil)}, judgeGraphView{}},
		{"string findings, top-level density", map[string]evals.Result{"graph": judgeFakeResult{
			"label": "Over Centralized", "findings": []any{"planner in 80% of calls", 3.5}, "density": 0.1}},
			judgeGraphView{Present: true, Label: "over_centralized", Findings: []string{"planner in 80% of calls", "3.5"}, Density: 0.1, HasDensity: true}},
		{"keyed findings, density object, null metrics", map[string]evals.Result{"graph": judgeFakeResult{
			"label": 7, "findings": map[string]any{"z": "last", "a": map[string]any{"agent": "x"}},
			"metrics": nil, "graph": map[string]any{"density": map[string]any{"value": 0.5}}}},
			judgeGraphView{Present: true, Findings: []string{"a: [x]", "z: last"}, Density: 0.5, HasDensity: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := judgeReadGraph(c.prior)
			if got.Present != c.want.Present || got.Label != c.want.Label || !slices.Equal(got.Findings, c.want.Findings) ||
				got.Density != c.want.Density || got.HasDensity != c.want.HasDensity {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			// Whatever the shape, the judge answers.
			in := judgeInputs()
			in.Prior = c.prior
			judgeRule(t, judgeTrace(), in)
		})
	}
}

// The graph evaluator's real result, when it is registered, is read too.
func TestJudgeRulesReadsGraphEvaluator(t *testing.T) {
	var graph evals.Evaluator
	for _, e := range evals.NewRegistry(evals.Options{}).Evaluators() {
		if e.Name() == "graph" {
			graph = e
		}
	}
	if graph == nil {
		t.Skip("graph evaluator not registered")
	}
	trace := judgeTrace()
	in := judgeInputs()
	res, err := graph.Evaluate(context.Background(), trace, in)
	if err != nil {
		t.Fatalf("graph: %v", err)
	}
	g := judgeReadGraph(map[string]evals.Result{"graph": res})
	if !g.Present || g.Label == "" {
		t.Errorf("graph result read as %+v", g)
	}
}

func TestJudgeRulesDeterministic(t *testing.T) {
	in := judgeInputs()
	in.Participants = []string{"zed", "coder", "alpha", "planner", "reviewer"}
	j := New(Options{Config: Config{}})
	var first []byte
	for i := range 5 {
		r := judgeEval(t, j, judgeTrace(), in)
		b, _ := json.Marshal(r)
		if i == 0 {
			first = b
		} else if string(b) != string(first) {
			t.Fatalf("run %d differs:\n%s\n%s", i, b, first)
		}
	}
	var m map[string]any
	_ = json.Unmarshal(first, &m)
	if m["source"] != "rule-based" || m["fallback_reason"] != "no AGENTBEATS_LLM_API_KEY" {
		t.Errorf("result JSON %s", first)
	}
}
