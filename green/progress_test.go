package green

import (
	"regexp"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/scenario"
)

// TestProgressTaskTime: a heartbeat while the second task runs gives that
// task's own time, and the assessment's separately; the task's is the
// smaller by at least the first task's time.
func TestProgressTaskTime(t *testing.T) {
	e, _ := newExecutorForTest(t, map[string]scenario.Scenario{"route": routeScenario{}}, 50*time.Millisecond)
	slow := a2atest.Start(t, a2atest.Options{Name: "slow", Delay: 600 * time.Millisecond})
	req := mustParse(t, `{"participants": {"slow": %q}, "config": {"scenario": "route", "task_ids": ["slow#1", "slow#2"], "settle_quiet_ms": 50, "settle_max_wait_ms": 500}}`, slow.URL)
	var log progressLog
	if _, err := e.Assess(t.Context(), req, log.add); err != nil {
		t.Fatalf("Assess: %v", err)
	}
	beat := regexp.MustCompile(`^task 2/2 \(slow#2\) running for (\S+) \((\S+) since the assessment began\)$`)
	beats := 0
	for _, s := range log.all() {
		m := beat.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		beats++
		task, err1 := time.ParseDuration(m[1])
		total, err2 := time.ParseDuration(m[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("%q: %v %v", s, err1, err2)
		}
		// The first task took at least its participant's 600 ms.
		if total-task < 500*time.Millisecond {
			t.Errorf("%q: the task's time is not its own (assessment %v, task %v)", s, total, task)
		}
	}
	if beats == 0 {
		t.Errorf("no heartbeat while task 2 ran: %q", log.all())
	}
}

func TestHeartbeatText(t *testing.T) {
	for _, tc := range []struct {
		current      string
		phase, total time.Duration
		want         string
	}{
		{"task 2/2 (x) running", 12*time.Second + 340*time.Millisecond, 5*time.Minute + 31*time.Second + 400*time.Millisecond,
			"task 2/2 (x) running for 12.3s (5m31s since the assessment began)"},
		{"starting", -1, 2*time.Second + 20*time.Microsecond, "starting (2s since the assessment began)"},
		{"task 1/1 (z) running", 300 * time.Millisecond, 310 * time.Millisecond, "task 1/1 (z) running for 300ms (300ms since the assessment began)"},
		{"task 1/1 (y) being evaluated", 90 * time.Second, 2 * time.Hour, "task 1/1 (y) being evaluated for 1m30s (2h0m0s since the assessment began)"},
	} {
		if got := heartbeatText(tc.current, tc.phase, tc.total); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
