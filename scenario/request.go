package scenario

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/coordbench/coordbench/a2acall"
)

// The assessment request's contract (docs/green-agent.md#the-request): the
// config keys every scenario shares, their defaults, and the error a request
// that cannot be assessed gets. Parsing the request's text is the green agent's.

// Scenario names a request may ask for in config.scenario.
const (
	Coordination = "coordination"
	SciCode      = "scicode"
)

// Config defaults, applied by the RequestConfig accessors so that a request
// keeps exactly what the requester sent.
const (
	DefaultTaskTimeout = 900 * time.Second
	DefaultDeadline    = 3600 * time.Second
	DefaultSettleQuiet = 500 * time.Millisecond
	// DefaultSettleMaxWait covers exporters at the OpenTelemetry SDKs'
	// default batching (a batch every 5 s) with room for a slow export or
	// a retry: a task's trace waits for the participants' spans this long
	// at most, and usually far less (it settles as soon as every call
	// was answered and the spans stopped arriving).
	DefaultSettleMaxWait = 15 * time.Second
	// DefaultRepeats runs each task once; MaxRepeats bounds config.repeats.
	DefaultRepeats = 1
	MaxRepeats     = 20
)

// Upper bounds of the numeric config keys (ConfigRanges). A request past
// one is rejected: a timeout of 1e300 seconds would overflow
// time.Duration into a negative one, and no honest request needs more.
const (
	// MaxTimeoutSeconds bounds call_timeout_seconds, task_timeout_seconds
	// and deadline_seconds: one day.
	MaxTimeoutSeconds = 86400
	// MaxSettleQuietMS (10 min) and MaxSettleMaxWaitMS (1 h) bound the
	// settle keys.
	MaxSettleQuietMS   = 600_000
	MaxSettleMaxWaitMS = 3_600_000
	// MaxNumTasks bounds num_tasks; MaxShards bounds num_shards,
	// shard_index and num_instances.
	MaxNumTasks = 100_000
	MaxShards   = 10_000
)

// ConfigRange is the accepted range of a numeric config key, bounds
// included.
type ConfigRange struct {
	Key      string
	Min, Max float64
}

// ConfigRanges lists every numeric config key the scenarios share with its
// range. Zero is in every range: it means the key's default.
func ConfigRanges() []ConfigRange {
	return []ConfigRange{
		{"num_tasks", 0, MaxNumTasks},
		{"shard_index", 0, MaxShards - 1},
		{"num_shards", 0, MaxShards},
		{"num_instances", 0, MaxShards},
		{"call_timeout_seconds", 0, MaxTimeoutSeconds},
		{"task_timeout_seconds", 0, MaxTimeoutSeconds},
		{"deadline_seconds", 0, MaxTimeoutSeconds},
		{"settle_quiet_ms", 0, MaxSettleQuietMS},
		{"settle_max_wait_ms", 0, MaxSettleMaxWaitMS},
		{"repeats", 0, MaxRepeats},
	}
}

// Check returns a *RequestError naming the key and the range when v is
// outside it (NaN included).
func (r ConfigRange) Check(v float64) error {
	if v >= r.Min && v <= r.Max {
		return nil
	}
	return BadRequest("config.%s %s is out of range %s..%s", r.Key, FormatNumber(v), FormatNumber(r.Min), FormatNumber(r.Max))
}

// FormatNumber writes a whole number of up to 15 digits as an integer and
// anything else in Go's shortest form (1e+300).
func FormatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// CheckRanges reports the first numeric key outside its range
// (ConfigRanges), as a *RequestError that names the range.
func (c RequestConfig) CheckRanges() error {
	values := map[string]float64{
		"num_tasks":            float64(c.NumTasks),
		"shard_index":          float64(c.ShardIndex),
		"num_shards":           float64(c.NumShards),
		"num_instances":        float64(c.NumInstances),
		"call_timeout_seconds": c.CallTimeoutSeconds,
		"task_timeout_seconds": c.TaskTimeoutSeconds,
		"deadline_seconds":     c.DeadlineSeconds,
		"settle_quiet_ms":      float64(c.SettleQuietMS),
		"settle_max_wait_ms":   float64(c.SettleMaxWaitMS),
		"repeats":              float64(c.Repeats),
	}
	for _, r := range ConfigRanges() {
		if err := r.Check(values[r.Key]); err != nil {
			return err
		}
	}
	return nil
}

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
settle_quiet_ms, settle_max_wait_ms, repeats (1-20), evaluators, graph_metrics, include_virtual_nodes, delivery
("text", "mcp" or "both"; docs/mcp.md).
Timeouts are at most 86400 seconds; settle_quiet_ms at most 600000, settle_max_wait_ms at most 3600000.`

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

// BadRequest returns a *RequestError whose message is formatted as fmt.Sprintf.
func BadRequest(format string, args ...any) error {
	return &RequestError{Err: fmt.Errorf(format, args...)}
}

// ScenarioName is config.scenario, or the default "coordination".
func (c RequestConfig) ScenarioName() string {
	if c.Scenario == "" {
		return Coordination
	}
	return c.Scenario
}

// The accessors below apply the defaults and clamp to the ranges of
// ConfigRanges, so that a RequestConfig built in process rather than
// parsed cannot overflow a time.Duration either.

// CallTimeout bounds one call to a participant (DefaultCallTimeout is
// the Messenger's).
func (c RequestConfig) CallTimeout() time.Duration {
	return secondsOr(c.CallTimeoutSeconds, a2acall.DefaultCallTimeout)
}

// TaskTimeout bounds one task.
func (c RequestConfig) TaskTimeout() time.Duration {
	return secondsOr(c.TaskTimeoutSeconds, DefaultTaskTimeout)
}

// Deadline bounds the whole assessment.
func (c RequestConfig) Deadline() time.Duration {
	return secondsOr(c.DeadlineSeconds, DefaultDeadline)
}

// SettleQuiet is how long no participant span may arrive, once every
// awaited call of a task's trace was answered, for the trace to be
// complete.
func (c RequestConfig) SettleQuiet() time.Duration {
	if c.SettleQuietMS > 0 {
		return time.Duration(min(c.SettleQuietMS, MaxSettleQuietMS)) * time.Millisecond
	}
	return DefaultSettleQuiet
}

// SettleMaxWait bounds the wait for a task's trace to be complete.
func (c RequestConfig) SettleMaxWait() time.Duration {
	if c.SettleMaxWaitMS > 0 {
		return time.Duration(min(c.SettleMaxWaitMS, MaxSettleMaxWaitMS)) * time.Millisecond
	}
	return DefaultSettleMaxWait
}

// RepeatCount is how many times each task runs: config.repeats, or
// DefaultRepeats.
func (c RequestConfig) RepeatCount() int {
	if c.Repeats > 0 {
		return min(c.Repeats, MaxRepeats)
	}
	return DefaultRepeats
}

func secondsOr(s float64, def time.Duration) time.Duration {
	if s > 0 { // false for NaN too
		return time.Duration(min(s, MaxTimeoutSeconds) * float64(time.Second))
	}
	return def
}
