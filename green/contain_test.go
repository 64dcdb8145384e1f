package green

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/tracedata"
)

// tasksPanic is a scenario whose Tasks panics: our code failing in the
// assessment's goroutine, outside the scenario's Run (which runScenario
// already recovers).
type tasksPanic struct{ routeScenario }

func (tasksPanic) Name() string { return "tasks-panic" }

func (tasksPanic) Tasks(*scenario.Request) ([]scenario.Task, error) {
	var tasks []scenario.Task
	_ = tasks[3] // index out of range: a runtime panic
	return tasks, nil
}

// panickyEvaluator panics on the traces of an assessment that names a
// participant "evil".
type panickyEvaluator struct{}

func (panickyEvaluator) Name() string { return "fragile" }
func (panickyEvaluator) Tier() int    { return 2 }
func (panickyEvaluator) Evaluate(_ context.Context, _ *tracedata.TraceData, in evals.Inputs) (evals.Result, error) {
	for _, p := range in.Participants {
		if strings.Contains(p, "evil") {
			panic("the fragile evaluator met " + p)
		}
	}
	return nil, nil
}

// TestPanicsInAnAssessmentFailOnlyIt: on one green agent, while an honest
// assessment runs, a scenario whose Tasks panics ends its own A2A task
// failed with a reason (before, the panic in the assessment's goroutine
// ended the process), and an evaluator that panics on one assessment's
// trace costs that evaluator's result there, recorded as its error, while
// the other evaluators and the task's outcome stand.
func TestPanicsInAnAssessmentFailOnlyIt(t *testing.T) {
	logs := &lockedLog{}
	reg := evals.NewRegistry(evals.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err := reg.Register(panickyEvaluator{}); err != nil {
		t.Fatal(err)
	}
	g := startGreen(t, ServerOptions{Evaluators: reg, ProgressInterval: time.Minute,
		Scenarios: map[string]scenario.Scenario{"route": routeScenario{}, "tasks-panic": tasksPanic{}},
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	good := a2atest.Start(t, a2atest.Options{Name: "good", Delay: 200 * time.Millisecond})
	evil := a2atest.Start(t, a2atest.Options{Name: "evil"})
	c := g.client10(t)
	settle := `"settle_quiet_ms": 50, "settle_max_wait_ms": 500`
	requests := map[string]string{
		"honest":      fmt.Sprintf(`{"participants": {"good": %q}, "config": {"scenario": "route", "task_ids": ["good#1"], %s}}`, good.URL, settle),
		"tasks-panic": fmt.Sprintf(`{"participants": {"good": %q}, "config": {"scenario": "tasks-panic", %s}}`, good.URL, settle),
		"evaluator":   fmt.Sprintf(`{"participants": {"evil": %q}, "config": {"scenario": "route", "task_ids": ["evil#1"], %s}}`, evil.URL, settle),
	}
	type ending struct {
		state a2a.TaskState
		text  string
		task  map[string]any
	}
	var mu sync.Mutex
	endings := map[string]ending{}
	var wg sync.WaitGroup
	for name, req := range requests {
		wg.Go(func() {
			out, err := c.SendMessage(t.Context(), userMessage(req))
			mu.Lock()
			defer mu.Unlock()
			task, ok := out.(*a2a.Task)
			if err != nil || !ok {
				t.Errorf("%s: %T %v", name, out, err)
				return
			}
			e := ending{state: task.Status.State, text: messageText(task.Status.Message)}
			if len(task.Artifacts) == 1 && len(task.Artifacts[0].Parts) == 2 {
				data, _ := task.Artifacts[0].Parts[1].Data().(map[string]any)
				if tasks, _ := data["tasks"].([]any); len(tasks) == 1 {
					e.task, _ = tasks[0].(map[string]any)
				}
			}
			endings[name] = e
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if e := endings["honest"]; e.state != a2a.TaskStateCompleted || outcomeOf(e.task)["success"] != true {
		t.Errorf("the honest assessment: %s %q %v", e.state, e.text, e.task)
	}
	if e := endings["tasks-panic"]; e.state != a2a.TaskStateFailed || !strings.Contains(e.text, "internal error: the assessment failed unexpectedly") ||
		!strings.Contains(e.text, "index out of range") {
		t.Errorf("the assessment whose scenario panicked: %s %q", e.state, e.text)
	}
	e := endings["evaluator"]
	errs, _ := e.task["evaluator_errors"].(map[string]any)
	evaluations, _ := e.task["evaluations"].(map[string]any)
	if e.state != a2a.TaskStateCompleted || outcomeOf(e.task)["success"] != true || !strings.Contains(fmt.Sprint(errs["fragile"]), "a panic: the fragile evaluator met evil") {
		t.Errorf("the assessment whose evaluator panicked: %s, outcome %v, evaluator errors %v", e.state, outcomeOf(e.task), errs)
	}
	for _, k := range []string{"graph", "latency", "text"} {
		if _, ok := evaluations[k]; !ok {
			t.Errorf("beside the panicking evaluator, %s did not run: %v", k, evaluations)
		}
	}
	out := logs.String()
	for _, want := range []string{"assessment panicked", "evaluator panicked", "green.tasksPanic.Tasks", "green.panickyEvaluator.Evaluate", "stack="} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	// The server serves on.
	if out, err := c.SendMessage(t.Context(), userMessage(requests["honest"])); err != nil {
		t.Errorf("after the panics: %v", err)
	} else if task, ok := out.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("after the panics: %+v", out)
	}
}
