package loopback

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/purple"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/scenario"
)

// Settling on evidence (docs/participants.md#when-a-tasks-trace-is-complete),
// end to end: a green agent on loopback, a purple team (a coordinator fanning
// out to two reviewers) exporting real OTLP to its receiver through the
// OpenTelemetry Go SDK's batch span processor, and the result read back from the
// Result artifact. The tests assert outcomes only; how long a wait took is never
// checked.

// sdkDefaultBatch is the batch span processor's default schedule delay in
// the OpenTelemetry SDKs (Go, Python, JS): 5 s.
const sdkDefaultBatch = sdktrace.DefaultScheduleDelay * time.Millisecond

// settleHarness starts a green agent whose coordination scenario runs on
// the built-in papers; before, when set, runs before each task's scenario.
func settleHarness(t *testing.T, before func(ctx context.Context, task scenario.Task)) *Harness {
	t.Helper()
	return testHarness(t, before, tracestore.Limits{})
}

// testHarness is settleHarness with the span store's limits.
func testHarness(t *testing.T, before func(ctx context.Context, task scenario.Task), limits tracestore.Limits) *Harness {
	t.Helper()
	t.Setenv(llmconfig.EnvAPIKey, "")
	sc, err := stubCoordinationScenario()
	if err != nil {
		t.Fatal(err)
	}
	var s scenario.Scenario = sc
	if before != nil {
		s = hookScenario{Scenario: sc, before: before}
	}
	h, err := Start(t.Context(), Options{Green: green.ServerOptions{
		Scenarios:       map[string]scenario.Scenario{scenario.Coordination: s},
		Getenv:          noDemoEnv,
		Logger:          quietLogger,
		ShutdownTimeout: demoStopTimeout,
		StoreLimits:     limits,
	}, CallTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return h
}

// hookScenario runs before ahead of each task.
type hookScenario struct {
	scenario.Scenario
	before func(ctx context.Context, task scenario.Task)
}

func (s hookScenario) Run(ctx context.Context, env *scenario.TaskEnv, task scenario.Task) (*evals.Outcome, error) {
	s.before(ctx, task)
	return s.Scenario.Run(ctx, env, task)
}

// fanOutTeam is the coordinator and two reviewers, each exporting its own
// spans by OTLP to the green agent (no extension steps); edit adjusts each
// agent's options.
func fanOutTeam(t *testing.T, h *Harness, edit func(o *purple.Options)) *Team {
	t.Helper()
	var specs []purple.AgentSpec
	for _, a := range []struct {
		name, role string
		peers      []string
	}{
		{DemoReviewer1, purple.RoleReviewer, nil},
		{DemoReviewer2, purple.RoleReviewer, nil},
		{DemoCoordinator, purple.RoleCoordinator, []string{DemoReviewer1, DemoReviewer2}},
	} {
		o := purple.Options{Name: a.name, Role: a.role, Getenv: noDemoEnv, Logger: quietLogger,
			LLM: &llmconfig.Config{}, OTLPEndpoint: h.URL(), NoExtension: true}
		edit(&o)
		specs = append(specs, purple.AgentSpec{Options: o, PeerNames: a.peers})
	}
	team, err := h.StartTeam(t.Context(), specs)
	if err != nil {
		t.Fatal(err)
	}
	return team
}

// settleAssess runs one assessment of team's tasks with config's extra
// keys.
func settleAssess(t *testing.T, h *Harness, team *Team, config map[string]any) *report.Result {
	t.Helper()
	config["scenario"] = scenario.Coordination
	config["entry_role"] = DemoCoordinator
	raw, err := h.Assess(t.Context(), team.URLs(), config)
	if err != nil {
		t.Fatal(err)
	}
	res, err := report.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// graphVerdict is the part of the graph evaluation these tests read.
type graphVerdict struct {
	Label    string          `json:"label"`
	Evidence *evals.Evidence `json:"evidence"`
}

func verdictOf(t *testing.T, task report.TaskResult) graphVerdict {
	t.Helper()
	var g graphVerdict
	raw, err := json.Marshal(task.Evaluations[evals.GraphEvaluatorName])
	if err == nil {
		err = json.Unmarshal(raw, &g)
	}
	if err != nil || g.Evidence == nil {
		t.Fatalf("task %s: graph evaluation %s (%v): want a label and its evidence", task.TaskID, raw, err)
	}
	return g
}

// TestDefaultBatchingGivesCompleteTraces: every agent exports through the
// SDK's batch span processor at its default 5 s delay, and the request
// sets nothing about settling. The green agent waits for the evidence (the
// server side of every call), so each task's trace is whole: every call
// seen from both sides, the label the full graph gives, complete evidence,
// no late spans and no warning.
func TestDefaultBatchingGivesCompleteTraces(t *testing.T) {
	h := settleHarness(t, nil)
	team := fanOutTeam(t, h, func(o *purple.Options) { o.ExportInterval = sdkDefaultBatch })
	res := settleAssess(t, h, team, map[string]any{"num_tasks": 2})
	if len(res.Tasks) != 2 {
		t.Fatalf("%d tasks, want 2", len(res.Tasks))
	}
	for _, task := range res.Tasks {
		c := task.Coverage
		if c.Interactions != 3 || c.BothSides != 3 || c.Complete != 1 || task.LateSpans != 0 {
			t.Errorf("task %s: coverage %+v, late spans %d: want 3 calls, all seen from both sides, none late",
				task.TaskID, c, task.LateSpans)
		}
		v := verdictOf(t, task)
		// The fan-out's label with every span present, as the demo (whose
		// agents flush on every response) gets it.
		if v.Label != evals.LabelOverCentralized || v.Evidence.Level != evals.EvidenceComplete {
			t.Errorf("task %s: label %s, evidence %+v: want %s on complete evidence",
				task.TaskID, v.Label, v.Evidence, evals.LabelOverCentralized)
		}
	}
	if len(res.Warnings) > 0 {
		t.Errorf("warnings: %q", res.Warnings)
	}
}

// TestParticipantExportingNothing: the coordinator makes spans but sends
// none (the reviewers export and flush at once). The assessor saw its own
// calls to the coordinator leave and no span of the coordinator's answer
// them: the verdict is insufficient_evidence, never isolated, and says
// why. The first task waited for the coordinator up to the maximum and
// says so; the second does not wait for it again.
func TestParticipantExportingNothing(t *testing.T) {
	h := settleHarness(t, nil)
	team := fanOutTeam(t, h, func(o *purple.Options) {
		o.FlushOnResponse = true
		o.Faults.NoSpans = o.Name == DemoCoordinator
	})
	res := settleAssess(t, h, team, map[string]any{"num_tasks": 2, "settle_max_wait_ms": 2000})
	if len(res.Tasks) != 2 {
		t.Fatalf("%d tasks, want 2", len(res.Tasks))
	}
	for _, task := range res.Tasks {
		v := verdictOf(t, task)
		if v.Label != evals.LabelInsufficientEvidence || v.Evidence.Level != evals.EvidenceInsufficient || v.Evidence.GraphLabel == "" {
			t.Errorf("task %s: label %s, evidence %+v: want insufficient_evidence, with the graph's own label kept",
				task.TaskID, v.Label, v.Evidence)
		}
		if !slices.ContainsFunc(v.Evidence.Reasons, func(r string) bool {
			return strings.Contains(r, "called "+DemoCoordinator) && strings.Contains(r, "no span of "+DemoCoordinator)
		}) {
			t.Errorf("task %s: reasons %q do not name the coordinator's missing spans", task.TaskID, v.Evidence.Reasons)
		}
	}
	var incomplete []string
	for _, w := range res.Warnings {
		if strings.Contains(w, "was not complete after the maximum wait") {
			incomplete = append(incomplete, w)
		}
	}
	if len(incomplete) != 1 || !strings.Contains(incomplete[0], "task "+res.Tasks[0].TaskID) ||
		!strings.Contains(incomplete[0], "do not wait for "+DemoCoordinator) {
		t.Errorf("warnings %q: want one, for the first task, saying the later tasks do not wait for %s", res.Warnings, DemoCoordinator)
	}
}

// TestLateSpansAreReported: the coordinator's batcher holds its spans far
// longer than the green agent waits (an hour), until the second task
// starts and the test flushes it: the first task's spans then arrive
// after that task was assessed. They are counted on the task, and a
// warning says so.
func TestLateSpansAreReported(t *testing.T) {
	var team atomic.Pointer[Team]
	h := settleHarness(t, func(ctx context.Context, task scenario.Task) {
		if task.ID == demoPapers[1].ID {
			if err := team.Load().Agent(DemoCoordinator).ForceFlush(ctx); err != nil {
				t.Errorf("flush the coordinator: %v", err)
			}
		}
	})
	team.Store(fanOutTeam(t, h, func(o *purple.Options) {
		if o.Name == DemoCoordinator {
			o.ExportInterval = time.Hour
		} else {
			o.FlushOnResponse = true
		}
	}))
	res := settleAssess(t, h, team.Load(), map[string]any{"task_ids": []string{demoPapers[0].ID, demoPapers[1].ID}, "settle_max_wait_ms": 500})
	if len(res.Tasks) != 2 {
		t.Fatalf("%d tasks, want 2", len(res.Tasks))
	}
	// The coordinator's server span and its two calls, at least.
	if first := res.Tasks[0]; first.LateSpans < 3 {
		t.Errorf("task %s: %d late spans, want the coordinator's (3 or more)", first.TaskID, first.LateSpans)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "arrived after their trace was assessed") }) {
		t.Errorf("warnings %q: none reports the late spans", res.Warnings)
	}
}
