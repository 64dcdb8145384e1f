package scicode

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
)

// TestPlanEveryStep: the judge rewrites every test case of both splits (all
// 50 validation and 288 test sub-steps), and no rewritten case the sandbox
// runs names the target. It is the test over every step of "a step no
// answer can pass is a harness defect": the judge refuses to plan a step
// whose recorded value could never be a plain value (a lambda, an instance
// of a class the problem's steps define that nothing in the case consumes;
// TestPlanRefusesNoValues), so such a step fails here. Where the targets
// exist, TestOracle runs the reference code through every validation step;
// TestTestSplitFormsPassable passes the test-split steps that once could
// not be passed with targets of our own.
func TestPlanEveryStep(t *testing.T) {
	dir := testenv.SharedData(t, "scicode")
	python := "/usr/bin/python3"
	if v := os.Getenv("COORDBENCH_SCICODE_PYTHON"); v != "" {
		python = v
	}
	skip := func(msg string) { testenv.Missing(t, "%s", msg) }
	if _, err := os.Stat(python); err != nil {
		skip(err.Error())
	}
	j := newJudge(func() string { return python }, slog.New(slog.DiscardHandler))
	defer j.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := j.call(ctx, map[string]any{"op": "hello"}, nil, &judgeReply{}); err != nil {
		skip("no judge here: " + err.Error())
	}
	names := regexp.MustCompile(`\btarget\b`)
	for _, file := range []string{"problems_dev.jsonl", "problems_test.jsonl"} {
		problems, err := ReadProblems(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		steps, cases, assertions, selfChecking := 0, 0, 0, 0
		for _, p := range problems {
			for i := range p.Steps {
				st := &p.Steps[i]
				if !st.Scored() {
					continue
				}
				plan, err := j.plan(ctx, p, st, "")
				if err != nil {
					t.Errorf("%s: %v", file, err)
					continue
				}
				steps++
				for _, c := range plan.Cases {
					cases++
					if names.MatchString(c.Source) {
						t.Errorf("%s step %s %s: the sandbox's copy names the target:\n%s", file, st.Number, c.Filename, c.Source)
					}
					for _, a := range c.Assertions {
						assertions++
						if !strings.Contains(a.Judged, "target") {
							selfChecking++
						}
					}
				}
			}
		}
		t.Logf("%s: %d steps, %d test cases, %d assertions (%d without a literal target) rewritten", file, steps, cases, assertions, selfChecking)
	}
}

// TestPlanRefusesNoValues: a recorded value that can never be a plain
// value makes the plan fail (the step would be passed by no answer): an
// instance of a class the problem defines that nothing consumes, a name
// bound to one, a lambda. Where the case's own function consumes the
// object, or a comprehension iterates over a recorded value, the plan
// records plain values.
func TestPlanRefusesNoValues(t *testing.T) {
	python := "/usr/bin/python3"
	if v := os.Getenv("COORDBENCH_SCICODE_PYTHON"); v != "" {
		python = v
	}
	if _, err := os.Stat(python); err != nil {
		testenv.Missing(t, "%v", err)
	}
	j := newJudge(func() string { return python }, slog.New(slog.DiscardHandler))
	defer j.stop()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	p := &Problem{ID: "900", Dependencies: "import numpy as np", Steps: []Step{{Number: "900.1",
		FunctionHeader: "class Wave:\n    def value(self, x):\n        '''x'''"}}}
	for _, c := range []struct {
		name, source, refused string
	}{
		{"an instance recorded", "assert np.allclose(Wave(1), target)", "instance of a class"},
		{"a name bound to an instance", "w = Wave(1)\nassert np.allclose(w, target)", "instance of a class"},
		{"a lambda", "assert np.allclose((lambda: f(1)), target)", "a function"},
		{"a method's value", "w = Wave(1)\nassert np.allclose(w.value(2.0), target)", ""},
		{"the case's function consuming the instance", "def check(wf):\n    return wf.value(1.0) - 1.0\nassert np.allclose(check(Wave(2)), target)", ""},
		{"a comprehension over a recorded value", "A = f(3)\nassert all(a > 0 for a in A) == target", ""},
	} {
		step := p.Steps[0]
		step.TestCases = []string{c.source}
		plan, err := j.plan(ctx, p, &step, "")
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s: planned (%v), want an error naming %q", c.name, err, c.refused)
		case err == nil:
			t.Logf("%s: records %q", c.name, plan.Cases[0].Assertions[0].Recorded)
		}
	}
}
