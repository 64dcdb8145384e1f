package green

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/sdkbridge"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/scenario"
)

// quietLogger drops a2a-go's and the Messenger's logs in tests.
var quietLogger = slog.New(slog.DiscardHandler)

// newExecutorForTest builds an executor as the server does (the green
// agent's spans recorded into its store), without a server.
func newExecutorForTest(t *testing.T, scenarios map[string]scenario.Scenario, progress time.Duration) (*Executor, *tracestore.Store) {
	t.Helper()
	t.Setenv(llmconfig.EnvAPIKey, "")
	store := tracestore.NewStore(tracestore.Limits{})
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(
			otelmap.AttrServiceName.String(DefaultServiceName),
			attribute.String(string(otelmap.AttrRole), otelmap.RoleAssessor))),
		sdktrace.WithSpanProcessor(sdkbridge.NewRecorder(store)))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e, err := NewExecutor(ExecutorOptions{
		Scenarios:        scenarios,
		Unavailable:      map[string]string{"elsewhere": "it lives elsewhere"},
		Store:            store,
		TracerProvider:   tp,
		ProgressInterval: progress,
		Messenger:        a2acall.Options{Logger: quietLogger},
		Logger:           quietLogger,
	})
	if err != nil {
		t.Fatalf("NewExecutor: %v", err)
	}
	return e, store
}

// mustParse parses a request. A test purple exports nothing unless it is
// given a Store, so the requests to such agents set settle_max_wait_ms:
// the first task of an assessment would otherwise wait the default
// maximum for spans that never come (TestSettle* test the wait itself).
func mustParse(t *testing.T, format string, args ...any) *scenario.Request {
	t.Helper()
	req, err := ParseRequest(fmt.Sprintf(format, args...))
	if err != nil {
		t.Fatalf("ParseRequest: %v", err)
	}
	return req
}

// progressLog collects progress texts from any goroutine.
type progressLog struct {
	mu    sync.Mutex
	texts []string
}

func (p *progressLog) add(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.texts = append(p.texts, s)
}

func (p *progressLog) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.texts)
}

// TestExecutorProgress: while a task runs, a working update comes at least
// every ProgressInterval, besides the updates at the start and after each
// task.
func TestExecutorProgress(t *testing.T) {
	e, _ := newExecutorForTest(t, map[string]scenario.Scenario{"route": routeScenario{}}, 50*time.Millisecond)
	slow := a2atest.Start(t, a2atest.Options{Name: "slow", Delay: 600 * time.Millisecond})
	req := mustParse(t, `{"participants": {"slow": %q}, "config": {"scenario": "route", "task_ids": ["slow#1"], "settle_quiet_ms": 50, "settle_max_wait_ms": 500}}`, slow.URL)
	var log progressLog
	res, err := e.Assess(t.Context(), req, log.add)
	if err != nil {
		t.Fatalf("Assess: %v", err)
	}
	texts := log.all()
	if len(texts) == 0 || !strings.HasPrefix(texts[0], "assessment started: scenario route, 1 task") {
		t.Fatalf("progress = %q", texts)
	}
	if last := texts[len(texts)-1]; last != "task 1/1 done: slow#1 pass" {
		t.Errorf("last progress = %q", last)
	}
	beats := 0
	for _, s := range texts {
		if strings.HasPrefix(s, "task 1/1 (slow#1) running for ") && strings.HasSuffix(s, " since the assessment began)") {
			beats++
		}
	}
	// 600 ms of work at one update per 50 ms of silence; a loaded machine
	// may deliver fewer, but never none.
	if beats < 3 {
		t.Errorf("%d heartbeat updates while the task ran, want several: %q", beats, texts)
	}
	if *res.Score != 100 || *res.PassRate != 1 {
		t.Errorf("score %v pass rate %v", *res.Score, *res.PassRate)
	}
}

func TestExecutorRejects(t *testing.T) {
	e, _ := newExecutorForTest(t, map[string]scenario.Scenario{"route": routeScenario{}}, time.Minute)
	for _, tc := range []struct {
		name, config, want string
	}{
		{"scicode", `{"scenario": "scicode"}`, "scenario scicode is not available"},
		{"unavailable", `{"scenario": "elsewhere"}`, "scenario elsewhere is not available: it lives elsewhere"},
		{"unknown", `{"scenario": "nope"}`, `unknown scenario "nope"; available: route`},
		{"default coordination missing", `{}`, `unknown scenario "coordination"`},
		{"tasks error", `{"scenario": "route", "task_ids": ["ghost#1"]}`, "task ghost#1 names no participant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := mustParse(t, `{"participants": {"agent": "http://127.0.0.1:1/"}, "config": %s}`, tc.config)
			var log progressLog
			res, err := e.Assess(t.Context(), req, log.add)
			var re *scenario.RequestError
			if !errors.As(err, &re) {
				t.Fatalf("Assess = %v, %v; want a *scenario.RequestError", res, err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), scenario.RequestFormatHelp) {
				t.Errorf("error %q does not say %q and show the format", firstLine(err.Error()), tc.want)
			}
			if len(log.all()) > 0 {
				t.Errorf("progress before a rejection: %q", log.all())
			}
		})
	}
}

// TestExecutorTaskFailures: a scenario that panics, a task that outlives
// its timeout, and a scenario that cannot run a task each cost that task,
// not the assessment; the store is left without their traces.
func TestExecutorTaskFailures(t *testing.T) {
	e, store := newExecutorForTest(t, map[string]scenario.Scenario{"route": routeScenario{}, "broken": brokenScenario{}}, time.Minute)
	hang := a2atest.Start(t, a2atest.Options{Name: "hang", Fault: a2atest.FaultHang})
	good := a2atest.Start(t, a2atest.Options{Name: "good"})
	before := runtime.NumGoroutine()

	req := mustParse(t, `{"participants": {"hang": %q, "good": %q, "panic": %q}, "config": {"scenario": "route",
		"task_ids": ["panic#1", "hang#1", "good#1"], "task_timeout_seconds": 0.5, "settle_quiet_ms": 50, "settle_max_wait_ms": 500}}`, hang.URL, good.URL, good.URL)
	res, err := e.Assess(t.Context(), req, nil)
	if err != nil {
		t.Fatalf("Assess: %v", err)
	}
	outcomes := map[string]*evals.Outcome{}
	for _, tr := range res.Tasks {
		outcomes[tr.TaskID] = tr.Outcome
		if tr.TraceID == "" {
			t.Errorf("task %s has no trace", tr.TaskID)
		}
	}
	if o := outcomes["panic#1"]; o == nil || o.Success || !strings.Contains(o.Summary, "panicked") {
		t.Errorf("panic#1 outcome = %+v", o)
	}
	if o := outcomes["hang#1"]; o == nil || o.Success || !strings.Contains(o.Summary, "task timeout of 500ms passed") || o.Details["timeout"] == nil {
		t.Errorf("hang#1 outcome = %+v", o)
	}
	if o := outcomes["good#1"]; o == nil || !o.Success {
		t.Errorf("good#1 outcome = %+v", o)
	}
	if got := *res.Score; got != round(100.0/3, 2) {
		t.Errorf("score = %v", got)
	}

	req = mustParse(t, `{"participants": {"good": %q}, "config": {"scenario": "broken", "settle_quiet_ms": 50}}`, good.URL)
	res, err = e.Assess(t.Context(), req, nil)
	if err != nil {
		t.Fatalf("Assess: %v", err)
	}
	if len(res.Tasks) != 2 || res.Tasks[0].Outcome.Success || !strings.Contains(res.Tasks[0].Outcome.Summary, "could not be run: broken: no can do") {
		t.Errorf("broken task = %+v", res.Tasks[0].Outcome)
	}
	if res.Tasks[1].Outcome.Success || res.Tasks[1].Outcome.Summary != "the scenario returned no outcome" {
		t.Errorf("nil outcome = %+v", res.Tasks[1].Outcome)
	}

	// Every task's trace was forgotten once assessed; what remains are the
	// assessments' own traces (their root spans), not a task's.
	for _, id := range store.TraceIDs() {
		for _, sp := range store.Spans(id) {
			if sp.Name == otelmap.SpanTask {
				t.Errorf("task trace %s still held", id)
			}
		}
	}
	hang.Close() // its detached executor ends
	testenv.CheckNoGoroutineLeak(t, before)
}

// brokenScenario fails its first task with an error and returns no
// outcome for its second.
type brokenScenario struct{}

func (brokenScenario) Name() string { return "broken" }

func (brokenScenario) Tasks(*scenario.Request) ([]scenario.Task, error) {
	return []scenario.Task{{ID: "error"}, {ID: "nil"}}, nil
}

func (brokenScenario) Run(_ context.Context, _ *scenario.TaskEnv, task scenario.Task) (*evals.Outcome, error) {
	if task.ID == "error" {
		return nil, errors.New("broken: no can do")
	}
	return nil, nil
}

func TestExecutorNoTasks(t *testing.T) {
	e, _ := newExecutorForTest(t, map[string]scenario.Scenario{"route": routeScenario{}}, time.Minute)
	req := mustParse(t, `{"participants": {"agent": "http://127.0.0.1:1/"}, "config": {"scenario": "route"}}`)
	res, err := e.Assess(t.Context(), req, nil)
	if err != nil {
		t.Fatalf("Assess: %v", err)
	}
	if len(res.Tasks) != 0 || *res.Score != 0 || *res.PassRate != 0 || *res.MaxScore != 100 {
		t.Errorf("result = %+v", res)
	}
	if len(res.Warnings) == 0 || !strings.Contains(strings.Join(res.Warnings, "\n"), "selects no tasks") {
		t.Errorf("warnings = %q", res.Warnings)
	}
	raw, err := json.Marshal(res)
	if err != nil || !strings.Contains(string(raw), `"tasks":[]`) {
		t.Errorf("JSON = %s, %v", raw, err)
	}
}

// TestExecutorContextEnds: the caller's context ending (a cancel, the
// server stopping) aborts the assessment with its cause.
func TestExecutorContextEnds(t *testing.T) {
	e, _ := newExecutorForTest(t, map[string]scenario.Scenario{"route": routeScenario{}}, time.Minute)
	hang := a2atest.Start(t, a2atest.Options{Name: "hang", Fault: a2atest.FaultHang})
	req := mustParse(t, `{"participants": {"hang": %q}, "config": {"scenario": "route", "task_ids": ["hang#1", "hang#2"]}}`, hang.URL)
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("stop now")
	time.AfterFunc(300*time.Millisecond, func() { cancel(cause) })
	start := time.Now()
	res, err := e.Assess(ctx, req, nil)
	if !errors.Is(err, cause) || res != nil {
		t.Errorf("Assess = %v, %v; want the cause", res, err)
	}
	// The hang's call timeout is a2acall's default, 300 s: well within it,
	// the cancel is what stopped the assessment.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %s to stop", d)
	}
}

func TestParticipantNamesFromCards(t *testing.T) {
	e, _ := newExecutorForTest(t, map[string]scenario.Scenario{"route": routeScenario{}}, time.Minute)
	named := a2atest.Start(t, a2atest.Options{Name: "Reviewer Agent"})
	req := mustParse(t, `{"participants": {"reviewer": %q, "ghost": %q}, "config": {"scenario": "route", "task_ids": ["reviewer#1"], "settle_quiet_ms": 50, "settle_max_wait_ms": 500, "call_timeout_seconds": 2}}`,
		named.URL, a2atest.RefusedURL(t))
	res, err := e.Assess(t.Context(), req, nil)
	if err != nil {
		t.Fatalf("Assess: %v", err)
	}
	// The card's name, not the role, names the participant in the graph;
	// the unreachable one is named by its role, with a warning, and is an
	// isolated node of the graph evaluator's graph.
	graph, ok := res.Tasks[0].Evaluations["graph"].(*evals.GraphResult)
	if !ok {
		t.Fatalf("graph result %T", res.Tasks[0].Evaluations["graph"])
	}
	nodes := map[string]evals.GraphNode{}
	for _, n := range graph.Nodes {
		nodes[n.Name] = n
	}
	if n, ok := nodes["Reviewer Agent"]; !ok || !n.Participant || n.NoAgent {
		t.Errorf("participant node = %+v (nodes %v)", n, graph.Nodes)
	}
	if _, ok := nodes["reviewer"]; ok {
		t.Errorf("the role became a node: %v", graph.Nodes)
	}
	if n, ok := nodes["ghost"]; !ok || !n.NoAgent {
		t.Errorf("the participant that took no part = %+v (nodes %v)", n, graph.Nodes)
	}
	if md := report.Summary(res); !strings.Contains(md, `n_ghost["ghost"]`) || !strings.Contains(md, "class n_ghost absent") {
		t.Errorf("the summary's graph does not show the absent participant:\n%s", md)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.HasPrefix(w, "participant ghost: agent card not read") }) {
		t.Errorf("warnings = %q", res.Warnings)
	}
}

// stuckScenario ignores its context until release is closed: a scenario
// bug the executor must survive.
type stuckScenario struct{ release chan struct{} }

func (stuckScenario) Name() string { return "stuck" }

func (stuckScenario) Tasks(*scenario.Request) ([]scenario.Task, error) {
	return []scenario.Task{{ID: "stuck-1"}, {ID: "stuck-2"}}, nil
}

func (s stuckScenario) Run(_ context.Context, env *scenario.TaskEnv, _ scenario.Task) (*evals.Outcome, error) {
	<-s.release
	env.Progress("too late") // after its task was given up: must not block or leak
	return &evals.Outcome{Success: true, Score: 1}, nil
}

// TestExecutorAbandonsStuckScenario: a scenario that ignores its task's
// timeout is given up after a grace period; the assessment goes on and
// the deadline holds.
func TestExecutorAbandonsStuckScenario(t *testing.T) {
	defer func(g time.Duration) { scenarioStopGrace = g }(scenarioStopGrace)
	scenarioStopGrace = 100 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	e, _ := newExecutorForTest(t, map[string]scenario.Scenario{"stuck": stuckScenario{release}}, time.Minute)
	req := mustParse(t, `{"participants": {"agent": "http://127.0.0.1:1/"}, "config": {"scenario": "stuck", "task_timeout_seconds": 0.2, "settle_quiet_ms": 20}}`)
	start := time.Now()
	res, err := e.Assess(t.Context(), req, func(string) {})
	if err != nil {
		t.Fatalf("Assess: %v", err)
	}
	// Not abandoned, the scenario would hold Assess until the test ends.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %s", d)
	}
	for _, tr := range res.Tasks {
		if tr.Outcome.Success || !strings.Contains(tr.Outcome.Summary, "did not stop within 100ms after the task timeout of 200ms passed") {
			t.Errorf("task %s outcome = %+v", tr.TaskID, tr.Outcome)
		}
	}
}
