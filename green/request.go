package green

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Request parsing (DESIGN §4). An assessment request is the text of the
// first message an A2A client sends: the AgentBeats JSON, or the legacy tag
// format that tau-bench and SciCode green agents take. Anything else is
// rejected with RequestFormatHelp, so a person who typed "Hello" learns
// what to send.

// Scenario names a request may ask for in config.scenario.
const (
	ScenarioCoordination = "coordination"
	ScenarioSciCode      = "scicode"
)

// Config defaults, applied by the RequestConfig accessors so that a request
// keeps exactly what the requester sent.
const (
	DefaultTaskTimeout     = 900 * time.Second
	DefaultDeadline        = 3600 * time.Second
	DefaultSettleQuiet     = 500 * time.Millisecond
	DefaultSettleMaxWait   = 10 * time.Second
	maxRequestParticipants = 64
)

// LegacyParticipantRole is the role the legacy tag format's
// <white_agent_url> becomes.
const LegacyParticipantRole = "white_agent"

// RequestFormatHelp shows the two request formats. It is the text of every
// rejection, so that whoever sent a bad request sees what a good one looks
// like.
const RequestFormatHelp = `Send an assessment request as the text of the message, in one of two forms.

AgentBeats JSON:
  {"participants": {"<role>": "<A2A URL of the agent>"},
   "config": {"scenario": "coordination", "num_tasks": 3}}

Legacy tags (SciCode / tau-bench style):
  <white_agent_url>http://host:port/</white_agent_url>
  <scicode_problem_id>13</scicode_problem_id>
  <split>dev</split>
  <max_num_steps>3</max_num_steps>

Config keys (all optional): scenario ("coordination" or "scicode"), entry_role, task_ids, num_tasks,
shard_index, num_shards, num_instances, call_timeout_seconds, task_timeout_seconds, deadline_seconds,
settle_quiet_ms, settle_max_wait_ms, evaluators, graph_metrics, include_virtual_nodes.`

// RequestError is a request that cannot be assessed. Its message names the
// problem and then shows RequestFormatHelp; the executor ends the A2A task
// in state rejected with it.
type RequestError struct {
	Err error
}

func (e *RequestError) Error() string {
	return "bad assessment request: " + e.Err.Error() + "\n\n" + RequestFormatHelp
}

func (e *RequestError) Unwrap() error { return e.Err }

func badRequest(format string, args ...any) error {
	return &RequestError{Err: fmt.Errorf(format, args...)}
}

// ParseRequest parses an assessment request in either format. The error,
// a *RequestError, says what is wrong and shows both formats.
func ParseRequest(text string) (*Request, error) {
	text = strings.TrimSpace(strings.TrimPrefix(text, "\ufeff"))
	switch {
	case text == "":
		return nil, badRequest("the message is empty")
	case strings.HasPrefix(text, "{"):
		return parseJSONRequest([]byte(text))
	case legacyURLTag.MatchString(text):
		return parseLegacyRequest(text)
	case strings.HasPrefix(text, "```"):
		// A JSON request pasted as a Markdown code block.
		if inner, ok := stripCodeFence(text); ok && strings.HasPrefix(inner, "{") {
			return parseJSONRequest([]byte(inner))
		}
	}
	return nil, badRequest("the message is neither the AgentBeats JSON nor the legacy tag format (it starts %q)", preview(text, 40))
}

// rawRequest is the AgentBeats request as sent.
type rawRequest struct {
	Participants map[string]string `json:"participants"`
	Config       json.RawMessage   `json:"config"`
}

func parseJSONRequest(raw []byte) (*Request, error) {
	var rr rawRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&rr); err != nil {
		return nil, badRequest("the JSON does not decode: %v", jsonErrorText(err))
	}
	if dec.More() {
		return nil, badRequest("the JSON request is followed by more text")
	}
	if len(rr.Participants) == 0 {
		return nil, badRequest(`"participants" is missing or empty: it maps each role to the participant's A2A URL`)
	}
	if len(rr.Participants) > maxRequestParticipants {
		return nil, badRequest("%d participants; at most %d are accepted", len(rr.Participants), maxRequestParticipants)
	}
	req := &Request{Participants: make(map[string]string, len(rr.Participants))}
	for role, u := range rr.Participants {
		role = strings.TrimSpace(role)
		if role == "" {
			return nil, badRequest("a participant has an empty role")
		}
		clean, err := checkParticipantURL(u)
		if err != nil {
			return nil, badRequest("participant %q: %v", role, err)
		}
		req.Participants[role] = clean
	}
	cfg, err := parseRequestConfig(rr.Config)
	if err != nil {
		return nil, err
	}
	req.Config = cfg
	if err := req.Config.validate(req.Participants); err != nil {
		return nil, err
	}
	return req, nil
}

// parseRequestConfig decodes the keys every scenario shares into their
// fields and keeps every key, known or not, in Raw.
func parseRequestConfig(raw json.RawMessage) (RequestConfig, error) {
	var cfg RequestConfig
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		cfg.Raw = map[string]json.RawMessage{}
		return cfg, nil
	}
	if err := json.Unmarshal(raw, &cfg.Raw); err != nil {
		return cfg, badRequest(`"config" must be a JSON object: %v`, jsonErrorText(err))
	}
	if cfg.Raw == nil {
		cfg.Raw = map[string]json.RawMessage{}
	}
	// Unknown keys are ignored here (they stay in Raw for the scenario);
	// known keys of the wrong type are errors that name the key.
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return cfg, badRequest("config: %v", jsonErrorText(err))
	}
	return cfg, nil
}

// validate checks the shared keys' values.
func (c *RequestConfig) validate(participants map[string]string) error {
	c.Scenario = strings.ToLower(strings.TrimSpace(c.Scenario))
	if c.EntryRole != "" {
		if _, ok := participants[c.EntryRole]; !ok {
			return badRequest("config.entry_role %q is not among the participants (%s)", c.EntryRole, strings.Join(sortedKeys(participants), ", "))
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"num_tasks", float64(c.NumTasks)},
		{"shard_index", float64(c.ShardIndex)},
		{"num_shards", float64(c.NumShards)},
		{"num_instances", float64(c.NumInstances)},
		{"call_timeout_seconds", c.CallTimeoutSeconds},
		{"task_timeout_seconds", c.TaskTimeoutSeconds},
		{"deadline_seconds", c.DeadlineSeconds},
		{"settle_quiet_ms", float64(c.SettleQuietMS)},
		{"settle_max_wait_ms", float64(c.SettleMaxWaitMS)},
	} {
		if f.v < 0 {
			return badRequest("config.%s is %v; it must not be negative", f.name, f.v)
		}
	}
	if c.NumShards > 0 && c.ShardIndex >= c.NumShards {
		return badRequest("config.shard_index %d is out of range for num_shards %d (0..%d)", c.ShardIndex, c.NumShards, c.NumShards-1)
	}
	if c.NumShards == 0 && c.ShardIndex > 0 {
		return badRequest("config.shard_index %d needs num_shards", c.ShardIndex)
	}
	for i, id := range c.TaskIDs {
		if strings.TrimSpace(id) == "" {
			return badRequest("config.task_ids[%d] is empty", i)
		}
	}
	return nil
}

// ScenarioName is config.scenario, or the default "coordination".
func (c RequestConfig) ScenarioName() string {
	if c.Scenario == "" {
		return ScenarioCoordination
	}
	return c.Scenario
}

// CallTimeout bounds one call to a participant (DefaultCallTimeout is
// the Messenger's).
func (c RequestConfig) CallTimeout() time.Duration {
	return secondsOr(c.CallTimeoutSeconds, DefaultCallTimeout)
}

// TaskTimeout bounds one task.
func (c RequestConfig) TaskTimeout() time.Duration {
	return secondsOr(c.TaskTimeoutSeconds, DefaultTaskTimeout)
}

// Deadline bounds the whole assessment.
func (c RequestConfig) Deadline() time.Duration {
	return secondsOr(c.DeadlineSeconds, DefaultDeadline)
}

// SettleQuiet is how long a task's trace must be quiet to be complete.
func (c RequestConfig) SettleQuiet() time.Duration {
	if c.SettleQuietMS > 0 {
		return time.Duration(c.SettleQuietMS) * time.Millisecond
	}
	return DefaultSettleQuiet
}

// SettleMaxWait bounds the wait for a task's trace to settle.
func (c RequestConfig) SettleMaxWait() time.Duration {
	if c.SettleMaxWaitMS > 0 {
		return time.Duration(c.SettleMaxWaitMS) * time.Millisecond
	}
	return DefaultSettleMaxWait
}

// Legacy tag format.
var (
	legacyURLTag       = regexp.MustCompile(`(?is)<white_agent_url>\s*(.*?)\s*</white_agent_url>`)
	legacyProblemTag   = regexp.MustCompile(`(?is)<(?:scicode_problem_id|problem_id)>\s*(.*?)\s*</(?:scicode_problem_id|problem_id)>`)
	legacySplitTag     = regexp.MustCompile(`(?is)<split>\s*(.*?)\s*</split>`)
	legacyMaxStepsTag  = regexp.MustCompile(`(?is)<max_num_steps>\s*(.*?)\s*</max_num_steps>`)
	legacyIDSeparators = regexp.MustCompile(`[\s,;]+`)
)

// parseLegacyRequest reads the tag format: the white agent is the one
// participant, and the request is a SciCode assessment whose problem ids,
// split and step budget go to Config.Raw for the scenario.
func parseLegacyRequest(text string) (*Request, error) {
	m := legacyURLTag.FindStringSubmatch(text)
	u, err := checkParticipantURL(m[1])
	if err != nil {
		return nil, badRequest("<white_agent_url>: %v", err)
	}
	req := &Request{
		Participants: map[string]string{LegacyParticipantRole: u},
		Legacy:       true,
		Config: RequestConfig{
			Scenario: ScenarioSciCode,
			Raw:      map[string]json.RawMessage{"scenario": mustJSON(ScenarioSciCode)},
		},
	}
	var ids []string
	for _, pm := range legacyProblemTag.FindAllStringSubmatch(text, -1) {
		for _, id := range legacyIDSeparators.Split(pm[1], -1) {
			if id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) > 0 {
		req.Config.Raw["problem_ids"] = mustJSON(ids)
	}
	if sm := legacySplitTag.FindStringSubmatch(text); sm != nil && sm[1] != "" {
		req.Config.Raw["split"] = mustJSON(sm[1])
	}
	if mm := legacyMaxStepsTag.FindStringSubmatch(text); mm != nil && mm[1] != "" {
		n, err := strconv.Atoi(mm[1])
		if err != nil || n <= 0 {
			return nil, badRequest("<max_num_steps> must be a positive whole number, not %q", mm[1])
		}
		req.Config.Raw["max_num_steps"] = mustJSON(n)
	}
	return req, nil
}

// checkParticipantURL accepts an absolute http(s) URL with a host; it may
// carry a path (the AgentBeats gateway gives http://host:port/<role>).
func checkParticipantURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", errors.New("the URL is empty")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q is not an http:// or https:// URL", s)
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("%q has no host", s)
	}
	if u.User != nil {
		return "", fmt.Errorf("%q carries credentials; pass them another way", u.Redacted())
	}
	return s, nil
}

// stripCodeFence returns the body of a text that is one fenced code block.
func stripCodeFence(text string) (string, bool) {
	lines := strings.Split(text, "\n")
	if len(lines) < 3 || !strings.HasPrefix(strings.TrimSpace(lines[len(lines)-1]), "```") {
		return "", false
	}
	return strings.TrimSpace(strings.Join(lines[1:len(lines)-1], "\n")), true
}

// jsonErrorText makes a decoding error readable: the field a type error
// is about, and the offset of a syntax error.
func jsonErrorText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "a value"
		}
		return fmt.Sprintf("%s must be %s, not %s", field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	return err.Error()
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "uint", "uint64":
		return "a whole number"
	case "float64":
		return "a number"
	case "string":
		return "a string"
	case "slice", "array":
		return "a list"
	case "map", "struct":
		return "an object"
	case "bool":
		return "true or false"
	}
	return goKind
}

func preview(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen for strings, ints and string lists
		panic(err)
	}
	return b
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func secondsOr(s float64, def time.Duration) time.Duration {
	if s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	return def
}
