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
// runs names the target.
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
