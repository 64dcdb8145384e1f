//go:build linux

package scicode

import (
	"os"
	"syscall"
)

// judgeProcAttr keeps the judge in a process group of its own, killed
// should the green agent die.
func judgeProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the judge process and every process of its group (the
// forks that serve its requests).
func killGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = p.Kill()
}
