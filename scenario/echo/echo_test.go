package echo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/echo"
)

// TestEcho drives the scenario against real A2A agents on loopback: one
// that says the word back, one that answers something else; and a request
// it cannot run.
func TestEcho(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	parrot := a2atest.Start(t, a2atest.Options{Name: "parrot"})
	mute := a2atest.Start(t, a2atest.Options{Name: "mute", Reply: "no"})
	caller := a2atest.NewCaller(t, a2acall.Options{})
	s := echo.Scenario{Words: []string{"alpha", "beta"}}

	for _, tc := range []struct {
		agent *a2atest.Agent
		ok    bool
	}{{parrot, true}, {mute, false}} {
		req := &scenario.Request{Participants: map[string]string{"speaker": tc.agent.URL}}
		tasks, err := s.Tasks(req)
		if err != nil || len(tasks) != 2 {
			t.Fatalf("tasks %v, %v", tasks, err)
		}
		env := &scenario.TaskEnv{Messenger: caller.Messenger, Request: req, Progress: func(string) {}}
		for _, task := range tasks {
			out, err := s.Run(ctx, env, task)
			if err != nil || out.Success != tc.ok {
				t.Errorf("%s, %s: outcome %+v, %v; want success %v", tc.agent.Name, task.ID, out, err, tc.ok)
			}
		}
	}

	_, err := s.Tasks(&scenario.Request{})
	var bad *scenario.RequestError
	if !errors.As(err, &bad) {
		t.Errorf("no participant: error %v, want a bad request", err)
	}
	req := &scenario.Request{Participants: map[string]string{"speaker": parrot.URL}}
	req.Config.TaskIDs = []string{"gamma"}
	if _, err := s.Tasks(req); !errors.As(err, &bad) {
		t.Errorf("an unknown task id: error %v, want a bad request", err)
	}
}
