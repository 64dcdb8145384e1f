package main

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/internal/cli"
	"github.com/coordbench/coordbench/scenario"
)

// closingScenario counts its Close calls; it runs nothing.
type closingScenario struct{ closed atomic.Int32 }

func (*closingScenario) Name() string { return "closing" }
func (*closingScenario) Tasks(*scenario.Request) ([]scenario.Task, error) {
	return nil, nil
}
func (*closingScenario) Run(context.Context, *scenario.TaskEnv, scenario.Task) (*evals.Outcome, error) {
	return nil, nil
}
func (s *closingScenario) Close() error { s.closed.Add(1); return nil }

// TestServeClosesScenarios: when the server shuts down, the scenarios that
// hold resources (SciCode's judge process) are closed.
func TestServeClosesScenarios(t *testing.T) {
	ready := make(chan *green.Server, 1)
	serveReady = func(s *green.Server) { ready <- s }
	defer func() { serveReady = nil }()

	sc := &closingScenario{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := cli.New("green serve", "", "", io.Discard, io.Discard)
	code := make(chan int, 1)
	go func() {
		code <- runServer(ctx, c, green.ServerOptions{Host: "127.0.0.1", Port: 0, ShutdownTimeout: 5 * time.Second,
			Scenarios: map[string]scenario.Scenario{"closing": sc}})
	}()
	select {
	case <-ready:
	case got := <-code:
		t.Fatalf("server exited %d before it was ready", got)
	case <-time.After(20 * time.Second):
		t.Fatal("server did not start")
	}
	if n := sc.closed.Load(); n != 0 {
		t.Fatalf("scenario closed %d times while serving", n)
	}
	cancel()
	select {
	case got := <-code:
		if got != 0 {
			t.Errorf("exit %d", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("server did not stop")
	}
	if n := sc.closed.Load(); n != 1 {
		t.Errorf("scenario closed %d times after shutdown, want 1", n)
	}
}
