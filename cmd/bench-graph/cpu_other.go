//go:build !unix

package main

// processCPU is not measured here; the CPU columns then read "-".
func processCPU() float64 { return 0 }
