package judge

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/evals"
)

// The standard registry runs graph, latency, judge, text: the judge sees the
// graph's and the latency evaluator's results, and the text evaluator
// everything before it.
func TestNewRegistryOrder(t *testing.T) {
	reg := evals.NewRegistry(evals.Options{Judge: New(Options{})})
	if got := reg.Names(); !slices.Equal(got, []string{evals.GraphEvaluatorName, "latency", Name, "text"}) {
		t.Errorf("run order %v", got)
	}
	if err := reg.Register(New(Options{})); err == nil {
		t.Error("a second judge was registered")
	}
	// A registry built by Register alone, in reverse, orders by tier too.
	own := &evals.Registry{}
	others := evals.NewRegistry(evals.Options{}).Evaluators()
	slices.Reverse(others)
	for _, e := range append(others[:1:1], append([]evals.Evaluator{New(Options{})}, others[1:]...)...) {
		if err := own.Register(e); err != nil {
			t.Fatal(err)
		}
	}
	if got := own.Names(); slices.Index(got, "latency") > slices.Index(got, Name) || got[0] != evals.GraphEvaluatorName {
		t.Errorf("registered order %v", got)
	}
}

// TestJudgeSeesLatency runs the standard registry on a trace: the LLM's
// prompt carries the latency evaluator's headline (slowest agent, critical
// path), and the rule-based judge, given a critical path one agent held,
// names that agent.
func TestJudgeSeesLatency(t *testing.T) {
	f := newJudgeFakeLLM(t, judgeOK(judgeGoodAnswer))
	reg := evals.NewRegistry(evals.Options{Judge: New(Options{Config: judgeTestConfig(f)})})
	in := judgeInputs()
	in.Prior = nil
	in.Config = evals.Config{Evaluators: map[string]bool{"text": false}}
	rep := reg.Run(context.Background(), judgeTrace(), in, nil)
	if len(rep.Errors) > 0 {
		t.Fatalf("errors %v", rep.Errors)
	}
	lat, ok := rep.Results["latency"].(*evals.LatencyResult)
	if !ok || lat.SlowestAgent == nil || lat.CriticalPath == nil {
		t.Fatalf("latency result %+v", rep.Results["latency"])
	}
	prompt := judgeUserPrompt(t, f.body(0))
	sec := prompt[strings.Index(prompt, "## Latency"):]
	sec = sec[:strings.Index(sec, "## Other evaluators")]
	for _, want := range []string{
		"note: " + evals.LatencyNote,
		"slowest agent: " + lat.SlowestAgent.Name,
		"critical path: ",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("the prompt's latency section lacks %q:\n%s", want, sec)
		}
	}
	if !strings.Contains(prompt, `"latency":{`) {
		t.Error("the latency result is not among the other evaluators' results")
	}

	// The rule-based judge (no key) on the same registry order.
	reg = evals.NewRegistry(evals.Options{Judge: New(Options{})})
	rep = reg.Run(context.Background(), judgeTrace(), in, nil)
	jr := rep.Results[Name].(*Result)
	if jr.Source != SourceRules {
		t.Fatalf("source %s", jr.Source)
	}
	view := judgeReadLatency(rep.Results)
	t.Logf("critical path shares %+v", view.Shares)
	want := ruleLatencyEvidence(view)
	// planner's own work is most of this trace's critical path.
	if want == "" || !strings.HasPrefix(want, "planner's own work took 73%") || !slices.Contains(jr.Weaknesses, want) {
		t.Errorf("critical path %+v: evidence %q, weaknesses %q", view.Shares, want, jr.Weaknesses)
	}

	// A critical path one agent held, and one shared evenly.
	held := map[string]evals.Result{"latency": judgeFakeResult{
		"note":          evals.LatencyNote,
		"slowest_agent": map[string]any{"name": "coder", "p95_ms": 300.0},
		"critical_path": map[string]any{"duration_ms": 900.0, "agent_share": map[string]any{"coder": 0.7, "planner": 0.2, "reviewer": 0.1}},
	}}
	v := ruleJudge(judgeTrace(), evals.Inputs{Prior: held})
	if !slices.Contains(v.Weaknesses, "coder's own work took 70% of the critical path (900 ms): the other agents waited on it; it is also the slowest agent (p95 300 ms)") {
		t.Errorf("weaknesses %q", v.Weaknesses)
	}
	before := ruleJudge(judgeTrace(), evals.Inputs{})
	if v.Score != before.Score {
		t.Errorf("latency moved the score: %v -> %v", before.Score, v.Score)
	}
	even := map[string]evals.Result{"latency": judgeFakeResult{
		"critical_path": map[string]any{"duration_ms": 900.0, "agent_share": map[string]any{"coder": 0.5, "planner": 0.5}},
	}}
	for _, w := range ruleJudge(judgeTrace(), evals.Inputs{Prior: even}).Weaknesses {
		if strings.Contains(w, "critical path") {
			t.Errorf("an even critical path named: %q", w)
		}
	}
}
