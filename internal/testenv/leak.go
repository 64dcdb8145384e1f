package testenv

import (
	"runtime"
	"testing"
	"time"
)

// CheckNoGoroutineLeak fails t when more goroutines run than before, after
// waiting briefly for those still finishing (connection readers seeing EOF).
func CheckNoGoroutineLeak(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		now := runtime.NumGoroutine()
		if now <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines before, %d after:\n%s", before, now, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
