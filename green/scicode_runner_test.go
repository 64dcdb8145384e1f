package green

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
)

// sciCodeTestDir is ../shared/data/scicode relative to the module root.
// Without it the SciCode tests skip (or fail with CI=true).
func sciCodeTestDir(t testing.TB) string {
	t.Helper()
	return testenv.SharedData(t, "scicode")
}

func sciCodeTestSplit(t testing.TB) *SciCodeSplit {
	t.Helper()
	s, err := LoadSciCodeSplit(sciCodeTestDir(t), SciCodeValidation)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Runners are shared by the tests of one configuration, so the probe runs
// once per configuration.
var (
	testRunnersMu sync.Mutex
	testRunners   = map[string]*Runner{}
)

// sciCodeTestRunner returns a Runner with opts (the probe done), skipping
// (or failing with CI=true) when no Python with the scientific stack is
// installed.
func sciCodeTestRunner(t testing.TB, opts RunnerOptions) *Runner {
	t.Helper()
	key := fmt.Sprintf("%+v", opts)
	testRunnersMu.Lock()
	defer testRunnersMu.Unlock()
	r, ok := testRunners[key]
	if !ok {
		opts.Logger = quietLogger
		var err error
		if r, err = NewRunner(opts); err != nil {
			t.Fatal(err)
		}
		testRunners[key] = r
	}
	info, err := r.Check(context.Background())
	if err != nil {
		testenv.Missing(t, "%v", err)
	}
	t.Logf("sandbox: %+v", *info)
	return r
}

// referenceScript is the test script of step k of p with the reference code
// of every step.
func referenceScript(p *SciCodeProblem, k int, code string) RunRequest {
	prev := make([]string, k)
	for i := range k {
		prev[i] = p.Steps[i].Reference
	}
	script, sections := BuildSciCodeScript(p, k, prev, code)
	return RunRequest{StepID: p.Steps[k].Number, Script: script, Sections: sections}
}

// oracleStepTimeout is generous: step 51.4's reference (a pure-Python
// molecular dynamics loop) needs about 30 s of CPU, and the machine that runs
// the tests may be shared.
const oracleStepTimeout = 300 * time.Second

// TestSciCodeRunnerOracle is the runner's key test: the reference code of
// every validation step passes its tests against the targets, in the
// sandbox, as in SciCode's harness (all 50 steps, 15 of 15 problems).
func TestSciCodeRunnerOracle(t *testing.T) {
	split := sciCodeTestSplit(t)
	r := sciCodeTestRunner(t, RunnerOptions{Timeout: oracleStepTimeout})
	type job struct {
		p *SciCodeProblem
		k int
	}
	jobs := make(chan job)
	type outcome struct {
		step string
		res  *RunResult
		err  error
	}
	results := make(chan outcome)
	var wg sync.WaitGroup
	for range 2 { // the machine is shared: two workers
		wg.Go(func() {
			for j := range jobs {
				req := referenceScript(j.p, j.k, j.p.Steps[j.k].Reference)
				req.TargetsPath = split.TargetsPath
				res, err := r.Run(t.Context(), req)
				results <- outcome{j.p.Steps[j.k].Number, res, err}
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
		case !o.res.Passed:
			t.Errorf("step %s: %s: %s\n%s", o.step, o.res.Reason, o.res.Detail, tail(o.res.Output, 2000))
		default:
			passed++
			if o.res.DurationMS > slowestMS {
				slowest, slowestMS, slowestCPU = o.step, o.res.DurationMS, o.res.CPUMS
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

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// checkNothingLeft checks that a run left the machine as it was: no
// process in its group, no process running from its private directory (a
// child that left the group with setsid would still run its parent's
// command line), and no private directory.
func checkNothingLeft(t *testing.T, res *RunResult) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		group := liveProcessesInGroup(res.pgid)
		procs := processesMentioning(res.dir)
		if len(group) == 0 && len(procs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("left behind: processes %v in group %d, processes %v running from its directory", group, res.pgid, procs)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(res.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("private directory %s not removed: %v", res.dir, err)
	}
}

// liveProcessesInGroup lists the processes of a group that are not
// zombies. A killed process stays a zombie until its parent (for an orphan,
// whatever reaps orphans on this machine) collects it; it runs nothing and
// holds nothing, so it does not count as left behind.
func liveProcessesInGroup(pgid int) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			out = append(out, e.Name()+" ("+f[0]+")")
		}
	}
	return out
}

// processesMentioning lists the live processes whose command line holds s.
func processesMentioning(s string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// runContained runs a hostile script and checks that it was contained.
func runContained(t *testing.T, r *Runner, script string, timeout time.Duration) *RunResult {
	t.Helper()
	res, err := r.Run(t.Context(), RunRequest{StepID: "hostile", Script: script, Timeout: timeout})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("%s (%s; limit %q); %.0f ms, %.0f ms CPU, %d bytes of output; output ends %q",
		res.Reason, res.Detail, res.Limit, res.DurationMS, res.CPUMS, res.OutputBytes, tail(res.Output, 300))
	if res.Passed {
		t.Errorf("a hostile script passed")
	}
	checkNothingLeft(t, res)
	return res
}

// TestSandboxInfiniteLoop: a loop that never ends is killed at the timeout.
func TestSandboxInfiniteLoop(t *testing.T) {
	r := sciCodeTestRunner(t, RunnerOptions{})
	start := time.Now()
	res := runContained(t, r, "while True:\n    pass\n", 2*time.Second)
	if res.Reason != ReasonTimeout || !strings.Contains(res.Detail, "killed") {
		t.Errorf("reason %q (%s), want %q", res.Reason, res.Detail, ReasonTimeout)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the run took %s", d)
	}
}

// TestSandboxCPULimit: the CPU limit ends a busy script even when the
// wall-clock timeout is far away, and says so.
func TestSandboxCPULimit(t *testing.T) {
	r := sciCodeTestRunner(t, RunnerOptions{CPUSeconds: 1})
	res := runContained(t, r, "while True:\n    pass\n", 60*time.Second)
	if res.Reason != ReasonLimit || res.Limit != LimitCPU {
		t.Errorf("reason %q limit %q (%s), want the CPU limit", res.Reason, res.Limit, res.Detail)
	}
}

// TestSandboxForkBomb: the process limit refuses the forks past it, and
// nothing forked survives the run, not even a child that left the group.
func TestSandboxForkBomb(t *testing.T) {
	r := sciCodeTestRunner(t, RunnerOptions{MaxProcesses: 16})
	info, _ := r.Check(t.Context())
	for _, l := range info.Rlimits {
		if strings.HasPrefix(l, "nproc") && strings.Contains(l, "not binding") {
			t.Skipf("the process limit does not bind here (%s): a fork bomb test would be a fork bomb", l)
		}
	}
	// At most 200 forks, so that a limit that did not hold cannot take the
	// machine down; the sleepers outlive the script unless killed.
	script := `import os, time
if os.fork() == 0:
    os.setsid()
    time.sleep(60)
    os._exit(0)
n = 0
try:
    while n < 200:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
finally:
    print("forked", n, flush=True)
`
	res := runContained(t, r, script, 30*time.Second)
	if res.Reason != ReasonLimit || res.Limit != LimitProcesses {
		t.Errorf("reason %q limit %q (%s), want the process limit", res.Reason, res.Limit, res.Detail)
	}
	if strings.Contains(res.Output, "forked 200") {
		t.Errorf("all 200 forks succeeded under a limit of 16")
	}
	// The classic bomb: every process forks for ever.
	res = runContained(t, r, "import os\nwhile True:\n    os.fork()\n", 20*time.Second)
	if res.Reason != ReasonLimit || res.Limit != LimitProcesses {
		t.Errorf("classic bomb: reason %q limit %q (%s), want the process limit", res.Reason, res.Limit, res.Detail)
	}
}

// TestSandboxMemoryHog: the address-space limit stops a script that keeps
// allocating (and touching) memory.
func TestSandboxMemoryHog(t *testing.T) {
	r := sciCodeTestRunner(t, RunnerOptions{MemoryBytes: 1 << 30})
	// 40 × 64 MiB = 2.5 GiB at most, should the limit not hold.
	script := "chunks = []\nfor _ in range(40):\n    chunks.append(b'x' * (64 << 20))\nprint('allocated', len(chunks))\n"
	res := runContained(t, r, script, 60*time.Second)
	if res.Reason != ReasonLimit || res.Limit != LimitMemory {
		t.Errorf("reason %q limit %q (%s), want the memory limit", res.Reason, res.Limit, res.Detail)
	}
}

// TestSandboxWriteOutside: the script may write its work directory and
// nothing else. With the file system locked down even a world-writable
// directory is refused; without, the sandboxed identity's permissions are
// what refuses it.
func TestSandboxWriteOutside(t *testing.T) {
	r := sciCodeTestRunner(t, RunnerOptions{})
	info, _ := r.Check(t.Context())
	outside := t.TempDir()
	want := "Permission denied"
	switch {
	case strings.HasPrefix(info.Filesystem, "read-only"):
		// Every identity may write there: only the lockdown refuses.
		for _, d := range []string{filepath.Dir(outside), outside} {
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		want = "Read-only file system"
	case strings.Contains(info.User, "the green agent runs as root"):
		for _, d := range []string{filepath.Dir(outside), outside} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	default:
		t.Skipf("neither a read-only file system nor another identity here (%s, %s): a write outside cannot be refused", info.Filesystem, info.User)
	}
	target := filepath.Join(outside, "escaped.txt")
	script := fmt.Sprintf(`import os
with open("inside.txt", "w") as f:
    f.write("fine")
print("inside:", open(os.path.join(os.environ["HOME"], "inside.txt")).read(), flush=True)
with open(%q, "w") as f:
    f.write("escaped")
`, target)
	res := runContained(t, r, script, 60*time.Second)
	if !strings.Contains(res.Output, "inside: fine") {
		t.Errorf("the work directory was not writable: %s", res.Output)
	}
	if res.Reason != ReasonCrashed || !strings.Contains(res.Detail, want) {
		t.Errorf("reason %q (%s), want a write refused with %q", res.Reason, res.Detail, want)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was created (stat: %v)", target, err)
	}
}

// TestSandboxNetwork: in the network namespace nothing can be reached, not
// even a listener on the host's loopback.
func TestSandboxNetwork(t *testing.T) {
	r := sciCodeTestRunner(t, RunnerOptions{})
	info, _ := r.Check(t.Context())
	if info.Network != NetworkNamespace {
		t.Skipf("network %q here: a connection cannot be refused", info.Network)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	script := fmt.Sprintf("import socket\ns = socket.create_connection((%q, %s), timeout=5)\nprint('connected')\n", host, port)
	res := runContained(t, r, script, 60*time.Second)
	if res.Reason != ReasonCrashed || strings.Contains(res.Output, "connected\n") {
		t.Errorf("reason %q (%s), want a refused connection", res.Reason, res.Detail)
	}
	select {
	case c := <-accepted:
		c.Close()
		t.Errorf("the sandboxed script connected to the host's loopback")
	case <-time.After(200 * time.Millisecond):
	}
}

// TestSandboxOutputFlood: output past the cap kills the group; what is kept
// is at most the cap.
func TestSandboxOutputFlood(t *testing.T) {
	r := sciCodeTestRunner(t, RunnerOptions{OutputCap: 64 << 10})
	res := runContained(t, r, "while True:\n    print('x' * 1000)\n", 60*time.Second)
	if res.Reason != ReasonLimit || res.Limit != LimitOutput {
		t.Errorf("reason %q limit %q (%s), want the output limit", res.Reason, res.Limit, res.Detail)
	}
	if len(res.Output) > 64<<10 || !res.OutputTruncated {
		t.Errorf("kept %d bytes (truncated %v) of %d, want at most %d", len(res.Output), res.OutputTruncated, res.OutputBytes, 64<<10)
	}
}

// TestSandboxScrubbedEnvironment: nothing of the green agent's environment
// reaches the script.
func TestSandboxScrubbedEnvironment(t *testing.T) {
	t.Setenv("COORDBENCH_TEST_SECRET", "do-not-leak")
	r := sciCodeTestRunner(t, RunnerOptions{})
	res, err := r.Run(t.Context(), RunRequest{StepID: "env", Timeout: 60 * time.Second,
		Script: "import os\nfor k in sorted(os.environ):\n    print(k, '=', os.environ[k])\nprint('cwd', os.getcwd())\n"})
	if err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, res)
	if !res.Passed {
		t.Fatalf("%s: %s\n%s", res.Reason, res.Detail, res.Output)
	}
	allowed := map[string]bool{"PATH": true, "HOME": true, "TMPDIR": true, "LANG": true, "PYTHONDONTWRITEBYTECODE": true,
		"PYTHONPATH": true, "OPENBLAS_NUM_THREADS": true, "OMP_NUM_THREADS": true, "MKL_NUM_THREADS": true,
		"LC_CTYPE": true} // Python sets LC_CTYPE itself under a C locale
	for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		if k, _, ok := strings.Cut(line, " = "); ok && !allowed[k] {
			t.Errorf("variable %s reached the script", k)
		}
	}
	if strings.Contains(res.Output, "do-not-leak") {
		t.Errorf("the secret reached the script:\n%s", res.Output)
	}
	if !strings.Contains(res.Output, "HOME = work") && !strings.Contains(res.Output, "/work\n") {
		t.Errorf("HOME is not the work directory:\n%s", res.Output)
	}
}

// TestSciCodeRunnerWrongCode: wrong code fails, and the result says how
// and where.
func TestSciCodeRunnerWrongCode(t *testing.T) {
	split := sciCodeTestSplit(t)
	r := sciCodeTestRunner(t, RunnerOptions{})
	p, _ := split.Problem("10")
	for _, tc := range []struct {
		name, code, reason, detail, section string
	}{
		{"wrong value", "def get_alpha(recvec, alpha_scaling=5):\n    return 2 * alpha_scaling * np.max(np.linalg.norm(recvec, axis=1))\n",
			ReasonTestFailed, "AssertionError", "test case 1 of 4"},
		{"syntax error", "def get_alpha(recvec, alpha_scaling=5):\n    return (\n", ReasonCrashed, "SyntaxError", SectionAnswer},
		{"raises", "def get_alpha(recvec, alpha_scaling=5):\n    raise ValueError('not today')\n", ReasonCrashed, "ValueError: not today", "test case 1 of 4"},
		{"wrong name", "def alpha(recvec, alpha_scaling=5):\n    return 1.0\n", ReasonCrashed, "NameError", "test case 1 of 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := referenceScript(p, 0, tc.code)
			req.TargetsPath = split.TargetsPath
			res, err := r.Run(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			checkNothingLeft(t, res)
			if res.Passed || res.Reason != tc.reason || !strings.Contains(res.Detail, tc.detail) || res.Section != tc.section {
				t.Errorf("passed %v, reason %q, detail %q, section %q; want %q, %q, %q\n%s",
					res.Passed, res.Reason, res.Detail, res.Section, tc.reason, tc.detail, tc.section, res.Output)
			}
			if strings.Contains(res.Output, res.dir) {
				t.Errorf("the output names the private directory:\n%s", res.Output)
			}
		})
	}
}

// TestSciCodeCompareHelpers runs our scicode.compare.cmp in the sandbox on
// the cases its documentation names.
func TestSciCodeCompareHelpers(t *testing.T) {
	r := sciCodeTestRunner(t, RunnerOptions{})
	script := `import numpy as np, scipy.sparse, sympy
from scicode.compare.cmp import cmp_tuple_or_list, are_dicts_close
x = sympy.Symbol('x')
m = scipy.sparse.csr_matrix(np.eye(3))
cases = [
    (cmp_tuple_or_list((1.0, 2.0), (1.0, 2.0 + 1e-12)), True),
    (cmp_tuple_or_list((1.0, 2.0), (1.0, 2.1)), False),
    (cmp_tuple_or_list((1.0,), (1.0, 2.0)), False),
    (cmp_tuple_or_list([True, 'a'], [True, 'a']), True),
    (cmp_tuple_or_list([True], [False]), False),
    (cmp_tuple_or_list(['a'], ['b']), False),
    (cmp_tuple_or_list([m], [scipy.sparse.coo_matrix(np.eye(3))]), True),
    (cmp_tuple_or_list([m], [np.zeros((3, 3))]), False),
    (cmp_tuple_or_list([{'a': 1.0}], [{'a': 1.0 + 1e-10}]), True),
    (cmp_tuple_or_list([np.arange(3)], [np.arange(3)]), True),
    (are_dicts_close({x: 1.0, 'b': 'u'}, {'x': 1.0, 'b': 'u'}), True),
    (are_dicts_close({'a': x}, {'a': 'x'}), True),
    (are_dicts_close({'a': 1.0}, {'a': 1.1}), False),
    (are_dicts_close({'a': 1.0}, {'a': 1.05}, rtol=0.1), True),
    (are_dicts_close({'a': 1.0}, {'b': 1.0}), False),
    (are_dicts_close({'m': m}, {'m': m.copy()}), True),
]
bad = [i for i, (got, want) in enumerate(cases) if got != want]
assert not bad, bad
print('all', len(cases), 'cases agree')
`
	res, err := r.Run(t.Context(), RunRequest{StepID: "cmp", Script: script, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed {
		t.Fatalf("%s: %s\n%s", res.Reason, res.Detail, res.Output)
	}
}

// TestSandboxFallback: without namespaces (isolation "none", what a machine
// that forbids them gets) the process group, the limits and the identity
// still contain the same scripts, and the result says the network is not
// isolated.
func TestSandboxFallback(t *testing.T) {
	r := sciCodeTestRunner(t, RunnerOptions{Isolation: IsolationNone, MaxProcesses: 16, MemoryBytes: 1 << 30, OutputCap: 64 << 10})
	info, _ := r.Check(t.Context())
	if info.Network != NetworkNotIsolated || info.Filesystem != "permissions only" || info.PIDNamespace {
		t.Errorf("sandbox info %+v", *info)
	}
	nprocBinds := !slices.ContainsFunc(info.Rlimits, func(l string) bool { return strings.Contains(l, "not binding") })
	cases := []struct {
		name, script, reason, limit string
		skip                        bool
	}{
		{"loop", "while True:\n    pass\n", ReasonTimeout, "", false},
		{"fork flood", "import os, time\nn = 0\nwhile n < 200:\n    if os.fork() == 0:\n        time.sleep(60)\n        os._exit(0)\n    n += 1\n", ReasonLimit, LimitProcesses, !nprocBinds},
		{"memory", "chunks = []\nfor _ in range(40):\n    chunks.append(b'x' * (64 << 20))\n", ReasonLimit, LimitMemory, false},
		{"output", "while True:\n    print('x' * 1000)\n", ReasonLimit, LimitOutput, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip {
				t.Skip("the process limit does not bind here")
			}
			res := runContained(t, r, tc.script, 3*time.Second)
			if res.Reason != tc.reason || res.Limit != tc.limit {
				t.Errorf("reason %q limit %q (%s), want %q %q", res.Reason, res.Limit, res.Detail, tc.reason, tc.limit)
			}
			if res.Sandbox.Network != NetworkNotIsolated {
				t.Errorf("the result says network %q", res.Sandbox.Network)
			}
		})
	}
	t.Run("write outside", func(t *testing.T) {
		if !strings.Contains(info.User, "the green agent runs as root") {
			t.Skipf("scripts run as %s: only a namespace could refuse the write", info.User)
		}
		outside := t.TempDir()
		for _, d := range []string{filepath.Dir(outside), outside} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		target := filepath.Join(outside, "escaped.txt")
		res := runContained(t, r, fmt.Sprintf("open(%q, 'w').write('escaped')\n", target), 30*time.Second)
		if !strings.Contains(res.Detail, "Permission denied") {
			t.Errorf("reason %q (%s), want a refused write", res.Reason, res.Detail)
		}
		if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created", target)
		}
	})
}
