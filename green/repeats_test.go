package green

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/internal/stats"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/scenario"
)

// varyingScenario sends each task to its participant over A2A, like
// routeScenario, and scores the runs of a task from a fixed sequence, so
// the repeats summary has known values to check.
type varyingScenario struct {
	mu     sync.Mutex
	runs   map[string]int
	scores []float64
}

func (*varyingScenario) Name() string { return "varying" }

func (s *varyingScenario) Tasks(req *scenario.Request) ([]scenario.Task, error) {
	var tasks []scenario.Task
	for _, id := range req.Config.TaskIDs {
		tasks = append(tasks, scenario.Task{ID: id})
	}
	return tasks, nil
}

func (s *varyingScenario) Run(ctx context.Context, env *scenario.TaskEnv, task scenario.Task) (*evals.Outcome, error) {
	s.mu.Lock()
	n := s.runs[task.ID]
	s.runs[task.ID]++
	s.mu.Unlock()
	var url string
	for _, u := range env.Request.Participants {
		url = u
	}
	if _, err := env.Messenger.Send(ctx, a2acall.SendRequest{URL: url, Text: fmt.Sprintf("do %s, run %d", task.ID, n+1)}); err != nil {
		return &evals.Outcome{Summary: err.Error()}, nil
	}
	score := s.scores[n%len(s.scores)]
	return &evals.Outcome{Success: score >= 0.5, Score: score, Summary: fmt.Sprintf("run %d", n+1)}, nil
}

// TestExecutorRepeats runs two tasks four times each against a real purple
// agent over loopback A2A: every run is a task result with a trace of its
// own, and the repeats block summarises each task's runs with the numbers
// internal/stats gives for the known scores.
func TestExecutorRepeats(t *testing.T) {
	sc := &varyingScenario{runs: map[string]int{}, scores: []float64{0.2, 0.4, 0.9, 0.5}}
	e, _ := newExecutorForTest(t, map[string]scenario.Scenario{"varying": sc}, 0)
	// The agent returns its steps by the Traceability Extension, so each
	// run's trace holds the callee's answer (an agent that reports nothing
	// would be insufficient_evidence).
	purple := a2atest.Start(t, a2atest.Options{Name: "solo", Extension: true})
	req := mustParse(t, `{"participants": {"solo": %q}, "config": {"scenario": "varying", "task_ids": ["a", "b"],
		"repeats": 4, "settle_quiet_ms": 50, "evaluators": {"text": false}}}`, purple.URL)
	var log progressLog
	res, err := e.Assess(t.Context(), req, log.add)
	if err != nil {
		t.Fatalf("Assess: %v", err)
	}
	if texts := log.all(); !strings.Contains(texts[0], "2 tasks (each run 4 times)") ||
		!strings.Contains(strings.Join(texts, "\n"), "task 2/2 run 4/4 done: b pass") {
		t.Errorf("progress %q", texts)
	}
	if len(res.Tasks) != 8 {
		t.Fatalf("%d task results, want 8 runs", len(res.Tasks))
	}
	if len(res.Repeats) != 2 {
		t.Fatalf("repeats %v", res.Repeats)
	}
	seen := map[string]bool{}
	for i, id := range []string{"a", "b"} {
		r := res.Repeats[id]
		if r == nil || r.Runs != 4 || r.Ran != 4 || r.TooFew || len(r.TraceIDs) != 4 {
			t.Fatalf("%s: %+v", id, r)
		}
		for j, tid := range r.TraceIDs {
			if got := res.Tasks[4*i+j]; got.TraceID != tid || got.TaskID != id {
				t.Errorf("%s run %d: trace %s, task result %s %s", id, j, tid, got.TaskID, got.TraceID)
			}
			if seen[tid] {
				t.Errorf("trace %s used twice", tid)
			}
			seen[tid] = true
		}
		want := stats.Summarize([]float64{0.2, 0.4, 0.9, 0.5})
		got := r.Metrics[report.RepeatMetricScore]
		if got.N != 4 || *got.Mean != *want.Mean || *got.StdDev != *want.StdDev || *got.CILow != *want.CILow || *got.CIHigh != *want.CIHigh {
			t.Errorf("%s: outcome.score %+v, want %+v", id, got, want)
		}
		if s := r.Metrics[report.RepeatMetricSuccess]; *s.Mean != 0.5 {
			t.Errorf("%s: outcome.success mean %v, want 0.5", id, *s.Mean)
		}
		// The graph, latency and judge headlines are summarised too: one
		// agent called by the assessor is a single agent, every run.
		if g := r.Metrics["graph.nodes"]; g.N != 4 || *g.Mean != 1 || *g.StdDev != 0 {
			t.Errorf("%s: graph.nodes %+v", id, g)
		}
		if r.Labels[evals.LabelSingleAgent] != 4 {
			t.Errorf("%s: labels %v", id, r.Labels)
		}
		for _, k := range []string{"judge.overall_score", "latency.steps"} {
			if m, ok := r.Metrics[k]; !ok || m.N != 4 {
				t.Errorf("%s: %s %+v", id, k, m)
			}
		}
		if _, ok := r.Metrics["text.similarity"]; ok {
			t.Errorf("%s: a metric of the switched-off text evaluator", id)
		}
	}
	// The score is over all runs: the mean of 0.2, 0.4, 0.9, 0.5, twice.
	if *res.Score != 50 || *res.PassRate != 0.5 {
		t.Errorf("score %v pass rate %v", *res.Score, *res.PassRate)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Repeats map[string]struct {
			Metrics map[string]struct {
				N      int      `json:"n"`
				CILow  *float64 `json:"ci_low"`
				TooFew bool     `json:"too_few"`
			} `json:"metrics"`
		} `json:"repeats"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Repeats["a"].Metrics["outcome.score"].CILow == nil {
		t.Errorf("JSON repeats block %+v %v", doc.Repeats, err)
	}

	// Two runs: summarised, and flagged too few. One run: no block at all.
	req = mustParse(t, `{"participants": {"solo": %q}, "config": {"scenario": "varying", "task_ids": ["c"],
		"repeats": 2, "settle_quiet_ms": 50, "evaluators": {"text": false, "judge": false}}}`, purple.URL)
	res, err = e.Assess(t.Context(), req, nil)
	if err != nil {
		t.Fatalf("Assess: %v", err)
	}
	r := res.Repeats["c"]
	if len(res.Tasks) != 2 || r == nil || !r.TooFew || !strings.Contains(r.Note, "too few") || !r.Metrics[report.RepeatMetricScore].TooFew {
		t.Errorf("two runs: %d results, %+v", len(res.Tasks), r)
	}
	req = mustParse(t, `{"participants": {"solo": %q}, "config": {"scenario": "varying", "task_ids": ["d"], "settle_quiet_ms": 50}}`, purple.URL)
	res, err = e.Assess(t.Context(), req, nil)
	if err != nil {
		t.Fatalf("Assess: %v", err)
	}
	raw, _ = json.Marshal(res)
	if len(res.Tasks) != 1 || res.Repeats != nil || strings.Contains(string(raw), `"repeats"`) {
		t.Errorf("one run: %d results, repeats %v", len(res.Tasks), res.Repeats)
	}
}

// TestSummarizeRepeatsNotRun: runs the deadline left no time for are listed
// (no trace id) but left out of the numbers.
func TestSummarizeRepeatsNotRun(t *testing.T) {
	ran := func(trace string, score float64) report.TaskResult {
		return report.TaskResult{TaskID: "t", TraceID: trace, Outcome: &evals.Outcome{Score: score, Success: score > 0.5}}
	}
	notRun := report.TaskResult{TaskID: "t", Outcome: &evals.Outcome{Summary: "not run"}}
	got := summarizeRepeats([]report.TaskResult{ran("x", 1), ran("y", 0.5), ran("z", 0), notRun, notRun}, 5)["t"]
	if got.Runs != 5 || got.Ran != 3 || got.TooFew || got.Note != "3 of 5 runs ran" ||
		len(got.TraceIDs) != 5 || got.TraceIDs[3] != "" {
		t.Errorf("%+v", got)
	}
	if s := got.Metrics[report.RepeatMetricScore]; s.N != 3 || *s.Mean != 0.5 {
		t.Errorf("outcome.score %+v", s)
	}
	none := summarizeRepeats([]report.TaskResult{notRun, notRun}, 2)["t"]
	if none.Ran != 0 || !none.TooFew || none.Note != "no run of this task ran" || len(none.Metrics) != 0 {
		t.Errorf("%+v", none)
	}
}
