package cputime

import (
	"runtime"
	"testing"
)

// Work done on this goroutine shows in the process's CPU time: the
// figure is read, it grows, and user + system add up to Total.
func TestSelfGrowsWithWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no getrusage here")
	}
	u0, s0, ok := Self()
	if !ok {
		t.Fatal("Self: not read on a Unix system")
	}
	x := uint64(1)
	for u, s, _ := Self(); u+s <= u0+s0; u, s, _ = Self() {
		for range 1_000_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if x == 0 {
		t.Log(x) // keeps the loop's work
	}
	if total := Total(); total <= u0+s0 {
		t.Errorf("Total %v after work, want more than %v", total, u0+s0)
	}
}
