package e2e

import (
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/purple"
	"github.com/coordbench/coordbench/scenario/coordination"
	"github.com/coordbench/coordbench/tracedata"
)

// TestBenchmark runs the whole benchmark over real loopback HTTP: every
// ground-truth scenario's purple topology, a real green agent assessing it
// through a real A2A client, and the label, findings, metrics and calls the
// green agent recovered from the spans alone checked against the ground
// truth. It also checks that every road of spans was used.
func TestBenchmark(t *testing.T) {
	t.Setenv(llmconfig.EnvAPIKey, "")
	before := runtime.NumGoroutine()
	rep, err := Run(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	_ = rep.WriteTable(&table)
	t.Logf("\n%s", table.String())

	if len(rep.Scenarios) < 20 {
		t.Errorf("%d scenarios, want the 20 of the ground truth", len(rep.Scenarios))
	}
	for _, sc := range rep.Scenarios {
		t.Run(sc.ID, func(t *testing.T) {
			if sc.Err != "" {
				t.Fatalf("not assessed: %s", sc.Err)
			}
			if sc.FoundLabel != sc.ExpectedLabel || !slices.Equal(sc.FoundFindings, sc.ExpectedFindings) {
				t.Errorf("found %s %v, want %s %v; interactions %+v", sc.FoundLabel, sc.FoundFindings,
					sc.ExpectedLabel, sc.ExpectedFindings, sc.Interactions)
			}
			for _, m := range sc.MetricMismatches {
				t.Errorf("metric: %s", m)
			}
			for _, m := range sc.EdgeMismatches {
				t.Errorf("calls: %s", m)
			}
			if sc.Coverage.SpansBySource[otelmap.SourceInProcess] == 0 {
				t.Errorf("no in-process spans of the green agent: %v", sc.Coverage.SpansBySource)
			}
			if sc.Outcome == nil || sc.Outcome.Details["error"] != nil {
				t.Errorf("the entry agent did not answer: %+v", sc.Outcome)
			}
			// Every call of an agent that reports its work in some way
			// (OTLP or steps) is seen from both sides.
			if !slices.Contains(sc.Roads, "none") && sc.Coverage.ClientOnly+sc.Coverage.ServerOnly > 0 {
				t.Errorf("coverage %+v: a call seen from one side only", sc.Coverage)
			}
			for _, w := range sc.Coverage.Warnings {
				t.Errorf("assembly warning: %s", w)
			}
		})
	}
	if rep.Accuracy != 1 {
		t.Errorf("accuracy %v, want 1", rep.Accuracy)
	}
	for label, st := range rep.PerLabel {
		if st.Scenarios < 2 || st.Accuracy != 1 {
			t.Errorf("label %s: %+v, want at least 2 scenarios, all recovered", label, st)
		}
	}
	if len(rep.PerLabel) != 5 {
		t.Errorf("labels %v, want all five of the graph evaluator", rep.PerLabel)
	}
	for _, road := range []string{otelmap.SourceInProcess, otelmap.SourceOTLP, otelmap.SourceExtension} {
		if rep.SpansBySource[road] == 0 {
			t.Errorf("no spans came by %s: %v", road, rep.SpansBySource)
		}
	}
	checkNoLeak(t, before)
}

// TestFaultsCostOneTask runs one six-task assessment against one fan-out
// team whose members misbehave on given tasks: a reviewer that hangs, one
// that crashes, one that answers garbage, one that fails after a delay
// and never emits a span, and a coordinator that hangs. Each fault costs
// its own task what it should, and the assessment completes with every
// task recorded.
func TestFaultsCostOneTask(t *testing.T) {
	t.Setenv(llmconfig.EnvAPIKey, "")
	tasks := []string{"iclr2017-305", "iclr2017-749", "iclr2017-767", "acl2017-49", "iclr2017-304", "iclr2017-306"}
	opts := Options{}
	opts.withDefaults()
	coord, err := coordination.New(coordination.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := startGreen(t.Context(), coord, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer stopGreen(h, &opts)
	base := purple.Options{Getenv: opts.Getenv, Logger: opts.Logger, LLM: &llmconfig.Config{},
		OTLPEndpoint: h.URL(), NoExtension: true, PeerTimeout: 15 * time.Second, FlushOnResponse: true}
	spec := func(name, role string, f purple.Faults, peers ...string) purple.AgentSpec {
		o := base
		o.Name, o.Role, o.Faults = name, role, f
		return purple.AgentSpec{Options: o, PeerNames: peers}
	}
	sys, err := h.StartTeam(t.Context(), []purple.AgentSpec{
		spec("coordinator", purple.RoleCoordinator, purple.Faults{Hang: true, Tasks: tasks[5:6]},
			"reviewer-1", "reviewer-2", "reviewer-3", "reviewer-4"),
		spec("reviewer-1", purple.RoleReviewer, purple.Faults{Hang: true, Tasks: tasks[1:2]}),
		spec("reviewer-2", purple.RoleReviewer, purple.Faults{Crash: true, Tasks: tasks[2:3]}),
		spec("reviewer-3", purple.RoleReviewer, purple.Faults{Malformed: true, Tasks: tasks[3:4]}),
		spec("reviewer-4", purple.RoleReviewer, purple.Faults{FailureRate: 1, Delay: 100 * time.Millisecond, NoSpans: true, Tasks: tasks[4:5]}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sys.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	started := time.Now()
	res, err := assess(t.Context(), h, sys.URLs(), map[string]any{
		"entry_role": "coordinator",
		"task_ids":   tasks,
		// PeerTimeout is how the coordinator tells reviewer-1's hang:
		// 15 s, so that an honest reviewer on a machine at a tenth of a
		// core is never taken for a hung one (at 3 s, one was, at load
		// 20); the call timeout is far above it plus the coordinator's own
		// work, so only the hung coordinator reaches it.
		"call_timeout_seconds": 60,
		"settle_quiet_ms":      400,
		"settle_max_wait_ms":   opts.SettleMaxWait.Milliseconds(), // reviewer-4 exports nothing
		"evaluators":           map[string]bool{judge.Name: false},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("assessment of %d tasks took %v", len(res.Tasks), time.Since(started))
	if len(res.Tasks) != len(tasks) {
		t.Fatalf("%d tasks recorded, want %d", len(res.Tasks), len(tasks))
	}
	edge := func(i int, to string) tracedata.Interaction {
		for _, in := range res.Tasks[i].Interactions {
			if in.From == "coordinator" && in.To == to {
				return in
			}
		}
		t.Errorf("task %s: no call coordinator -> %s in %+v", tasks[i], to, res.Tasks[i].Interactions)
		return tracedata.Interaction{}
	}
	for i, task := range res.Tasks {
		if task.TaskID != tasks[i] || task.Outcome == nil {
			t.Fatalf("task %d: %s, outcome %v", i, task.TaskID, task.Outcome)
		}
		answered := task.Outcome.Details["error"] == nil
		if answered != (i != 5) {
			t.Errorf("task %s: answered %v: %s", task.TaskID, answered, task.Outcome.Summary)
		}
		// reviewer-4 emits no span: its calls are seen from the
		// coordinator's side only, on every task.
		if i == 5 {
			continue
		}
		if in := edge(i, "reviewer-4"); in.ClientOnly != 1 {
			t.Errorf("task %s: coordinator -> reviewer-4 %+v, want one client-only call", task.TaskID, in)
		}
	}
	if in := edge(1, "reviewer-1"); in.Errors != 1 {
		t.Errorf("hung reviewer: %+v, want a failed call", in)
	}
	if in := edge(2, "reviewer-2"); in.Errors != 1 {
		t.Errorf("crashed reviewer: %+v, want a failed call", in)
	}
	if r, _ := res.Tasks[3].Outcome.Details["rationale"].(string); !strings.Contains(r, "reviewer-3") || !strings.Contains(r, "no review") {
		t.Errorf("malformed reviewer: the coordinator's rationale %q should say reviewer-3 gave no review", r)
	}
	if in := edge(4, "reviewer-4"); in.Errors != 1 {
		t.Errorf("failing reviewer: %+v, want a failed call", in)
	}
	last := res.Tasks[5].Outcome
	if last.Success || !strings.Contains(last.Summary, "no answer within") {
		t.Errorf("hung coordinator: %s", last.Summary)
	}
	for i := range 5 {
		if in := edge(i, "reviewer-1"); i != 1 && in.Errors != 0 {
			t.Errorf("task %s: reviewer-1's fault leaked into it: %+v", tasks[i], in)
		}
	}
}

// TestDelegationFor pins the delegation each pattern gives its agents.
func TestDelegationFor(t *testing.T) {
	for _, tc := range []struct{ pattern, role, want string }{
		{"chain", "coordinator", purple.DelegateChain},
		{"chain", "reviewer", purple.DelegateChain},
		{"fan_out", "coordinator", purple.DelegateFanOut},
		{"hub", "reviewer", purple.DelegateConsult},
		{"consult", "reviewer", purple.DelegateConsult},
	} {
		if got := DelegationFor(tc.pattern, tc.role); got != tc.want {
			t.Errorf("%s/%s: %s, want %s", tc.pattern, tc.role, got, tc.want)
		}
	}
}

func checkNoLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
