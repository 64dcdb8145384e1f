package sandbox

import (
	"slices"
	"testing"
)

// TestParseTracebackCutShort: when the last traceback in the output was
// cut off before its exception line (forked processes share the output
// and die while they write), the exception is the one of the last whole
// traceback; a whole last traceback, or output without one, reads as
// before.
func TestParseTracebackCutShort(t *testing.T) {
	whole := "Traceback (most recent call last):\n  File \"hostile.py\", line 3, in <module>\n    os.fork()\nBlockingIOError: [Errno 11] Resource temporarily unavailable\n"
	cut := "Traceback (most recent call last):\n  File \"hostile.py\", line 3, in <module>\n"
	for _, tc := range []struct {
		name, out, exc string
		lines          []int
	}{
		{"cut short after whole ones", whole + whole + cut, "BlockingIOError: [Errno 11] Resource temporarily unavailable", []int{3}},
		{"whole last", cut + whole, "BlockingIOError: [Errno 11] Resource temporarily unavailable", []int{3}},
		{"only cut short", "forked 3\n" + cut, "", []int{3}},
		{"no traceback", "ValueError: printed, not raised\n", "ValueError: printed, not raised", nil},
	} {
		exc, lines := parseTraceback(tc.out, "hostile.py")
		if exc != tc.exc || !slices.Equal(lines, tc.lines) {
			t.Errorf("%s: exception %q lines %v, want %q %v", tc.name, exc, lines, tc.exc, tc.lines)
		}
		if got := ExceptionLimit(exc); tc.exc != "" && tc.name != "no traceback" && got != LimitProcesses {
			t.Errorf("%s: limit %q, want %q", tc.name, got, LimitProcesses)
		}
	}
}
