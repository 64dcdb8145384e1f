package loopback

import (
	"runtime"
	"testing"
	"time"
)

// checkNoGoroutineLeak waits briefly for goroutines that are still
// finishing (connection readers seeing EOF) before calling it a leak.
func checkNoGoroutineLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		now := runtime.NumGoroutine()
		if now <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines before the demo, %d after:\n%s", before, now, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
