package scicode

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/scenario"
)

// TestConfigRanges: SciCode's own numeric keys are range-checked before any
// conversion, so that 1e300 seconds cannot overflow into a negative step
// timeout. (No data is needed: only the config is read.)
func TestConfigRanges(t *testing.T) {
	request := func(key, value string) *scenario.Request {
		return &scenario.Request{Participants: map[string]string{"s": "http://x/"},
			Config: scenario.RequestConfig{Scenario: scenario.SciCode, Raw: map[string]json.RawMessage{key: json.RawMessage(value)}}}
	}
	for _, tc := range []struct {
		key, value string
		ok         bool
	}{
		{"step_timeout_seconds", "1800", true},
		{"step_timeout_seconds", "0.001", true},
		{"step_timeout_seconds", "1800.5", false},
		{"step_timeout_seconds", "0", false},
		{"step_timeout_seconds", "-1", false},
		{"step_timeout_seconds", "1e300", false},
		{"step_timeout_seconds", "4611686018427387904", false},
		{"max_num_steps", "1", true},
		{"max_num_steps", "20", true},
		{"max_num_steps", "21", false},
		{"max_num_steps", "0", false},
		{"max_num_steps", "1e300", false},
		{"max_num_steps", "4611686018427387904", false},
	} {
		cfg, err := parseConfig(request(tc.key, tc.value))
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s %s rejected: %v", tc.key, tc.value, err)
		case !tc.ok && err == nil:
			t.Errorf("%s %s accepted: %+v", tc.key, tc.value, cfg)
		case !tc.ok && !strings.Contains(err.Error(), "config."+tc.key):
			t.Errorf("%s %s: error %q does not name the key", tc.key, tc.value, err)
		case tc.ok && cfg.StepTimeout < 0:
			t.Errorf("%s %s: negative step timeout %v", tc.key, tc.value, cfg.StepTimeout)
		}
		if !tc.ok && err != nil && tc.key == "step_timeout_seconds" && !strings.Contains(err.Error(), "at most 1800") {
			t.Errorf("%s %s: error %q does not name the range", tc.key, tc.value, err)
		}
	}
	if cfg, err := parseConfig(request("step_timeout_seconds", "1800")); err != nil || cfg.StepTimeout != 30*time.Minute {
		t.Errorf("1800 s: %v, %v", cfg.StepTimeout, err)
	}
}
