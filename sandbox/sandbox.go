package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Defaults of Options. The timeout is generous for scientific code; the
// CPU limit follows the timeout.
const (
	DefaultTimeout      = 300 * time.Second
	DefaultMemoryBytes  = 4 << 30
	DefaultMaxProcesses = 64
	DefaultMaxFileBytes = 64 << 20
	DefaultMaxOpenFiles = 256
	DefaultOutputCap    = 256 << 10
	DefaultScratchBytes = 256 << 20
	DefaultRecordCap    = 64 << 20
)

// ErrNoPython is wrapped by the error of a probe that found no interpreter
// importing Options.Modules.
var ErrNoPython = errors.New("sandbox: no suitable Python")

// EnvPython names the interpreter the runner uses when Options.Python is
// empty.
const EnvPython = "COORDBENCH_SCICODE_PYTHON"

// Isolation modes of Options.Isolation.
const (
	// IsolationAuto uses namespaces where the probe finds them working.
	IsolationAuto = "auto"
	// IsolationNamespace requires them: without, every run fails.
	IsolationNamespace = "namespace"
	// IsolationNone runs without namespaces.
	IsolationNone = "none"
)

// Values of Options.Cgroups.
const (
	CgroupsAuto = "auto"
	CgroupsOff  = "off"
)

// MinProcessMemory is the least memory budget each process keeps when the
// limits are per process: an interpreter that has imported numpy, scipy,
// h5py and sympy maps about 320 MB.
const MinProcessMemory = 1 << 30

// Network values of Info.
const (
	NetworkNamespace   = "namespace"
	NetworkNotIsolated = "not isolated"
)

// Reasons of Result.Reason: how the code's process ended.
const (
	// ReasonExited: the code exited with status 0 within every limit.
	ReasonExited = "exited"
	// ReasonCrashed: a non-zero exit status, an uncaught exception or a
	// signal that is not a limit's.
	ReasonCrashed = "crashed"
	// ReasonTimeout: the wall-clock limit; the process group was killed.
	ReasonTimeout = "timeout"
	// ReasonLimit: a resource limit; Result.Limit names it.
	ReasonLimit = "limit"
)

// Limits of Result.Limit.
const (
	LimitCPU       = "cpu"
	LimitMemory    = "memory"
	LimitProcesses = "processes"
	LimitFileSize  = "file_size"
	LimitOpenFiles = "open_files"
	LimitOutput    = "output"
	LimitScratch   = "scratch"
	LimitRecords   = "records"
)

// RecordFD is the file descriptor of the record channel in the code's
// process: the write end of a pipe the runner reads (Result.Records). Only
// the code holds it; the runner never reads anything else from the code as
// data.
const RecordFD = 3

const (
	// setupFD is the boot script's setup channel (see
	// py/coordbench_sandbox.py); it is closed when the code starts.
	setupFD = 4
	// gateFD is the read end of the gate the boot script waits on until
	// the run is in its cgroup; closed before anything else happens.
	gateFD = 5
	// probeTimeout bounds each probe run; drainTimeout bounds the wait for
	// the output pipe to close once the group is dead.
	probeTimeout = 60 * time.Second
	drainTimeout = 2 * time.Second
)

// Options configure a Runner. The zero value uses every default.
type Options struct {
	// Python is the interpreter; empty means $COORDBENCH_SCICODE_PYTHON,
	// else the first of Candidates that imports Modules.
	Python string
	// Candidates default to /usr/bin/python3, then python3 on PATH.
	Candidates []string
	// Modules are the modules the interpreter must import (the probe
	// reports their versions); none by default.
	Modules []string
	// Lib is a file tree put on the code's PYTHONPATH, read-only to it.
	Lib fs.FS
	// Hidden are paths the code must not see. The minimal root binds
	// nothing that holds one of them or lies inside one; a machine where
	// that cannot be done falls back to a weaker mode, and Info says so.
	Hidden []string
	// Timeout bounds one run (default 300 s); Request.Timeout overrides it.
	Timeout time.Duration
	// CPUSeconds is RLIMIT_CPU (default: the timeout, rounded up).
	CPUSeconds int
	// MemoryBytes is the run's memory budget (default 4 GiB): with a
	// cgroup, the memory of all the run's processes together, and the
	// address space (RLIMIT_AS) of each; without, the budget divided among
	// the processes the run may have (see Cgroups).
	MemoryBytes int64
	// MaxProcesses bounds the run's processes and threads together
	// (default 64): the cgroup's pids.max, and RLIMIT_NPROC, which binds
	// only a non-root identity (see UID). Without a cgroup it is cut so
	// that each process keeps at least MinProcessMemory of the budget.
	MaxProcesses int
	// Cgroups is CgroupsAuto (default: a cgroup per run where the machine
	// lets us make one) or CgroupsOff (per-process limits only).
	Cgroups string
	// MaxFileBytes is RLIMIT_FSIZE (default 64 MiB).
	MaxFileBytes int64
	// MaxOpenFiles is RLIMIT_NOFILE (default 256).
	MaxOpenFiles int
	// OutputCap bounds stdout and stderr together (default 256 KiB).
	OutputCap int
	// RecordCap bounds the record channel (default 64 MiB); past it the
	// group is killed and the run fails with limit "records".
	RecordCap int64
	// ScratchBytes is the size of the work directory's tmpfs when the file
	// system is locked down (default 256 MiB).
	ScratchBytes int64
	// Isolation is IsolationAuto (default), IsolationNamespace or
	// IsolationNone.
	Isolation string
	// UID and GID are the first of IDs identities (uid UID+i, gid GID+i)
	// that code runs as when the caller runs as root: each running run has
	// one no other running run has (defaults DefaultUID for both and
	// DefaultIDs; IDs 1 makes every run share UID and GID). KeepUser runs
	// the code as root instead, which leaves RLIMIT_NPROC without effect.
	UID, GID uint32
	IDs      int
	KeepUser bool
	// TempDir is where private directories are made (default os.TempDir()).
	TempDir string
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MemoryBytes <= 0 {
		o.MemoryBytes = DefaultMemoryBytes
	}
	if o.MaxProcesses <= 0 {
		o.MaxProcesses = DefaultMaxProcesses
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxOpenFiles <= 0 {
		o.MaxOpenFiles = DefaultMaxOpenFiles
	}
	if o.OutputCap <= 0 {
		o.OutputCap = DefaultOutputCap
	}
	if o.RecordCap <= 0 {
		o.RecordCap = DefaultRecordCap
	}
	if o.ScratchBytes <= 0 {
		o.ScratchBytes = DefaultScratchBytes
	}
	if o.Isolation == "" {
		o.Isolation = IsolationAuto
	}
	if o.Cgroups == "" {
		o.Cgroups = CgroupsAuto
	}
	if o.UID == 0 {
		o.UID = DefaultUID
	}
	if o.GID == 0 {
		o.GID = o.UID
	}
	if o.IDs <= 0 {
		o.IDs = DefaultIDs
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o Options) validate() error {
	switch o.Isolation {
	case IsolationAuto, IsolationNamespace, IsolationNone:
	default:
		return fmt.Errorf("sandbox: isolation %q: want %q, %q or %q", o.Isolation, IsolationAuto, IsolationNamespace, IsolationNone)
	}
	if o.Cgroups != CgroupsAuto && o.Cgroups != CgroupsOff {
		return fmt.Errorf("sandbox: cgroups %q: want %q or %q", o.Cgroups, CgroupsAuto, CgroupsOff)
	}
	if err := validIDs("uid", o.UID, o.IDs); err != nil {
		return err
	}
	return validIDs("gid", o.GID, o.IDs)
}

// perProcess are the resource limits of each process of a run whose CPU
// budget is cpu seconds. With a cgroup (run-wide) the cgroup bounds the
// run's processes together, and each process may use the whole budget.
// Without, the process count is cut so that each keeps MinProcessMemory,
// and memory and CPU time are divided among the processes, so that the
// processes the run can have at once stay within its budget together (CPU
// time rounded up to whole seconds).
func (o Options) perProcess(runWide bool, cpu int) (as int64, nproc, cpuEach int) {
	if runWide {
		// One more for RLIMIT_NPROC than the cgroup's pids.max, so that
		// the cgroup, which stops the run, binds first.
		return o.MemoryBytes, o.MaxProcesses + 1, cpu
	}
	nproc = int(min(int64(o.MaxProcesses), max(1, o.MemoryBytes/MinProcessMemory)))
	return o.MemoryBytes / int64(nproc), nproc, max(1, (cpu+nproc-1)/nproc)
}

// cpuSeconds is the CPU limit of a run with the given timeout.
func (o Options) cpuSeconds(timeout time.Duration) int {
	if o.CPUSeconds > 0 {
		return o.CPUSeconds
	}
	return max(1, int((timeout+time.Second-1)/time.Second))
}

// Limit modes of Info.LimitMode. They are here, not beside the cgroups
// that make them, so that code built for any system can compare against
// them (a test that skips where no cgroup bounds the runs).
const (
	LimitModeCgroupV2   = "cgroup v2"
	LimitModeCgroupV1   = "cgroup v1"
	LimitModePerProcess = "per-process"
)

// Info says which protections are in force for a run.
type Info struct {
	ProcessGroup   bool     `json:"process_group"`
	Rlimits        []string `json:"rlimits"`
	ScrubbedEnv    bool     `json:"scrubbed_env"`
	PrivateTmp     bool     `json:"private_tmp"`
	OutputCapBytes int      `json:"output_cap_bytes"`
	// Network is "namespace" (no interface the code could use) or "not
	// isolated".
	Network string `json:"network"`
	// Filesystem says what the code's file system is: a minimal root, the
	// host's read-only, or the host's under file permissions only.
	Filesystem string `json:"filesystem"`
	// HostFilesHidden: the code sees nothing of the host's files but the
	// interpreter and its libraries (the minimal root), and Options.Hidden
	// least of all.
	HostFilesHidden bool `json:"host_files_hidden"`
	// Proc is what /proc shows: "own PID namespace", "none" or "host".
	Proc string `json:"proc"`
	// SetupChannel: setup failures come on a pipe closed when the code
	// starts, so the code cannot pass its failure off as the runner's.
	SetupChannel bool `json:"setup_channel"`
	PIDNamespace bool `json:"pid_namespace"`
	// User is who the code runs as; UserPerRun says whether each running
	// run has a uid of its own (so that no run can signal, trace or read
	// /proc of another, nor use up a per-user kernel limit of another).
	User       string `json:"user"`
	UserPerRun bool   `json:"user_per_run"`
	// CPUShare says how runs share the processors: "equal per run (…)"
	// where each run's cgroup has the cpu controller and the same weight,
	// so that the processes of one run together get what one process of
	// another does; "none: …" where every process competes alone.
	CPUShare string `json:"cpu_share"`
	// HostCounters says whether the code can read the machine's own
	// counters (load, CPU and memory use, pressure): "hidden: …", or
	// "visible: " and what is.
	HostCounters string `json:"host_counters"`
	// LimitMode says how the run as a whole is bounded: "cgroup v2" or
	// "cgroup v1" (a cgroup per run bounds the memory, CPU time and
	// process count of all its processes together) or "per-process"
	// (resource limits per process, chosen so that the processes the run
	// can have at once stay within its budget together). RunLimits are the
	// run's budgets and how they are enforced.
	LimitMode string   `json:"limit_mode"`
	RunLimits []string `json:"run_limits"`
	// TimeoutSeconds is the wall-clock limit of one run.
	TimeoutSeconds float64  `json:"timeout_seconds"`
	Python         string   `json:"python,omitempty"`
	Notes          []string `json:"notes,omitempty"`
}

// Section is a range of script lines (1-based, inclusive) and what they
// are, so that a failure can say where it happened.
type Section struct {
	Name string `json:"name"`
	From int    `json:"from"`
	To   int    `json:"to"`
}

// Request is one script to run.
type Request struct {
	// Name names the script file (Name.py, characters other than letters,
	// digits, '.', '_' and '-' replaced), so tracebacks name it.
	Name   string
	Script string
	// Sections map the script's lines to their origin.
	Sections []Section
	// Timeout overrides Options.Timeout.
	Timeout time.Duration
}

// Result is what one script did.
type Result struct {
	// Reason is ReasonExited, ReasonCrashed, ReasonTimeout or ReasonLimit;
	// Limit names the limit hit.
	Reason string `json:"reason"`
	Limit  string `json:"limit,omitempty"`
	// Detail is one line: the exception (with the section it was raised
	// in) or what the runner saw.
	Detail string `json:"detail,omitempty"`
	// Exception is the last traceback's exception line, Section the
	// section of the script's outermost frame in it.
	Exception string `json:"exception,omitempty"`
	Section   string `json:"section,omitempty"`
	ExitCode  int    `json:"exit_code"`
	Signal    string `json:"signal,omitempty"`
	// Output is stdout and stderr as captured (at most OutputCap bytes),
	// with the private directory's path removed; OutputBytes counts all.
	Output          string  `json:"-"`
	OutputBytes     int64   `json:"output_bytes"`
	OutputTruncated bool    `json:"output_truncated,omitempty"`
	DurationMS      float64 `json:"duration_ms"`
	CPUMS           float64 `json:"cpu_ms"`
	MaxRSSKB        int64   `json:"max_rss_kb,omitempty"`
	// PeakMemoryBytes is the most memory the run's processes held at
	// once, from its cgroup (0 without one). With a cgroup, CPUMS is the
	// CPU time of all the run's processes.
	PeakMemoryBytes int64 `json:"peak_memory_bytes,omitempty"`
	// Records is what the code wrote on the record channel (RecordFD), at
	// most Options.RecordCap bytes; RecordBytes counts all.
	Records     []byte `json:"-"`
	RecordBytes int64  `json:"record_bytes"`
	// Sandbox is what was in force.
	Sandbox *Info `json:"-"`
	// ProcessGroup and Dir are the run's process group and private
	// directory, both gone when Run returns; tests use them to check that
	// nothing was left behind.
	ProcessGroup int    `json:"-"`
	Dir          string `json:"-"`
}

// Exited reports whether the code exited with status 0 within every limit.
func (r *Result) Exited() bool { return r.Reason == ReasonExited }

// FailureLine is the result in one line, for logs and notes.
func (r *Result) FailureLine() string {
	if r.Detail != "" {
		return r.Reason + ": " + r.Detail
	}
	if t := strings.TrimSpace(lastLine(r.Output)); t != "" {
		return r.Reason + ": " + t
	}
	return r.Reason
}

// scriptFileChars are the characters a script's file name may not hold.
var scriptFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// ScriptFile is the file name a request's script gets ("10.1" → "10.1.py").
func ScriptFile(name string) string {
	n := scriptFileChars.ReplaceAllString(name, "_")
	if n == "" || strings.HasPrefix(n, ".") {
		n = "script" + n
	}
	return n + ".py"
}

// env is the whole environment of the child.
func env(lib, work string) []string {
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

// classify turns the end of a run into a reason, from what the runner saw
// (its own kills, the wait status, the CPU time) and the traceback.
func (o Options) classify(res *Result, killedFor string, timeout time.Duration, req Request) {
	exc, frames := parseTraceback(res.Output, ScriptFile(req.Name))
	res.Exception = exc
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
	cpu := o.cpuSeconds(timeout)
	switch {
	case killedFor == LimitMemory:
		res.Reason, res.Limit = ReasonLimit, LimitMemory
		res.Detail = fmt.Sprintf("the run's processes together needed more than %s of memory; the run was killed", byteSize(o.MemoryBytes))
	case killedFor == LimitCPU:
		res.Reason, res.Limit = ReasonLimit, LimitCPU
		res.Detail = fmt.Sprintf("the run's processes together used more than %d s of CPU time; the run was killed", cpu)
	case killedFor == LimitProcesses:
		res.Reason, res.Limit = ReasonLimit, LimitProcesses
		res.Detail = fmt.Sprintf("the run tried to have more than %d processes and threads at once; the run was killed", o.MaxProcesses)
	case killedFor == LimitOutput:
		res.Reason, res.Limit = ReasonLimit, LimitOutput
		res.Detail = fmt.Sprintf("more than %d bytes of output; the process group was killed", o.OutputCap)
	case killedFor == LimitRecords:
		res.Reason, res.Limit = ReasonLimit, LimitRecords
		res.Detail = fmt.Sprintf("more than %d bytes of records; the process group was killed", o.RecordCap)
	case killedFor == ReasonTimeout:
		res.Reason = ReasonTimeout
		res.Detail = fmt.Sprintf("no result within %s; the process group was killed", timeout)
	case res.ExitCode == 0 && res.Signal == "":
		res.Reason, res.Detail, res.Section = ReasonExited, "", ""
	case res.Signal == "SIGXCPU" || (res.Signal == "SIGKILL" && res.CPUMS >= 1000*float64(cpu)-500):
		limit(LimitCPU, fmt.Sprintf("more than %d s of CPU time (killed by %s)", cpu, res.Signal))
	case res.Signal == "SIGXFSZ":
		limit(LimitFileSize, "a file larger than "+byteSize(o.MaxFileBytes))
	case res.Signal != "":
		res.Reason = ReasonCrashed
		if res.Detail == "" {
			res.Detail = "killed by " + res.Signal
		}
	case ExceptionLimit(exc) != "":
		limit(ExceptionLimit(exc), "")
	default:
		res.Reason = ReasonCrashed
		if res.Detail == "" {
			res.Detail = fmt.Sprintf("exit status %d", res.ExitCode)
		}
	}
	if res.Section != "" && res.Detail != "" && res.Reason != ReasonExited && res.Reason != ReasonTimeout && killedFor == "" {
		res.Detail += " (in " + res.Section + ")"
	}
}

// ExceptionLimit names the limit a Python exception line says the code hit
// ("" for none): MemoryError under the address-space limit, EAGAIN from fork
// under the process limit, and so on.
func ExceptionLimit(exc string) string {
	switch {
	case strings.Contains(exc, "MemoryError") || strings.Contains(exc, "Cannot allocate memory"):
		return LimitMemory
	case strings.Contains(exc, "Resource temporarily unavailable") && (strings.Contains(exc, "BlockingIOError") || strings.Contains(exc, "fork")),
		strings.Contains(exc, "can't start new thread"):
		return LimitProcesses
	case strings.Contains(exc, "File too large"):
		return LimitFileSize
	case strings.Contains(exc, "No space left on device"):
		return LimitScratch
	case strings.Contains(exc, "Too many open files"):
		return LimitOpenFiles
	}
	return ""
}

// cappedOutput keeps the first limit bytes of a stream, counts the rest,
// and closes over once the stream passes limit.
type cappedOutput struct {
	limit int64
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
			if room := c.limit - int64(c.buf.Len()); room > 0 {
				c.buf.Write(b[:min(int64(n), room)])
			}
			if c.total > c.limit {
				c.once.Do(func() { close(c.over) })
			}
		}
		if err != nil {
			return
		}
	}
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

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clipText keeps the first n runes of s, marking a cut.
func clipText(s string, n int) string {
	count := 0
	for i := range s {
		if count == n {
			return s[:i] + "…[truncated]"
		}
		count++
	}
	return s
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
