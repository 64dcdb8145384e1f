package scicode

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
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
func judgeForTest(t *testing.T) (*judge, *Problem, *Step, *stepPlan, string) {
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

// slowRecords are step 1.1's records with a JSON list of n floats in
// case 1's leaf: seconds of the judge's time to decode.
func slowRecords(n int) []byte {
	var b bytes.Buffer
	leaf := `{"list": [` + strings.Repeat(`{"float": 1.0}, `, n-1) + `{"float": 1.0}]}`
	for c := 1; c <= 3; c++ {
		b.Write(frame(fmt.Sprintf(`{"t": "begin", "case": %d}`, c)))
		b.Write(frame(fmt.Sprintf(`{"t": "assert", "case": %d, "assertion": 0, "leaves": [%s]}`, c, leaf)))
		b.Write(frame(fmt.Sprintf(`{"t": "end", "case": %d}`, c)))
	}
	b.Write(frame(`{"t": "done"}`))
	return b.Bytes()
}

// judgeProcesses lists the judge processes this test process started
// (by their command line) and the processes those started in turn.
func judgeProcs(t *testing.T) (judges, forks []int) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	parents := map[int]int{}
	isJudge := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		parents[pid] = ppid
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		isJudge[pid] = bytes.Contains(cmd, []byte("coordbench_judge.py"))
	}
	for pid, ppid := range parents {
		switch {
		case ppid == os.Getpid() && isJudge[pid]:
			judges = append(judges, pid)
		case isJudge[ppid] && parents[ppid] == os.Getpid():
			forks = append(forks, pid)
		}
	}
	return judges, forks
}

// cpuTicks is a process's user and system time in clock ticks.
func cpuTicks(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	u, _ := strconv.Atoi(fields[11])
	s, _ := strconv.Atoi(fields[12])
	return u + s
}

// TestJudgeKilledMidRequest: a judge process killed while it compares a
// run's values (as the kernel's OOM killer or a crash would) ends the
// request with errJudgeDied, within a generous deadline; the slot comes
// back, no process is left, and the next request is served. Before issue
// 32 the call waited on its exchange a second time and never returned.
func TestJudgeKilledMidRequest(t *testing.T) {
	j, p, step, plan, targets := judgeForTest(t)
	judges, _ := judgeProcs(t)
	if len(judges) != 1 {
		t.Fatalf("%d judge processes after hello, want 1", len(judges))
	}
	before := cpuTicks(judges[0])
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := j.judge(ctx, p, step, targets, plan, slowRecords(1_400_000), nil)
		done <- err
	}()
	// Wait until the judge works on the request, then kill what works
	// on it: the judge process and whatever it started.
	for {
		judges, forks := judgeProcs(t)
		busy := slicesConcat(judges, forks)
		worked := false
		for _, pid := range busy {
			if pid == judges[0] && cpuTicks(pid) > before+2 || pid != judges[0] && cpuTicks(pid) > 2 {
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
	if judges, forks := judgeProcs(t); len(judges)+len(forks) != 0 {
		t.Errorf("processes left after the kill: judges %v, forks %v", judges, forks)
	}
	// The next request is served.
	if err := j.call(ctx, map[string]any{"op": "hello"}, nil, &judgeReply{}); err != nil {
		t.Errorf("the next request: %v", err)
	}
}

func slicesConcat(a, b []int) []int { return append(append([]int(nil), a...), b...) }
