package textutil

import "testing"

func TestPluralAndNumber(t *testing.T) {
	for n, want := range map[int]string{0: "0 calls", 1: "1 call", 3: "3 calls"} {
		if got := Plural(n, "call", "calls"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
	for x, want := range map[float64]string{50: "50", 0.72: "0.72", 5.0 / 6 * 100: "83.33", 1.234: "1.23", -0.005: "-0.01"} {
		if got := Number(x); got != want {
			t.Errorf("Number(%v) = %q, want %q", x, got, want)
		}
	}
}
