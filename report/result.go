// Package report is the assessment's result in its two forms: the typed JSON
// document a client receives (Result, schema coordbench.result/v2, read back
// with Decode) and the Markdown summary for people, with each task's agent
// graph as a Mermaid flowchart (Summary). The summary reads the evaluators'
// result types, not their JSON, so renaming a JSON tag cannot drop a line
// of it.
//
// report imports tracedata, evals and internal/textutil: it knows nothing of
// A2A, spans or scenarios.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/tracedata"
)

// Schema versions the JSON result; a consumer checks it before reading
// anything else. v2 holds each task's evaluator results under one key,
// "evaluations" (v1 spread them over the task's own keys).
const Schema = "coordbench.result/v2"

// Result is the assessment's JSON result
// (docs/green-agent.md#the-result-artifact), encoded as is by encoding/json. The
// offline `assess` command fills Tasks only; an A2A assessment also fills the
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
	// Repeats, when config.repeats ran each task more than once, summarises
	// each task's runs by task id; Tasks then holds every run.
	Repeats map[string]*TaskRepeats `json:"repeats,omitempty"`
}

// TaskResult is one task: its trace rebuilt, its outcome, and every
// evaluator's result.
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
	// RefusedSpans counts the spans of the task's trace that the span
	// store refused while the task was assessed (its span limit per trace,
	// the ingest token rules; docs/span-admission.md): the verdicts were
	// made without them.
	RefusedSpans int `json:"refused_spans,omitempty"`
	// SetAside, when spans were set aside by provenance (provenance.go):
	// received spans that claimed the assessor's identity or lay outside
	// the subtrees of the assessor's calls. They were not used for the
	// graph, latency, text or judge.
	SetAside *tracedata.SetAside `json:"set_aside,omitempty"`
	// Evaluations hold each evaluator's result under its name ("graph",
	// "latency", "judge", "text"), so a new evaluator needs no change here.
	Evaluations Evaluations `json:"evaluations,omitempty"`
	// EvaluatorErrors names evaluators that failed and why.
	EvaluatorErrors map[string]string `json:"evaluator_errors,omitempty"`
}

// Evaluations are evaluator results by evaluator name. They encode as a
// plain JSON object (encoding/json sorts the keys, so the same results
// always encode to the same bytes). Decoding gives the built-in
// evaluators' results their types (*evals.GraphResult, *evals.LatencyResult,
// *judge.Result, *evals.TextResult) and keeps any other as
// RawEvaluation.
type Evaluations map[string]evals.Result

// Names of the built-in evaluators, as their results are keyed.
const (
	evalGraph   = evals.GraphEvaluatorName
	evalLatency = "latency"
	evalJudge   = judge.Name
	evalText    = "text"
)

// UnmarshalJSON decodes each evaluation into its evaluator's result type
// (see Evaluations). Fields a type does not know are ignored, as
// encoding/json does, so a newer document still reads.
func (e *Evaluations) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*e = nil
		return nil
	}
	out := make(Evaluations, len(raw))
	for name, v := range raw {
		res, err := decodeEvaluation(name, v)
		if err != nil {
			return fmt.Errorf("evaluation %q: %w", name, err)
		}
		out[name] = res
	}
	*e = out
	return nil
}

// decodeEvaluation gives a built-in evaluator's result its type. null, and
// any other evaluator's result, stay as the JSON they are.
func decodeEvaluation(name string, raw json.RawMessage) (evals.Result, error) {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return RawEvaluation(raw), nil
	}
	switch name {
	case evalGraph:
		return decodeAs[evals.GraphResult](raw)
	case evalLatency:
		return decodeAs[evals.LatencyResult](raw)
	case evalJudge:
		return decodeAs[judge.Result](raw)
	case evalText:
		return decodeAs[evals.TextResult](raw)
	}
	return RawEvaluation(raw), nil
}

// decodeAs decodes raw into a new T; *T is the evaluator's result type.
func decodeAs[T any, PT interface {
	*T
	evals.Result
}](raw json.RawMessage) (evals.Result, error) {
	v := PT(new(T))
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, err
	}
	return v, nil
}

// RawEvaluation is the result of an evaluator this package does not know,
// as decoded JSON: it encodes to the same JSON, and has no headline numbers.
type RawEvaluation json.RawMessage

// Headline implements evals.Result.
func (RawEvaluation) Headline() map[string]float64 { return nil }

// MarshalJSON returns the JSON as it was read.
func (r RawEvaluation) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// Decode reads a coordbench.result/v2 document, as a client of the green
// agent receives it in the Result artifact. Evaluations get their types
// (see Evaluations), so the result encodes back to the same document and
// Summary renders it as it rendered the original.
func Decode(raw []byte) (*Result, error) {
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("decode result: %w", err)
	}
	if head.Schema != Schema {
		return nil, fmt.Errorf("decode result: schema %q, want %q", head.Schema, Schema)
	}
	var res Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode result: %w", err)
	}
	return &res, nil
}
