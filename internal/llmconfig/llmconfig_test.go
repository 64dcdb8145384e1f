package llmconfig

import (
	"strings"
	"testing"
	"time"
)

// FromEnv reads the three variables through the getenv it is given, trimmed;
// the process environment is not read, and a nil getenv reads nothing.
func TestFromEnv(t *testing.T) {
	t.Setenv(EnvAPIKey, "process-key")
	env := map[string]string{EnvAPIKey: " env-key ", EnvBaseURL: "http://llm.test/v1/", EnvModel: "env-model\n"}
	cfg := FromEnv(func(k string) string { return env[k] })
	if cfg != (Config{APIKey: "env-key", BaseURL: "http://llm.test/v1/", Model: "env-model"}) {
		t.Errorf("FromEnv = %+v", cfg)
	}
	if !cfg.Enabled() {
		t.Error("a key set, but not enabled")
	}
	if c := FromEnv(nil); c != (Config{}) || c.Enabled() {
		t.Errorf("FromEnv(nil) = %+v, want the zero config", c)
	}
	if c := FromEnv(func(string) string { return "  " }); c != (Config{}) {
		t.Errorf("blank variables = %+v, want the zero config", c)
	}
}

func TestDefaults(t *testing.T) {
	def := Config{}.WithDefaults()
	if def.BaseURL != "https://api.openai.com/v1/" || def.Model != "gpt-4o-mini" || def.Timeout != 60*time.Second {
		t.Errorf("defaults = %+v", def)
	}
	own := Config{BaseURL: "http://x/", Model: "m", Timeout: time.Second}
	if got := own.WithDefaults(); got != own {
		t.Errorf("set fields changed: %+v", got)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{{}, {APIKey: "k", BaseURL: "http://localhost:8000/v1", Model: "m", Timeout: time.Second}, {BaseURL: DefaultBaseURL}} {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
	for want, c := range map[string]Config{
		`invalid AGENTBEATS_LLM_BASE_URL "localhost:8080/v1"`: {BaseURL: "localhost:8080/v1"},
		`invalid AGENTBEATS_LLM_BASE_URL "ftp://host/"`:       {BaseURL: "ftp://host/"},
		`invalid AGENTBEATS_LLM_BASE_URL "http://"`:           {BaseURL: "http://"},
		`invalid AGENTBEATS_LLM_BASE_URL "://x"`:              {BaseURL: "://x"},
		"negative timeout":                                    {Timeout: -time.Second},
	} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(%+v) = %v, want %q", c, err, want)
		}
	}
}
