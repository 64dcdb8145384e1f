package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/internal/testenv"
)

// exitingSolver answers every SciCode step with the step's header and a
// module-level os._exit(0): the route that made the old runner score 50 of
// 50 sub-steps.
func exitingSolver(_ context.Context, in a2atest.Input) (string, error) {
	header := ""
	for _, m := range in.Data {
		header, _ = m["function_header"].(string)
	}
	code := "import os\nos._exit(0)\n" + strings.TrimRight(header, "\n") + "\n    return 0\n"
	return "```python\n" + code + "```", nil
}

// TestRunCommandSciCodeForgery: `green run` scores a solver whose answers
// end the test's process with status 0 at 0, each step with reason
// no_result.
func TestRunCommandSciCodeForgery(t *testing.T) {
	dir := testenv.SharedData(t, "scicode")
	url := a2atest.Start(t, a2atest.Options{Name: "exiting-solver", AsMessage: true, ReplyFunc: exitingSolver}).URL
	code, stdout, stderr := runGreen(t, "run", "--scicode-dir", dir, "--participant", "solver="+url,
		"--config", `{"scenario": "scicode", "problem_ids": ["1", "3", "4"], "max_num_steps": 1, "settle_quiet_ms": 50, "settle_max_wait_ms": 500}`)
	if code != 0 {
		if strings.Contains(stderr, "scicode is not available") {
			testenv.Missing(t, "%s", stderr)
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
