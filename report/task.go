package report

import (
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/tracedata"
)

// NewTaskResult fills the trace part of a task result from an assembled
// trace and its evaluators' report: what `green assess`, the A2A
// assessor and the Collector connector each record per trace, so the three
// give the same JSON for the same trace.
func NewTaskResult(td *tracedata.TraceData, rep evals.Report) TaskResult {
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
