package green

import (
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/tracedata"
)

// newTaskResult fills the trace part of a task result.
func newTaskResult(td *tracedata.TraceData, rep evals.Report) report.TaskResult {
	tr := report.TaskResult{
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
