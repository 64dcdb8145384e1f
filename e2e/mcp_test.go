package e2e

import (
	"encoding/json"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/internal/loopback"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/purple"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/coordination"
	"github.com/coordbench/coordbench/scenario/scicode"
	"github.com/coordbench/coordbench/tracedata"
)

// TestSciCodeOverMCP runs a SciCode assessment end to end on loopback, the
// base purple agent's repairing solver against a real green agent, once
// in text and once with delivery mcp: through the tools the scores, steps
// and turns are those of the text mode on the same answers, and every
// answer came through submit_step.
func TestSciCodeOverMCP(t *testing.T) {
	t.Setenv(llmconfig.EnvAPIKey, "")
	dir := testenv.SharedData(t, "scicode")
	testenv.NeedPython(t, "numpy", "scipy", "h5py")
	before := runtime.NumGoroutine()
	quiet := slog.New(slog.DiscardHandler)
	sc, err := scicode.New(t.Context(), scicode.Options{DataDir: dir, Sandbox: sandbox.Options{Timeout: 30 * time.Minute}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) string { return "" }
	h, err := loopback.Start(t.Context(), loopback.Options{Green: green.ServerOptions{
		Scenarios: map[string]scenario.Scenario{scenario.SciCode: sc}, Getenv: noEnv, Logger: quiet,
	}, CallTimeout: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := h.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		sc.Close()
		checkNoLeak(t, before)
	}()
	team, err := h.StartTeam(t.Context(), []purple.AgentSpec{{Options: purple.Options{Name: "solver", Role: purple.RoleSolverRepair, Getenv: noEnv}}})
	if err != nil {
		t.Fatal(err)
	}
	url := team.Agent("solver").URL()
	results := map[string]*report.Result{}
	for _, delivery := range []string{scenario.DeliveryText, scenario.DeliveryMCP} {
		raw, err := h.Assess(t.Context(), map[string]string{"solver": url}, map[string]any{
			"scenario": "scicode", "problem_ids": []string{"29"}, "max_num_steps": 2, "delivery": delivery,
			"settle_max_wait_ms": 3000, "settle_quiet_ms": 200,
		})
		if err != nil {
			t.Fatalf("%s: %v", delivery, err)
		}
		var res report.Result
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Tasks) != 1 || res.Tasks[0].Outcome == nil {
			t.Fatalf("%s: tasks %+v", delivery, res.Tasks)
		}
		results[delivery] = &res
	}
	text, viaTools := results[scenario.DeliveryText], results[scenario.DeliveryMCP]
	if *text.Score != *text.MaxScore || *viaTools.Score != *text.Score {
		t.Fatalf("score: text %v, mcp %v (%s)", *text.Score, *viaTools.Score, viaTools.Tasks[0].Outcome.Summary)
	}
	steps := func(r *report.Result) []scicode.StepResult {
		b, _ := json.Marshal(r.Tasks[0].Outcome.Details["steps"])
		var out []scicode.StepResult
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	ts, ms := steps(text), steps(viaTools)
	if len(ts) != 3 || len(ms) != len(ts) {
		t.Fatalf("steps: text %d, mcp %d", len(ts), len(ms))
	}
	for i := range ts {
		if ms[i].Passed != ts[i].Passed || ms[i].Turns != ts[i].Turns || ms[i].Reason != ts[i].Reason || ms[i].Turns != 2 {
			t.Errorf("step %s: mcp %s in %d turns, text %s in %d", ts[i].Step, ms[i].Reason, ms[i].Turns, ts[i].Reason, ts[i].Turns)
		}
		for _, a := range ms[i].Attempts {
			if a.AnswerSource != scicode.AnswerFromTool {
				t.Errorf("step %s turn %d: answer from %q", ms[i].Step, a.Turn, a.AnswerSource)
			}
		}
	}
	// The trace of the MCP task: the tool server is a node of its own, not
	// an agent and not the assessor, and every tool call (read_step and two
	// submissions per step) is a call to it from the solver.
	tr := viaTools.Tasks[0]
	var tool *tracedata.Agent
	for i := range tr.Agents {
		if tr.Agents[i].Role == tracedata.RoleToolServer {
			if tool != nil {
				t.Errorf("two tool servers: %s and %s", tool.Name, tr.Agents[i].Name)
			}
			tool = &tr.Agents[i]
		}
	}
	if tool == nil || !strings.HasPrefix(tool.Name, "mcp://127.0.0.1:") || tool.Measured() {
		t.Fatalf("tool server %+v; agents %+v", tool, tr.Agents)
	}
	calls := 0
	for _, in := range tr.Interactions {
		switch {
		case in.From == "solver" && in.To == tool.Name:
			calls += in.Count
			if in.Errors != 0 || in.BothSides != in.Count || len(in.LatenciesMS) != in.Count {
				t.Errorf("solver -> %s: %+v", tool.Name, in)
			}
		case in.To == tool.Name || in.From == "solver":
			t.Errorf("unexpected interaction %s -> %s (%d)", in.From, in.To, in.Count)
		}
	}
	if calls != 9 {
		t.Errorf("%d tool calls in the graph, want 9", calls)
	}
	if n := h.Green().MCP().OpenTasks(); n != 0 {
		t.Errorf("%d MCP endpoints open after the assessments", n)
	}
}

// TestCoordinationOverMCP runs coordination tasks end to end on loopback, a
// base purple team (a coordinator and two reviewers) against a real green
// agent, in text and with delivery mcp: the coordinator reads the paper
// with read_paper and submits its decision with submit_review, and every
// task scores as in text.
func TestCoordinationOverMCP(t *testing.T) {
	t.Setenv(llmconfig.EnvAPIKey, "")
	before := runtime.NumGoroutine()
	quiet := slog.New(slog.DiscardHandler)
	coord, err := coordination.New(coordination.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) string { return "" }
	h, err := loopback.Start(t.Context(), loopback.Options{Green: green.ServerOptions{
		Scenarios: map[string]scenario.Scenario{scenario.Coordination: coord}, Getenv: noEnv, Logger: quiet,
	}, CallTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := h.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		checkNoLeak(t, before)
	}()
	team, err := h.StartTeam(t.Context(), []purple.AgentSpec{
		{Options: purple.Options{Name: "coordinator", Role: purple.RoleCoordinator, Getenv: noEnv}, PeerNames: []string{"reviewer-a", "reviewer-b"}},
		{Options: purple.Options{Name: "reviewer-a", Getenv: noEnv}},
		{Options: purple.Options{Name: "reviewer-b", Getenv: noEnv}},
	})
	if err != nil {
		t.Fatal(err)
	}
	url := team.Agent("coordinator").URL()
	results := map[string]*report.Result{}
	for _, delivery := range []string{scenario.DeliveryText, scenario.DeliveryMCP} {
		raw, err := h.Assess(t.Context(), map[string]string{"coordinator": url}, map[string]any{
			"num_tasks": 3, "delivery": delivery, "settle_max_wait_ms": 3000, "settle_quiet_ms": 200,
		})
		if err != nil {
			t.Fatalf("%s: %v", delivery, err)
		}
		var res report.Result
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Tasks) != 3 {
			t.Fatalf("%s: %d tasks", delivery, len(res.Tasks))
		}
		results[delivery] = &res
	}
	text, viaTools := results[scenario.DeliveryText], results[scenario.DeliveryMCP]
	if *viaTools.Score != *text.Score {
		t.Errorf("score: text %v, mcp %v", *text.Score, *viaTools.Score)
	}
	for i, tt := range text.Tasks {
		mt := viaTools.Tasks[i]
		if mt.Outcome.Score != tt.Outcome.Score || mt.Outcome.Details["decision"] != tt.Outcome.Details["decision"] {
			t.Errorf("task %s: mcp %v %v (%s), text %v %v", tt.TaskID, mt.Outcome.Score, mt.Outcome.Details["decision"], mt.Outcome.Summary,
				tt.Outcome.Score, tt.Outcome.Details["decision"])
		}
		if mt.Outcome.Details["answer_source"] != coordination.AnswerFromTool {
			t.Errorf("task %s: answer from %v", tt.TaskID, mt.Outcome.Details["answer_source"])
		}
	}
}
