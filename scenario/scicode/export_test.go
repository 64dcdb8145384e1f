package scicode

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// JudgeSlotsHeld is how many of the judge's slots are taken now.
func (s *Scenario) JudgeSlotsHeld() int { return len(s.judge.slots) }

// JudgeProcs lists the judge processes this test process started (by
// their command line) and the processes those started in turn (the forks
// that serve requests), from /proc.
func JudgeProcs() (judges, forks []int, err error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, err
	}
	parents := map[int]int{}
	isJudge := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fields := statFields(pid)
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		parents[pid] = ppid
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		isJudge[pid] = bytes.Contains(cmd, []byte("coordbench_judge.py"))
	}
	for pid, ppid := range parents {
		switch {
		case ppid == os.Getpid() && isJudge[pid]:
			judges = append(judges, pid)
		case isJudge[ppid] && parents[ppid] == os.Getpid():
			forks = append(forks, pid)
		}
	}
	return judges, forks, nil
}

// statFields are the fields of /proc/pid/stat after the command name
// (state, ppid, …), or nil.
func statFields(pid int) []string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	// pid (comm) state ppid ...: comm may hold spaces.
	return strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
}

// CPUTicks is a process's user and system time in clock ticks, or -1.
func CPUTicks(pid int) int {
	fields := statFields(pid)
	if len(fields) < 13 {
		return -1
	}
	u, _ := strconv.Atoi(fields[11])
	s, _ := strconv.Atoi(fields[12])
	return u + s
}

// ResidentKiB is a process's resident memory (VmRSS), or -1.
func ResidentKiB(pid int) int64 { return StatusKiB(pid, "VmRSS") }

// StatusKiB is a memory field of /proc/pid/status (VmRSS, VmPeak), or -1.
func StatusKiB(pid int, field string) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return -1
}

// ParentPID is a process's parent, or -1.
func ParentPID(pid int) int {
	fields := statFields(pid)
	if len(fields) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return -1
	}
	return ppid
}
