//go:build linux

package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Run-wide limits (docs/scicode.md "Threat model: the sandbox"). Resource
// limits bind one process each: a run that forks N children may use N times
// the memory and CPU time of one. Where the machine offers a cgroup
// hierarchy we may write to, every run gets a cgroup of its own, and its
// memory, CPU time and process count are limits of the cgroup, that is of
// every process of the run together:
//
//   - cgroup v2: memory.max (memory.swap.max 0), pids.max; CPU time read
//     from cpu.stat (usage_usec), which needs no controller;
//   - cgroup v1: memory.limit_in_bytes (and memsw), pids.max, cpuacct.usage.
//
// Where the cpu controller is there too (v2: enabled below our cgroup; v1:
// mounted), each run's cgroup also gets its own CPU share, the same for
// every run (cpu.weight 100, cpu.shares 1024): the scheduler divides the
// processors among runs before it divides a run's share among its
// processes and threads, so a run of 56 spinning children gets what a run
// of one process gets, and cannot starve the others. Without the cpu
// controller every process competes alone and Info.CPUShare says so.
//
// The child is placed in the cgroup before any code of the run's runs: the
// boot script waits on a gate pipe (gateFD) until the runner has written
// the child's pid into the cgroup, and only then goes on. Memory over the
// limit ends in the kernel's OOM killer inside the cgroup (counted in
// memory.events or memory.oom_control), a fork past pids.max fails (counted
// in pids.events); the runner watches those counters and the CPU time while
// the run goes, and on any of them kills the whole run and reports the
// limit. Where no cgroup can be made, the limits are per process, chosen so
// that their product stays within the run's budget (Options.perProcess).

// cgroupPoll is how often a run's cgroup counters are read.
const cgroupPoll = 100 * time.Millisecond

// cgroupHost is where runs' cgroups are made: a directory per controller
// (v1) or one directory (v2), each our own process's cgroup.
type cgroupHost struct {
	version int
	// v2 is the parent directory with v2; v1 maps "memory", "pids",
	// "cpuacct" and, where it is mounted, "cpu" to theirs.
	v2 string
	v1 map[string]string
	// cpu: runs' cgroups get the cpu controller and an equal share each;
	// cpuWhy says why not.
	cpu    bool
	cpuWhy string
}

// findCgroups finds a hierarchy where runs' cgroups can be made, v2 first.
func findCgroups() (*cgroupHost, error) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/mountinfo: %w", err)
	}
	h, err := planCgroups(string(own), string(mounts), usableV2)
	if err == nil && h.version == 2 {
		h.cpu, h.cpuWhy = enableV2CPU(h.v2)
	}
	return h, err
}

// cgroupMount is a cgroup file system's mount: where it is, which part of
// the hierarchy it shows, and (v1) its controllers.
type cgroupMount struct {
	root, point string
	v2          bool
	controllers []string
}

// parseCgroupMounts reads the cgroup mounts of a mountinfo file.
func parseCgroupMounts(mountinfo string) []cgroupMount {
	var out []cgroupMount
	sc := bufio.NewScanner(strings.NewReader(mountinfo))
	for sc.Scan() {
		// id parent major:minor root point options [optional...] - type source super
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 5 || len(rf) < 3 {
			continue
		}
		m := cgroupMount{root: unescapeMount(lf[3]), point: unescapeMount(lf[4])}
		switch rf[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			m.controllers = strings.Split(rf[2], ",")
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// dirOf is where the cgroup at path (as /proc/self/cgroup names it) is in
// the mount m, or "" when the mount does not show it.
func (m cgroupMount) dirOf(path string) string {
	rel, ok := strings.CutPrefix(path, m.root)
	if m.root == "/" {
		rel, ok = path, true
	}
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return ""
	}
	return filepath.Join(m.point, rel)
}

// planCgroups chooses the hierarchy: v2 where usable says its directory can
// hold runs' cgroups with the memory and pids controllers, else v1 where
// memory, pids and cpuacct each are mounted (with cpu where it is). Whether
// v2's cpu controller can be had is enableV2CPU's to say.
func planCgroups(ownCgroup, mountinfo string, usable func(dir string) error) (*cgroupHost, error) {
	mounts := parseCgroupMounts(mountinfo)
	paths := map[string]string{} // controller ("" for v2) → own path
	sc := bufio.NewScanner(strings.NewReader(ownCgroup))
	for sc.Scan() {
		// hierarchy-id:controllers:path
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			paths[""] = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			paths[c] = f[2]
		}
	}
	var why []string
	if p, ok := paths[""]; ok {
		for _, m := range mounts {
			if !m.v2 {
				continue
			}
			dir := m.dirOf(p)
			if dir == "" {
				continue
			}
			if err := usable(dir); err != nil {
				why = append(why, "cgroup v2: "+err.Error())
				break
			}
			return &cgroupHost{version: 2, v2: dir}, nil
		}
	}
	v1 := map[string]string{}
	for _, c := range []string{"memory", "pids", "cpuacct", "cpu"} {
		p, ok := paths[c]
		if !ok {
			continue
		}
		for _, m := range mounts {
			if !m.v2 && containsString(m.controllers, c) {
				if dir := m.dirOf(p); dir != "" {
					v1[c] = dir
				}
				break
			}
		}
	}
	_, cpu := v1["cpu"]
	if cpu && len(v1) == 4 || !cpu && len(v1) == 3 {
		h := &cgroupHost{version: 1, v1: v1, cpu: cpu}
		if !cpu {
			h.cpuWhy = "cgroup v1: no cpu controller is mounted"
		}
		return h, nil
	}
	delete(v1, "cpu")
	if len(v1) > 0 {
		why = append(why, fmt.Sprintf("cgroup v1: only %d of the memory, pids and cpuacct controllers are mounted", len(v1)))
	}
	if len(why) == 0 {
		why = append(why, "no cgroup hierarchy with the memory and pids controllers")
	}
	return nil, errors.New(strings.Join(why, "; "))
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// usableV2 reports whether runs' cgroups under dir get the memory and pids
// controllers: they must be enabled in dir's subtree_control, which the
// kernel refuses while dir holds processes (unless it is the root).
func usableV2(dir string) error {
	ctrl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	have := strings.Fields(string(ctrl))
	if !containsString(have, "memory") || !containsString(have, "pids") {
		return fmt.Errorf("%s offers the controllers %q, not memory and pids", dir, have)
	}
	sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	enabled := strings.Fields(string(sub))
	if containsString(enabled, "memory") && containsString(enabled, "pids") {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +pids"), 0); err != nil {
		return fmt.Errorf("enable memory and pids below %s: %w", dir, err)
	}
	return nil
}

// enableV2CPU enables the cpu controller for the cgroups below dir, where
// it is offered; why not otherwise.
func enableV2CPU(dir string) (bool, string) {
	ctrl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return false, "cgroup v2: " + err.Error()
	}
	if !containsString(strings.Fields(string(ctrl)), "cpu") {
		return false, fmt.Sprintf("cgroup v2: %s offers no cpu controller", dir)
	}
	if sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); err == nil &&
		containsString(strings.Fields(string(sub)), "cpu") {
		return true, ""
	}
	// The kernel refuses this where a real-time process runs outside the
	// root cgroup, among others.
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu"), 0); err != nil {
		return false, fmt.Sprintf("cgroup v2: enable cpu below %s: %v", dir, err)
	}
	return true, ""
}

// Every run's CPU share: the default weight of a cgroup, written so that
// nothing inherited or configured elsewhere changes it.
const (
	cpuWeightV2 = "100"
	cpuSharesV1 = "1024"
)

// runCgroup is one run's cgroup (v1: one per hierarchy).
type runCgroup struct {
	version int
	dirs    map[string]string // v2: ""; v1: the controller
}

// limits of a run's cgroup.
type cgroupLimits struct {
	memory int64
	pids   int
}

// create makes a cgroup for a run with the limits set.
func (h *cgroupHost) create(lim cgroupLimits) (*runCgroup, error) {
	var buf [8]byte
	_, _ = rand.Read(buf[:])
	name := "coordbench-sandbox-" + hex.EncodeToString(buf[:])
	g := &runCgroup{version: h.version, dirs: map[string]string{}}
	parents := map[string]string{}
	for c, dir := range h.v1 {
		if c != "cpu" || h.cpu {
			parents[c] = dir
		}
	}
	if h.version == 2 {
		parents = map[string]string{"": h.v2}
	}
	made := map[string]bool{} // co-mounted controllers (cpu,cpuacct) share a directory
	for c, parent := range parents {
		dir := filepath.Join(parent, name)
		if !made[dir] {
			if err := os.Mkdir(dir, 0o755); err != nil {
				g.remove()
				return nil, fmt.Errorf("sandbox: make the run's cgroup: %w", err)
			}
			made[dir] = true
		}
		g.dirs[c] = dir
	}
	mem := strconv.FormatInt(lim.memory, 10)
	pids := strconv.Itoa(lim.pids)
	var writes [][2]string
	var optional [][2]string
	if h.version == 2 {
		writes = [][2]string{{g.dirs[""] + "/memory.max", mem}, {g.dirs[""] + "/pids.max", pids}}
		optional = [][2]string{{g.dirs[""] + "/memory.swap.max", "0"}, {g.dirs[""] + "/memory.oom.group", "1"}}
		if h.cpu {
			writes = append(writes, [2]string{g.dirs[""] + "/cpu.weight", cpuWeightV2})
		}
	} else {
		writes = [][2]string{{g.dirs["memory"] + "/memory.limit_in_bytes", mem}, {g.dirs["pids"] + "/pids.max", pids}}
		if h.cpu {
			writes = append(writes, [2]string{g.dirs["cpu"] + "/cpu.shares", cpuSharesV1})
		}
		// memsw (memory and swap together) must not be below the memory
		// limit, so it comes after it; kernels without swap accounting
		// lack it.
		optional = [][2]string{{g.dirs["memory"] + "/memory.memsw.limit_in_bytes", mem}}
	}
	for _, w := range writes {
		if err := os.WriteFile(w[0], []byte(w[1]), 0); err != nil {
			g.remove()
			return nil, fmt.Errorf("sandbox: set the run's cgroup limit %s: %w", filepath.Base(w[0]), err)
		}
	}
	for _, w := range optional {
		_ = os.WriteFile(w[0], []byte(w[1]), 0)
	}
	return g, nil
}

// add moves a process into the cgroup.
func (g *runCgroup) add(pid int) error {
	for _, dir := range g.dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("sandbox: put the run into its cgroup: %w", err)
		}
	}
	return nil
}

// cgroupStats are a run's cgroup counters.
type cgroupStats struct {
	cpuNS     int64
	peakBytes int64
	oomKills  int64
	pidsMax   int64
}

func (g *runCgroup) stats() cgroupStats {
	var s cgroupStats
	if g.version == 2 {
		d := g.dirs[""]
		s.cpuNS = 1000 * keyedValue(d+"/cpu.stat", "usage_usec")
		s.peakBytes = fileInt(d + "/memory.peak")
		s.oomKills = keyedValue(d+"/memory.events", "oom_kill")
		s.pidsMax = keyedValue(d+"/pids.events", "max")
		return s
	}
	s.cpuNS = fileInt(g.dirs["cpuacct"] + "/cpuacct.usage")
	s.peakBytes = fileInt(g.dirs["memory"] + "/memory.max_usage_in_bytes")
	s.oomKills = keyedValue(g.dirs["memory"]+"/memory.oom_control", "oom_kill")
	s.pidsMax = keyedValue(g.dirs["pids"]+"/pids.events", "max")
	return s
}

// over names the run-wide limit the counters show was passed ("" for
// none): an OOM kill in the cgroup, a fork refused at pids.max, or more CPU
// time than cpuBudgetNS.
func (s cgroupStats) over(cpuBudgetNS int64) string {
	switch {
	case s.oomKills > 0:
		return LimitMemory
	case s.pidsMax > 0:
		return LimitProcesses
	case s.cpuNS > cpuBudgetNS:
		return LimitCPU
	}
	return ""
}

// kill ends every process of the cgroup, those that left the process group
// too.
func (g *runCgroup) kill() {
	if g.version == 2 {
		if os.WriteFile(g.dirs[""]+"/cgroup.kill", []byte("1"), 0) == nil {
			return
		}
	}
	for _, dir := range g.dirs {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// remove kills what is left and removes the cgroup, waiting a little for
// killed processes to leave it.
func (g *runCgroup) remove() error {
	var last error
	deadline := time.Now().Add(5 * time.Second)
	for c, dir := range g.dirs {
		for {
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				delete(g.dirs, c)
				break
			}
			if time.Now().After(deadline) {
				last = fmt.Errorf("sandbox: remove the run's cgroup %s: %w", dir, err)
				break
			}
			g.kill()
			time.Sleep(20 * time.Millisecond)
		}
	}
	return last
}

// fileInt reads a file holding one integer (0 when it cannot).
func fileInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// keyedValue reads "key value" lines and returns key's value (0 when
// absent).
func keyedValue(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
