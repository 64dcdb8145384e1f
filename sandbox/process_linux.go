//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
)

// procAttr starts the child in its own process group, killed should the
// caller die, as the sandboxed identity and, in the namespace modes, in new
// namespaces in which it is root (the boot script needs that to build the
// minimal root; it gives the identity up before the script runs).
func (r *Runner) procAttr(p *probe, mode string) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	uid, gid := os.Geteuid(), os.Getegid()
	if p.dropUser {
		uid, gid = int(r.opts.UID), int(r.opts.GID)
	}
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
