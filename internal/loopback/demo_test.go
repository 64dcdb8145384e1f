package loopback

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/purple"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/tracedata"
)

var quietLogger = slog.New(slog.DiscardHandler)

// noDemoEnv keeps a developer's OTEL_* and AGENTBEATS_LLM_* variables out
// of the demo's agents.
func noDemoEnv(string) string { return "" }

// TestRunDemo runs the demo as `green demo` does, over loopback: the base
// purple team (real A2A servers with their own tracer providers, two of
// them exporting real OTLP to the green agent's receiver, one returning
// extension steps only), the real green agent server driven by a real A2A
// client, and the result read back from the Result artifact. It checks
// what a user of the demo relies on, and that nothing it started is left
// running.
func TestRunDemo(t *testing.T) {
	// The judge answers by rule without a key; a developer's key must not
	// turn this test into paid, networked calls.
	t.Setenv(llmconfig.EnvAPIKey, "")
	peerRead := testenv.SharedData(t, "peerread")
	before := runtime.NumGoroutine()
	started := time.Now()
	res, err := RunDemo(t.Context(), DemoOptions{PeerReadDir: peerRead, Getenv: noDemoEnv, Logger: quietLogger})
	if err != nil {
		t.Fatalf("RunDemo: %v", err)
	}
	t.Logf("demo took %v", time.Since(started))

	gt, err := groundtruth.Default()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != DemoTasks {
		t.Fatalf("got %d tasks, want %d", len(res.Tasks), DemoTasks)
	}
	for i, task := range res.Tasks {
		if want := gt.Scenarios[i].ID; task.TaskID != want {
			t.Errorf("task %d is %s, want the ground truth's %s", i, task.TaskID, want)
		}
		t.Run(task.TaskID, func(t *testing.T) {
			checkDemoTask(t, task)
			// The team answers by the rule: its decision is the rule's
			// reading of what the green agent sent, whatever the venue
			// decided.
			if d := task.Outcome.Details["decision"]; d != groundtruth.DecisionAccept && d != groundtruth.DecisionReject {
				t.Errorf("decision %v (%s)", d, task.Outcome.Summary)
			}
			if task.Outcome.Details["paper"] != gt.Scenarios[i].Paper.Ref() || task.Outcome.Details["title_only"] != false {
				t.Errorf("outcome details %v: want the PeerRead paper with its abstract and reviews", task.Outcome.Details)
			}
		})
	}
	if res.Domain != scenario.Coordination || res.Score == nil || res.MaxScore == nil || *res.MaxScore != 100 {
		t.Errorf("domain %q, score %v / %v", res.Domain, deref(res.Score), deref(res.MaxScore))
	}
	if res.TimeUsed == nil || *res.TimeUsed <= 0 {
		t.Errorf("time used = %v, want > 0", deref(res.TimeUsed))
	}
	if len(res.Warnings) > 0 {
		t.Errorf("warnings: %q", res.Warnings)
	}
	checkDemoSummary(t, res)
	testenv.CheckNoGoroutineLeak(t, before)
}

// TestRunDemoStubPapers runs the demo on the built-in paper stubs (what it
// does without the data set): the rule-based team gets the trap wrong.
func TestRunDemoStubPapers(t *testing.T) {
	t.Setenv(llmconfig.EnvAPIKey, "")
	res, err := RunDemo(t.Context(), DemoOptions{StubPapers: true, Getenv: noDemoEnv, Logger: quietLogger,
		Config: evals.Config{Evaluators: map[string]bool{judge.Name: false}}})
	if err != nil {
		t.Fatalf("RunDemo: %v", err)
	}
	if len(res.Tasks) != len(demoPapers) {
		t.Fatalf("got %d tasks, want %d", len(res.Tasks), len(demoPapers))
	}
	wantSuccess := map[string]bool{"paper-1": true, "paper-2": true, "paper-3": false}
	for _, task := range res.Tasks {
		checkDemoTask(t, task)
		if task.Outcome.Success != wantSuccess[task.TaskID] {
			t.Errorf("task %s: success = %v, want %v (%s)", task.TaskID, task.Outcome.Success, wantSuccess[task.TaskID], task.Outcome.Summary)
		}
		if _, ok := task.Evaluations[judge.Name]; ok {
			t.Errorf("task %s: the judge ran although the config switched it off", task.TaskID)
		}
	}
	// paper-1: accept, 4 of 5 against 4.5 (0.875): 0.7 + 0.3·(1 − 0.125).
	if o := res.Tasks[0].Outcome; o.Score != 0.9625 {
		t.Errorf("paper-1 score %v (%s)", o.Score, o.Summary)
	}
	if res.PassRate == nil || *res.PassRate != 0.6667 {
		t.Errorf("pass rate = %v, want 0.6667", deref(res.PassRate))
	}
	checkDemoSummary(t, res)
}

// TestStubScenarioIsValidGroundTruth: the stubs satisfy the ground truth's
// own rules, so they are scored as real tasks would be.
func TestStubScenarioIsValidGroundTruth(t *testing.T) {
	s, err := stubCoordinationScenario()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.GroundTruth().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, p := range demoPapers {
		if r := purple.ReviewByRule(p.Title + "\n\n" + p.Abstract); (r.Decision == p.Expected) != (p.ID != "paper-3") {
			t.Errorf("%s: the rule answers %s (%s); only paper-3 should trap it", p.ID, r.Decision, r.Rationale)
		}
	}
}

// checkDemoTask checks one task of the demo team: every agent a node,
// every call seen from both sides, spans from all three roads.
func checkDemoTask(t *testing.T, task report.TaskResult) {
	t.Helper()
	if task.TraceID == "" || task.Outcome == nil {
		t.Fatalf("trace id %q, outcome %v", task.TraceID, task.Outcome)
	}
	if task.Outcome.Details["error"] != nil {
		t.Errorf("the team did not answer: %s", task.Outcome.Summary)
	}
	var assessor bool
	for _, a := range task.Agents {
		if a.Role == tracedata.RoleAssessor {
			assessor = true
		}
	}
	if !assessor {
		t.Errorf("no assessor node among %v", agentNames(task.Agents))
	}
	for _, name := range []string{DemoCoordinator, DemoReviewer1, DemoReviewer2} {
		if !hasAgent(task.Agents, name) {
			t.Errorf("agent %s missing from %v", name, agentNames(task.Agents))
		}
	}
	for _, to := range []string{DemoReviewer1, DemoReviewer2} {
		in := findInteraction(task.Interactions, DemoCoordinator, to)
		if in == nil {
			t.Errorf("no interaction %s -> %s in %+v", DemoCoordinator, to, task.Interactions)
			continue
		}
		if in.Count != 1 || in.BothSides != 1 || in.Errors != 0 {
			t.Errorf("%s -> %s: count %d, both sides %d, errors %d; want 1, 1, 0", DemoCoordinator, to, in.Count, in.BothSides, in.Errors)
		}
	}
	if in := findInteraction(task.Interactions, DemoGreenService, DemoCoordinator); in == nil || in.BothSides != 1 {
		t.Errorf("green -> coordinator interaction = %+v, want one seen from both sides", in)
	}
	if len(task.Interactions) != 3 || task.Coverage.Complete != 1 {
		t.Errorf("interactions %+v, coverage %+v: want 3 calls, all seen from both sides", task.Interactions, task.Coverage)
	}
	for _, src := range []string{otelmap.SourceInProcess, otelmap.SourceOTLP, otelmap.SourceExtension} {
		if task.Coverage.SpansBySource[src] == 0 {
			t.Errorf("spans by source = %v, want some by %s", task.Coverage.SpansBySource, src)
		}
	}
	if len(task.EvaluatorErrors) > 0 {
		t.Errorf("evaluator errors: %v", task.EvaluatorErrors)
	}
	var graph struct {
		Label string `json:"label"`
	}
	if raw, err := json.Marshal(task.Evaluations[evals.GraphEvaluatorName]); err != nil || json.Unmarshal(raw, &graph) != nil || graph.Label != evals.LabelOverCentralized {
		t.Errorf("graph label %q, want %s (a coordinator in every call)", graph.Label, evals.LabelOverCentralized)
	}
}

// checkDemoSummary checks the Markdown a user reads and that the result
// read from the artifact encodes back to JSON with the evaluations.
func checkDemoSummary(t *testing.T, res *report.Result) {
	t.Helper()
	md := report.Summary(res)
	for _, want := range []string{
		"```mermaid\nflowchart LR\n",
		`n_coordinator -->|"1 call"| n_reviewer_1`,
		`n_coordinator -->|"1 call"| n_reviewer_2`,
		`n_coordbench_green -->|"1 call"| n_coordinator`,
		"3 of 3 interactions seen from both sides",
	} {
		if n := strings.Count(md, want); n != len(res.Tasks) {
			t.Errorf("summary: %q appears %d times, want once per task\n%s", want, n, md)
		}
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("encode result: %v", err)
	}
	for _, key := range []string{`"graph":{`, `"latency":{`, `"text":{`, `"outcome":{`} {
		if !bytes.Contains(raw, []byte(key)) {
			t.Errorf("encoded result lacks %s", key)
		}
	}
}

func hasAgent(agents []tracedata.Agent, name string) bool {
	for _, a := range agents {
		if a.Name == name {
			return true
		}
	}
	return false
}

func agentNames(agents []tracedata.Agent) []string {
	var names []string
	for _, a := range agents {
		names = append(names, a.Name)
	}
	return names
}

func findInteraction(ins []tracedata.Interaction, from, to string) *tracedata.Interaction {
	for i := range ins {
		if ins[i].From == from && ins[i].To == to {
			return &ins[i]
		}
	}
	return nil
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestRunDemoExportsToBackend: with OTEL_EXPORTER_OTLP_ENDPOINT set, the
// run's traces also reach that OTLP backend (here coordbench's own
// receiver standing in for Jaeger), whole: the green agent's spans and
// every purple agent's, reviewer-2's forwarded by the coordinator.
func TestRunDemoExportsToBackend(t *testing.T) {
	t.Setenv(llmconfig.EnvAPIKey, "")
	backend := tracestore.NewStore(tracestore.Limits{})
	srv := httptest.NewServer(otlpreceiver.NewReceiver(backend, otlpreceiver.ReceiverLimits{}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	res, err := RunDemo(t.Context(), DemoOptions{StubPapers: true, Logger: quietLogger,
		Config: evals.Config{Evaluators: map[string]bool{judge.Name: false}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range res.Tasks {
		id, err := trace.TraceIDFromHex(task.TraceID)
		if err != nil {
			t.Fatal(err)
		}
		td := assemble.Trace(id, backend.Spans(id))
		if got := td.Coverage.Services; !slices.Equal(got, []string{DemoGreenService, DemoCoordinator, DemoReviewer1, DemoReviewer2}) {
			t.Errorf("task %s: the backend has spans of %v", task.TaskID, got)
		}
		if td.Coverage.Interactions != 3 || td.Coverage.Complete != 1 {
			t.Errorf("task %s: the backend's trace has coverage %+v", task.TaskID, td.Coverage)
		}
	}
}
