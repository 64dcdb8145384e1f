package scenario

import (
	"fmt"
	"time"

	"github.com/coordbench/coordbench/a2acall"
)

// The assessment request's contract (DESIGN §4): the config keys every
// scenario shares, their defaults, and the error a request that cannot be
// assessed gets. Parsing the request's text is the green agent's.

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
settle_quiet_ms, settle_max_wait_ms, repeats (1-20), evaluators, graph_metrics, include_virtual_nodes.`

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
		return time.Duration(c.SettleQuietMS) * time.Millisecond
	}
	return DefaultSettleQuiet
}

// SettleMaxWait bounds the wait for a task's trace to be complete.
func (c RequestConfig) SettleMaxWait() time.Duration {
	if c.SettleMaxWaitMS > 0 {
		return time.Duration(c.SettleMaxWaitMS) * time.Millisecond
	}
	return DefaultSettleMaxWait
}

// RepeatCount is how many times each task runs: config.repeats, or
// DefaultRepeats.
func (c RequestConfig) RepeatCount() int {
	if c.Repeats > 0 {
		return c.Repeats
	}
	return DefaultRepeats
}

func secondsOr(s float64, def time.Duration) time.Duration {
	if s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	return def
}
