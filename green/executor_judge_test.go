package green

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/sdkbridge"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/scenario"
)

// TestExecutorJudgeChatSpans: each executor's judge asks the endpoint its
// ExecutorOptions.Judge names and records each call as a `chat {model}`
// span of that executor's provider, so two executors in one process keep
// their chat spans apart.
func TestExecutorJudgeChatSpans(t *testing.T) {
	var requests atomic.Int32
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		// A rejected key: one attempt, no retry.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error": {"message": "bad key", "type": "invalid_request_error", "param": null, "code": null}}`))
	}))
	t.Cleanup(llm.Close)
	purple := a2atest.Start(t, a2atest.Options{Name: "solo"})
	req := mustParse(t, `{"participants": {"solo": %q}, "config": {"scenario": "route", "task_ids": ["solo#1"], "settle_quiet_ms": 50, "settle_max_wait_ms": 500}}`, purple.URL)

	newExecutor := func(model string) (*Executor, *tracestore.Store) {
		store := tracestore.NewStore(tracestore.Limits{})
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdkbridge.NewRecorder(store)))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		e, err := NewExecutor(ExecutorOptions{
			Scenarios:      map[string]scenario.Scenario{"route": routeScenario{}},
			Store:          store,
			TracerProvider: tp,
			Judge:          llmconfig.Config{APIKey: "test-key", BaseURL: llm.URL, Model: model, Timeout: 30 * time.Second},
			Messenger:      a2acall.Options{Logger: quietLogger},
			Logger:         quietLogger,
		})
		if err != nil {
			t.Fatalf("NewExecutor: %v", err)
		}
		return e, store
	}
	chatSpans := func(store *tracestore.Store) map[string]int {
		names := map[string]int{}
		for _, id := range store.TraceIDs() {
			for _, s := range store.Spans(id) {
				if v, ok := s.Attr(otelmap.AttrGenAIOperationName); ok && v.AsString() == otelmap.OpChat {
					names[s.Name]++
				}
			}
		}
		return names
	}

	a, storeA := newExecutor("model-a")
	b, storeB := newExecutor("model-b")
	for name, e := range map[string]*Executor{"a": a, "b": b} {
		res, err := e.Assess(t.Context(), req, func(string) {})
		if err != nil {
			t.Fatalf("executor %s: Assess: %v", name, err)
		}
		jr, ok := res.Tasks[0].Evaluations[judge.Name].(*judge.Result)
		if !ok || jr.Source != judge.SourceRules || jr.Attempts != 1 || jr.Model != "model-"+name {
			t.Errorf("executor %s: judge result %+v", name, res.Tasks[0].Evaluations[judge.Name])
		}
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("%d LLM requests, want one per executor", n)
	}
	if got := chatSpans(storeA); len(got) != 1 || got[otelmap.SpanChatPrefix+"model-a"] != 1 {
		t.Errorf("executor a's chat spans %v, want one chat model-a", got)
	}
	if got := chatSpans(storeB); len(got) != 1 || got[otelmap.SpanChatPrefix+"model-b"] != 1 {
		t.Errorf("executor b's chat spans %v, want one chat model-b", got)
	}
}
