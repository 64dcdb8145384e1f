package textutil

import (
	"strings"
	"testing"
)

func TestClipMiddle(t *testing.T) {
	long := "call participant http://127.0.0.1:9732/: " + strings.Repeat("x", 500) + ": dial tcp 127.0.0.1:9732: connect: connection refused"
	got := ClipMiddle(long, 120)
	if !strings.HasPrefix(got, "call participant http://127.0.0.1:9732/:") || !strings.HasSuffix(got, "connect: connection refused") ||
		!strings.Contains(got, TruncationMarker) {
		t.Errorf("ClipMiddle kept %q", got)
	}
	if n := len([]rune(got)); n != 120+len([]rune(TruncationMarker)) {
		t.Errorf("%d runes, want 120 and the marker", n)
	}
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"short", 0, ""},
		{"ααααββββββ", 6, "αα" + TruncationMarker + "ββββ"},
	} {
		if got := ClipMiddle(tc.s, tc.n); got != tc.want {
			t.Errorf("ClipMiddle(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
