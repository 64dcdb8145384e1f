package purple

import (
	"context"
	"testing"

	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/internal/llmconfig"
)

// TestTaskLimits: the purple agent keeps at most TaskLimits.MaxTasks
// finished tasks however many requests it answers.
func TestTaskLimits(t *testing.T) {
	t.Setenv(llmconfig.EnvAPIKey, "")
	h := newHarness(t)
	s, err := NewServer(t.Context(), Options{Port: 0, Logger: quiet, Getenv: noEnv,
		TaskLimits: a2aserve.TaskStoreLimits{MaxTasks: 2}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for i := range 8 {
		if _, err := h.m.Send(t.Context(), reviewRequest(s.URL(), "")); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if st := s.Tasks().Stats(); st.Tasks > 2 {
			t.Fatalf("after %d calls the task store holds %d tasks, want at most 2", i+1, st.Tasks)
		}
	}
	if st := s.Tasks().Stats(); st.Tasks != 2 || st.Evicted != 6 {
		t.Errorf("task store %+v, want 2 held and 6 dropped", st)
	}
}
