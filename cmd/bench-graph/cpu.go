package main

import "github.com/coordbench/coordbench/internal/cputime"

// processCPU is the process's user and system CPU time so far, in seconds
// (every thread, the garbage collector's included); 0 where it cannot be
// read, and the CPU columns then read "-".
func processCPU() float64 { return cputime.Total().Seconds() }
