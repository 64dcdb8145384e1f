//go:build linux

package sandbox

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
//     as root the script runs as an unprivileged uid (65534, nobody, by
//     default), which also keeps it out of root's files.
//   - Namespaces, where the kernel allows them (probed once): new user,
//     mount, network, PID, IPC and UTS namespaces. The network namespace has
//     only a loopback interface that is down, so nothing can be connected
//     to; the PID namespace ends every process of the script when the
//     script ends; in the mount namespace the boot script makes the whole
//     file system read-only except a size-limited tmpfs over the work
//     directory, and then drops into a further user namespace so that the
//     code cannot undo it.
//   - Environment: only PATH, HOME and TMPDIR (the work directory), LANG,
//     PYTHONDONTWRITEBYTECODE, PYTHONPATH (Options.Lib) and one thread for
//     OpenBLAS, OpenMP and MKL. Nothing of the caller's environment (API
//     keys, OTEL settings) reaches the code.
//   - Private directory: a fresh temporary directory per run, holding the
//     library, the script and the work directory, removed afterwards.
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

	mu       sync.Mutex
	probed   bool
	probe    *probe
	probeErr error
}

// probe is what the probe found.
type probe struct {
	python   string
	versions string
	// namespaces and lockdown say which isolation works here.
	namespaces bool
	lockdown   bool
	// dropUser: the caller is root and scripts run as UID:GID.
	dropUser bool
	root     bool
	notes    []string
}

// mode is one configuration of the child.
type mode struct {
	namespaces bool
	lockdown   bool
}

// New returns a Runner; nothing runs until Check or Run.
func New(opts Options) (*Runner, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Runner{opts: opts}, nil
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

func (r *Runner) ensureProbe(ctx context.Context) (*probe, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probed {
		return r.probe, r.probeErr
	}
	p, err := r.runProbe(ctx)
	if err != nil && ctx.Err() != nil {
		// A probe the caller cut short says nothing about the machine.
		return nil, err
	}
	r.probed, r.probe, r.probeErr = true, p, err
	if err == nil {
		r.opts.Logger.Info("sandbox ready", "python", p.python, "versions", p.versions,
			"namespaces", p.namespaces, "lockdown", p.lockdown, "drop_user", p.dropUser, "notes", p.notes)
	}
	return p, err
}

// runProbe finds the interpreter, then the strongest isolation that works.
func (r *Runner) runProbe(ctx context.Context) (*probe, error) {
	p := &probe{root: os.Geteuid() == 0}
	p.dropUser = p.root && !r.opts.KeepUser
	candidates := r.opts.Candidates
	switch {
	case r.opts.Python != "":
		candidates = []string{r.opts.Python}
	case os.Getenv(EnvPython) != "":
		candidates = []string{os.Getenv(EnvPython)}
	case len(candidates) == 0:
		candidates = []string{"/usr/bin/python3", "python3"}
	}
	check := versionScript(r.opts.Modules)
	var tried []string
	for _, c := range candidates {
		path, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s (not found)", c))
			continue
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		p.python = path
		res, err := r.execute(ctx, p, mode{}, Request{Name: "probe", Script: check, Timeout: probeTimeout}, nil)
		if err != nil {
			return nil, fmt.Errorf("sandbox: probe %s: %w", path, err)
		}
		if res.Exited() {
			p.versions = strings.TrimSpace(lastLine(res.Output))
			break
		}
		tried = append(tried, fmt.Sprintf("%s (%s)", path, oneLine(res.FailureLine())))
		p.python = ""
	}
	if p.python == "" {
		want := "Python"
		if len(r.opts.Modules) > 0 {
			want = "Python that imports " + strings.Join(r.opts.Modules, ", ")
		}
		return nil, fmt.Errorf("%w: no %s (tried %s); set $%s or Options.Python", ErrNoPython, want, strings.Join(tried, "; "), EnvPython)
	}
	if r.opts.Isolation == IsolationNone {
		p.notes = append(p.notes, "namespaces not used (isolation: none)")
		return p, nil
	}
	// The probe script checks that the lockdown holds: the private
	// directory is read-only, the work directory is not.
	const nsCheck = "import os\n" +
		"open('probe.txt', 'w').write('ok')\n" +
		"try:\n    open('../escape.txt', 'w')\nexcept OSError:\n    print('locked')\n" +
		"else:\n    raise SystemExit('the private directory is writable')\n"
	for _, m := range []mode{{namespaces: true, lockdown: true}, {namespaces: true}} {
		script := "print('ok')\n"
		if m.lockdown {
			script = nsCheck
		}
		res, err := r.execute(ctx, p, m, Request{Name: "probe", Script: script, Timeout: probeTimeout}, nil)
		if err == nil && res.Exited() {
			p.namespaces, p.lockdown = true, m.lockdown
			break
		}
		why := ""
		if err != nil {
			why = err.Error()
		} else {
			why = res.FailureLine()
		}
		note := fmt.Sprintf("namespaces (lockdown %v) unavailable: %s", m.lockdown, oneLine(why))
		p.notes = append(p.notes, note)
		r.opts.Logger.Warn("sandbox: "+note, "python", p.python)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if !p.namespaces && r.opts.Isolation == IsolationNamespace {
		return nil, fmt.Errorf("sandbox: isolation %q was asked for but namespaces do not work here: %s", IsolationNamespace, strings.Join(p.notes, "; "))
	}
	return p, nil
}

// versionScript imports modules and prints the versions found:
// "python 3.11.2; numpy 1.24.2, scipy 1.10.1".
func versionScript(modules []string) string {
	var b strings.Builder
	b.WriteString("import sys\nparts = []\n")
	for _, m := range modules {
		fmt.Fprintf(&b, "import %s\nparts.append('%s ' + str(getattr(%s, '__version__', '?')))\n", m, m, m)
	}
	b.WriteString("print('; '.join(['python ' + sys.version.split()[0]] + ([', '.join(parts)] if parts else [])))\n")
	return b.String()
}

func (r *Runner) info(p *probe, timeout time.Duration) *Info {
	o := r.opts
	nproc := fmt.Sprintf("nproc=%d", o.MaxProcesses)
	if p.root && !p.dropUser {
		nproc += " (not binding: runs as root)"
	}
	info := &Info{
		ProcessGroup: true,
		Rlimits: []string{
			fmt.Sprintf("cpu=%ds", o.cpuSeconds(timeout)),
			"as=" + byteSize(o.MemoryBytes),
			nproc,
			"fsize=" + byteSize(o.MaxFileBytes),
			fmt.Sprintf("nofile=%d", o.MaxOpenFiles),
			"core=0",
		},
		ScrubbedEnv:    true,
		PrivateTmp:     true,
		OutputCapBytes: o.OutputCap,
		Network:        NetworkNotIsolated,
		Filesystem:     "permissions only",
		TimeoutSeconds: timeout.Seconds(),
		Python:         strings.TrimSpace(p.python + " (" + p.versions + ")"),
		Notes:          p.notes,
	}
	if p.namespaces {
		info.Network = NetworkNamespace
		info.PIDNamespace = true
	}
	if p.lockdown {
		info.Filesystem = "read-only except the work directory (tmpfs of " + byteSize(o.ScratchBytes) + ")"
	}
	switch {
	case p.dropUser:
		info.User = fmt.Sprintf("uid %d gid %d (the caller runs as root)", o.UID, o.GID)
	case p.root:
		info.User = "root (KeepUser)"
	default:
		info.User = fmt.Sprintf("uid %d, the caller's own", os.Geteuid())
	}
	return info
}

// Run runs one script. The error is the runner's own failure (no
// interpreter, no temporary directory, a sandbox that cannot be set up, the
// caller's context ending); everything the script does is in the result.
func (r *Runner) Run(ctx context.Context, req Request) (*Result, error) {
	p, err := r.ensureProbe(ctx)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, path := range req.Files {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		files = append(files, f)
	}
	return r.execute(ctx, p, mode{namespaces: p.namespaces, lockdown: p.lockdown}, req, files)
}

// execute runs req in a private directory under m.
func (r *Runner) execute(ctx context.Context, p *probe, m mode, req Request, files []*os.File) (res *Result, err error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = r.opts.Timeout
	}
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
	lib, work, script, err := r.prepareDir(dir, p, req)
	if err != nil {
		return nil, err
	}

	limits := map[string]int64{
		"cpu":    int64(r.opts.cpuSeconds(timeout)),
		"as":     r.opts.MemoryBytes,
		"nproc":  int64(r.opts.MaxProcesses),
		"fsize":  r.opts.MaxFileBytes,
		"nofile": int64(r.opts.MaxOpenFiles),
		"core":   0,
	}
	cfg, err := json.Marshal(map[string]any{
		"python": p.python, "script": script, "work": work,
		"lockdown": m.lockdown, "scratch_bytes": r.opts.ScratchBytes, "limits": limits,
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: output pipe: %w", err)
	}
	defer outR.Close()
	cmd := exec.Command(p.python, "-s", filepath.Join(dir, "boot", "coordbench_sandbox.py"), string(cfg))
	cmd.Env = env(lib, work)
	cmd.Dir = work
	cmd.Stdout, cmd.Stderr = outW, outW
	cmd.ExtraFiles = files
	cmd.SysProcAttr = r.procAttr(p, m)

	started := time.Now()
	if err := cmd.Start(); err != nil {
		outW.Close()
		return nil, fmt.Errorf("sandbox: start %s: %w", p.python, err)
	}
	outW.Close()
	pgid := cmd.Process.Pid

	out := &cappedOutput{limit: r.opts.OutputCap, over: make(chan struct{})}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		out.drain(outR)
	}()
	exited := make(chan error, 1)
	go func() { exited <- waitExitedNoReap(pgid) }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var killedFor string
	select {
	case err = <-exited:
	case <-timer.C:
		killedFor = ReasonTimeout
	case <-out.over:
		killedFor = LimitOutput
	case <-ctx.Done():
		killedFor = "canceled"
	}
	if killedFor != "" {
		r.killGroup(pgid)
		err = <-exited
	}
	if err != nil {
		// The child cannot be waited for: kill what can be killed and
		// let Wait reap it.
		r.opts.Logger.Warn("sandbox: waitid", "pid", pgid, "err", err)
	}
	// The script has ended but is not reaped, so the group id is still
	// ours: end whatever it left behind.
	r.killGroup(pgid)
	waitErr := cmd.Wait()
	elapsed := time.Since(started)
	_ = outR.SetReadDeadline(time.Now().Add(drainTimeout))
	<-readDone

	res = &Result{ProcessGroup: pgid, Dir: dir, Sandbox: r.info(p, timeout),
		DurationMS: round3(float64(elapsed.Microseconds()) / 1000)}
	res.OutputBytes, res.OutputTruncated = out.total, out.total > int64(out.buf.Len())
	res.Output = strings.ReplaceAll(out.buf.String(), dir+string(filepath.Separator), "")
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
	if killedFor == "canceled" {
		return nil, fmt.Errorf("sandbox: %s: %w", req.Name, context.Cause(ctx))
	}
	if res.ExitCode == setupFailed && strings.Contains(res.Output, setupMarker) {
		return nil, fmt.Errorf("sandbox: %s", strings.TrimSpace(lastLine(res.Output)))
	}
	r.opts.classify(res, killedFor, timeout, req)
	return res, nil
}

// prepareDir writes the boot script, the library and the script into the
// private directory and makes the work directory, with the ownership and
// modes the sandboxed identity needs: it may read the library and the
// script and write the work directory only.
func (r *Runner) prepareDir(dir string, p *probe, req Request) (lib, work, script string, err error) {
	// 0711: the sandboxed identity may enter, not list.
	if err := os.Chmod(dir, 0o711); err != nil {
		return "", "", "", fmt.Errorf("sandbox: %w", err)
	}
	if err := copyTree(filepath.Join(dir, "boot"), mustSub(bootFS, "py")); err != nil {
		return "", "", "", fmt.Errorf("sandbox: write the boot script: %w", err)
	}
	lib = filepath.Join(dir, "lib")
	if err := os.Mkdir(lib, 0o755); err != nil {
		return "", "", "", fmt.Errorf("sandbox: %w", err)
	}
	if err := os.Chmod(lib, 0o755); err != nil {
		return "", "", "", fmt.Errorf("sandbox: %w", err)
	}
	if r.opts.Lib != nil {
		if err := copyTree(lib, r.opts.Lib); err != nil {
			return "", "", "", fmt.Errorf("sandbox: write the library: %w", err)
		}
	}
	script = filepath.Join(dir, ScriptFile(req.Name))
	if err := writeReadable(script, []byte(req.Script)); err != nil {
		return "", "", "", fmt.Errorf("sandbox: write the script: %w", err)
	}
	work = filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		return "", "", "", fmt.Errorf("sandbox: %w", err)
	}
	if p.dropUser {
		if err := os.Chown(work, int(r.opts.UID), int(r.opts.GID)); err != nil {
			return "", "", "", fmt.Errorf("sandbox: %w", err)
		}
	}
	return lib, work, script, nil
}

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // an embedded directory that is not there: a build error
	}
	return sub
}

// copyTree writes the tree of src under dst, readable by everyone whatever
// the umask.
func copyTree(dst string, src fs.FS) error {
	return fs.WalkDir(src, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(path))
		if d.IsDir() {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			return os.Chmod(target, 0o755)
		}
		b, err := fs.ReadFile(src, path)
		if err != nil {
			return err
		}
		return writeReadable(target, b)
	})
}

func writeReadable(path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}

// procAttr starts the child in its own process group, killed should the
// caller die, as the sandboxed identity and, in namespace mode, in new
// namespaces in which it is root (the boot script needs that to lock the
// file system down; it gives the identity up before the script runs).
func (r *Runner) procAttr(p *probe, m mode) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	uid, gid := os.Geteuid(), os.Getegid()
	if p.dropUser {
		uid, gid = int(r.opts.UID), int(r.opts.GID)
	}
	if !m.namespaces {
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

// removeDir removes a private directory even where the code made a
// subdirectory unreadable.
func removeDir(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
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
