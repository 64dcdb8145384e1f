// Package scenario defines what a kind of assessment is
// (docs/design.md#scenarios): the Scenario interface, the tasks it runs, the
// environment a task runs in, and the parsed assessment request every scenario
// reads. The green agent's executor runs scenarios; the scenarios themselves
// live in scenario/coordination and scenario/scicode.
package scenario

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/evals"
)

// Scenario is one kind of assessment (docs/design.md#scenarios): it picks the
// tasks a request asks for and drives the participants through one task. The
// executor does everything around it: the task's span and trace, progress,
// timeouts, settling the trace, assembly, evaluators and the result.
type Scenario interface {
	// Name is the result's domain: "coordination", "scicode".
	Name() string
	// Tasks returns the tasks the request selects, after sharding. An error
	// is a bad request and is reported to the requester.
	Tasks(req *Request) ([]Task, error)
	// Run drives one task. ctx carries the task's span (every call made with
	// it joins the task's trace) and the task's deadline. A participant's
	// failure is an outcome (Success false, the cause in Summary), not an
	// error; an error means the task could not be run at all and is recorded
	// as a failed task, and the assessment goes on.
	Run(ctx context.Context, env *TaskEnv, task Task) (*evals.Outcome, error)
}

// Task is one unit of an assessment.
type Task struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
	// Data is the scenario's own description of the task.
	Data any `json:"-"`
}

// TaskEnv is what a scenario may use while running a task.
type TaskEnv struct {
	Messenger *a2acall.Messenger
	Request   *Request
	// Progress sends a `working` status update with this text.
	Progress func(text string)
	// Tools serves a task's MCP server when the request's delivery asks
	// for MCP (docs/mcp.md); nil where no MCP endpoint is served, and then
	// such a request cannot run.
	Tools ToolHost
}

// Request is a parsed assessment request (docs/green-agent.md#the-request).
type Request struct {
	// Participants maps a role to the participant's A2A URL (which may carry
	// a path).
	Participants map[string]string `json:"participants"`
	Config       RequestConfig     `json:"config"`
	// Legacy is true when the request came in the tag format.
	Legacy bool `json:"-"`
}

// RequestConfig holds the config keys every scenario shares; Raw keeps all
// keys so a scenario can read its own (unknown keys are ignored).
type RequestConfig struct {
	// Scenario is "coordination" (the default) or "scicode".
	Scenario string `json:"scenario,omitempty"`
	// EntryRole is the participant a task is sent to; default the only
	// participant.
	EntryRole string `json:"entry_role,omitempty"`
	// TaskIDs selects tasks by id; NumTasks takes the first N (after
	// TaskIDs); both empty means all.
	TaskIDs  []string `json:"task_ids,omitempty"`
	NumTasks int      `json:"num_tasks,omitempty"`
	// ShardIndex/NumShards split the selected tasks for AgentBeats; task i
	// belongs to shard i mod NumShards. NumInstances is accepted and
	// recorded.
	ShardIndex   int `json:"shard_index,omitempty"`
	NumShards    int `json:"num_shards,omitempty"`
	NumInstances int `json:"num_instances,omitempty"`
	// CallTimeoutSeconds bounds one call to a participant (default 300).
	CallTimeoutSeconds float64 `json:"call_timeout_seconds,omitempty"`
	// TaskTimeoutSeconds bounds one task (default 900).
	TaskTimeoutSeconds float64 `json:"task_timeout_seconds,omitempty"`
	// DeadlineSeconds bounds the whole assessment (default 3600).
	DeadlineSeconds float64 `json:"deadline_seconds,omitempty"`
	// SettleQuietMS and SettleMaxWaitMS say when a task's trace is complete
	// (docs/participants.md#when-a-tasks-trace-is-complete): every awaited call
	// answered and no participant span for SettleQuietMS, at most
	// SettleMaxWaitMS; defaults 500 and 15000.
	SettleQuietMS   int `json:"settle_quiet_ms,omitempty"`
	SettleMaxWaitMS int `json:"settle_max_wait_ms,omitempty"`
	// Repeats runs each task this many times (default 1, at most
	// MaxRepeats), each run in a trace of its own; the result then
	// summarises every metric across the runs (mean, spread, confidence
	// interval).
	Repeats int `json:"repeats,omitempty"`
	// Evaluators and GraphMetrics switch evaluators and graph metrics.
	evals.Config
	// Raw is every config key as given.
	Raw map[string]json.RawMessage `json:"-"`
}

// Sender is the part of a2acall.Messenger a scenario uses, so tests can drive a
// scenario's logic without A2A.
type Sender interface {
	Send(ctx context.Context, req a2acall.SendRequest) (*a2acall.Reply, error)
}

// EntryParticipant picks the participant a scenario's tasks go to:
// config.entry_role, else the only participant. Its errors are bad requests
// (*RequestError) that name the scenario and the participants there are.
func EntryParticipant(req *Request, scenario string) (role, url string, err error) {
	roles := make([]string, 0, len(req.Participants))
	for r := range req.Participants {
		roles = append(roles, r)
	}
	slices.Sort(roles)
	if r := req.Config.EntryRole; r != "" {
		u, ok := req.Participants[r]
		if !ok {
			return "", "", BadRequest("%s: entry_role %q is not a participant; participants: %s", scenario, r, strings.Join(roles, ", "))
		}
		if u == "" {
			return "", "", BadRequest("%s: participant %q has no URL", scenario, r)
		}
		return r, u, nil
	}
	switch len(roles) {
	case 0:
		return "", "", BadRequest("%s: the request names no participant", scenario)
	case 1:
		if u := req.Participants[roles[0]]; u != "" {
			return roles[0], u, nil
		}
		return "", "", BadRequest("%s: participant %q has no URL", scenario, roles[0])
	default:
		return "", "", BadRequest("%s: %d participants (%s) and no config.entry_role to say which one gets the task",
			scenario, len(roles), strings.Join(roles, ", "))
	}
}
