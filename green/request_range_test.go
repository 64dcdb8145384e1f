package green

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/scenario"
)

// TestParseRequestRanges: every numeric config key is accepted at both
// ends of its range and rejected just past them, and far past them (1e300
// seconds, 2^62 ms, 1e400), with an error that names the range.
func TestParseRequestRanges(t *testing.T) {
	request := func(key, value string) string {
		cfg := fmt.Sprintf("%q: %s", key, value)
		if key == "shard_index" {
			cfg += fmt.Sprintf(`, "num_shards": %d`, scenario.MaxShards)
		}
		return fmt.Sprintf(`{"participants": {"a": "http://x/"}, "config": {%s}}`, cfg)
	}
	for _, r := range scenario.ConfigRanges() {
		t.Run(r.Key, func(t *testing.T) {
			for _, ok := range []float64{r.Min, r.Max} {
				if _, err := ParseRequest(request(r.Key, scenario.FormatNumber(ok))); err != nil {
					t.Errorf("%s %v rejected: %v", r.Key, ok, firstLine(err.Error()))
				}
			}
			rangeText := fmt.Sprintf("is out of range %s..%s", scenario.FormatNumber(r.Min), scenario.FormatNumber(r.Max))
			for _, bad := range []string{
				"-1",
				scenario.FormatNumber(r.Max + 1),
				"1e300",
				"1e400",                // beyond float64
				"4611686018427387904",  // 2^62
				"-9223372036854775808", // the smallest int64
			} {
				_, err := ParseRequest(request(r.Key, bad))
				var re *scenario.RequestError
				if !errors.As(err, &re) {
					t.Errorf("%s %s: error %v, want a *scenario.RequestError", r.Key, bad, err)
					continue
				}
				if msg := firstLine(err.Error()); !strings.Contains(msg, "config."+r.Key+" ") || !strings.Contains(msg, rangeText) {
					t.Errorf("%s %s: error %q does not name the key and %q", r.Key, bad, msg, rangeText)
				}
			}
		})
	}
	// The example of the issue, word for word.
	_, err := ParseRequest(request("deadline_seconds", "1e300"))
	if want := "config.deadline_seconds 1e+300 is out of range 0..86400"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	// At the bounds, the durations are what was asked for: no overflow.
	req, err := ParseRequest(`{"participants": {"a": "http://x/"}, "config": {"deadline_seconds": 86400, "task_timeout_seconds": 86400, "call_timeout_seconds": 86400, "settle_quiet_ms": 600000, "settle_max_wait_ms": 3600000}}`)
	if err != nil {
		t.Fatal(err)
	}
	c := req.Config
	if c.Deadline().Hours() != 24 || c.TaskTimeout().Hours() != 24 || c.CallTimeout().Hours() != 24 ||
		c.SettleQuiet().Minutes() != 10 || c.SettleMaxWait().Hours() != 1 {
		t.Errorf("durations %v %v %v %v %v", c.Deadline(), c.TaskTimeout(), c.CallTimeout(), c.SettleQuiet(), c.SettleMaxWait())
	}
}
