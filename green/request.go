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

	"github.com/coordbench/coordbench/internal/textutil"
	"github.com/coordbench/coordbench/scenario"
)

// Request parsing (docs/green-agent.md#the-request). An assessment request is
// the text of the first message an A2A client sends: the AgentBeats JSON, or the
// legacy tag format that tau-bench and SciCode green agents take. Anything else
// is rejected with scenario.RequestFormatHelp, so a person who typed "Hello"
// learns what to send.

const maxRequestParticipants = 64

// LegacyParticipantRole is the role the legacy tag format's
// <white_agent_url> becomes.
const LegacyParticipantRole = "white_agent"

// ParseRequest parses an assessment request in either format. The error,
// a *scenario.RequestError, says what is wrong and shows both formats.
func ParseRequest(text string) (*scenario.Request, error) {
	text = strings.TrimSpace(strings.TrimPrefix(text, "\ufeff"))
	switch {
	case text == "":
		return nil, scenario.BadRequest("the message is empty")
	case strings.HasPrefix(text, "{"):
		return parseJSONRequest([]byte(text))
	case legacyURLTag.MatchString(text):
		return parseLegacyRequest(text)
	case strings.HasPrefix(text, "```"):
		// A JSON request pasted as a Markdown code block.
		if inner, ok := textutil.Unfence(text); ok && strings.HasPrefix(inner, "{") {
			return parseJSONRequest([]byte(inner))
		}
	}
	return nil, scenario.BadRequest("the message is neither the AgentBeats JSON nor the legacy tag format (it starts %q)", preview(text, 40))
}

// rawRequest is the AgentBeats request as sent.
type rawRequest struct {
	Participants map[string]string `json:"participants"`
	Config       json.RawMessage   `json:"config"`
}

func parseJSONRequest(raw []byte) (*scenario.Request, error) {
	var rr rawRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&rr); err != nil {
		return nil, scenario.BadRequest("the JSON does not decode: %v", jsonErrorText(err))
	}
	if dec.More() {
		return nil, scenario.BadRequest("the JSON request is followed by more text")
	}
	if len(rr.Participants) == 0 {
		return nil, scenario.BadRequest(`"participants" is missing or empty: it maps each role to the participant's A2A URL`)
	}
	if len(rr.Participants) > maxRequestParticipants {
		return nil, scenario.BadRequest("%d participants; at most %d are accepted", len(rr.Participants), maxRequestParticipants)
	}
	req := &scenario.Request{Participants: make(map[string]string, len(rr.Participants))}
	for role, u := range rr.Participants {
		role = strings.TrimSpace(role)
		if role == "" {
			return nil, scenario.BadRequest("a participant has an empty role")
		}
		clean, err := checkParticipantURL(u)
		if err != nil {
			return nil, scenario.BadRequest("participant %q: %v", role, err)
		}
		req.Participants[role] = clean
	}
	cfg, err := parseRequestConfig(rr.Config)
	if err != nil {
		return nil, err
	}
	req.Config = cfg
	if err := validateConfig(&req.Config, req.Participants); err != nil {
		return nil, err
	}
	return req, nil
}

// parseRequestConfig decodes the keys every scenario shares into their
// fields and keeps every key, known or not, in Raw.
func parseRequestConfig(raw json.RawMessage) (scenario.RequestConfig, error) {
	var cfg scenario.RequestConfig
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		cfg.Raw = map[string]json.RawMessage{}
		return cfg, nil
	}
	if err := json.Unmarshal(raw, &cfg.Raw); err != nil {
		return cfg, scenario.BadRequest(`"config" must be a JSON object: %v`, jsonErrorText(err))
	}
	if cfg.Raw == nil {
		cfg.Raw = map[string]json.RawMessage{}
	}
	if err := checkRawRanges(cfg.Raw); err != nil {
		return cfg, err
	}
	// Unknown keys are ignored here (they stay in Raw for the scenario);
	// known keys of the wrong type are errors that name the key.
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return cfg, scenario.BadRequest("config: %v", jsonErrorText(err))
	}
	return cfg, nil
}

// checkRawRanges range-checks the numeric keys as sent, before they are
// decoded into their fields, so that a number too large for its field
// (num_tasks 1e300) is rejected with the range rather than as a decoding
// error. Values that are not numbers are left to the decoder's type error.
func checkRawRanges(raw map[string]json.RawMessage) error {
	for _, r := range scenario.ConfigRanges() {
		v, ok := raw[r.Key]
		if !ok {
			continue
		}
		var n json.Number
		if json.Unmarshal(v, &n) != nil {
			continue
		}
		// ParseFloat gives ±Inf for numbers beyond float64 (1e400), which
		// the range check then refuses.
		f, _ := strconv.ParseFloat(n.String(), 64)
		if err := r.Check(f); err != nil {
			return err
		}
	}
	return nil
}

// validateConfig checks the shared keys' values.
func validateConfig(c *scenario.RequestConfig, participants map[string]string) error {
	c.Scenario = strings.ToLower(strings.TrimSpace(c.Scenario))
	if c.EntryRole != "" {
		if _, ok := participants[c.EntryRole]; !ok {
			return scenario.BadRequest("config.entry_role %q is not among the participants (%s)", c.EntryRole, strings.Join(sortedKeys(participants), ", "))
		}
	}
	if err := c.CheckRanges(); err != nil {
		return err
	}
	if c.NumShards > 0 && c.ShardIndex >= c.NumShards {
		return scenario.BadRequest("config.shard_index %d is out of range for num_shards %d (0..%d)", c.ShardIndex, c.NumShards, c.NumShards-1)
	}
	if c.NumShards == 0 && c.ShardIndex > 0 {
		return scenario.BadRequest("config.shard_index %d needs num_shards", c.ShardIndex)
	}
	for i, id := range c.TaskIDs {
		if strings.TrimSpace(id) == "" {
			return scenario.BadRequest("config.task_ids[%d] is empty", i)
		}
	}
	return nil
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
func parseLegacyRequest(text string) (*scenario.Request, error) {
	m := legacyURLTag.FindStringSubmatch(text)
	u, err := checkParticipantURL(m[1])
	if err != nil {
		return nil, scenario.BadRequest("<white_agent_url>: %v", err)
	}
	req := &scenario.Request{
		Participants: map[string]string{LegacyParticipantRole: u},
		Legacy:       true,
		Config: scenario.RequestConfig{
			Scenario: scenario.SciCode,
			Raw:      map[string]json.RawMessage{"scenario": mustJSON(scenario.SciCode)},
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
			return nil, scenario.BadRequest("<max_num_steps> must be a positive whole number, not %q", mm[1])
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
	s = textutil.OneLine(s)
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
