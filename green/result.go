package green

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/tracedata"
)

// ResultSchema versions the JSON result; a consumer checks it before reading
// anything else.
const ResultSchema = "coordbench.result/v1"

// Result is the assessment's JSON result (DESIGN §4). The offline `assess`
// command fills Tasks only; an A2A assessment also fills the
// leaderboard-friendly top-level fields.
type Result struct {
	Schema string `json:"schema"`
	// Domain is the scenario: "coordination", "scicode", or "otlp" for an
	// offline assessment of span files.
	Domain string `json:"domain,omitempty"`
	// Score (0..MaxScore), PassRate (0..1) and TimeUsed (seconds) summarise
	// the run for a leaderboard.
	Score    *float64 `json:"score,omitempty"`
	MaxScore *float64 `json:"max_score,omitempty"`
	PassRate *float64 `json:"pass_rate,omitempty"`
	TimeUsed *float64 `json:"time_used,omitempty"`
	// Inputs names what was assessed (files, participants).
	Inputs []string     `json:"inputs,omitempty"`
	Tasks  []TaskResult `json:"tasks"`
	// Warnings are run-level problems (limits hit, spans rejected).
	Warnings []string `json:"warnings,omitempty"`
}

// TaskResult is one task: its trace rebuilt, and every evaluator's result
// under the evaluator's name ("graph", "latency", "judge", "text").
type TaskResult struct {
	TaskID       string                  `json:"task_id,omitempty"`
	TraceID      string                  `json:"trace_id"`
	Agents       []tracedata.Agent       `json:"agents"`
	Interactions []tracedata.Interaction `json:"interactions"`
	Steps        []tracedata.Step        `json:"steps"`
	Coverage     tracedata.Coverage      `json:"coverage"`
	Outcome      *evals.Outcome          `json:"outcome,omitempty"`
	// LateSpans counts the spans that arrived for the task's trace after it
	// was assessed (by the end of the assessment): evidence the verdict was
	// made without.
	LateSpans int `json:"late_spans,omitempty"`
	// Evaluations are keyed by evaluator name and encoded as top-level keys
	// of the task, so a new evaluator needs no change here.
	Evaluations map[string]evals.Result `json:"-"`
	// EvaluatorErrors names evaluators that failed and why.
	EvaluatorErrors map[string]string `json:"evaluator_errors,omitempty"`
}

// taskFields is TaskResult without its MarshalJSON, to encode the fixed
// fields.
type taskFields TaskResult

// MarshalJSON writes the fixed fields followed by one key per evaluation,
// in sorted order, so the same task always encodes to the same bytes.
func (t TaskResult) MarshalJSON() ([]byte, error) {
	base, err := json.Marshal(taskFields(t))
	if err != nil {
		return nil, fmt.Errorf("encode task %s: %w", t.TraceID, err)
	}
	if len(t.Evaluations) == 0 {
		return base, nil
	}
	names := make([]string, 0, len(t.Evaluations))
	for name := range t.Evaluations {
		names = append(names, name)
	}
	slices.Sort(names)
	out := base[:len(base)-1] // drop the closing brace
	for _, name := range names {
		v, err := json.Marshal(t.Evaluations[name])
		if err != nil {
			return nil, fmt.Errorf("encode %s result of task %s: %w", name, t.TraceID, err)
		}
		k, _ := json.Marshal(name)
		out = append(out, ',')
		out = append(out, k...)
		out = append(out, ':')
		out = append(out, v...)
	}
	return append(out, '}'), nil
}

// newTaskResult fills the trace part of a task result.
func newTaskResult(td *tracedata.TraceData, rep evals.Report) TaskResult {
	tr := TaskResult{
		TraceID:      td.TraceID,
		Agents:       nonNil(td.Agents),
		Interactions: nonNil(td.Interactions),
		Steps:        nonNil(td.Steps),
		Coverage:     td.Coverage,
		Evaluations:  rep.Results,
	}
	if len(rep.Errors) > 0 {
		tr.EvaluatorErrors = rep.Errors
	}
	return tr
}

// nonNil keeps empty lists as [] rather than null in the JSON.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
