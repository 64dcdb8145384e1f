//go:build linux

package sandbox_test

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/sandbox"
)

// runWide returns a runner with opts whose limits bind the run as a whole
// (a cgroup), skipping (or failing under CI=true) where the machine offers
// none.
func runWide(t *testing.T, opts sandbox.Options) *sandbox.Runner {
	t.Helper()
	r := testRunner(t, opts)
	info, _ := r.Check(t.Context())
	if info.LimitMode == sandbox.LimitModePerProcess {
		testenv.Missing(t, "%s", "no cgroup for runs here: "+strings.Join(info.Notes, "; "))
	}
	return r
}

// forkAndHold forks n children that each allocate and touch mib MiB, tell
// the parent, and sleep; the parent waits for them all.
func forkAndHold(n, mib int) string {
	return fmt.Sprintf(`import os, sys, time
r, w = os.pipe()
kids = []
for i in range(%d):
    pid = os.fork()
    if pid == 0:
        block = bytearray(%d << 20)
        for j in range(0, len(block), 4096):
            block[j] = 1
        os.write(w, b"x")
        time.sleep(120)
        os._exit(0)
    kids.append(pid)
got = 0
while got < len(kids):
    got += len(os.read(r, 64))
print("all children hold their memory", flush=True)
for pid in kids:
    os.waitpid(pid, 0)
`, n, mib)
}

// TestSandboxRunWideMemory: four children, each well under the per-process
// limit, together over the run's budget: the run is stopped as over memory.
// Per process, the same run is stopped too: the process count is cut so
// that the processes the run may have at once fit in the budget.
func TestSandboxRunWideMemory(t *testing.T) {
	script := forkAndHold(4, 400) // 1.6 GB in all, 400 MiB each
	t.Run("cgroup", func(t *testing.T) {
		r := runWide(t, sandbox.Options{MemoryBytes: 1 << 30})
		res := runContained(t, r, script, 300*time.Second)
		if res.Reason != sandbox.ReasonLimit || res.Limit != sandbox.LimitMemory {
			t.Errorf("reason %q limit %q (%s), want the memory limit", res.Reason, res.Limit, res.Detail)
		}
		if strings.Contains(res.Output, "all children hold") {
			t.Errorf("all four children held 400 MiB under a budget of 1 GiB")
		}
		if res.PeakMemoryBytes <= 0 || res.PeakMemoryBytes > 1<<30 {
			t.Errorf("peak memory %d bytes, want within the budget of 1 GiB", res.PeakMemoryBytes)
		}
		t.Logf("peak memory of the run: %d MiB", res.PeakMemoryBytes>>20)
	})
	t.Run("per process", func(t *testing.T) {
		r := testRunner(t, sandbox.Options{MemoryBytes: 1 << 30, Cgroups: sandbox.CgroupsOff})
		info, _ := r.Check(t.Context())
		if info.LimitMode != sandbox.LimitModePerProcess {
			t.Fatalf("limit mode %q with cgroups off", info.LimitMode)
		}
		if !slices.Contains(info.Rlimits, "nproc=1") || !slices.Contains(info.Rlimits, "as=1GiB") {
			t.Errorf("rlimits %v: want one process of 1 GiB under a budget of 1 GiB", info.Rlimits)
		}
		if strings.Contains(info.User, "root (KeepUser)") {
			t.Skip("the process limit does not bind root")
		}
		res := runContained(t, r, script, 300*time.Second)
		if res.Reason != sandbox.ReasonLimit || (res.Limit != sandbox.LimitProcesses && res.Limit != sandbox.LimitMemory) {
			t.Errorf("reason %q limit %q (%s), want the process or memory limit", res.Reason, res.Limit, res.Detail)
		}
	})
}

// TestSandboxRunWideCPU: four children, each using less CPU time than the
// per-process limit, together more than the run's: stopped as over CPU.
func TestSandboxRunWideCPU(t *testing.T) {
	r := runWide(t, sandbox.Options{CPUSeconds: 2})
	script := `import os, time
kids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        while time.process_time() < 1.5:
            pass
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
print("four children spent 6 s of CPU", flush=True)
`
	res := runContained(t, r, script, 600*time.Second)
	if res.Reason != sandbox.ReasonLimit || res.Limit != sandbox.LimitCPU {
		t.Errorf("reason %q limit %q (%s), want the CPU limit", res.Reason, res.Limit, res.Detail)
	}
	if strings.Contains(res.Output, "four children spent") {
		t.Errorf("the run went on past its CPU budget")
	}
}

// TestSandboxRunWideProcesses: threads count with processes (no process
// limit is dodged by threads), and a run past the count is stopped.
func TestSandboxRunWideProcesses(t *testing.T) {
	r := runWide(t, sandbox.Options{MaxProcesses: 8})
	script := `import threading, time
started = 0
for i in range(40):
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    started += 1
print("started", started, flush=True)
`
	res := runContained(t, r, script, 120*time.Second)
	if res.Reason != sandbox.ReasonLimit || res.Limit != sandbox.LimitProcesses {
		t.Errorf("reason %q limit %q (%s), want the process limit", res.Reason, res.Limit, res.Detail)
	}
	if strings.Contains(res.Output, "started 40") {
		t.Errorf("40 threads started under a limit of 8")
	}
}

// TestSandboxPerProcessBudget: without a cgroup, the process count times
// each process's memory and CPU time stays within the run's budget, and the
// result says which mode applied.
func TestSandboxPerProcessBudget(t *testing.T) {
	r := testRunner(t, sandbox.Options{MemoryBytes: 4 << 30, MaxProcesses: 64, CPUSeconds: 300, Cgroups: sandbox.CgroupsOff})
	info, _ := r.Check(t.Context())
	if info.LimitMode != sandbox.LimitModePerProcess {
		t.Fatalf("limit mode %q", info.LimitMode)
	}
	for _, want := range []string{"cpu=75s", "as=1GiB", "nproc=4"} {
		if !slices.ContainsFunc(info.Rlimits, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("rlimits %v lack %s", info.Rlimits, want)
		}
	}
	if len(info.RunLimits) != 3 || !strings.HasPrefix(info.RunLimits[0], "memory=4GiB (4 processes × as=1GiB)") ||
		!strings.HasPrefix(info.RunLimits[1], "cpu=300s (4 processes × 75s") {
		t.Errorf("run limits %q", info.RunLimits)
	}
}

// TestSandboxInheritedDescriptors: a descriptor the runner's process left
// open without close-on-exec (a file with a secret, a pipe) does not reach
// the code, in any mode: it holds stdin, stdout, stderr and the record
// channel, nothing else.
func TestSandboxInheritedDescriptors(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("the targets"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(secret, syscall.O_RDONLY, 0) // no O_CLOEXEC: inherited by every child
	if err != nil {
		t.Fatal(err)
	}
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil { // no O_CLOEXEC either
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Close(fd)
		syscall.Close(p[0])
		syscall.Close(p[1])
	})
	script := `import os
found = []
for fd in range(0, 4096):
    try:
        os.fstat(fd)
    except OSError:
        continue
    found.append(str(fd))
print("OPEN", ",".join(found), flush=True)
`
	for _, opts := range []sandbox.Options{{}, {Isolation: sandbox.IsolationNone}} {
		t.Run(opts.Isolation+"default", func(t *testing.T) {
			r := testRunner(t, opts)
			res, err := r.Run(t.Context(), sandbox.Request{Name: "fds", Script: script, Timeout: 60 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Exited() || !strings.Contains(res.Output, "OPEN 0,1,2,3\n") {
				t.Errorf("the code holds more than its own descriptors (leaked: %d, %d, %d): %s %s", fd, p[0], p[1], res.Reason, res.Output)
			}
		})
	}
}

// TestSandboxNoHostNames: in the minimal root nothing the code can read
// names the host: not the private directory (mount sources in
// /proc/self/mountinfo), the host's cgroup path, its hostname, its
// temporary directory. The files are printed as hex, so that the runner's
// path stripping hides nothing from the check.
func TestSandboxNoHostNames(t *testing.T) {
	// A directory the sandboxed identity can enter, with a name to look for.
	tmp, err := os.MkdirTemp("", "distinctive-host-dir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	r := testRunner(t, sandbox.Options{TempDir: tmp})
	info, _ := r.Check(t.Context())
	if !info.HostFilesHidden {
		testenv.Missing(t, "%s", "no minimal root here")
	}
	script := `import os, socket
for path in ("/proc/self/mountinfo", "/proc/self/cgroup", "/proc/self/cmdline", "/proc/self/environ",
             "/proc/self/maps", "/proc/1/mountinfo", "/proc/self/mounts"):
    try:
        data = open(path, "rb").read()
    except OSError as e:
        data = str(e).encode()
    print("FILE", path, data.hex(), flush=True)
print("FILE hostname", socket.gethostname().encode().hex())
print("FILE cwd", os.getcwd().encode().hex())
print("FILE file", os.path.abspath(__file__).encode().hex())
`
	res, err := r.Run(t.Context(), sandbox.Request{Name: "names", Script: script, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exited() {
		t.Fatalf("%s: %s", res.FailureLine(), res.Output)
	}
	needles := []string{tmp, filepath.Base(res.Dir), "distinctive-host-dir"}
	if h, err := os.Hostname(); err == nil && len(h) >= 6 && h != "localhost" {
		needles = append(needles, h) // a short one ("vm") is in device names too
	}
	if own, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(own), "\n") {
			if f := strings.SplitN(line, ":", 3); len(f) == 3 && len(f[2]) > 1 {
				needles = append(needles, f[2])
			}
		}
	}
	files := 0
	for _, line := range strings.Split(res.Output, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "FILE" {
			continue
		}
		files++
		b, err := hex.DecodeString(f[2])
		if err != nil {
			t.Fatalf("%s: %v", f[1], err)
		}
		for _, n := range needles {
			if strings.Contains(string(b), n) {
				t.Errorf("%s names the host (%q):\n%s", f[1], n, b)
			}
		}
		if f[1] == "hostname" && string(b) != "sandbox" {
			t.Errorf("the hostname is %q, not the sandbox's own", b)
		}
		if f[1] == "/proc/self/cgroup" && !strings.Contains(string(b), ":/\n") {
			t.Errorf("/proc/self/cgroup is not rooted at the run's cgroup: %s", b)
		}
	}
	if files != 10 {
		t.Errorf("read %d of 10 files: %s", files, res.Output)
	}
	t.Logf("needles: %s", strconv.Quote(strings.Join(needles, " | ")))
}
