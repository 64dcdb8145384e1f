// Package cputime reads this process's CPU time, for the benchmarks that
// report spans or calls per CPU-second: user and system time of every
// thread, the garbage collector's and the runtime's included, which a
// wall clock on a shared machine does not give.
package cputime

import "time"

// Self returns the user and system CPU time this process has used so far.
// ok is false where it cannot be read (a system without getrusage).
func Self() (user, system time.Duration, ok bool) { return self() }

// Total returns Self's user + system time, 0 where it cannot be read.
func Total() time.Duration {
	u, s, _ := self()
	return u + s
}
