// Package llmconfig is the one configuration of an OpenAI-compatible
// chat-completions endpoint, and its one reader of the environment
// (AGENTBEATS_LLM_API_KEY, AGENTBEATS_LLM_BASE_URL, AGENTBEATS_LLM_MODEL).
// The green agent's LLM judge (evals/judge) and the base purple agent's LLM
// mode both take a Config, so one key configures both. It is a leaf: it
// names the endpoint and does not call it.
package llmconfig

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The environment variables FromEnv reads.
const (
	EnvAPIKey  = "AGENTBEATS_LLM_API_KEY"
	EnvBaseURL = "AGENTBEATS_LLM_BASE_URL"
	EnvModel   = "AGENTBEATS_LLM_MODEL"
)

// Defaults for the zero fields of a Config.
const (
	DefaultBaseURL = "https://api.openai.com/v1/"
	DefaultModel   = "gpt-4o-mini"
	DefaultTimeout = 60 * time.Second
)

// Config says which endpoint to ask. The zero value has no API key: no LLM
// (the judge answers by rule, a purple role by its rule).
type Config struct {
	// APIKey is sent as a bearer token; empty means no LLM.
	APIKey string
	// BaseURL of the chat-completions API; default DefaultBaseURL.
	BaseURL string
	// Model to ask; default DefaultModel.
	Model string
	// Timeout bounds one call; default DefaultTimeout.
	Timeout time.Duration
	// HTTPClient carries the calls; nil means http.DefaultClient. Whoever
	// passes one decides whether it is traced: a traceparent has no
	// business going to an LLM provider, so neither user traces it.
	HTTPClient *http.Client
}

// FromEnv reads AGENTBEATS_LLM_API_KEY, AGENTBEATS_LLM_BASE_URL and
// AGENTBEATS_LLM_MODEL through getenv (os.Getenv, or a test's map); unset
// or blank variables leave the field zero so the defaults apply. A nil
// getenv reads nothing: the zero configuration, no LLM.
func FromEnv(getenv func(string) string) Config {
	if getenv == nil {
		return Config{}
	}
	return Config{
		APIKey:  strings.TrimSpace(getenv(EnvAPIKey)),
		BaseURL: strings.TrimSpace(getenv(EnvBaseURL)),
		Model:   strings.TrimSpace(getenv(EnvModel)),
	}
}

// Enabled reports whether an LLM is configured (an API key is set).
func (c Config) Enabled() bool { return c.APIKey != "" }

// Validate reports a configuration no request could succeed with: a base
// URL that is not an http(s) URL with a host, or a negative timeout. Zero
// fields are valid (defaults).
func (c Config) Validate() error {
	if c.BaseURL != "" {
		if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("invalid %s %q", EnvBaseURL, c.BaseURL)
		}
	}
	if c.Timeout < 0 {
		return fmt.Errorf("negative timeout %v", c.Timeout)
	}
	return nil
}

// WithDefaults returns c with its zero fields filled.
func (c Config) WithDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}
