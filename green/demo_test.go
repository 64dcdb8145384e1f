package green

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// TestRunDemo runs the whole demo over loopback: real servers, real OTLP
// protobuf into the real receiver, the green agent's spans in process, real
// assembly and the registered evaluators. It checks what a user of the demo
// relies on, and that nothing it started is left running.
func TestRunDemo(t *testing.T) {
	// The judge answers by rule without a key; a developer's key must not
	// turn this test into paid, networked calls.
	t.Setenv(evals.EnvLLMAPIKey, "")
	before := runtime.NumGoroutine()

	res, err := RunDemo(t.Context(), DemoOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatalf("RunDemo: %v", err)
	}
	if len(res.Tasks) != len(demoPapers) || len(res.Tasks) != 3 {
		t.Fatalf("got %d tasks, want 3", len(res.Tasks))
	}
	for _, task := range res.Tasks {
		t.Run(task.TaskID, func(t *testing.T) { checkDemoTask(t, task) })
	}

	// The rule is deterministic: paper-3 is the trap the team falls into.
	wantSuccess := map[string]bool{"paper-1": true, "paper-2": true, "paper-3": false}
	for _, task := range res.Tasks {
		if task.Outcome != nil && task.Outcome.Success != wantSuccess[task.TaskID] {
			t.Errorf("task %s: success = %v, want %v (%s)", task.TaskID, task.Outcome.Success, wantSuccess[task.TaskID], task.Outcome.Summary)
		}
	}
	if res.Score == nil || *res.Score != 66.67 || res.MaxScore == nil || *res.MaxScore != 100 {
		t.Errorf("score = %v / %v, want 66.67 / 100", deref(res.Score), deref(res.MaxScore))
	}
	if res.PassRate == nil || *res.PassRate != 0.6667 {
		t.Errorf("pass rate = %v, want 0.6667", deref(res.PassRate))
	}
	if res.TimeUsed == nil || *res.TimeUsed <= 0 {
		t.Errorf("time used = %v, want > 0", deref(res.TimeUsed))
	}
	if res.Domain != "demo" {
		t.Errorf("domain = %q, want demo", res.Domain)
	}
	if len(res.Warnings) > 0 {
		t.Errorf("warnings: %q", res.Warnings)
	}

	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("encode result: %v", err)
	}
	var decoded struct {
		Schema string  `json:"schema"`
		Score  float64 `json:"score"`
		Tasks  []struct {
			TraceID string         `json:"trace_id"`
			Outcome *evals.Outcome `json:"outcome"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatalf("decode result: %v", err)
	}
	if decoded.Schema != ResultSchema || len(decoded.Tasks) != 3 || decoded.Tasks[0].Outcome == nil || decoded.Tasks[0].TraceID == "" {
		t.Errorf("decoded result = %+v", decoded)
	}

	md := Summary(res)
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

	checkNoGoroutineLeak(t, before)
}

func checkDemoTask(t *testing.T, task TaskResult) {
	t.Helper()
	if task.TraceID == "" || task.Outcome == nil {
		t.Fatalf("trace id %q, outcome %v", task.TraceID, task.Outcome)
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
	if task.Coverage.Complete != 1 {
		t.Errorf("coverage complete = %v, want 1 (%+v)", task.Coverage.Complete, task.Coverage)
	}
	if task.Coverage.SpansBySource[otelmap.SourceInProcess] == 0 || task.Coverage.SpansBySource[otelmap.SourceOTLP] == 0 {
		t.Errorf("spans by source = %v, want both %s and %s", task.Coverage.SpansBySource, otelmap.SourceInProcess, otelmap.SourceOTLP)
	}
	if len(task.EvaluatorErrors) > 0 {
		t.Errorf("evaluator errors: %v", task.EvaluatorErrors)
	}
}

// checkNoGoroutineLeak waits briefly for goroutines that are still
// finishing (connection readers seeing EOF) before calling it a leak.
func checkNoGoroutineLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		now := runtime.NumGoroutine()
		if now <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines before the demo, %d after:\n%s", before, now, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInvokeAgentFailure checks that a callee that fails costs the call a
// failed CLIENT span with a low-cardinality error.type, and the task a
// recorded failure rather than the run.
func TestInvokeAgentFailure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(t.Context()) }()
	client, tr := newTracedClient(tp)
	defer tr.CloseIdleConnections()

	req := reviewRequest{TaskID: "paper-x", Title: "T", Abstract: "A"}
	_, err := invokeAgent(t.Context(), tp.Tracer("test"), client, "reviewer-9", srv.URL, req)
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("err = %v, want an HTTP 503 error", err)
	}
	var invoke sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == otelmap.SpanInvokeAgentPrefix+"reviewer-9" {
			invoke = s
		}
	}
	if invoke == nil {
		t.Fatalf("no invoke_agent span among %d", len(rec.Ended()))
	}
	if invoke.SpanKind() != trace.SpanKindClient || invoke.Status().Code != codes.Error {
		t.Errorf("span kind %v status %v, want client, error", invoke.SpanKind(), invoke.Status())
	}
	got := map[string]string{}
	for _, kv := range invoke.Attributes() {
		got[string(kv.Key)] = kv.Value.Emit()
	}
	for k, want := range map[string]string{
		string(otelmap.AttrErrorType):          "503",
		string(otelmap.AttrGenAIAgentName):     "reviewer-9",
		string(otelmap.AttrGenAIOperationName): otelmap.OpInvokeAgent,
		string(otelmap.AttrServerAddress):      "127.0.0.1",
		string(otelmap.AttrCallType):           string(tracedata.CallAgent),
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}

	o := demoOutcome(demoPaper{ID: "paper-x", Expected: decisionAccept}, reviewAnswer{}, errors.New("boom"))
	if o.Success || o.Score != 0 || !strings.Contains(o.Summary, "did not answer") {
		t.Errorf("outcome = %+v", o)
	}
}

func TestLexiconScore(t *testing.T) {
	lex := lexicon{Positive: []string{"novel", "clear"}, Negative: []string{"unclear"}}
	for _, tc := range []struct {
		text     string
		pos, neg int
		rec      float64
	}{
		{"A novel, clear method.", 2, 0, 5},
		{"Novel but UNCLEAR; unclear again.", 1, 2, 2},
		{"Nothing to see.", 0, 0, 3},
		{"unclear unclear unclear unclear", 0, 4, 1},
		{"novel novel novel novel", 4, 0, 5},
	} {
		pos, neg, rec := lex.score(tc.text)
		if pos != tc.pos || neg != tc.neg || rec != tc.rec {
			t.Errorf("score(%q) = %d, %d, %v; want %d, %d, %v", tc.text, pos, neg, rec, tc.pos, tc.neg, tc.rec)
		}
	}
}

func TestGenAIMessagesStayJSON(t *testing.T) {
	long := strings.Repeat("é", otelmap.MaxContentChars)
	got := genAIMessages("user", long, "")
	var msgs []genAIMessage
	if err := json.Unmarshal([]byte(got), &msgs); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if len(msgs) != 1 || msgs[0].Role != "user" || len(msgs[0].Parts) != 1 ||
		!strings.HasSuffix(msgs[0].Parts[0].Content, otelmap.ContentTruncatedMarker) {
		t.Errorf("messages = %.200s", got)
	}
	if !bytes.Contains([]byte(got), []byte(`"type":"text"`)) {
		t.Errorf("no text part: %.200s", got)
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
