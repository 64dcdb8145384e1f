//go:build linux

package sandbox

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// The runner (docs/scicode.md "Runner"). Every run is one Python script, run
// as untrusted code. Protections, and why each is done the way it is:
//
//   - Process group: the child is started with Setpgid; on a timeout, an
//     output flood or the caller's cancellation the whole group gets
//     SIGKILL, and so does whatever is left of it after the script ends.
//     The runner waits for the script's exit with waitid(WNOWAIT) before it
//     kills the group, so the group's id cannot have been reused by an
//     unrelated process when the signal is sent.
//   - Resource limits: Go's os/exec cannot set rlimits in the child, so a
//     small Python boot script of ours (py/coordbench_sandbox.py) runs
//     first in the child, sets CPU time, address space, processes, file
//     size, open files and core size with soft = hard (the code cannot raise
//     them again), and execs a fresh interpreter on the script. This needs
//     nothing but the interpreter the runner needs anyway (prlimit or a
//     re-exec'd Go helper would need util-linux, or a hidden subcommand in
//     every binary that embeds the runner).
//   - Identity: RLIMIT_NPROC does not bind root, so when the caller runs
//     as root the script runs as an unprivileged uid, which also keeps it
//     out of root's files; each running run has its own (ids.go), so that
//     the kernel's per-user counts and permissions keep runs apart.
//   - Namespaces, where the kernel allows them (probed once): new user,
//     mount, network, PID, IPC and UTS namespaces. The network namespace has
//     only a loopback interface that is down, so nothing can be connected
//     to; the PID namespace ends every process of the script when the
//     script ends; in the mount namespace the boot script pivots into a
//     minimal root (root_linux.go: the interpreter and its libraries
//     read-only, a fresh /proc, the work directory a size-limited tmpfs;
//     none of the host's other files or processes), and then drops into a
//     further user namespace so that the code cannot undo it. Where the
//     minimal root cannot be built, the host's tree made read-only
//     ("lockdown"), then bare namespaces, then none; Info says which.
//   - Channels: the record channel (RecordFD, a pipe the runner reads) is
//     the only data the code hands back; setup failures come on another
//     pipe that is closed when the code starts, so nothing the code prints
//     or exits with is taken for the runner's own failure.
//   - Environment: only PATH, HOME and TMPDIR (the work directory), LANG,
//     PYTHONDONTWRITEBYTECODE, PYTHONPATH (Options.Lib) and one thread for
//     OpenBLAS, OpenMP and MKL. Nothing of the caller's environment (API
//     keys, OTEL settings) reaches the code.
//   - Private directory: a fresh temporary directory per run, holding the
//     boot script, the library, the script, the work directory and the
//     minimal root's mount point, removed afterwards.
//   - Output: stdout and stderr share one pipe; past OutputCap bytes the
//     group is killed and the run fails with limit "output".

// bootFS holds the boot script.
//
//go:embed py/coordbench_sandbox.py
var bootFS embed.FS

// Runner runs scripts in the sandbox. It probes the interpreter and the
// machine's isolation once, on first use; it is safe for concurrent use,
// each run in a private directory of its own.
type Runner struct {
	opts Options
	// ids are the identities of running runs (used where the caller is
	// root).
	ids *idPool

	mu       sync.Mutex
	probed   bool
	probe    *probe
	probeErr error
}

// Modes of the boot script, strongest first.
const (
	modeRoot       = "root"
	modeLockdown   = "lockdown"
	modeNamespaces = "namespaces"
	modePlain      = "plain"
)

// probe is what the probe found.
type probe struct {
	python   string
	versions string
	// mode is the strongest mode that works here; layout is the minimal
	// root's (mode root).
	mode   string
	layout *rootLayout
	// proc is what /proc shows in mode.
	proc string
	// cgroups is where runs' cgroups are made; nil: per-process limits.
	cgroups *cgroupHost
	// dropUser: the caller is root and scripts run as identities of the
	// range UID:GID + IDs.
	dropUser bool
	// counters is Info.HostCounters: what the code can read of the
	// machine's counters, seen from inside a run.
	counters string
	root     bool
	notes    []string
}

// namespaces reports whether mode runs in new namespaces.
func namespaces(mode string) bool { return mode != modePlain }

// New returns a Runner; nothing runs until Check or Run.
func New(opts Options) (*Runner, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Runner{opts: opts, ids: newIDPool(opts.IDs)}, nil
}

// Check probes the interpreter and the isolation (once) and returns what
// will be in force, or why nothing can run.
func (r *Runner) Check(ctx context.Context) (*Info, error) {
	p, err := r.ensureProbe(ctx)
	if err != nil {
		return nil, err
	}
	return r.info(p, r.opts.Timeout), nil
}

// Info is what is in force for runs with the given timeout (zero: the
// default), nil before a successful probe.
func (r *Runner) Info(timeout time.Duration) *Info {
	r.mu.Lock()
	p := r.probe
	r.mu.Unlock()
	if p == nil {
		return nil
	}
	if timeout <= 0 {
		timeout = r.opts.Timeout
	}
	return r.info(p, timeout)
}

// Timeout is the default wall-clock limit of one run.
func (r *Runner) Timeout() time.Duration { return r.opts.Timeout }

// Python is the interpreter the probe chose ("" before a successful probe).
func (r *Runner) Python() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probe == nil {
		return ""
	}
	return r.probe.python
}

// Run runs one script. The error is the runner's own failure (no
// interpreter, no temporary directory, a sandbox that cannot be set up, the
// caller's context ending); everything the script does is in the result.
func (r *Runner) Run(ctx context.Context, req Request) (*Result, error) {
	p, err := r.ensureProbe(ctx)
	if err != nil {
		return nil, err
	}
	return r.execute(ctx, p, p.mode, req)
}

// execute runs req in a private directory under mode.
func (r *Runner) execute(ctx context.Context, p *probe, mode string, req Request) (res *Result, err error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = r.opts.Timeout
	}
	id, err := r.takeIdentity(p)
	if err != nil {
		return nil, err
	}
	// Deferred first, so given back last: once the cgroup is gone and
	// with it every process of the run.
	defer id.release()
	dir, err := os.MkdirTemp(r.opts.TempDir, "coordbench-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: private directory: %w", err)
	}
	defer func() {
		if rmErr := removeDir(dir); rmErr != nil {
			r.opts.Logger.Warn("sandbox: private directory not removed", "dir", dir, "err", rmErr)
			if err == nil {
				err = fmt.Errorf("sandbox: remove private directory: %w", rmErr)
			}
		}
	}()
	lib, work, script, err := r.prepareDir(dir, p, id, req)
	if err != nil {
		return nil, err
	}
	cfg, err := r.bootConfig(p, mode, dir, lib, work, script, timeout)
	if err != nil {
		return nil, err
	}

	// Three pipes: the output (stdout and stderr), the record channel and
	// the setup channel. The child's ends are closed here once it runs.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: output pipe: %w", err)
	}
	defer outR.Close()
	recR, recW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return nil, fmt.Errorf("sandbox: record pipe: %w", err)
	}
	defer recR.Close()
	setR, setW, err := os.Pipe()
	if err != nil {
		outW.Close()
		recW.Close()
		return nil, fmt.Errorf("sandbox: setup pipe: %w", err)
	}
	defer setR.Close()
	// The gate: the boot script waits for a byte on it before it does
	// anything, so that the run is in its cgroup before any of it runs.
	gateR, gateW, err := os.Pipe()
	if err != nil {
		outW.Close()
		recW.Close()
		setW.Close()
		return nil, fmt.Errorf("sandbox: gate pipe: %w", err)
	}
	defer gateW.Close()
	closeChildEnds := func() {
		outW.Close()
		recW.Close()
		setW.Close()
		gateR.Close()
	}
	var cg *runCgroup
	if p.cgroups != nil {
		if cg, err = p.cgroups.create(cgroupLimits{memory: r.opts.MemoryBytes, pids: r.opts.MaxProcesses}); err != nil {
			closeChildEnds()
			return nil, err
		}
		defer func() {
			if rmErr := cg.remove(); rmErr != nil {
				r.opts.Logger.Warn("sandbox: cgroup not removed", "err", rmErr)
			}
		}()
	}
	cmd := exec.Command(p.python, "-s", filepath.Join(dir, "boot", "coordbench_sandbox.py"), string(cfg))
	cmd.Env = env(lib, work)
	cmd.Dir = work
	cmd.Stdout, cmd.Stderr = outW, outW
	cmd.ExtraFiles = []*os.File{recW, setW, gateR} // RecordFD (3), setupFD (4), gateFD (5)
	cmd.SysProcAttr = r.procAttr(p, mode, id)

	started := time.Now()
	if err := cmd.Start(); err != nil {
		closeChildEnds()
		return nil, fmt.Errorf("sandbox: start %s: %w", p.python, err)
	}
	closeChildEnds()
	pgid := cmd.Process.Pid
	if cg != nil {
		if err := cg.add(pgid); err != nil {
			r.killGroup(pgid)
			_ = cmd.Wait()
			return nil, err
		}
	}
	if _, err := gateW.Write([]byte{'g'}); err != nil {
		r.opts.Logger.Warn("sandbox: open the gate", "err", err) // the boot script reports it
	}
	gateW.Close()

	out := &cappedOutput{limit: int64(r.opts.OutputCap), over: make(chan struct{})}
	recs := &cappedOutput{limit: r.opts.RecordCap, over: make(chan struct{})}
	setup := &cappedOutput{limit: 4 << 10, over: make(chan struct{})}
	var drained sync.WaitGroup
	for _, d := range []struct {
		c *cappedOutput
		f *os.File
	}{{out, outR}, {recs, recR}, {setup, setR}} {
		drained.Go(func() { d.c.drain(d.f) })
	}
	exited := make(chan error, 1)
	go func() { exited <- waitExitedNoReap(pgid) }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var poll <-chan time.Time
	if cg != nil {
		ticker := time.NewTicker(cgroupPoll)
		defer ticker.Stop()
		poll = ticker.C
	}
	cpuBudgetNS := int64(r.opts.cpuSeconds(timeout)) * int64(time.Second)
	var killedFor string
	for killedFor == "" {
		select {
		case err = <-exited:
		case <-timer.C:
			killedFor = ReasonTimeout
		case <-out.over:
			killedFor = LimitOutput
		case <-recs.over:
			killedFor = LimitRecords
		case <-ctx.Done():
			killedFor = "canceled"
		case <-poll:
			killedFor = cg.stats().over(cpuBudgetNS)
			continue
		}
		break
	}
	if killedFor != "" {
		r.killGroup(pgid)
		if cg != nil {
			cg.kill()
		}
		err = <-exited
	}
	if err != nil {
		// The child cannot be waited for: kill what can be killed and
		// let Wait reap it.
		r.opts.Logger.Warn("sandbox: waitid", "pid", pgid, "err", err)
	}
	// The script has ended but is not reaped, so the group id is still
	// ours: end whatever it left behind, in its group or its cgroup.
	r.killGroup(pgid)
	var stats cgroupStats
	if cg != nil {
		cg.kill()
		stats = cg.stats()
		if killedFor == "" {
			// A limit the run hit after the last look (a child the OOM
			// killer ended, and the script went on) is still hit.
			killedFor = stats.over(cpuBudgetNS)
		}
	}
	waitErr := cmd.Wait()
	elapsed := time.Since(started)
	deadline := time.Now().Add(drainTimeout)
	for _, f := range []*os.File{outR, recR, setR} {
		_ = f.SetReadDeadline(deadline)
	}
	drained.Wait()

	res = &Result{ProcessGroup: pgid, Dir: dir, Sandbox: r.info(p, timeout),
		DurationMS: round3(float64(elapsed.Microseconds()) / 1000)}
	res.OutputBytes, res.OutputTruncated = out.total, out.total > int64(out.buf.Len())
	res.Output = stripPaths(out.buf.String(), dir)
	res.Records, res.RecordBytes = recs.buf.Bytes(), recs.total
	if ps := cmd.ProcessState; ps != nil {
		res.ExitCode = ps.ExitCode()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru != nil {
			res.CPUMS = round3(float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6)
			res.MaxRSSKB = ru.Maxrss
		}
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = signalName(ws.Signal())
		}
	} else if waitErr != nil {
		return nil, fmt.Errorf("sandbox: wait: %w", waitErr)
	}
	if cg != nil {
		res.CPUMS = round3(float64(stats.cpuNS) / 1e6)
		res.PeakMemoryBytes = stats.peakBytes
	}
	if killedFor == "canceled" {
		return nil, fmt.Errorf("sandbox: %s: %w", req.Name, context.Cause(ctx))
	}
	// Only the setup channel says whether the sandbox was set up: the
	// code never holds it.
	status := setup.buf.String()
	if i := strings.Index(status, "setup failed:"); i >= 0 {
		return nil, fmt.Errorf("sandbox: %s", strings.TrimSpace(status[i:]))
	}
	if !strings.HasPrefix(status, "ready\n") {
		if killedFor == ReasonTimeout {
			return nil, fmt.Errorf("sandbox: the sandbox was not set up within %s", timeout)
		}
		how := fmt.Sprintf("exit status %d", res.ExitCode)
		if res.Signal != "" {
			how = "killed by " + res.Signal
		}
		return nil, fmt.Errorf("sandbox: the boot script ended before the code started (%s): %s", how, clipText(oneLine(res.Output), 300))
	}
	r.opts.classify(res, killedFor, timeout, req)
	return res, nil
}

// bootConfig is the boot script's configuration for a run under mode.
func (r *Runner) bootConfig(p *probe, mode, dir, lib, work, script string, timeout time.Duration) ([]byte, error) {
	as, nproc, cpu := r.opts.perProcess(p.cgroups != nil, r.opts.cpuSeconds(timeout))
	limits := map[string]int64{
		"cpu":    int64(cpu),
		"as":     as,
		"nproc":  int64(nproc),
		"fsize":  r.opts.MaxFileBytes,
		"nofile": int64(r.opts.MaxOpenFiles),
		"core":   0,
		// No real-time scheduling, no nice value below the default: a
		// run cannot take the processors ahead of the others.
		"rtprio": 0,
		"nice":   0,
	}
	cfg := map[string]any{
		"mode": mode, "work": work, "cwd": work, "scratch_bytes": r.opts.ScratchBytes, "limits": limits,
		"setup_fd": setupFD, "gate_fd": gateFD, "record_fd": RecordFD, "sys_pivot_root": syscall.SYS_PIVOT_ROOT,
		"argv": []string{p.python, "-s", script}, "env": env(lib, work),
	}
	if mode == modeRoot {
		name := filepath.Base(script)
		cfg["argv"] = []string{p.python, "-s", insideDir + "/" + name}
		cfg["env"] = env(insideLib, insideWork)
		cfg["cwd"] = insideWork
		size, err := treeBytes(lib)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		cfg["root"] = map[string]any{
			"dir":      filepath.Join(dir, "root"),
			"bytes":    size + int64(len(name)) + rootSlack + scriptBytes(script),
			"binds":    p.layout.Binds,
			"symlinks": p.layout.Symlinks,
			"devices":  rootDevices(),
			"files":    [][]any{{lib, insideLib, true}, {script, insideDir + "/" + name, false}},
			"work":     insideWork,
		}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return b, nil
}

// procAttr starts the child in its own process group, killed should the
// caller die, as the sandboxed identity and, in the namespace modes, in new
// namespaces in which it is root (the boot script needs that to build the
// minimal root; it gives the identity up before the script runs).
func (r *Runner) procAttr(p *probe, mode string, id identity) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	uid, gid := id.uid, id.gid
	if !namespaces(mode) {
		if p.dropUser {
			attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		}
		return attr
	}
	attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET |
		syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
	if p.root {
		// Root may allow setgroups and so drop its supplementary groups;
		// setuid(0) in the namespace makes the process the mapped uid.
		attr.GidMappingsEnableSetgroups = true
		attr.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	}
	return attr
}

// identity is the host uid and gid a run's code runs as.
type identity struct {
	uid, gid int
	release  func()
}

// takeIdentity gives the run an identity: one of the range no running run
// holds where the caller is root and drops it, else the caller's own.
func (r *Runner) takeIdentity(p *probe) (identity, error) {
	if !p.dropUser {
		return identity{uid: os.Geteuid(), gid: os.Getegid(), release: func() {}}, nil
	}
	i, err := r.ids.take()
	if err != nil {
		return identity{}, err
	}
	return identity{uid: int(r.opts.UID) + i, gid: int(r.opts.GID) + i, release: func() { r.ids.put(i) }}, nil
}

// waitExitedNoReap blocks until the process has exited, leaving it a
// zombie: its pid, and so its process group id, stay reserved until Wait
// reaps it.
func waitExitedNoReap(pid int) error {
	var info [128]byte // siginfo_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, 1 /* P_PID */, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch e {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return e
		}
	}
}

// killGroup sends SIGKILL to a process group; a group that is gone is fine.
func (r *Runner) killGroup(pgid int) {
	if pgid <= 1 {
		return
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		r.opts.Logger.Warn("sandbox: kill process group", "pgid", pgid, "err", err)
	}
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGXCPU:
		return "SIGXCPU"
	case syscall.SIGXFSZ:
		return "SIGXFSZ"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGFPE:
		return "SIGFPE"
	case syscall.SIGILL:
		return "SIGILL"
	}
	return fmt.Sprintf("signal %d", int(s))
}
