//go:build linux

package sandbox_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/sandbox"
)

// shareRunner is a runner whose runs each get a CPU share, skipping (or
// failing under CI=true) where the machine gives none; its runs may have
// procs processes and threads and do not meet the CPU limit.
func shareRunner(t *testing.T, procs int) *sandbox.Runner {
	t.Helper()
	r := testRunner(t, sandbox.Options{MaxProcesses: procs, CPUSeconds: 3600})
	info, _ := r.Check(t.Context())
	if !strings.HasPrefix(info.CPUShare, "equal per run") {
		testenv.Missing(t, "no CPU share per run here: %s", info.CPUShare)
	}
	return r
}

// TestSandboxCPUShare: one run floods the processors (spinning children, or
// threads that spin outside the interpreter's lock) while another does
// honest work in one process; the honest run gets the share the scheduler
// owes a run, not one process's share among the flood's.
//
// Measured by the kernel's CPU accounting, not the clock: both runs' CPU
// time is read from their cgroups at the same moments, while both spin,
// and compared. With 32 spinners per processor (N processors), a scheduler
// that shares by process gives the honest run as much as one spinner: a
// ratio of 1/(32N) to the flood's CPU time. Sharing by run gives it about
// N/(N+1) of a processor (on its processor the flood weighs 1/N of its
// whole) next to the flood's N − N/(N+1): a ratio of about 1/N. The test
// asks for 1/(8N), four times above the first and eight below the second,
// whatever else the machine runs (it takes from both runs alike).
func TestSandboxCPUShare(t *testing.T) {
	n := runtime.NumCPU()
	if n > 16 {
		t.Skipf("%d processors: a flood within a run's process limit cannot crowd them", n)
	}
	spinners := 32 * n
	r := shareRunner(t, spinners+8)
	want := 1 / float64(8*n)
	floods := map[string]string{
		"processes": `import os, time
for i in range(%d):
    if os.fork() == 0:
        while True:
            pass
`,
		// hashlib lets go of the interpreter's lock for data over 2 KiB.
		"threads": `import hashlib, threading, time
data = b"x" * (16 << 20)
def spin():
    while True:
        hashlib.sha256(data).digest()
for i in range(%d):
    threading.Thread(target=spin, daemon=True).start()
`,
	}
	for _, kind := range []string{"processes", "threads"} {
		t.Run(kind, func(t *testing.T) {
			floodName, honestName := marker(t, "fl"), marker(t, "hn")
			flood := start(t, r, "flood", fmt.Sprintf(floods[kind], spinners)+nameSelf(floodName)+
				"while True:\n    time.sleep(3600)\n", 20*time.Minute)
			defer flood.stop()
			floodPID := findMarked(t, flood, floodName)
			honest := start(t, r, "honest", nameSelf(honestName)+"while True:\n    pass\n", 20*time.Minute)
			defer honest.stop()
			honestPID := findMarked(t, honest, honestName)

			f0, floodDir := cgroupCPU(t, floodPID)
			h0, honestDir := cgroupCPU(t, honestPID)
			if floodDir == honestDir {
				t.Fatalf("both runs are in the cgroup %s", floodDir)
			}
			began := time.Now()
			// Until the two have had 3 s of CPU time together: about
			// 1.5 s on an idle machine of 2 processors, 30 s at a tenth
			// of one.
			var f1, h1 int64
			for deadline := time.Now().Add(10 * time.Minute); ; {
				f1, _ = cgroupCPU(t, floodPID)
				h1, _ = cgroupCPU(t, honestPID)
				if (f1-f0)+(h1-h0) >= 3e9 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the two runs had %d ms of CPU time in 10 minutes", ((f1-f0)+(h1-h0))/1e6)
				}
				time.Sleep(50 * time.Millisecond)
			}
			wall := time.Since(began)
			ratio := float64(h1-h0) / float64(max(f1-f0, 1))
			t.Logf("%d processors, %d spinning %s: in %s the flood had %d ms of CPU time, the honest run %d ms "+
				"(ratio %.3f, want at least %.3f; %.2f of a processor); a share by process would give %.3f",
				n, spinners, kind, wall.Round(time.Millisecond), (f1-f0)/1e6, (h1-h0)/1e6, ratio, want,
				float64(h1-h0)/float64(wall.Nanoseconds()), 1/float64(spinners))
			if ratio < want {
				t.Errorf("the honest run had %.3f of the flood's CPU time, want at least %.3f: the flood starves it", ratio, want)
			}
			for _, s := range []*started{honest, flood} {
				if o := s.stop(); o.err == nil {
					t.Errorf("run %s ended by itself: %s %s", s.name, o.res.Reason, o.res.Detail)
				}
			}
			// Canceled runs leave no cgroup behind.
			for _, dir := range []string{floodDir, honestDir} {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("the cgroup %s of a canceled run is still there (%v)", dir, err)
				}
			}
		})
	}
}

// TestSandboxNoPriorityTricks: a run cannot put itself ahead of others: no
// nice value below the default (nice, setpriority, its autogroup's), no
// real-time or deadline scheduling, no raised limit that would allow them,
// no way into another cgroup (no cgroup file system is there, none can be
// mounted); and what it forks, detaches or starts as threads stays in its
// cgroup, as the host sees it.
func TestSandboxNoPriorityTricks(t *testing.T) {
	r := shareRunner(t, 64)
	info, _ := r.Check(t.Context())
	if !info.HostFilesHidden {
		testenv.Missing(t, "no minimal root here: %s", strings.Join(info.Notes, "; "))
	}
	name := marker(t, "pr")
	script := `import ctypes, errno, os, resource, threading, time
libc = ctypes.CDLL(None, use_errno=True)
report = []
def attempt(what, f):
    try:
        f()
        report.append("ALLOWED " + what)
    except OSError as e:
        report.append("refused %s: %s" % (what, errno.errorcode.get(e.errno, e.errno)))
    except ValueError as e:  # setrlimit's EPERM
        report.append("refused %s: %s" % (what, e))
def call(what, ret):
    if ret != 0:
        raise OSError(ctypes.get_errno(), what)
before = (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0))
attempt("nice -5", lambda: os.nice(-5))
attempt("setpriority -20", lambda: os.setpriority(os.PRIO_PROCESS, 0, -20))
attempt("setpriority of the group -20", lambda: os.setpriority(os.PRIO_PGRP, 0, -20))
attempt("setpriority of the user -20", lambda: os.setpriority(os.PRIO_USER, 0, -20))
attempt("SCHED_FIFO", lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1)))
attempt("SCHED_RR", lambda: os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1)))
class Attr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("policy", ctypes.c_uint32), ("flags", ctypes.c_uint64),
                ("nice", ctypes.c_int32), ("priority", ctypes.c_uint32), ("runtime", ctypes.c_uint64),
                ("deadline", ctypes.c_uint64), ("period", ctypes.c_uint64)]
nr = {"x86_64": 314, "aarch64": 274}.get(os.uname().machine)
if nr:
    a = Attr(ctypes.sizeof(Attr), 6, 0, 0, 0, 10**6, 10**7, 10**7)  # SCHED_DEADLINE
    attempt("SCHED_DEADLINE", lambda: call("sched_setattr", libc.syscall(nr, 0, ctypes.byref(a), 0)))
attempt("RLIMIT_RTPRIO 99", lambda: resource.setrlimit(resource.RLIMIT_RTPRIO, (99, 99)))
attempt("RLIMIT_NICE 40", lambda: resource.setrlimit(resource.RLIMIT_NICE, (40, 40)))
def autogroup():
    with open("/proc/self/autogroup", "w") as f:
        f.write("-19")
attempt("autogroup nice -19", autogroup)
os.makedirs("cg", exist_ok=True)
attempt("mount cgroup cpu", lambda: call("mount", libc.mount(b"cgroup", b"cg", b"cgroup", 0, b"cpu")))
attempt("mount cgroup2", lambda: call("mount", libc.mount(b"cgroup2", b"cg", b"cgroup2", 0, None)))
def write_procs():
    for p in ("/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/cpu/cgroup.procs", "/sys/fs/cgroup/cpu/tasks"):
        try:
            with open(p, "w") as f:
                f.write(str(os.getpid()))
            return
        except FileNotFoundError:
            continue
    raise OSError(errno.ENOENT, "no cgroup file system")
attempt("join the root cgroup", write_procs)
after = (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0))
report.append("priority and policy %s" % ("unchanged" if after == before else "CHANGED %s -> %s" % (before, after)))
# What it starts: a child, a detached grandchild in a session of its own,
# threads; the host then looks for them.
r, w = os.pipe()
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        os.write(w, b"g")
        time.sleep(3600)
    os.write(w, b"c")
    time.sleep(3600)
got = b""
while len(got) < 2:
    got += os.read(r, 2)
for i in range(4):
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
` + nameSelf(name) + untilUSR1
	run := start(t, r, "tricks", script, 10*time.Minute)
	defer run.stop()
	pid := findMarked(t, run, name)
	uid := statusIDs(t, pid, "Uid")[0]
	own := mustRead(t, fmt.Sprintf("/proc/%d/cgroup", pid))
	procs := processesOfUID(t, uid)
	if len(procs) < 3 {
		t.Errorf("the host sees %d processes of uid %s, want the script, its child and the detached grandchild", len(procs), uid)
	}
	for _, p := range procs {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		for _, task := range tasks {
			if got := mustRead(t, fmt.Sprintf("/proc/%d/task/%s/cgroup", p, task.Name())); got != own {
				t.Errorf("thread %s of process %d is in other cgroups than the run:\n%s\nwant\n%s", task.Name(), p, got, own)
			}
		}
	}
	signal(t, pid, syscall.SIGUSR1)
	o := run.wait()
	if o.err != nil {
		t.Fatal(o.err)
	}
	t.Logf("%s", o.res.Output)
	if !o.res.Exited() {
		t.Fatalf("%s %s", o.res.Reason, o.res.Detail)
	}
	refused := strings.Count(o.res.Output, "refused ")
	if strings.Contains(o.res.Output, "ALLOWED") || refused < 12 {
		t.Errorf("%d tricks refused; allowed: %q", refused, o.res.Output)
	}
	if !strings.Contains(o.res.Output, "priority and policy unchanged") {
		t.Errorf("the run changed its priority or scheduling policy")
	}
	checkNothingLeft(t, o.res)
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
