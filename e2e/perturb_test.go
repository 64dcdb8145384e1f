package e2e

import (
	"strings"
	"testing"

	"github.com/coordbench/coordbench/internal/llmconfig"
)

// TestPerturbShort runs a corner of the validity benchmark over real
// loopback HTTP and OTLP: a fan-out and a chain, each with a silent entry
// (insufficient_evidence), a silent leaf reviewer and a clock-skewed one
// (the same label), and every peer of the entry failing (a recorded
// failure). Every expected verdict must hold. `make e2e-perturb` runs the
// whole matrix.
func TestPerturbShort(t *testing.T) {
	t.Setenv(llmconfig.EnvAPIKey, "")
	perts := []string{"silent_entry", "silent_reviewer", "clock_skew_+90s", "failing_all_peers"}
	rep, err := RunPerturb(t.Context(), PerturbOptions{
		Options:       Options{TaskIDs: []string{"iclr2017-305", "iclr2017-304"}},
		Perturbations: perts,
		// None of these perturbations is late_export_5s: the silent
		// ones wait out the maximum whatever it is, so the benchmark's
		// short bound (its agents flush on every response) will do.
		PerturbSettleMaxWait: DefaultSettleMaxWait,
	})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	_ = rep.WriteTable(&table)
	t.Logf("\n%s", table.String())
	if rep.Run != 2*len(perts) {
		t.Errorf("%d cases run, want %d", rep.Run, 2*len(perts))
	}
	want := map[string]string{"silent_entry": "insufficient", "silent_reviewer": "partial"}
	for _, c := range rep.Cells {
		if !c.OK {
			t.Errorf("%s × %s: expected %s, got %s (%s)", c.Scenario, c.Perturbation, c.Expected, c.Got, c.Result.Err)
		}
		if w, ok := want[c.Perturbation]; ok && c.Evidence != w {
			t.Errorf("%s × %s: evidence %q, want %q", c.Scenario, c.Perturbation, c.Evidence, w)
		}
	}
	if rep.Accuracy != 1 {
		t.Errorf("accuracy %v, want 1", rep.Accuracy)
	}
}

// TestPerturbUnknown: an unknown perturbation name is an error, not an
// empty matrix.
func TestPerturbUnknown(t *testing.T) {
	if _, err := RunPerturb(t.Context(), PerturbOptions{Perturbations: []string{"no-such"}}); err == nil ||
		!strings.Contains(err.Error(), "no-such") {
		t.Errorf("err %v, want one naming no-such", err)
	}
}
