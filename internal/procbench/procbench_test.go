package procbench

import (
	"math"
	"os"
	"runtime"
	"testing"
)

func TestReadUsage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux's /proc")
	}
	u, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.PeakRSS <= 0 || u.CPU < 0 {
		t.Errorf("usage %+v", u)
	}
	if _, err := ReadUsage(-1); err == nil {
		t.Error("the usage of no process was read")
	}
}

func TestMedianAndThousands(t *testing.T) {
	v := []float64{5, 1, 3, 2}
	if m := Median(v); m != 2.5 {
		t.Errorf("median %v, want 2.5", m)
	}
	if v[0] != 5 {
		t.Error("Median sorted its argument")
	}
	if m := Median([]float64{7, 1, 4}); m != 4 {
		t.Errorf("median %v, want 4", m)
	}
	for x, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234", -123: "-123", math.Inf(1): "-"} {
		if got := Thousands(x); got != want {
			t.Errorf("Thousands(%v) = %q, want %q", x, got, want)
		}
	}
}
