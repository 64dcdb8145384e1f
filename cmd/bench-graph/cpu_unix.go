//go:build unix

package main

import "syscall"

// processCPU is the process's user and system CPU time so far, in seconds
// (every thread, the garbage collector's included).
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
