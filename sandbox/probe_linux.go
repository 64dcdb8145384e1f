//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The probe: once per Runner, find the interpreter, ask it what the minimal
// root must hold, and try the modes from the strongest down.

func (r *Runner) ensureProbe(ctx context.Context) (*probe, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probed {
		return r.probe, r.probeErr
	}
	p, err := r.runProbe(ctx)
	if err == nil {
		p.counters, err = r.probeCounters(ctx, p)
	}
	if err != nil && ctx.Err() != nil {
		// A probe the caller cut short says nothing about the machine.
		return nil, err
	}
	r.probed, r.probe, r.probeErr = true, p, err
	if err == nil {
		r.opts.Logger.Info("sandbox ready", "python", p.python, "versions", p.versions,
			"mode", p.mode, "proc", p.proc, "drop_user", p.dropUser, "notes", p.notes)
	}
	return p, err
}

// runProbe finds the interpreter, then the strongest isolation that works.
func (r *Runner) runProbe(ctx context.Context) (*probe, error) {
	p := &probe{root: os.Geteuid() == 0, mode: modePlain, proc: "host"}
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
		res, err := r.execute(ctx, p, modePlain, Request{Name: "probe", Script: check, Timeout: probeTimeout})
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
	r.probeCgroups(p)
	if r.opts.Isolation == IsolationNone {
		p.notes = append(p.notes, "namespaces not used (isolation: none)")
		return p, nil
	}
	if layout, err := r.planRoot(ctx, p); err != nil {
		p.notes = append(p.notes, "no minimal root: "+oneLine(err.Error()))
	} else {
		p.layout = layout
	}
	for _, mode := range []string{modeRoot, modeLockdown, modeNamespaces} {
		if mode == modeRoot && p.layout == nil {
			continue
		}
		res, err := r.execute(ctx, p, mode, Request{Name: "probe", Script: r.modeCheck(mode), Timeout: probeTimeout})
		if err == nil && res.Exited() {
			p.mode = mode
			switch {
			case strings.Contains(res.Output, "proc: own"):
				p.proc = "own PID namespace"
			case mode == modeRoot:
				p.proc = "none"
			}
			break
		}
		why := ""
		if err != nil {
			why = err.Error()
		} else {
			why = res.FailureLine()
			if out := strings.TrimSpace(lastLine(res.Output)); out != "" && !strings.Contains(why, out) {
				why += ": " + out
			}
		}
		note := fmt.Sprintf("mode %s unavailable: %s", mode, clipText(oneLine(why), 500))
		p.notes = append(p.notes, note)
		r.opts.Logger.Warn("sandbox: "+note, "python", p.python)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if !namespaces(p.mode) && r.opts.Isolation == IsolationNamespace {
		return nil, fmt.Errorf("sandbox: isolation %q was asked for but namespaces do not work here: %s", IsolationNamespace, strings.Join(p.notes, "; "))
	}
	return p, nil
}

// probeCgroups finds where runs' cgroups can be made, and makes and
// removes one to be sure; where none can, the limits are per process.
func (r *Runner) probeCgroups(p *probe) {
	if r.opts.Cgroups == CgroupsOff {
		p.notes = append(p.notes, "no cgroups (cgroups: off): limits per process")
		return
	}
	host, err := findCgroups()
	try := func() error {
		g, err := host.create(cgroupLimits{memory: r.opts.MemoryBytes, pids: r.opts.MaxProcesses})
		if err != nil {
			return err
		}
		return g.remove()
	}
	if err == nil {
		if err = try(); err != nil && host.cpu {
			// Without the cpu controller the other limits may still hold.
			host.cpu, host.cpuWhy = false, oneLine(err.Error())
			err = try()
		}
	}
	if err == nil && !host.cpu {
		note := "no CPU share per run, every process competes alone: " + host.cpuWhy
		p.notes = append(p.notes, note)
		r.opts.Logger.Warn("sandbox: " + note)
	}
	if err != nil {
		note := "no cgroup for runs, limits per process: " + oneLine(err.Error())
		p.notes = append(p.notes, note)
		r.opts.Logger.Warn("sandbox: " + note)
		return
	}
	p.cgroups = host
}

// countersScript prints what the code can read of the machine's own
// counters, after "visible:".
const countersScript = `import ctypes, os
seen = [p for p in ("/proc/stat", "/proc/loadavg", "/proc/meminfo", "/proc/pressure", "/proc/uptime",
                    "/proc/vmstat", "/proc/sys", "/sys/fs/cgroup") if os.path.exists(p)]
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(512)
if libc.sysinfo(buf) == 0:
    seen.append("sysinfo(2)")
if libc.klogctl(3, buf, len(buf)) >= 0:
    seen.append("syslog(2)")
print("visible:", " ".join(seen))
`

// probeCounters asks a run in the chosen mode what it can read of the
// machine's counters (Info.HostCounters).
func (r *Runner) probeCounters(ctx context.Context, p *probe) (string, error) {
	res, err := r.execute(ctx, p, p.mode, Request{Name: "probe", Script: countersScript, Timeout: probeTimeout})
	if err != nil {
		return "", fmt.Errorf("sandbox: probe the host's counters: %w", err)
	}
	out := strings.TrimSpace(lastLine(res.Output))
	seen, ok := strings.CutPrefix(out, "visible:")
	if !res.Exited() || !ok {
		return "unknown: " + clipText(oneLine(res.FailureLine()), 300), nil
	}
	if seen = strings.TrimSpace(seen); seen != "" {
		return "visible: " + seen, nil
	}
	return "hidden: /proc shows the run's own processes and nothing of the machine, /sys is not there, sysinfo(2) and syslog(2) are refused", nil
}

// planRoot asks the interpreter what it needs and lays out the minimal root.
func (r *Runner) planRoot(ctx context.Context, p *probe) (*rootLayout, error) {
	res, err := r.execute(ctx, p, modePlain, Request{Name: "probe", Script: needsScript(r.opts.Modules), Timeout: probeTimeout})
	if err != nil {
		return nil, err
	}
	if !res.Exited() {
		return nil, fmt.Errorf("what the interpreter needs: %s", res.FailureLine())
	}
	var needs rootNeeds
	if err := json.Unmarshal([]byte(lastLine(res.Output)), &needs); err != nil {
		return nil, fmt.Errorf("what the interpreter needs: %w", err)
	}
	return planRoot(needs, r.opts.Hidden)
}

// modeCheck is the probe script of a mode: in the minimal root and the
// lockdown, the work directory is writable and nothing else; in the minimal
// root, none of the hidden paths (nor the host's tree) is there.
func (r *Runner) modeCheck(mode string) string {
	if mode == modeNamespaces {
		return "print('ok')\n"
	}
	var b strings.Builder
	b.WriteString("import os, sys\n")
	for _, m := range r.opts.Modules {
		fmt.Fprintf(&b, "import %s\n", m)
	}
	b.WriteString("open('probe.txt', 'w').write('ok')\n" +
		"try:\n    open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'escape.txt'), 'w')\n" +
		"except OSError:\n    pass\nelse:\n    raise SystemExit('the private directory is writable')\n")
	if mode == modeRoot {
		hidden, _ := json.Marshal(append([]string{}, r.opts.Hidden...))
		fmt.Fprintf(&b, "for h in %s:\n    if os.path.exists(h):\n        raise SystemExit('%%s is visible' %% h)\n", hidden)
		b.WriteString("try:\n    open('/escape.txt', 'w')\nexcept OSError:\n    pass\nelse:\n    raise SystemExit('the root is writable')\n")
	}
	// The minimal root's /proc must be the run's own; the lockdown's may
	// be (where the kernel let the boot script mount one).
	b.WriteString("pids = [d for d in os.listdir('/proc') if d.isdigit()] if os.path.exists('/proc/self/stat') else None\n" +
		"own = pids is not None and '1' in pids and open('/proc/1/cmdline').read().split('\\0')[0] == sys.executable\n" +
		"if own:\n    print('proc: own')\n")
	if mode == modeRoot {
		b.WriteString("if pids is not None and not own:\n    raise SystemExit('/proc is not the sandbox\\'s own')\n")
	}
	b.WriteString("print('locked')\n")
	return b.String()
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
	cpu := o.cpuSeconds(timeout)
	as, procs, cpuEach := o.perProcess(p.cgroups != nil, cpu)
	nproc := fmt.Sprintf("nproc=%d", procs)
	if p.root && !p.dropUser {
		nproc += " (not binding: runs as root)"
	}
	info := &Info{
		ProcessGroup: true,
		Rlimits: []string{
			fmt.Sprintf("cpu=%ds", cpuEach),
			"as=" + byteSize(as),
			nproc,
			"fsize=" + byteSize(o.MaxFileBytes),
			fmt.Sprintf("nofile=%d", o.MaxOpenFiles),
			"core=0",
			"rtprio=0",
			"nice=0",
		},
		ScrubbedEnv:    true,
		PrivateTmp:     true,
		OutputCapBytes: o.OutputCap,
		Network:        NetworkNotIsolated,
		Filesystem:     "permissions only",
		Proc:           p.proc,
		SetupChannel:   true,
		TimeoutSeconds: timeout.Seconds(),
		LimitMode:      LimitModePerProcess,
		Python:         strings.TrimSpace(p.python + " (" + p.versions + ")"),
		Notes:          p.notes,
	}
	if namespaces(p.mode) {
		info.Network = NetworkNamespace
		info.PIDNamespace = true
	}
	if p.cgroups != nil {
		info.LimitMode = LimitModeCgroupV1
		if p.cgroups.version == 2 {
			info.LimitMode = LimitModeCgroupV2
		}
		info.RunLimits = []string{
			"memory=" + byteSize(o.MemoryBytes) + " (all processes together)",
			fmt.Sprintf("cpu=%ds (all processes together)", cpu),
			fmt.Sprintf("processes=%d (processes and threads together)", o.MaxProcesses),
		}
	} else {
		binding := ""
		if p.root && !p.dropUser {
			binding = "; not binding: runs as root"
		}
		info.RunLimits = []string{
			fmt.Sprintf("memory=%s (%d processes × as=%s)", byteSize(as*int64(procs)), procs, byteSize(as)),
			fmt.Sprintf("cpu=%ds (%d processes × %ds at once)", cpuEach*procs, procs, cpuEach),
			fmt.Sprintf("processes=%d (processes and threads of the identity%s)", procs, binding),
		}
	}
	switch p.mode {
	case modeRoot:
		info.Filesystem = "minimal root: the interpreter and its libraries read-only, the work directory a tmpfs of " +
			byteSize(o.ScratchBytes) + "; nothing else of the host"
		info.HostFilesHidden = true
	case modeLockdown:
		info.Filesystem = "the host's, read-only except the work directory (tmpfs of " + byteSize(o.ScratchBytes) + ")"
	}
	switch {
	case p.dropUser && o.IDs > 1:
		info.User = fmt.Sprintf("a uid and gid of its own for each run, from %d and %d (%d of them; the caller runs as root)", o.UID, o.GID, o.IDs)
		info.UserPerRun = true
	case p.dropUser:
		info.User = fmt.Sprintf("uid %d gid %d, shared by every run (the caller runs as root)", o.UID, o.GID)
	case p.root:
		info.User = "root (KeepUser), shared by every run"
	default:
		info.User = fmt.Sprintf("uid %d, the caller's own, shared by every run", os.Geteuid())
	}
	switch {
	case p.cgroups == nil:
		info.CPUShare = "none: no cgroup for runs, every process competes alone"
	case !p.cgroups.cpu:
		info.CPUShare = "none: every process competes alone (" + p.cgroups.cpuWhy + ")"
	case p.cgroups.version == 2:
		info.CPUShare = "equal per run: cgroup v2 cpu.weight " + cpuWeightV2 + " for each run's processes together"
	default:
		info.CPUShare = "equal per run: cgroup v1 cpu.shares " + cpuSharesV1 + " for each run's processes together"
	}
	info.HostCounters = p.counters
	return info
}
