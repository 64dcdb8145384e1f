package main

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// exitingSolver answers every SciCode step with the step's header and a
// module-level os._exit(0): the route that made the old runner score 50 of
// 50 sub-steps.
type exitingSolver struct{}

func (exitingSolver) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		header := ""
		for _, p := range ec.Message.Parts {
			if d, ok := p.Content.(a2a.Data); ok {
				if m, ok := d.Value.(map[string]any); ok {
					header, _ = m["function_header"].(string)
				}
			}
		}
		code := "import os\nos._exit(0)\n" + strings.TrimRight(header, "\n") + "\n    return 0\n"
		msg := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("```python\n"+code+"```"))
		msg.ContextID = ec.ContextID
		yield(msg, nil)
	}
}

func (exitingSolver) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// TestRunCommandSciCodeForgery: `green run` scores a solver whose answers
// end the test's process with status 0 at 0, each step with reason
// no_result.
func TestRunCommandSciCodeForgery(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "data", "scicode"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" { // TODO(testenv)
			t.Fatal(err)
		}
		t.Skip(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String() + "/"
	card := &a2a.AgentCard{Name: "exiting-solver", Description: "forges", Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}, Skills: []a2a.AgentSkill{}}
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(exitingSolver{})))
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	code, stdout, stderr := runGreen(t, "run", "--scicode-dir", dir, "--participant", "solver="+url,
		"--config", `{"scenario": "scicode", "problem_ids": ["1", "3", "4"], "max_num_steps": 1, "settle_quiet_ms": 50}`)
	if code != 0 {
		if strings.Contains(stderr, "scicode is not available") {
			if os.Getenv("CI") == "true" { // TODO(testenv)
				t.Fatal(stderr)
			}
			t.Skip(stderr)
		}
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	var res struct {
		Score    float64 `json:"score"`
		PassRate float64 `json:"pass_rate"`
		Tasks    []struct {
			Outcome struct {
				Details struct {
					Steps []struct {
						Reason string `json:"reason"`
					} `json:"steps"`
				} `json:"details"`
			} `json:"outcome"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, stdout)
	}
	if res.Score != 0 || res.PassRate != 0 || len(res.Tasks) != 3 {
		t.Fatalf("score %v, pass rate %v, %d tasks", res.Score, res.PassRate, len(res.Tasks))
	}
	for _, task := range res.Tasks {
		for _, st := range task.Outcome.Details.Steps {
			if st.Reason != "no_result" {
				t.Errorf("step reason %q, want no_result", st.Reason)
			}
		}
	}
}
