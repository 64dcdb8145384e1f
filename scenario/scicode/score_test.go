package scicode_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario/scicode"
)

// referenceRequest tests code as step k of p, every earlier step given its
// reference code.
func referenceRequest(split *scicode.Split, p *scicode.Problem, k int, code string) scicode.TestRequest {
	prev := make([]string, k)
	for i := range k {
		prev[i] = p.Steps[i].Reference
	}
	return scicode.TestRequest{Split: split, Problem: p, Step: k, Previous: prev, Code: code}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// TestOracle is the scenario's key test: the reference code of every
// validation step passes its tests against the targets, in the sandbox, as
// in SciCode's harness (all 50 steps, 15 of 15 problems).
func TestOracle(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: oracleStepTimeout})
	split, _ := s.Split(scicode.SplitValidation)
	type job struct {
		p *scicode.Problem
		k int
	}
	jobs := make(chan job)
	type outcome struct {
		step string
		v    *scicode.Verdict
		err  error
	}
	results := make(chan outcome)
	var wg sync.WaitGroup
	for range 2 { // the machine is shared: two workers
		wg.Go(func() {
			for j := range jobs {
				v, err := s.Test(t.Context(), referenceRequest(split, j.p, j.k, j.p.Steps[j.k].Reference))
				results <- outcome{j.p.Steps[j.k].Number, v, err}
			}
		})
	}
	go func() {
		for _, p := range split.Problems {
			for k := range p.Steps {
				jobs <- job{p, k}
			}
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	start := time.Now()
	passed, total := 0, 0
	failedProblems := map[string]bool{}
	var slowest string
	var slowestMS, slowestCPU float64
	for o := range results {
		total++
		switch {
		case o.err != nil:
			t.Errorf("step %s: %v", o.step, o.err)
		case !o.v.Passed:
			t.Errorf("step %s: %s: %s\n%s", o.step, o.v.Reason, o.v.Detail, tail(o.v.Run.Output, 2000))
		default:
			passed++
			if o.v.Run.DurationMS > slowestMS {
				slowest, slowestMS, slowestCPU = o.step, o.v.Run.DurationMS, o.v.Run.CPUMS
			}
			continue
		}
		failedProblems[strings.SplitN(o.step, ".", 2)[0]] = true
	}
	solved := len(split.Problems) - len(failedProblems)
	t.Logf("reference code: %d of %d sub-steps pass, %d of %d problems solved, in %s (slowest step %s, %.0f ms, %.0f ms of CPU)",
		passed, total, solved, len(split.Problems), time.Since(start).Round(time.Millisecond), slowest, slowestMS, slowestCPU)
	if total != 50 || passed != 50 || solved != 15 {
		t.Errorf("want 50 of 50 sub-steps and 15 of 15 problems, got %d of %d and %d of %d", passed, total, solved, len(split.Problems))
	}
}

// TestWrongCode: wrong code fails, and the verdict says how and where.
func TestWrongCode(t *testing.T) {
	s := newForTest(t, sandbox.Options{})
	split, _ := s.Split(scicode.SplitValidation)
	p, _ := split.Problem("10")
	for _, tc := range []struct {
		name, code, reason, detail, section string
	}{
		{"wrong value", "def get_alpha(recvec, alpha_scaling=5):\n    return 2 * alpha_scaling * np.max(np.linalg.norm(recvec, axis=1))\n",
			scicode.ReasonTestFailed, "does not hold", "test case 1 of 4"},
		{"syntax error", "def get_alpha(recvec, alpha_scaling=5):\n    return (\n", scicode.ReasonCrashed, "SyntaxError", scicode.SectionAnswer},
		{"raises", "def get_alpha(recvec, alpha_scaling=5):\n    raise ValueError('not today')\n", scicode.ReasonCrashed, "ValueError: not today", "test case 1 of 4"},
		{"wrong name", "def alpha(recvec, alpha_scaling=5):\n    return 1.0\n", scicode.ReasonCrashed, "NameError", "test case 1 of 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := s.Test(t.Context(), referenceRequest(split, p, 0, tc.code))
			if err != nil {
				t.Fatal(err)
			}
			if v.Passed || v.Reason != tc.reason || !strings.Contains(v.Detail, tc.detail) || v.Section != tc.section {
				t.Errorf("passed %v, reason %q, detail %q, section %q; want %q, %q, %q\n%s",
					v.Passed, v.Reason, v.Detail, v.Section, tc.reason, tc.detail, tc.section, v.Run.Output)
			}
			if strings.Contains(v.Feedback, v.Run.Dir) {
				t.Errorf("the feedback names the private directory:\n%s", v.Feedback)
			}
		})
	}
}
