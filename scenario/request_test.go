package scenario

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestRequestConfigAccessorsClamp: a RequestConfig built in process, not
// parsed, still yields durations within the ranges: never an overflow into
// a negative duration.
func TestRequestConfigAccessorsClamp(t *testing.T) {
	huge := RequestConfig{
		CallTimeoutSeconds: 1e300, TaskTimeoutSeconds: 1e300, DeadlineSeconds: math.Inf(1),
		SettleQuietMS: 1 << 62, SettleMaxWaitMS: 1 << 62, Repeats: 1 << 62,
	}
	day := time.Duration(MaxTimeoutSeconds) * time.Second
	for name, got := range map[string]time.Duration{
		"call timeout": huge.CallTimeout(), "task timeout": huge.TaskTimeout(), "deadline": huge.Deadline(),
	} {
		if got != day {
			t.Errorf("%s = %v, want %v", name, got, day)
		}
	}
	if got := huge.SettleQuiet(); got != MaxSettleQuietMS*time.Millisecond {
		t.Errorf("settle quiet = %v", got)
	}
	if got := huge.SettleMaxWait(); got != MaxSettleMaxWaitMS*time.Millisecond {
		t.Errorf("settle max wait = %v", got)
	}
	if got := huge.RepeatCount(); got != MaxRepeats {
		t.Errorf("repeats = %d", got)
	}
	nan := RequestConfig{DeadlineSeconds: math.NaN(), TaskTimeoutSeconds: -5}
	if nan.Deadline() != DefaultDeadline || nan.TaskTimeout() != DefaultTaskTimeout {
		t.Errorf("NaN/negative: %v %v, want the defaults", nan.Deadline(), nan.TaskTimeout())
	}
	if err := huge.CheckRanges(); err == nil || !strings.Contains(err.Error(), "config.call_timeout_seconds 1e+300 is out of range 0..86400") {
		t.Errorf("CheckRanges: %v", err)
	}
	if err := (RequestConfig{DeadlineSeconds: math.NaN()}).CheckRanges(); err == nil || !strings.Contains(err.Error(), "NaN is out of range") {
		t.Errorf("NaN: %v", err)
	}
	if err := (RequestConfig{}).CheckRanges(); err != nil {
		t.Errorf("zero config: %v", err)
	}
}
