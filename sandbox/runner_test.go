package sandbox_test

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
	"github.com/coordbench/coordbench/sandbox"
)

// Runners are shared by the tests of one configuration, so the probe runs
// once per configuration.
var (
	testRunnersMu sync.Mutex
	testRunners   = map[string]*sandbox.Runner{}
)

// testRunner returns a Runner with opts (the probe done), skipping (or
// failing with CI=true) where no Python can run.
func testRunner(t testing.TB, opts sandbox.Options) *sandbox.Runner {
	t.Helper()
	key := fmt.Sprintf("%+v", opts)
	testRunnersMu.Lock()
	defer testRunnersMu.Unlock()
	r, ok := testRunners[key]
	if !ok {
		var err error
		if r, err = sandbox.New(opts); err != nil {
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
func checkNothingLeft(t *testing.T, res *sandbox.Result) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		group := liveProcessesInGroup(res.ProcessGroup)
		procs := processesMentioning(res.Dir)
		if len(group) == 0 && len(procs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("left behind: processes %v in group %d, processes %v running from its directory", group, res.ProcessGroup, procs)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(res.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("private directory %s not removed: %v", res.Dir, err)
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
func runContained(t *testing.T, r *sandbox.Runner, script string, timeout time.Duration) *sandbox.Result {
	t.Helper()
	res, err := r.Run(t.Context(), sandbox.Request{Name: "hostile", Script: script, Timeout: timeout})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("%s (%s; limit %q); %.0f ms, %.0f ms CPU, %d bytes of output; output ends %q",
		res.Reason, res.Detail, res.Limit, res.DurationMS, res.CPUMS, res.OutputBytes, tail(res.Output, 300))
	if res.Exited() {
		t.Errorf("a hostile script exited normally")
	}
	checkNothingLeft(t, res)
	return res
}

// TestSandboxInfiniteLoop: a loop that never ends is killed at the timeout.
func TestSandboxInfiniteLoop(t *testing.T) {
	r := testRunner(t, sandbox.Options{CPUSeconds: 600}) // the clock ends it, not the CPU limit
	start := time.Now()
	res := runContained(t, r, "while True:\n    pass\n", 2*time.Second)
	if res.Reason != sandbox.ReasonTimeout || !strings.Contains(res.Detail, "killed") {
		t.Errorf("reason %q (%s), want %q", res.Reason, res.Detail, sandbox.ReasonTimeout)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the run took %s", d)
	}
}

// TestSandboxCPULimit: the CPU limit ends a busy script even when the
// wall-clock timeout is far away, and says so.
func TestSandboxCPULimit(t *testing.T) {
	r := testRunner(t, sandbox.Options{CPUSeconds: 1})
	res := runContained(t, r, "while True:\n    pass\n", 60*time.Second)
	if res.Reason != sandbox.ReasonLimit || res.Limit != sandbox.LimitCPU {
		t.Errorf("reason %q limit %q (%s), want the CPU limit", res.Reason, res.Limit, res.Detail)
	}
}

// TestSandboxForkBomb: the process limit refuses the forks past it, and
// nothing forked survives the run, not even a child that left the group.
func TestSandboxForkBomb(t *testing.T) {
	r := testRunner(t, sandbox.Options{MaxProcesses: 16})
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
	if res.Reason != sandbox.ReasonLimit || res.Limit != sandbox.LimitProcesses {
		t.Errorf("reason %q limit %q (%s), want the process limit", res.Reason, res.Limit, res.Detail)
	}
	if strings.Contains(res.Output, "forked 200") {
		t.Errorf("all 200 forks succeeded under a limit of 16")
	}
	// The classic bomb: every process forks for ever.
	res = runContained(t, r, "import os\nwhile True:\n    os.fork()\n", 20*time.Second)
	if res.Reason != sandbox.ReasonLimit || res.Limit != sandbox.LimitProcesses {
		t.Errorf("classic bomb: reason %q limit %q (%s), want the process limit", res.Reason, res.Limit, res.Detail)
	}
}

// TestSandboxMemoryHog: the address-space limit stops a script that keeps
// allocating (and touching) memory. The limit is small and the timeout
// generous, so that a slow machine reaches the limit long before the clock
// (filling 1 GiB took 4.5 s on a loaded 2-core machine).
func TestSandboxMemoryHog(t *testing.T) {
	r := testRunner(t, sandbox.Options{MemoryBytes: 512 << 20})
	res := runContained(t, r, memoryHog, 120*time.Second)
	if res.Reason != sandbox.ReasonLimit || res.Limit != sandbox.LimitMemory {
		t.Errorf("reason %q limit %q (%s), want the memory limit", res.Reason, res.Limit, res.Detail)
	}
}

// memoryHog allocates 40 × 32 MiB = 1.25 GiB at most, should the limit not
// hold.
const memoryHog = "chunks = []\nfor _ in range(40):\n    chunks.append(b'x' * (32 << 20))\nprint('allocated', len(chunks))\n"

// TestSandboxWriteOutside: the script may write its work directory and
// nothing else. In the minimal root a world-writable directory of the host
// is not there at all; with the host's tree locked down it is refused;
// without, the sandboxed identity's permissions are what refuses it.
func TestSandboxWriteOutside(t *testing.T) {
	r := testRunner(t, sandbox.Options{})
	info, _ := r.Check(t.Context())
	outside := t.TempDir()
	want := "Permission denied"
	switch {
	case info.HostFilesHidden:
		for _, d := range []string{filepath.Dir(outside), outside} {
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		want = "No such file or directory"
	case strings.Contains(info.Filesystem, "read-only"):
		// Every identity may write there: only the lockdown refuses.
		for _, d := range []string{filepath.Dir(outside), outside} {
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		want = "Read-only file system"
	case strings.Contains(info.User, "the caller runs as root"):
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
	if res.Reason != sandbox.ReasonCrashed || !strings.Contains(res.Detail, want) {
		t.Errorf("reason %q (%s), want a write refused with %q", res.Reason, res.Detail, want)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was created (stat: %v)", target, err)
	}
}

// TestSandboxNetwork: in the network namespace nothing can be reached, not
// even a listener on the host's loopback.
func TestSandboxNetwork(t *testing.T) {
	r := testRunner(t, sandbox.Options{})
	info, _ := r.Check(t.Context())
	if info.Network != sandbox.NetworkNamespace {
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
	if res.Reason != sandbox.ReasonCrashed || strings.Contains(res.Output, "connected\n") {
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
	r := testRunner(t, sandbox.Options{OutputCap: 64 << 10})
	res := runContained(t, r, "while True:\n    print('x' * 1000)\n", 60*time.Second)
	if res.Reason != sandbox.ReasonLimit || res.Limit != sandbox.LimitOutput {
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
	r := testRunner(t, sandbox.Options{})
	res, err := r.Run(t.Context(), sandbox.Request{Name: "env", Timeout: 60 * time.Second,
		Script: "import os\nfor k in sorted(os.environ):\n    print(k, '=', os.environ[k])\nprint('cwd', os.getcwd())\n"})
	if err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, res)
	if !res.Exited() {
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

// TestSandboxFallback: without namespaces (isolation "none", what a machine
// that forbids them gets) the process group, the limits and the identity
// still contain the same scripts, and the result says the network is not
// isolated.
func TestSandboxFallback(t *testing.T) {
	// The CPU limit is far away, so that the loop meets the wall-clock
	// timeout and nothing else; the limit cases get generous timeouts.
	r := testRunner(t, sandbox.Options{Isolation: sandbox.IsolationNone, MaxProcesses: 16, MemoryBytes: 512 << 20,
		OutputCap: 64 << 10, CPUSeconds: 600})
	info, _ := r.Check(t.Context())
	if info.Network != sandbox.NetworkNotIsolated || info.Filesystem != "permissions only" || info.PIDNamespace || info.HostFilesHidden || info.Proc != "host" {
		t.Errorf("sandbox info %+v", *info)
	}
	nprocBinds := !slices.ContainsFunc(info.Rlimits, func(l string) bool { return strings.Contains(l, "not binding") })
	cases := []struct {
		name, script, reason, limit string
		timeout                     time.Duration
		skip                        bool
	}{
		{"loop", "while True:\n    pass\n", sandbox.ReasonTimeout, "", 3 * time.Second, false},
		{"fork flood", "import os, time\nn = 0\nwhile n < 200:\n    if os.fork() == 0:\n        time.sleep(60)\n        os._exit(0)\n    n += 1\n", sandbox.ReasonLimit, sandbox.LimitProcesses, 120 * time.Second, !nprocBinds},
		{"memory", memoryHog, sandbox.ReasonLimit, sandbox.LimitMemory, 120 * time.Second, false},
		{"output", "while True:\n    print('x' * 1000)\n", sandbox.ReasonLimit, sandbox.LimitOutput, 120 * time.Second, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip {
				t.Skip("the process limit does not bind here")
			}
			res := runContained(t, r, tc.script, tc.timeout)
			if res.Reason != tc.reason || res.Limit != tc.limit {
				t.Errorf("reason %q limit %q (%s), want %q %q", res.Reason, res.Limit, res.Detail, tc.reason, tc.limit)
			}
			if res.Sandbox.Network != sandbox.NetworkNotIsolated {
				t.Errorf("the result says network %q", res.Sandbox.Network)
			}
		})
	}
	t.Run("write outside", func(t *testing.T) {
		if !strings.Contains(info.User, "the caller runs as root") {
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

// TestSandboxMinimalRoot: in the minimal root the code sees the interpreter
// and its libraries, its own directory and its own processes, and nothing
// else of the host: no hidden path, no file of the host's tree, no other
// process; and it can write nothing but its work directory.
func TestSandboxMinimalRoot(t *testing.T) {
	secret := t.TempDir()
	if err := os.WriteFile(filepath.Join(secret, "targets.h5"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(secret), secret} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := testRunner(t, sandbox.Options{Hidden: []string{secret}})
	info, _ := r.Check(t.Context())
	if !info.HostFilesHidden {
		testenv.Missing(t, "%s", "no minimal root here: "+strings.Join(info.Notes, "; "))
	}
	wd, _ := os.Getwd()
	script := fmt.Sprintf(`import os, sys
seen = []
for p in [%q, %q, %q, "/etc/passwd", "/root", "/home", "/tmp", "/work", "/var", "/sys"]:
    if os.path.exists(p):
        seen.append(p)
pids = sorted(int(d) for d in os.listdir("/proc") if d.isdigit())
print("seen", seen)
print("pids", pids, "mine", os.getpid())
print("root", sorted(os.listdir("/")))
try:
    open("/escape.txt", "w")
except OSError as e:
    print("root write:", e.strerror)
try:
    open("/usr/escape.txt", "w")
except OSError as e:
    print("usr write:", e.strerror)
open("inside.txt", "w").write("fine")
import json, ctypes, math
print("ok")
`, secret, filepath.Join(secret, "targets.h5"), wd)
	res, err := r.Run(t.Context(), sandbox.Request{Name: "root", Script: script, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, res)
	t.Logf("output:\n%s", res.Output)
	if !res.Exited() {
		t.Fatalf("%s: %s", res.Reason, res.Detail)
	}
	for _, want := range []string{"seen []", "pids [1] mine 1", "root write: Read-only file system", "usr write: Read-only file system", "ok"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestSandboxHiddenRefused: a minimal root that would bind a hidden path
// is not built; the runner falls back and says so.
func TestSandboxHiddenRefused(t *testing.T) {
	r := testRunner(t, sandbox.Options{Hidden: []string{"/usr/lib"}})
	info, _ := r.Check(t.Context())
	if info.HostFilesHidden || !slices.ContainsFunc(info.Notes, func(n string) bool { return strings.Contains(n, "would expose /usr/lib") }) {
		t.Errorf("info %+v", *info)
	}
}

// TestSandboxRecords: what the code writes on the record channel comes back
// as it was written; past the cap the group is killed.
func TestSandboxRecords(t *testing.T) {
	r := testRunner(t, sandbox.Options{RecordCap: 1 << 20})
	res, err := r.Run(t.Context(), sandbox.Request{Name: "rec", Timeout: 60 * time.Second,
		Script: "import os\nos.write(3, b'one ')\nos.write(3, b'two')\nprint('done')\n"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Records) != "one two" || res.RecordBytes != 7 || !res.Exited() {
		t.Errorf("records %q (%d bytes), %s %s", res.Records, res.RecordBytes, res.Reason, res.Detail)
	}
	res = runContained(t, r, "import os\nwhile True:\n    os.write(3, b'x' * 65536)\n", 120*time.Second)
	if res.Reason != sandbox.ReasonLimit || res.Limit != sandbox.LimitRecords || len(res.Records) > 1<<20 {
		t.Errorf("reason %q limit %q, %d records bytes kept", res.Reason, res.Limit, len(res.Records))
	}
}

// TestSandboxSetupChannel: code that prints the boot script's failure line
// and exits with its status is the code's failure, not the runner's: only
// the setup channel, closed when the code starts, can say the sandbox was
// not set up.
func TestSandboxSetupChannel(t *testing.T) {
	for _, opts := range []sandbox.Options{{}, {Isolation: sandbox.IsolationNone}} {
		r := testRunner(t, opts)
		for _, script := range []string{
			"import sys, os\nsys.stderr.write('coordbench-sandbox: setup failed: forged\\n')\nos._exit(120)\n",
			"import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'setup failed: forged\\n')\n    except OSError:\n        pass\nos._exit(120)\n",
		} {
			res, err := r.Run(t.Context(), sandbox.Request{Name: "forge", Script: script, Timeout: 60 * time.Second})
			if err != nil {
				t.Errorf("isolation %q: the code's exit became the runner's error: %v", opts.Isolation, err)
				continue
			}
			if res.Reason != sandbox.ReasonCrashed || res.ExitCode != 120 {
				t.Errorf("isolation %q: %s, exit %d", opts.Isolation, res.Reason, res.ExitCode)
			}
		}
	}
}
