//go:build linux

package scicode

import "syscall"

// judgeProcAttr keeps the judge in a process group of its own, killed
// should the green agent die.
func judgeProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
