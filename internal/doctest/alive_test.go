//go:build unix

package doctest

import "syscall"

// alive reports whether the process group pgid has a member.
func alive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
