package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/internal/testenv"
)

var hollowReturn = regexp.MustCompile(`^\s*return\s+(.*?)\s*$`)

// hollowSolver answers every SciCode step with its function returning, for
// each name of the step's return line, an empty array shaped to broadcast
// against anything: an answer that computes nothing (issue 21).
func hollowSolver(_ context.Context, in a2atest.Input) (string, error) {
	header, ret := "", ""
	for _, m := range in.Data {
		header, _ = m["function_header"].(string)
		ret, _ = m["return_line"].(string)
	}
	n := 1
	if m := hollowReturn.FindStringSubmatch(strings.TrimSpace(ret)); m != nil {
		n = len(strings.Split(m[1], ","))
	}
	vals := strings.TrimSuffix(strings.Repeat("__np.zeros((0,) + (1,) * 8), ", n), ", ")
	code := "import numpy as __np\n" + strings.TrimRight(header, "\n") + "\n    return " + vals + "\n"
	return "```python\n" + code + "```", nil
}

// TestRunCommandSciCodeHollow: `green run` over the whole validation split
// scores a solver that computes nothing at 0, every sub-step failing as
// the solver's (test_failed, or crashed), none passing, none the runner's.
func TestRunCommandSciCodeHollow(t *testing.T) {
	dir := testenv.SharedData(t, "scicode")
	url := a2atest.Start(t, a2atest.Options{Name: "hollow-solver", AsMessage: true, ReplyFunc: hollowSolver}).URL
	code, stdout, stderr := runGreen(t, "run", "--scicode-dir", dir, "--participant", "solver="+url,
		"--config", `{"scenario": "scicode", "split": "validation", "max_num_steps": 1, "settle_quiet_ms": 50, "settle_max_wait_ms": 500}`)
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
			TaskID  string `json:"task_id"`
			Outcome struct {
				Details struct {
					TamperProof bool `json:"tamper_proof"`
					Steps       []struct {
						Step   string `json:"step"`
						Passed bool   `json:"passed"`
						Reason string `json:"reason"`
						Detail string `json:"detail"`
					} `json:"steps"`
				} `json:"details"`
			} `json:"outcome"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, stdout)
	}
	if res.Score != 0 || res.PassRate != 0 || len(res.Tasks) != 15 {
		t.Errorf("score %v, pass rate %v, %d tasks; want 0, 0, 15", res.Score, res.PassRate, len(res.Tasks))
	}
	steps := 0
	for _, task := range res.Tasks {
		for _, st := range task.Outcome.Details.Steps {
			steps++
			// crashed where the case itself indexes the placeholder in the
			// sandbox (78.2's trajectory[-1]), as SciCode's run would.
			if st.Passed || (st.Reason != "test_failed" && st.Reason != "crashed") {
				t.Errorf("problem %s step %s: passed %v, %s (%s); want test_failed or crashed", task.TaskID, st.Step, st.Passed, st.Reason, st.Detail)
			}
		}
	}
	if steps != 50 {
		t.Errorf("%d steps, want 50", steps)
	}
}
