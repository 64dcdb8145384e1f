//go:build linux

package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
)

// TestModesHostCounters: the seccomp filter refuses sysinfo(2) in every
// mode the boot script has, and what the probe's script finds visible is
// what each mode shows: nothing in the minimal root and (where the kernel
// allows a new /proc) in the lockdown, the host's /proc in the others
// (where Info.HostCounters says so).
func TestModesHostCounters(t *testing.T) {
	r, err := New(Options{Modules: []string{"numpy", "scipy"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.ensureProbe(t.Context())
	if err != nil {
		testenv.Missing(t, "%v", err)
	}
	if !namespaces(p.mode) {
		testenv.Missing(t, "no namespaces here: %s", strings.Join(p.notes, "; "))
	}
	modes := []string{modeLockdown, modeNamespaces, modePlain}
	if p.mode == modeRoot {
		modes = append([]string{modeRoot}, modes...)
	}
	// The lockdown's own /proc leaves the interpreter and its modules
	// working, and the probe's check sees it as the run's own.
	if res, err := r.execute(t.Context(), p, modeLockdown, Request{Name: "probe", Script: r.modeCheck(modeLockdown), Timeout: 2 * time.Minute}); err != nil {
		t.Logf("lockdown: %v", err)
	} else if !res.Exited() || (p.proc == "own PID namespace" && !strings.Contains(res.Output, "proc: own")) {
		t.Errorf("lockdown's check: %s %s", res.FailureLine(), res.Output)
	}
	for _, mode := range modes {
		res, err := r.execute(t.Context(), p, mode, Request{Name: "counters", Script: countersScript, Timeout: 2 * time.Minute})
		if err != nil {
			if mode == modeLockdown {
				t.Logf("mode %s: %v", mode, err) // a kernel without mount_setattr
				continue
			}
			t.Fatalf("mode %s: %v", mode, err)
		}
		out := strings.TrimSpace(res.Output)
		t.Logf("mode %s: %s", mode, out)
		if !res.Exited() || strings.Contains(out, "sysinfo") || strings.Contains(out, "syslog") {
			t.Errorf("mode %s: %s %s", mode, res.Reason, out)
		}
		// Where the minimal root got a /proc of its own, the kernel lets
		// the lockdown have one too.
		wantHidden := mode == modeRoot || mode == modeLockdown && p.mode == modeRoot && p.proc == "own PID namespace"
		if hidden := out == "visible:"; hidden != wantHidden && (mode != modeLockdown || wantHidden) {
			t.Errorf("mode %s: %q", mode, out)
		}
	}
}
