//go:build linux

package sandbox_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/sandbox"
)

// Runs that go on at the same time are apart: each has a uid of its own,
// none can signal, trace or read another, none uses up a per-user limit of
// another, none finds what another left in a shared place, none reads the
// machine's counters.

// perRunUser skips (or fails under CI=true) where runs share a uid: the
// caller is not root.
func perRunUser(t *testing.T, r *sandbox.Runner) *sandbox.Info {
	t.Helper()
	info, _ := r.Check(t.Context())
	if !info.UserPerRun {
		testenv.Missing(t, "runs share an identity here: %s", info.User)
	}
	return info
}

// waitUSR1 is Python that names the process and waits for SIGUSR1; a run
// that gets any other catchable signal says so and exits 3.
func waitUSR1(name string) string {
	return `import signal, sys
report = []
def disturbed(sig, _):
    print("DISTURBED by", sig, flush=True)
    sys.exit(3)
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR2, signal.SIGCONT, signal.SIGQUIT):
    signal.signal(s, disturbed)
` + nameSelf(name) + untilUSR1
}

// TestSandboxUserPerRun: two runs at the same time have two uids of the
// range, each on all its processes, as the host sees them.
func TestSandboxUserPerRun(t *testing.T) {
	r := testRunner(t, sandbox.Options{})
	perRunUser(t, r)
	names := []string{marker(t, "ua"), marker(t, "ub")}
	var runs []*started
	var uids []string
	for i, name := range names {
		s := start(t, r, fmt.Sprintf("user%d", i), waitUSR1(name), 10*time.Minute)
		defer s.stop()
		runs = append(runs, s)
	}
	for i, name := range names {
		pid := findMarked(t, runs[i], name)
		ids := statusIDs(t, pid, "Uid")
		gids := statusIDs(t, pid, "Gid")
		for _, id := range append(ids, gids...) {
			if id != ids[0] {
				t.Errorf("run %d: uids %v gids %v, want one identity", i, ids, gids)
			}
		}
		if n, _ := strconv.ParseUint(ids[0], 10, 32); n < sandbox.DefaultUID || n >= sandbox.DefaultUID+sandbox.DefaultIDs {
			t.Errorf("run %d runs as uid %s, outside the range %d+%d", i, ids[0], sandbox.DefaultUID, sandbox.DefaultIDs)
		}
		uids = append(uids, ids[0])
		defer signal(t, pid, syscall.SIGUSR1)
	}
	if uids[0] == uids[1] {
		t.Errorf("two runs at the same time share uid %s", uids[0])
	}
	t.Logf("uids %v", uids)
}

// TestSandboxCannotReachAnotherRun: a run given another run's pid on the
// host (as a participant could guess it) cannot signal it (kill, the
// process group, a pidfd), trace it, renice it, or read its environment,
// memory or files. Without namespaces (isolation "none") only the uid
// keeps them apart, and in plain mode the victim's command line, which the
// host's /proc shows to everyone, names its private directory: the
// attacker reads neither its script nor its work directory. With them, the
// victim is not even in the attacker's PID namespace.
func TestSandboxCannotReachAnotherRun(t *testing.T) {
	for _, opts := range []sandbox.Options{{Isolation: sandbox.IsolationNone}, {}} {
		t.Run("isolation "+opts.Isolation+"default", func(t *testing.T) {
			r := testRunner(t, opts)
			perRunUser(t, r)
			name := marker(t, "vi")
			victim := start(t, r, "victim", waitUSR1(name), 10*time.Minute)
			defer victim.stop()
			pid := findMarked(t, victim, name)
			attacker := fmt.Sprintf(`import ctypes, errno, os, signal
libc = ctypes.CDLL(None, use_errno=True)
pid = %d
results = []
def attempt(what, f):
    try:
        f()
        results.append("ALLOWED " + what)
    except OSError as e:
        results.append("refused %%s: %%s" %% (what, errno.errorcode.get(e.errno, e.errno)))
def call(what, ret):
    if ret == -1:
        raise OSError(ctypes.get_errno(), what)
for sig in (0, signal.SIGTERM, signal.SIGKILL, signal.SIGSTOP):
    attempt("kill %%d" %% sig, lambda: os.kill(pid, sig))
attempt("kill its group", lambda: os.killpg(pid, signal.SIGKILL))
def pidfd():
    fd = os.pidfd_open(pid)
    signal.pidfd_send_signal(fd, signal.SIGKILL)
attempt("pidfd signal", pidfd)
attempt("ptrace attach", lambda: call("ptrace", libc.ptrace(16, pid, None, None)))
attempt("ptrace seize", lambda: call("ptrace", libc.ptrace(0x4206, pid, None, None)))
attempt("renice", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
attempt("read environ", lambda: open("/proc/%%d/environ" %% pid, "rb").read())
attempt("read mem", lambda: open("/proc/%%d/mem" %% pid, "rb").read(1))
try:
    argv = open("/proc/%%d/cmdline" %% pid, "rb").read().split(b"\0")
    script = [a for a in argv if a.endswith(b".py")][-1].decode()
except (OSError, IndexError):
    script = None
if script and script.startswith("/"):
    d = os.path.dirname(script)
    attempt("read its script", lambda: open(script).read())
    attempt("list its directory", lambda: os.listdir(d))
    attempt("list its work directory", lambda: os.listdir(os.path.join(d, "work")))
    attempt("write its work directory", lambda: open(os.path.join(d, "work", "x"), "w"))
else:
    results.append("its command line does not name its script: %%r" %% script)
print("\n".join(results))
`, pid)
			res, err := r.Run(t.Context(), sandbox.Request{Name: "attacker", Script: attacker, Timeout: 5 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("attacker: %s\n%s", res.Reason, res.Output)
			if !res.Exited() {
				t.Fatalf("the attacker's run: %s %s", res.Reason, res.Detail)
			}
			if strings.Contains(res.Output, "ALLOWED") || strings.Count(res.Output, "refused ") < 11 {
				t.Errorf("the attacker reached the victim")
			}
			signal(t, pid, syscall.SIGUSR1)
			o := victim.wait()
			if o.err != nil {
				t.Fatal(o.err)
			}
			if !o.res.Exited() || strings.Contains(o.res.Output, "DISTURBED") {
				t.Errorf("the victim: %s %s %s", o.res.Reason, o.res.Detail, o.res.Output)
			}
		})
	}
}

// TestSandboxPipesPerRun: the kernel bounds the pipe buffers of each user
// (fs.pipe-user-pages-soft); past it, every new pipe of the user gets two
// pages instead of sixteen. One run that holds pipes grown to 1 MiB past
// the bound shrinks its own new pipes, not another run's.
func TestSandboxPipesPerRun(t *testing.T) {
	r := testRunner(t, sandbox.Options{MaxOpenFiles: 512})
	perRunUser(t, r)
	b, err := os.ReadFile("/proc/sys/fs/pipe-user-pages-soft")
	if err != nil {
		t.Skipf("no pipe-user-pages-soft: %v", err)
	}
	soft, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	pipes := soft/256 + 1 // 256 pages of 4 KiB: 1 MiB, the unprivileged most
	if soft == 0 || 2*(pipes+32) > 500 {
		t.Skipf("pipe-user-pages-soft is %d: %d pipes would be needed", soft, pipes)
	}
	name := marker(t, "pi")
	// Pipes grown until the kernel refuses (at the bound), then new ones
	// until one comes out shrunk.
	holder := start(t, r, "holder", fmt.Sprintf(`import fcntl, os
report = []
held = []
grow = True
for i in range(%d):
    r, w = os.pipe()
    held.append((r, w))
    size = fcntl.fcntl(w, fcntl.F_GETPIPE_SZ)
    if size < 65536:
        break
    if grow:
        try:
            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 1 << 20)
        except PermissionError:
            grow = False
report.append("%%d pipes; holder's own new pipe: %%d bytes" %% (len(held), size))
`, pipes+32)+nameSelf(name)+untilUSR1, 10*time.Minute)
	defer holder.stop()
	pid := findMarked(t, holder, name)
	res, err := r.Run(t.Context(), sandbox.Request{Name: "other", Timeout: 5 * time.Minute,
		Script: "import fcntl, os\nr, w = os.pipe()\nprint('new pipe: %d bytes' % fcntl.fcntl(w, fcntl.F_GETPIPE_SZ))\n"})
	if err != nil {
		t.Fatal(err)
	}
	signal(t, pid, syscall.SIGUSR1)
	o := holder.wait()
	if o.err != nil {
		t.Fatal(o.err)
	}
	t.Logf("holder: %s; other run: %s", strings.TrimSpace(o.res.Output), strings.TrimSpace(res.Output))
	if !strings.Contains(o.res.Output, "holder's own new pipe: 8192 bytes") && !strings.Contains(o.res.Output, "holder's own new pipe: 4096 bytes") {
		t.Fatalf("the holder did not pass the bound (%s %s): the test shows nothing", o.res.Reason, o.res.Output)
	}
	if !strings.Contains(res.Output, "new pipe: 65536 bytes") {
		t.Errorf("another run's new pipe was shrunk: %s %s", res.Reason, res.Output)
	}
}

// TestSandboxNoHostCounters: in the minimal root nothing the code can read
// counts the machine's work: the files of /proc that do (stat, loadavg,
// meminfo, pressure, uptime, vmstat, the sysctls' counters) are not there,
// nor is /sys; sysinfo(2) and syslog(2) are refused; its own /proc/self is
// there. Elsewhere the result says what stays visible.
func TestSandboxNoHostCounters(t *testing.T) {
	paths := []string{"/proc/stat", "/proc/loadavg", "/proc/meminfo", "/proc/pressure/cpu", "/proc/pressure/memory",
		"/proc/pressure/io", "/proc/uptime", "/proc/vmstat", "/proc/diskstats", "/proc/schedstat", "/proc/interrupts",
		"/proc/softirqs", "/proc/sys/fs/file-nr", "/proc/sys/kernel/random/entropy_avail", "/proc/locks",
		"/proc/cpuinfo", "/proc/zoneinfo", "/proc/buddyinfo", "/sys/fs/cgroup", "/sys/devices/system/cpu"}
	onHost := 0
	for _, p := range paths {
		if fileExists(p) {
			onHost++
		}
	}
	if onHost < len(paths)/2 {
		t.Skipf("only %d of the %d counters are on this host: the test would show little", onHost, len(paths))
	}
	script := fmt.Sprintf(`import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
for p in %s:
    try:
        with open(p, "rb") as f:
            f.read(64)
        print("READ", p)
    except OSError as e:
        print("gone", p, errno.errorcode.get(e.errno))
buf = ctypes.create_string_buffer(512)
print("sysinfo", "READ" if libc.sysinfo(buf) == 0 else "refused " + errno.errorcode[ctypes.get_errno()])
print("syslog", "READ" if libc.klogctl(3, buf, 512) >= 0 else "refused " + errno.errorcode[ctypes.get_errno()])
print("self", open("/proc/self/stat").read().split()[0], len(os.listdir("/proc/self/fd")))
`, pyList(paths))
	t.Run("minimal root", func(t *testing.T) {
		r := testRunner(t, sandbox.Options{})
		info, _ := r.Check(t.Context())
		if !info.HostFilesHidden {
			testenv.Missing(t, "no minimal root here: %s", strings.Join(info.Notes, "; "))
		}
		if !strings.HasPrefix(info.HostCounters, "hidden") {
			t.Errorf("host counters %q", info.HostCounters)
		}
		res, err := r.Run(t.Context(), sandbox.Request{Name: "counters", Script: script, Timeout: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s", res.Output)
		if !res.Exited() || strings.Contains(res.Output, "READ") || !strings.Contains(res.Output, "self 1 ") {
			t.Errorf("%s %s: the run reads the machine's counters, or not its own /proc", res.Reason, res.Detail)
		}
		if strings.Count(res.Output, "refused EPERM") != 2 {
			t.Errorf("sysinfo(2) and syslog(2) are not both refused")
		}
	})
	t.Run("isolation none", func(t *testing.T) {
		r := testRunner(t, sandbox.Options{Isolation: sandbox.IsolationNone})
		info, _ := r.Check(t.Context())
		// The host's /proc is there, and the result says so; the
		// system calls are refused all the same.
		if !strings.HasPrefix(info.HostCounters, "visible: /proc/stat") || strings.Contains(info.HostCounters, "sysinfo") {
			t.Errorf("host counters %q", info.HostCounters)
		}
		res, err := r.Run(t.Context(), sandbox.Request{Name: "counters", Script: script, Timeout: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Output, "sysinfo refused EPERM") {
			t.Errorf("sysinfo(2) is not refused: %s", res.Output)
		}
	})
}

func pyList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// TestSandboxNothingShared: what one run leaves where another could look
// (files in /dev/shm, /tmp, /var/tmp, its work directory; a System V
// shared memory segment and message queue; an abstract Unix socket) is not
// there for a run at the same time: no such place is in the minimal root,
// and each run has its own IPC and network namespaces.
func TestSandboxNothingShared(t *testing.T) {
	r := testRunner(t, sandbox.Options{})
	info, _ := r.Check(t.Context())
	if !info.HostFilesHidden || info.Network != sandbox.NetworkNamespace {
		testenv.Missing(t, "no minimal root or no network namespace here: %s", strings.Join(info.Notes, "; "))
	}
	name := marker(t, "sh")
	token := name
	leaver := start(t, r, "leaver", fmt.Sprintf(`import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
token = %q
report = []
for d in ("/dev/shm", "/tmp", "/var/tmp", os.getcwd()):
    try:
        with open(os.path.join(d, token), "w") as f:
            f.write("left")
        report.append("left a file in " + d)
    except OSError as e:
        report.append("no file in %%s: %%s" %% (d, errno.errorcode.get(e.errno)))
shm = libc.shmget(0x5eed, 4096, 0o1666)  # IPC_CREAT, mode 0666
report.append("shm segment %%s" %% ("made" if shm >= 0 else "refused"))
msq = libc.msgget(0x5eed, 0o1666)
report.append("message queue %%s" %% ("made" if msq >= 0 else "refused"))
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0" + token)
s.listen(1)
report.append("abstract socket bound")
`, token)+nameSelf(name)+untilUSR1, 10*time.Minute)
	defer leaver.stop()
	pid := findMarked(t, leaver, name)
	res, err := r.Run(t.Context(), sandbox.Request{Name: "looker", Timeout: 5 * time.Minute, Script: fmt.Sprintf(`import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
token = %q
for d in ("/dev/shm", "/tmp", "/var/tmp", "/sandbox/work"):
    print("FOUND file in" if os.path.exists(os.path.join(d, token)) else "no file in", d)
print("FOUND shm segment" if libc.shmget(0x5eed, 0, 0) >= 0 else "no shm segment")
print("FOUND message queue" if libc.msgget(0x5eed, 0) >= 0 else "no message queue")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\0" + token)
    print("FOUND abstract socket")
except OSError as e:
    print("no abstract socket:", errno.errorcode.get(e.errno))
`, token)})
	if err != nil {
		t.Fatal(err)
	}
	signal(t, pid, syscall.SIGUSR1)
	o := leaver.wait()
	if o.err != nil {
		t.Fatal(o.err)
	}
	t.Logf("leaver:\n%s\nlooker:\n%s", o.res.Output, res.Output)
	// The runner takes the minimal root's /sandbox/ off the output.
	for _, want := range []string{"left a file in work", "shm segment made", "message queue made", "abstract socket bound"} {
		if !strings.Contains(o.res.Output, want) {
			t.Errorf("the leaver did not do what the looker looks for: %q missing", want)
		}
	}
	if !res.Exited() || strings.Contains(res.Output, "FOUND") || strings.Count(res.Output, "no ") != 7 {
		t.Errorf("the looker found what the leaver left: %s %s", res.Reason, res.Output)
	}
}
