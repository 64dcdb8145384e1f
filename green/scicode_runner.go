package green

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/coordbench/coordbench/internal/textutil"
)

// The SciCode runner (DESIGN §8, docs/scicode.md "Runner"): every attempt at
// a step is one Python script, run as untrusted code.
//
// Protections, and why each is done the way it is:
//
//   - Process group: the child is started with Setpgid; on a timeout, an
//     output flood or the caller's cancellation the whole group gets
//     SIGKILL, and so does whatever is left of it after the script ends.
//     The runner waits for the script's exit with waitid(WNOWAIT) before it
//     kills the group, so the group's id cannot have been reused by an
//     unrelated process when the signal is sent.
//   - Resource limits: Go's os/exec cannot set rlimits in the child, so a
//     small Python boot script of ours (scicode_py/coordbench_sandbox.py)
//     runs first in the child, sets CPU time, address space, processes, file
//     size, open files and core size with soft = hard (the code cannot raise
//     them again), and execs a fresh interpreter on the step's script. This
//     needs nothing but the interpreter the runner needs anyway (prlimit or
//     a re-exec'd Go helper would need util-linux, or a hidden subcommand in
//     every binary that embeds the runner).
//   - Identity: RLIMIT_NPROC does not bind root, so when the green agent
//     runs as root the script runs as an unprivileged uid (65534, nobody, by
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
//     PYTHONDONTWRITEBYTECODE, PYTHONPATH (our helpers) and one thread for
//     OpenBLAS, OpenMP and MKL. Nothing of the green agent's environment (API
//     keys, OTEL settings) reaches the code.
//   - Private directory: a fresh temporary directory per attempt, holding
//     the helpers, the script and the work directory, removed afterwards.
//   - Output: stdout and stderr share one pipe; past OutputCap bytes the
//     group is killed and the attempt fails with limit "output".
//   - Targets: the HDF5 file is opened by the runner and passed as file
//     descriptor 3, so the script needs no access to the data directory.
//
// The sandbox protects the machine, not the score: code that runs in the
// test's own interpreter can always make a test pass by patching numpy,
// as it can in SciCode's own harness.

// sciCodePy holds the Python helpers: the sandbox boot script, and the
// scicode package (compare.cmp, parse.parse) that test scripts import.
//
//go:embed scicode_py/coordbench_sandbox.py scicode_py/scicode/__init__.py scicode_py/scicode/compare/__init__.py scicode_py/scicode/compare/cmp.py scicode_py/scicode/parse/__init__.py scicode_py/scicode/parse/parse.py
var sciCodePy embed.FS

// EnvSciCodePython names the interpreter the runner uses; it must import
// numpy, scipy and h5py (sympy for some problems).
const EnvSciCodePython = "COORDBENCH_SCICODE_PYTHON"

// Runner defaults. The step timeout is generous for SciCode's heavier
// steps; the CPU limit follows the timeout.
const (
	DefaultStepTimeout    = 300 * time.Second
	DefaultRunnerMemory   = 4 << 30
	DefaultRunnerProcs    = 64
	DefaultRunnerFileSize = 64 << 20
	DefaultRunnerNoFile   = 256
	DefaultRunnerOutput   = 256 << 10
	DefaultRunnerScratch  = 256 << 20
	// DefaultRunnerUID is the identity scripts run as when the green agent
	// is root: nobody.
	DefaultRunnerUID = 65534
)

// Isolation modes of RunnerOptions.Isolation.
const (
	// IsolationAuto uses namespaces where the probe finds them working.
	IsolationAuto = "auto"
	// IsolationNamespace requires them: without, every run fails.
	IsolationNamespace = "namespace"
	// IsolationNone runs without namespaces.
	IsolationNone = "none"
)

// Network values of SandboxInfo.
const (
	NetworkNamespace   = "namespace"
	NetworkNotIsolated = "not isolated"
)

// Reasons an attempt fails (RunResult.Reason, and the scenario's step
// reasons).
const (
	ReasonPassed     = "passed"
	ReasonTestFailed = "test_failed"
	ReasonCrashed    = "crashed"
	ReasonTimeout    = "timeout"
	ReasonLimit      = "limit"
	ReasonNoCode     = "no_code"
	ReasonNoAnswer   = "no_answer"
	ReasonNotRun     = "not_run"
	ReasonRunner     = "runner_error"
)

// Limits an attempt can hit (RunResult.Limit).
const (
	LimitCPU       = "cpu"
	LimitMemory    = "memory"
	LimitProcesses = "processes"
	LimitFileSize  = "file_size"
	LimitOpenFiles = "open_files"
	LimitOutput    = "output"
	LimitScratch   = "scratch"
)

const (
	// sandboxSetupFailed is the boot script's exit status when it could
	// not set the sandbox up.
	sandboxSetupFailed = 120
	sandboxSetupMarker = "coordbench-sandbox: setup failed:"
	// targetsFD is where the script finds the targets file.
	targetsFD = 3
	// probeTimeout bounds each probe run; drainTimeout bounds the wait for
	// the output pipe to close once the group is dead.
	probeTimeout = 60 * time.Second
	drainTimeout = 2 * time.Second
)

// RunnerOptions configure a Runner. The zero value uses every default.
type RunnerOptions struct {
	// Python is the interpreter; empty means $COORDBENCH_SCICODE_PYTHON,
	// else the first of Candidates that imports numpy, scipy and h5py.
	Python string
	// Candidates default to /usr/bin/python3, then python3 on PATH.
	Candidates []string
	// Timeout bounds one attempt (default 300 s); RunRequest.Timeout
	// overrides it.
	Timeout time.Duration
	// CPUSeconds is RLIMIT_CPU (default: the timeout, rounded up).
	CPUSeconds int
	// MemoryBytes is RLIMIT_AS (default 4 GiB).
	MemoryBytes int64
	// MaxProcesses is RLIMIT_NPROC (default 64). It binds only a non-root
	// identity: see UID.
	MaxProcesses int
	// MaxFileBytes is RLIMIT_FSIZE (default 64 MiB).
	MaxFileBytes int64
	// MaxOpenFiles is RLIMIT_NOFILE (default 256).
	MaxOpenFiles int
	// OutputCap bounds stdout and stderr together (default 256 KiB).
	OutputCap int
	// ScratchBytes is the size of the work directory's tmpfs when the file
	// system is locked down (default 256 MiB).
	ScratchBytes int64
	// Isolation is IsolationAuto (default), IsolationNamespace or
	// IsolationNone.
	Isolation string
	// UID and GID are the identity scripts run as when the green agent
	// runs as root (default 65534, nobody). KeepUser runs them as root
	// instead, which leaves RLIMIT_NPROC without effect.
	UID, GID uint32
	KeepUser bool
	// TempDir is where private directories are made (default os.TempDir()).
	TempDir string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (o RunnerOptions) withDefaults() RunnerOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultStepTimeout
	}
	if o.MemoryBytes <= 0 {
		o.MemoryBytes = DefaultRunnerMemory
	}
	if o.MaxProcesses <= 0 {
		o.MaxProcesses = DefaultRunnerProcs
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultRunnerFileSize
	}
	if o.MaxOpenFiles <= 0 {
		o.MaxOpenFiles = DefaultRunnerNoFile
	}
	if o.OutputCap <= 0 {
		o.OutputCap = DefaultRunnerOutput
	}
	if o.ScratchBytes <= 0 {
		o.ScratchBytes = DefaultRunnerScratch
	}
	if o.Isolation == "" {
		o.Isolation = IsolationAuto
	}
	if o.UID == 0 {
		o.UID = DefaultRunnerUID
	}
	if o.GID == 0 {
		o.GID = DefaultRunnerUID
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Runner runs SciCode test scripts in the sandbox. It probes the
// interpreter and the machine's isolation once, on first use; it is safe
// for concurrent use, each run in a private directory of its own.
type Runner struct {
	opts RunnerOptions
	log  *slog.Logger

	mu       sync.Mutex
	probed   bool
	probe    *runnerProbe
	probeErr error
}

// runnerProbe is what the probe found.
type runnerProbe struct {
	python   string
	versions string
	// namespaces and lockdown say which isolation works here.
	namespaces bool
	lockdown   bool
	// dropUser: the green agent is root and scripts run as UID:GID.
	dropUser bool
	root     bool
	notes    []string
}

// NewRunner returns a Runner; nothing runs until Check or Run.
func NewRunner(opts RunnerOptions) (*Runner, error) {
	opts = opts.withDefaults()
	switch opts.Isolation {
	case IsolationAuto, IsolationNamespace, IsolationNone:
	default:
		return nil, fmt.Errorf("scicode runner: isolation %q: want %q, %q or %q", opts.Isolation, IsolationAuto, IsolationNamespace, IsolationNone)
	}
	return &Runner{opts: opts, log: opts.Logger}, nil
}

// SandboxInfo says which protections are in force for a run; it is part of
// every SciCode result.
type SandboxInfo struct {
	ProcessGroup   bool     `json:"process_group"`
	Rlimits        []string `json:"rlimits"`
	ScrubbedEnv    bool     `json:"scrubbed_env"`
	PrivateTmp     bool     `json:"private_tmp"`
	OutputCapBytes int      `json:"output_cap_bytes"`
	// Network is "namespace" (no interface the code could use) or "not
	// isolated".
	Network string `json:"network"`
	// Filesystem is "read-only except the work directory" or "permissions
	// only".
	Filesystem   string `json:"filesystem"`
	PIDNamespace bool   `json:"pid_namespace"`
	// User is who the code runs as.
	User string `json:"user"`
	// Timeout is the wall-clock limit of one attempt.
	TimeoutSeconds float64  `json:"timeout_seconds"`
	Python         string   `json:"python,omitempty"`
	Notes          []string `json:"notes,omitempty"`
}

// Check probes the interpreter and the isolation (once) and returns what
// will be in force, or why nothing can run.
func (r *Runner) Check(ctx context.Context) (*SandboxInfo, error) {
	p, err := r.ensureProbe(ctx)
	if err != nil {
		return nil, err
	}
	return r.sandboxInfo(p, r.opts.Timeout), nil
}

// infoFor is SandboxInfo for runs with the given timeout, nil before the
// probe.
func (r *Runner) infoFor(timeout time.Duration) *SandboxInfo {
	r.mu.Lock()
	p := r.probe
	r.mu.Unlock()
	if p == nil {
		return nil
	}
	return r.sandboxInfo(p, timeout)
}

func (r *Runner) ensureProbe(ctx context.Context) (*runnerProbe, error) {
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
		r.log.Info("scicode runner ready", "python", p.python, "versions", p.versions,
			"namespaces", p.namespaces, "lockdown", p.lockdown, "drop_user", p.dropUser, "notes", p.notes)
	}
	return p, err
}

// runProbe finds the interpreter, then the strongest isolation that works.
func (r *Runner) runProbe(ctx context.Context) (*runnerProbe, error) {
	p := &runnerProbe{root: os.Geteuid() == 0}
	p.dropUser = p.root && !r.opts.KeepUser
	candidates := r.opts.Candidates
	switch {
	case r.opts.Python != "":
		candidates = []string{r.opts.Python}
	case os.Getenv(EnvSciCodePython) != "":
		candidates = []string{os.Getenv(EnvSciCodePython)}
	case len(candidates) == 0:
		candidates = []string{"/usr/bin/python3", "python3"}
	}
	const check = "import sys, numpy, scipy, h5py\n" +
		"print('python %s; numpy %s, scipy %s, h5py %s' % (sys.version.split()[0], numpy.__version__, scipy.__version__, h5py.__version__))\n"
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
		res, err := r.execute(ctx, p, sandboxMode{}, RunRequest{StepID: "probe", Script: check, Timeout: probeTimeout}, nil)
		if err != nil {
			return nil, fmt.Errorf("scicode runner: probe %s: %w", path, err)
		}
		if res.Passed {
			p.versions = strings.TrimSpace(lastLine(res.Output))
			break
		}
		tried = append(tried, fmt.Sprintf("%s (%s)", path, textutil.OneLine(res.failureLine())))
		p.python = ""
	}
	if p.python == "" {
		return nil, fmt.Errorf("scicode runner: no Python that imports numpy, scipy and h5py (tried %s); install python3-numpy python3-scipy python3-h5py python3-sympy or set $%s",
			strings.Join(tried, "; "), EnvSciCodePython)
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
	for _, mode := range []sandboxMode{{namespaces: true, lockdown: true}, {namespaces: true}} {
		script := "print('ok')\n"
		if mode.lockdown {
			script = nsCheck
		}
		res, err := r.execute(ctx, p, mode, RunRequest{StepID: "probe", Script: script, Timeout: probeTimeout}, nil)
		if err == nil && res.Passed {
			p.namespaces, p.lockdown = true, mode.lockdown
			break
		}
		why := ""
		if err != nil {
			why = err.Error()
		} else {
			why = res.failureLine()
		}
		note := fmt.Sprintf("namespaces (lockdown %v) unavailable: %s", mode.lockdown, textutil.OneLine(why))
		p.notes = append(p.notes, note)
		r.log.Warn("scicode runner: "+note, "python", p.python)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if !p.namespaces && r.opts.Isolation == IsolationNamespace {
		return nil, fmt.Errorf("scicode runner: isolation %q was asked for but namespaces do not work here: %s", IsolationNamespace, strings.Join(p.notes, "; "))
	}
	return p, nil
}

// sandboxMode is one configuration of the child.
type sandboxMode struct {
	namespaces bool
	lockdown   bool
}

func (r *Runner) modeOf(p *runnerProbe) sandboxMode {
	return sandboxMode{namespaces: p.namespaces, lockdown: p.lockdown}
}

func (r *Runner) sandboxInfo(p *runnerProbe, timeout time.Duration) *SandboxInfo {
	o := r.opts
	nproc := fmt.Sprintf("nproc=%d", o.MaxProcesses)
	if p.root && !p.dropUser {
		nproc += " (not binding: runs as root)"
	}
	info := &SandboxInfo{
		ProcessGroup: true,
		Rlimits: []string{
			fmt.Sprintf("cpu=%ds", r.cpuSeconds(timeout)),
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
		info.User = fmt.Sprintf("uid %d gid %d (the green agent runs as root)", o.UID, o.GID)
	case p.root:
		info.User = "root (KeepUser)"
	default:
		info.User = fmt.Sprintf("uid %d, the green agent's own", os.Geteuid())
	}
	return info
}

func (r *Runner) cpuSeconds(timeout time.Duration) int {
	if r.opts.CPUSeconds > 0 {
		return r.opts.CPUSeconds
	}
	return max(1, int(math.Ceil(timeout.Seconds())))
}

// RunRequest is one script to run.
type RunRequest struct {
	// StepID names the script file ("10.1" runs 10.1.py), so tracebacks
	// read as SciCode's do.
	StepID string
	Script string
	// Sections map the script's lines to their origin, so a failure can
	// say where it happened ("test case 2 of 3").
	Sections []ScriptSection
	// TargetsPath is the HDF5 targets file, passed as file descriptor 3.
	TargetsPath string
	// Timeout overrides RunnerOptions.Timeout.
	Timeout time.Duration
}

// RunResult is the outcome of one script.
type RunResult struct {
	Passed bool `json:"passed"`
	// Reason is ReasonPassed, ReasonTestFailed, ReasonCrashed,
	// ReasonTimeout or ReasonLimit; Limit names the limit hit.
	Reason string `json:"reason"`
	Limit  string `json:"limit,omitempty"`
	// Detail is one line: the exception and where it was raised.
	Detail string `json:"detail,omitempty"`
	// Section is where the failure happened ("test case 2 of 3").
	Section  string `json:"section,omitempty"`
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// Output is stdout and stderr as captured (at most OutputCap bytes),
	// with the private directory's path removed; OutputBytes counts all.
	Output          string  `json:"-"`
	OutputBytes     int64   `json:"output_bytes"`
	OutputTruncated bool    `json:"output_truncated,omitempty"`
	DurationMS      float64 `json:"duration_ms"`
	CPUMS           float64 `json:"cpu_ms"`
	MaxRSSKB        int64   `json:"max_rss_kb,omitempty"`
	// Sandbox is what was in force.
	Sandbox *SandboxInfo `json:"-"`

	// pgid and dir let tests check that nothing was left behind.
	pgid int
	dir  string
}

// failureLine is the result in one line, for logs and notes.
func (r *RunResult) failureLine() string {
	if r.Detail != "" {
		return r.Reason + ": " + r.Detail
	}
	if t := strings.TrimSpace(lastLine(r.Output)); t != "" {
		return r.Reason + ": " + t
	}
	return r.Reason
}

// Run runs one script. The error is the runner's own failure (no
// interpreter, no temporary directory, a sandbox that cannot be set up, the
// caller's context ending); everything the script does is in the result.
func (r *Runner) Run(ctx context.Context, req RunRequest) (*RunResult, error) {
	p, err := r.ensureProbe(ctx)
	if err != nil {
		return nil, err
	}
	var targets *os.File
	if req.TargetsPath != "" {
		if targets, err = os.Open(req.TargetsPath); err != nil {
			return nil, fmt.Errorf("scicode runner: targets: %w", err)
		}
		defer targets.Close()
	}
	res, err := r.execute(ctx, p, r.modeOf(p), req, targets)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// sandboxEnv is the whole environment of the child.
func sandboxEnv(lib, work string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + work,
		"TMPDIR=" + work,
		"LANG=C.UTF-8",
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONPATH=" + lib,
		"OPENBLAS_NUM_THREADS=1",
		"OMP_NUM_THREADS=1",
		"MKL_NUM_THREADS=1",
	}
}

// sciCodeStepFile keeps a step id usable as a file name.
var sciCodeStepFile = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// execute runs req in a private directory under mode.
func (r *Runner) execute(ctx context.Context, p *runnerProbe, mode sandboxMode, req RunRequest, targets *os.File) (res *RunResult, err error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = r.opts.Timeout
	}
	dir, err := os.MkdirTemp(r.opts.TempDir, "coordbench-scicode-")
	if err != nil {
		return nil, fmt.Errorf("scicode runner: private directory: %w", err)
	}
	defer func() {
		if rmErr := removeSandboxDir(dir); rmErr != nil {
			r.log.Warn("scicode runner: private directory not removed", "dir", dir, "err", rmErr)
			if err == nil {
				err = fmt.Errorf("scicode runner: remove private directory: %w", rmErr)
			}
		}
	}()
	lib, work, script, err := r.prepareDir(dir, p, req)
	if err != nil {
		return nil, err
	}

	limits := map[string]int64{
		"cpu":    int64(r.cpuSeconds(timeout)),
		"as":     r.opts.MemoryBytes,
		"nproc":  int64(r.opts.MaxProcesses),
		"fsize":  r.opts.MaxFileBytes,
		"nofile": int64(r.opts.MaxOpenFiles),
		"core":   0,
	}
	cfg, err := json.Marshal(map[string]any{
		"python": p.python, "script": script, "work": work,
		"lockdown": mode.lockdown, "scratch_bytes": r.opts.ScratchBytes, "limits": limits,
	})
	if err != nil {
		return nil, fmt.Errorf("scicode runner: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("scicode runner: output pipe: %w", err)
	}
	defer outR.Close()
	cmd := exec.Command(p.python, "-s", filepath.Join(lib, "coordbench_sandbox.py"), string(cfg))
	cmd.Env = sandboxEnv(lib, work)
	cmd.Dir = work
	cmd.Stdout, cmd.Stderr = outW, outW
	if targets != nil {
		cmd.ExtraFiles = []*os.File{targets}
	}
	cmd.SysProcAttr = r.procAttr(p, mode)

	started := time.Now()
	if err := cmd.Start(); err != nil {
		outW.Close()
		return nil, fmt.Errorf("scicode runner: start %s: %w", p.python, err)
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
		killGroup(pgid)
		err = <-exited
	}
	if err != nil {
		// The child cannot be waited for: kill what can be killed and
		// let Wait reap it.
		r.log.Warn("scicode runner: waitid", "pid", pgid, "err", err)
	}
	// The script has ended but is not reaped, so the group id is still
	// ours: end whatever it left behind.
	killGroup(pgid)
	waitErr := cmd.Wait()
	elapsed := time.Since(started)
	_ = outR.SetReadDeadline(time.Now().Add(drainTimeout))
	<-readDone

	res = &RunResult{pgid: pgid, dir: dir, Sandbox: r.sandboxInfo(p, timeout),
		DurationMS: round(float64(elapsed.Microseconds())/1000, 3)}
	res.OutputBytes, res.OutputTruncated = out.total, out.total > int64(out.buf.Len())
	res.Output = strings.ReplaceAll(out.buf.String(), dir+string(filepath.Separator), "")
	if ps := cmd.ProcessState; ps != nil {
		res.ExitCode = ps.ExitCode()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru != nil {
			res.CPUMS = round(float64(ru.Utime.Nano()+ru.Stime.Nano())/1e6, 3)
			res.MaxRSSKB = ru.Maxrss
		}
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = signalName(ws.Signal())
		}
	} else if waitErr != nil {
		return nil, fmt.Errorf("scicode runner: wait: %w", waitErr)
	}
	if killedFor == "canceled" {
		return nil, fmt.Errorf("scicode runner: step %s: %w", req.StepID, context.Cause(ctx))
	}
	if res.ExitCode == sandboxSetupFailed && strings.Contains(res.Output, sandboxSetupMarker) {
		return nil, fmt.Errorf("scicode runner: sandbox: %s", strings.TrimSpace(lastLine(res.Output)))
	}
	r.classify(res, killedFor, timeout, req)
	return res, nil
}

// prepareDir writes the helpers and the script into the private directory
// and makes the work directory, with the ownership and modes the sandboxed
// identity needs: it may read the helpers and the script and write the work
// directory only.
func (r *Runner) prepareDir(dir string, p *runnerProbe, req RunRequest) (lib, work, script string, err error) {
	// 0711: the sandboxed identity may enter, not list.
	if err := os.Chmod(dir, 0o711); err != nil {
		return "", "", "", fmt.Errorf("scicode runner: %w", err)
	}
	lib = filepath.Join(dir, "lib")
	err = fs.WalkDir(sciCodePy, "scicode_py", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(lib, strings.TrimPrefix(path, "scicode_py"))
		if d.IsDir() {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			return os.Chmod(target, 0o755) // whatever the umask
		}
		b, err := sciCodePy.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			return err
		}
		return os.Chmod(target, 0o644)
	})
	if err != nil {
		return "", "", "", fmt.Errorf("scicode runner: write helpers: %w", err)
	}
	name := sciCodeStepFile.ReplaceAllString(req.StepID, "_")
	if name == "" || strings.HasPrefix(name, ".") {
		name = "step" + name
	}
	script = filepath.Join(dir, name+".py")
	if err := os.WriteFile(script, []byte(req.Script), 0o644); err != nil {
		return "", "", "", fmt.Errorf("scicode runner: write script: %w", err)
	}
	if err := os.Chmod(script, 0o644); err != nil {
		return "", "", "", fmt.Errorf("scicode runner: %w", err)
	}
	work = filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		return "", "", "", fmt.Errorf("scicode runner: %w", err)
	}
	if p.dropUser {
		if err := os.Chown(work, int(r.opts.UID), int(r.opts.GID)); err != nil {
			return "", "", "", fmt.Errorf("scicode runner: %w", err)
		}
	}
	return lib, work, script, nil
}

// procAttr starts the child in its own process group, killed should the
// green agent die, as the sandboxed identity and, in namespace mode, in
// new namespaces in which it is root (the boot script needs that to lock
// the file system down; it gives the identity up before the script runs).
func (r *Runner) procAttr(p *runnerProbe, mode sandboxMode) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	uid, gid := os.Geteuid(), os.Getegid()
	if p.dropUser {
		uid, gid = int(r.opts.UID), int(r.opts.GID)
	}
	if !mode.namespaces {
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

// classify turns the exit into a reason, from what the runner saw (its own
// kills, the wait status, the CPU time) and the traceback.
func (r *Runner) classify(res *RunResult, killedFor string, timeout time.Duration, req RunRequest) {
	exc, frames := parseTraceback(res.Output, req.StepID)
	if len(frames) > 0 {
		res.Section = sectionOf(req.Sections, frames[0])
	}
	res.Detail = exc
	limit := func(l, detail string) {
		res.Reason, res.Limit = ReasonLimit, l
		if res.Detail == "" {
			res.Detail = detail
		}
	}
	switch {
	case killedFor == LimitOutput:
		res.Reason, res.Limit = ReasonLimit, LimitOutput
		res.Detail = fmt.Sprintf("more than %d bytes of output; the process group was killed", r.opts.OutputCap)
	case killedFor == ReasonTimeout:
		res.Reason = ReasonTimeout
		res.Detail = fmt.Sprintf("no result within %s; the process group was killed", timeout)
	case res.ExitCode == 0 && res.Signal == "":
		res.Passed, res.Reason, res.Detail, res.Section = true, ReasonPassed, "", ""
	case res.Signal == "SIGXCPU" || (res.Signal == "SIGKILL" && res.CPUMS >= 1000*float64(r.cpuSeconds(timeout))-500):
		limit(LimitCPU, fmt.Sprintf("more than %d s of CPU time (killed by %s)", r.cpuSeconds(timeout), res.Signal))
	case res.Signal == "SIGXFSZ":
		limit(LimitFileSize, "a file larger than "+byteSize(r.opts.MaxFileBytes))
	case res.Signal != "":
		res.Reason = ReasonCrashed
		if res.Detail == "" {
			res.Detail = "killed by " + res.Signal
		}
	case strings.Contains(exc, "MemoryError") || strings.Contains(exc, "Cannot allocate memory"):
		limit(LimitMemory, "")
	case strings.Contains(exc, "Resource temporarily unavailable") && (strings.Contains(exc, "BlockingIOError") || strings.Contains(exc, "fork")):
		limit(LimitProcesses, "")
	case strings.Contains(exc, "File too large"):
		limit(LimitFileSize, "")
	case strings.Contains(exc, "No space left on device"):
		limit(LimitScratch, "")
	case strings.Contains(exc, "Too many open files"):
		limit(LimitOpenFiles, "")
	case strings.HasPrefix(exc, "AssertionError") && strings.HasPrefix(res.Section, "test case"):
		res.Reason = ReasonTestFailed
	default:
		res.Reason = ReasonCrashed
		if res.Detail == "" {
			res.Detail = fmt.Sprintf("exit status %d", res.ExitCode)
		}
	}
	if res.Section != "" && res.Detail != "" && !res.Passed && res.Reason != ReasonTimeout && res.Limit != LimitOutput {
		res.Detail += " (in " + res.Section + ")"
	}
}

// tracebackFrame matches a frame line of a Python traceback.
var tracebackFrame = regexp.MustCompile(`^\s*File "([^"]+)", line (\d+)`)

// parseTraceback returns the exception line of the last traceback in out
// (or of a syntax error) and the script's lines named in it, outermost
// first.
func parseTraceback(out, stepID string) (exc string, lines []int) {
	scriptName := sciCodeStepFile.ReplaceAllString(stepID, "_") + ".py"
	text := out
	if i := strings.LastIndex(text, "Traceback (most recent call last):"); i >= 0 {
		text = text[i:]
	}
	all := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for _, l := range all {
		if m := tracebackFrame.FindStringSubmatch(l); m != nil && filepath.Base(m[1]) == scriptName {
			if n, err := strconv.Atoi(m[2]); err == nil {
				lines = append(lines, n)
			}
		}
	}
	// The exception is the last line that starts in column 0 and looks
	// like "Name: message" or "Name"; without a traceback, only a name
	// that reads as an exception counts.
	traced := len(lines) > 0 || strings.HasPrefix(text, "Traceback")
	for i := len(all) - 1; i >= 0; i-- {
		l := all[i]
		if l == "" || l[0] == ' ' || l[0] == '\t' || l[0] == '^' {
			continue
		}
		if (traced && pythonRaised.MatchString(l)) || pythonException.MatchString(l) {
			return textutil.Clip(strings.TrimSpace(l), 300), lines
		}
		break
	}
	return "", lines
}

var (
	pythonRaised    = regexp.MustCompile(`^[A-Za-z_][\w.]*(: .*|:)?$`)
	pythonException = regexp.MustCompile(`^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning|Iteration)\b`)
)

// ScriptSection is a range of script lines (1-based, inclusive) and what
// they are.
type ScriptSection struct {
	Name string `json:"name"`
	From int    `json:"from"`
	To   int    `json:"to"`
}

func sectionOf(sections []ScriptSection, line int) string {
	for _, s := range sections {
		if line >= s.From && line <= s.To {
			return s.Name
		}
	}
	return ""
}

// cappedOutput keeps the first limit bytes of the output, counts the rest,
// and closes over once the output passes limit.
type cappedOutput struct {
	limit int
	buf   bytes.Buffer
	total int64
	over  chan struct{}
	once  sync.Once
}

// drain reads r until EOF or its deadline.
func (c *cappedOutput) drain(r io.Reader) {
	b := make([]byte, 32<<10)
	for {
		n, err := r.Read(b)
		if n > 0 {
			c.total += int64(n)
			if room := c.limit - c.buf.Len(); room > 0 {
				c.buf.Write(b[:min(n, room)])
			}
			if c.total > int64(c.limit) {
				c.once.Do(func() { close(c.over) })
			}
		}
		if err != nil {
			return
		}
	}
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
func killGroup(pgid int) {
	if pgid <= 1 {
		return
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		slog.Warn("scicode runner: kill process group", "pgid", pgid, "err", err)
	}
}

// removeSandboxDir removes a private directory even where the code made a
// subdirectory unreadable.
func removeSandboxDir(dir string) error {
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
	return "signal " + strconv.Itoa(int(s))
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
