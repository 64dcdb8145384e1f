//go:build linux

package scicode

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
)

// The judge's process life under a participant that kills or poisons it
// (issue 32): every request ends within its caller's deadline, whatever
// happens to its process, and every slot comes back.

// judgeForTest starts a judge on the test data's step 1.1 and returns it
// with the step, its problem and its plan.
func judgeForTest(t testing.TB) (*judge, *Problem, *Step, *stepPlan, string) {
	t.Helper()
	dir := testenv.SharedData(t, "scicode")
	python := "/usr/bin/python3"
	if v := os.Getenv("COORDBENCH_SCICODE_PYTHON"); v != "" {
		python = v
	}
	if _, err := os.Stat(python); err != nil {
		testenv.Missing(t, "%v", err)
	}
	split, err := LoadSplit(dir, SplitValidation)
	if err != nil {
		testenv.Missing(t, "%v", err)
	}
	j := newJudge(func() string { return python }, slog.New(slog.DiscardHandler))
	t.Cleanup(j.stop)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := j.call(ctx, map[string]any{"op": "hello"}, nil, &judgeReply{}); err != nil {
		testenv.Missing(t, "no judge here: %v", err)
	}
	p, _ := split.Problem("1")
	step := &p.Steps[0]
	plan, err := j.plan(ctx, p, step, split.TargetsPath)
	if err != nil {
		t.Fatal(err)
	}
	return j, p, step, plan, split.TargetsPath
}

// frame is one record of the record channel (coordbench_harness.py).
func frame(header string, blobs ...[]byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, uint32(len(header)))
	b.WriteString(header)
	_ = binary.Write(&b, binary.BigEndian, uint32(len(blobs)))
	for _, blob := range blobs {
		_ = binary.Write(&b, binary.BigEndian, uint64(len(blob)))
		b.Write(blob)
	}
	return b.Bytes()
}

// slowRecords are step 1.1's records with a JSON list of 950,000 floats
// in the leaves of cases 1 and 2 (within the judge's bounds: 16 MiB a
// frame, 4 M JSON values): seconds of the judge's time to decode.
func slowRecords() []byte {
	var b bytes.Buffer
	const n = 950_000
	big := `{"list": [` + strings.Repeat(`{"float": 1.0},`, n-1) + `{"float": 1.0}]}`
	for c := 1; c <= 3; c++ {
		leaf := big
		if c == 3 {
			leaf = `{"float": 1.0}`
		}
		b.Write(frame(fmt.Sprintf(`{"t": "begin", "case": %d}`, c)))
		b.Write(frame(fmt.Sprintf(`{"t": "assert", "case": %d, "assertion": 0, "leaves": [%s]}`, c, leaf)))
		b.Write(frame(fmt.Sprintf(`{"t": "end", "case": %d}`, c)))
	}
	b.Write(frame(`{"t": "done"}`))
	return b.Bytes()
}

// TestJudgeKilledMidRequest: a judge process killed while it compares a
// run's values (as the kernel's OOM killer or a crash would) ends the
// request with errJudgeDied, within a generous deadline; the slot comes
// back, no process is left, and the next request is served. Before issue
// 32 the call waited on its exchange a second time and never returned.
func TestJudgeKilledMidRequest(t *testing.T) {
	j, p, step, plan, targets := judgeForTest(t)
	judges, _ := mustJudgeProcs(t)
	if len(judges) != 1 {
		t.Fatalf("%d judge processes after hello, want 1", len(judges))
	}
	before := CPUTicks(judges[0])
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := j.judge(ctx, p, step, targets, plan, slowRecords(), nil)
		done <- err
	}()
	// Wait until the judge works on the request, then kill what works
	// on it: the judge process and whatever it started.
	for {
		judges, forks := mustJudgeProcs(t)
		busy := slicesConcat(judges, forks)
		worked := false
		for _, pid := range busy {
			if pid == judges[0] && CPUTicks(pid) > before+2 || pid != judges[0] && CPUTicks(pid) > 2 {
				worked = true
			}
		}
		if worked {
			for _, pid := range busy {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the request ended before the judge could be killed: %v", err)
		case <-ctx.Done():
			t.Fatal("the judge never worked on the request")
		case <-time.After(20 * time.Millisecond):
		}
	}
	select {
	case err := <-done:
		if !errors.Is(err, errJudgeDied) {
			t.Errorf("the request ended with %v, want errJudgeDied", err)
		}
	case <-ctx.Done():
		t.Fatal("the request never ended after its judge process was killed")
	}
	if n := len(j.slots); n != 0 {
		t.Errorf("%d slots held after the request ended", n)
	}
	if judges, forks := mustJudgeProcs(t); len(judges)+len(forks) != 0 {
		t.Errorf("processes left after the kill: judges %v, forks %v", judges, forks)
	}
	// The next request is served.
	if err := j.call(ctx, map[string]any{"op": "hello"}, nil, &judgeReply{}); err != nil {
		t.Errorf("the next request: %v", err)
	}
}

// waitBusy returns once a fork of the judge has worked on a request (20
// ms of CPU), failing if the request ends first or never starts.
func waitBusy(t *testing.T, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	for {
		_, forks := mustJudgeProcs(t)
		for _, pid := range forks {
			if CPUTicks(pid) > 2 {
				return
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the request ended before the judge was seen at work: %v", err)
		case <-ctx.Done():
			t.Fatal("the judge never worked on the request")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func slicesConcat(a, b []int) []int { return append(append([]int(nil), a...), b...) }

func mustJudgeProcs(t *testing.T) (judges, forks []int) {
	t.Helper()
	judges, forks, err := JudgeProcs()
	if err != nil {
		t.Fatal(err)
	}
	return judges, forks
}

// TestJudgeForkKilledMidRequest: the fork that serves a request killed
// mid-request: the judge process answers that it died (errJudgeDied) and
// is replaced; the slot comes back and nothing is left.
func TestJudgeForkKilledMidRequest(t *testing.T) {
	j, p, step, plan, targets := judgeForTest(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := j.judge(ctx, p, step, targets, plan, slowRecords(), nil)
		done <- err
	}()
	for killed := false; !killed; {
		_, forks := mustJudgeProcs(t)
		for _, pid := range forks {
			if CPUTicks(pid) > 2 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				killed = true
			}
		}
		if killed {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the request ended before its fork could be killed: %v", err)
		case <-ctx.Done():
			t.Fatal("no fork worked on the request")
		case <-time.After(20 * time.Millisecond):
		}
	}
	select {
	case err := <-done:
		if !errors.Is(err, errJudgeDied) || !strings.Contains(err.Error(), "SIGKILL") {
			t.Errorf("the request ended with %v, want errJudgeDied naming SIGKILL", err)
		}
	case <-ctx.Done():
		t.Fatal("the request never ended after its fork was killed")
	}
	if n := len(j.slots); n != 0 {
		t.Errorf("%d slots held after the request ended", n)
	}
	if judges, forks := mustJudgeProcs(t); len(judges)+len(forks) != 0 {
		t.Errorf("a process that erred is used again, or left: judges %v, forks %v", judges, forks)
	}
}

// TestJudgeReadRaises: the judge process's own read of a request raising
// MemoryError (the route of issue 32: a process left with its address
// space nearly full; here its limit is lowered below the request's size)
// ends the process; the request ends with errJudgeDied, the slot comes
// back, and the next request gets a new process.
func TestJudgeReadRaises(t *testing.T) {
	j, p, step, plan, targets := judgeForTest(t)
	judges, _ := mustJudgeProcs(t)
	if len(judges) != 1 {
		t.Fatalf("%d judge processes, want 1", len(judges))
	}
	peak := StatusKiB(judges[0], "VmPeak") << 10
	j.stop()
	// Room for the interpreter and its modules, not for 250 MiB of
	// records besides.
	j.memory = peak + 64<<20
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	huge := make([]byte, 250<<20)
	_, err := j.judge(ctx, p, step, targets, plan, huge, nil)
	if !errors.Is(err, errJudgeDied) || !strings.Contains(err.Error(), "MemoryError") {
		t.Errorf("got %v, want errJudgeDied with the process's MemoryError", err)
	}
	if n := len(j.slots); n != 0 {
		t.Errorf("%d slots held", n)
	}
	if judges, forks := mustJudgeProcs(t); len(judges)+len(forks) != 0 {
		t.Errorf("processes left: judges %v, forks %v", judges, forks)
	}
	j.memory = judgeMemory
	if err := j.call(ctx, map[string]any{"op": "hello"}, nil, &judgeReply{}); err != nil {
		t.Errorf("the next request: %v", err)
	}
}

// TestJudgeCPUBudget: a request past its CPU budget ends as over budget
// (the run's values' doing: an invalid answer, not an error), in its own
// fork; the judge process serves the next request, and no fork is left.
func TestJudgeCPUBudget(t *testing.T) {
	j, p, step, plan, targets := judgeForTest(t)
	j.stop()
	j.cpu = time.Second
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	got, err := j.judge(ctx, p, step, targets, plan, slowRecords(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Passed || got.Failure == nil || got.Failure.Kind != "invalid" || !strings.Contains(got.Failure.Detail, "CPU budget") {
		t.Errorf("got %+v, want an invalid answer over the CPU budget", got)
	}
	if _, forks := mustJudgeProcs(t); len(forks) != 0 {
		t.Errorf("forks left: %v", forks)
	}
	if err := j.call(ctx, map[string]any{"op": "hello"}, nil, &judgeReply{}); err != nil {
		t.Errorf("the next request: %v", err)
	}
	if judges, _ := mustJudgeProcs(t); len(judges) != 1 {
		t.Errorf("%d judge processes, want the one that served both", len(judges))
	}
}

// TestJudgeCancelledMidRequest: the task's time running out while the
// judge works ends the request at once with the task's cause; the process
// is killed (never reused), the slot comes back.
func TestJudgeCancelledMidRequest(t *testing.T) {
	j, p, step, plan, targets := judgeForTest(t)
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := j.judge(ctx, p, step, targets, plan, slowRecords(), nil)
		done <- err
	}()
	waitBusy(t, done)
	why := errors.New("the task's deadline")
	cancel(why)
	wait, stop := context.WithTimeout(t.Context(), 5*time.Minute)
	defer stop()
	select {
	case err := <-done:
		if !errors.Is(err, why) {
			t.Errorf("got %v, want the task's cause", err)
		}
	case <-wait.Done():
		t.Fatal("the request did not end with its task")
	}
	if n := len(j.slots); n != 0 {
		t.Errorf("%d slots held", n)
	}
	if judges, forks := mustJudgeProcs(t); len(judges)+len(forks) != 0 {
		t.Errorf("processes left: judges %v, forks %v", judges, forks)
	}
}
