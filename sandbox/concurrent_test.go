//go:build linux

package sandbox_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordbench/coordbench/sandbox"
)

// Helpers for tests of runs that go on at the same time: a run marks
// itself ready by naming its process (prctl PR_SET_NAME, /proc/PID/comm on
// the host), the test finds it there, looks at it from the host (its uid,
// its cgroup, its CPU time) and ends it with SIGUSR1 or by canceling it.
// Nothing waits on the clock: each wait ends on what the kernel shows, or
// on a generous deadline that only a broken machine meets.

// markerWait bounds the wait for a run to mark itself.
const markerWait = 5 * time.Minute

// marker is a process name no other process has: prefix and random hex,
// at most 15 bytes (the kernel's limit).
func marker(t *testing.T, prefix string) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b[:])
}

// nameSelf is Python that names the process it runs in.
func nameSelf(name string) string {
	return fmt.Sprintf("import ctypes as _c\n_c.CDLL(None).prctl(15, %q.encode())\n", name)
}

// untilUSR1 is Python that waits for SIGUSR1 and then exits 0, printing
// what the script put in the list `report`.
const untilUSR1 = `import signal as _s, sys as _sys
def _done(*_):
    print("\n".join(str(x) for x in report), flush=True)
    _sys.exit(0)
_s.signal(_s.SIGUSR1, _done)
while True:
    _s.pause()
`

// outcome is what a run started by start gave.
type outcome struct {
	res *sandbox.Result
	err error
}

// started is a run going on in the background.
type started struct {
	name   string
	done   chan outcome
	cancel context.CancelFunc
	once   sync.Once
	out    outcome
}

// start runs script in the background; wait must be called.
func start(t *testing.T, r *sandbox.Runner, name, script string, timeout time.Duration) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	s := &started{name: name, done: make(chan outcome, 1), cancel: cancel}
	go func() {
		res, err := r.Run(ctx, sandbox.Request{Name: name, Script: script, Timeout: timeout})
		s.done <- outcome{res, err}
	}()
	return s
}

// wait returns the run's outcome (each call the same).
func (s *started) wait() outcome {
	s.once.Do(func() {
		s.out = <-s.done
		s.cancel()
	})
	return s.out
}

// stop cancels the run and waits for it to end.
func (s *started) stop() outcome {
	s.cancel()
	return s.wait()
}

// findMarked waits until a process is named name and returns its pid on
// the host; it fails t if the run ends first or the wait passes
// markerWait.
func findMarked(t *testing.T, s *started, name string) int {
	t.Helper()
	deadline := time.After(markerWait)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if pid := pidNamed(name); pid > 0 {
			return pid
		}
		select {
		case o := <-s.done:
			s.done <- o
			if o.err != nil {
				t.Fatalf("run %s ended before it was ready: %v", s.name, o.err)
			}
			t.Fatalf("run %s ended before it was ready: %s %s\n%s", s.name, o.res.Reason, o.res.Detail, tail(o.res.Output, 2000))
		case <-deadline:
			t.Fatalf("run %s did not mark itself %q within %s", s.name, name, markerWait)
		case <-tick.C:
		}
	}
}

// pidNamed is the pid of a process named name (0 for none).
func pidNamed(name string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err == nil && strings.TrimSpace(string(b)) == name {
			return pid
		}
	}
	return 0
}

// statusIDs are a process's real, effective, saved and file-system uids
// (or gids) as the host sees them.
func statusIDs(t *testing.T, pid int, key string) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			return strings.Fields(v)
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return nil
}

// processesOfUID lists the live processes whose real uid is uid.
func processesOfUID(t *testing.T, uid string) []int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 && f[0] == uid {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out
}

// signal sends sig to pid.
func signal(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("signal %d: %v", pid, err)
	}
}

// cgroupCPU reads the CPU time of the cgroup a process is in, in
// nanoseconds (cgroup v1 cpuacct.usage, v2 cpu.stat usage_usec), and the
// directory it read it from.
func cgroupCPU(t *testing.T, pid int) (int64, string) {
	t.Helper()
	dir := cgroupDir(t, pid)
	if strings.Contains(dir, "cpuacct") || fileExists(dir+"/cpuacct.usage") {
		b, err := os.ReadFile(dir + "/cpuacct.usage")
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n, dir
	}
	b, err := os.ReadFile(dir + "/cpu.stat")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return 1000 * n, dir
		}
	}
	t.Fatalf("no usage_usec in %s/cpu.stat", dir)
	return 0, ""
}

// cgroupDir is the directory of the cgroup holding pid's CPU time: its
// cpuacct cgroup on v1, its cgroup on v2.
func cgroupDir(t *testing.T, pid int) string {
	t.Helper()
	own, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for _, line := range strings.Split(string(own), "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 {
			for _, c := range strings.Split(f[1], ",") {
				paths[c] = f[2]
			}
		}
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		left, right, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 5 || len(rf) < 3 {
			continue
		}
		root, point := lf[3], lf[4]
		var path string
		switch {
		case rf[0] == "cgroup" && strings.Contains(","+rf[2]+",", ",cpuacct,"):
			path = paths["cpuacct"]
		case rf[0] == "cgroup2" && paths["cpuacct"] == "":
			path = paths[""]
		default:
			continue
		}
		if rel, ok := strings.CutPrefix(path, strings.TrimSuffix(root, "/")); ok {
			return filepath.Join(point, rel)
		}
	}
	t.Fatalf("no cgroup mount shows process %d's cgroup (%q)", pid, own)
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
