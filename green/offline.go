// Package green is the assessor ("green agent"): it turns spans into
// assessed tasks. It serves A2A assessments (Server, with the OTLP/HTTP
// receiver on the same listener), whose Executor runs a scenario's tasks,
// each in a trace of its own that goes through one lifecycle (tasktrace.go:
// reserved and recorded, settled, marked assessed, closed); once the trace
// has settled its spans are vouched for, assembled and evaluated, and the
// assessment answers with one Result artifact. It also assesses OTLP span
// files offline (AssessOTLPFiles, `green assess`) through the same assembly
// and evaluators. docs/green-agent.md describes it from outside.
package green

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/report"
)

// OfflineOptions configure AssessOTLPFiles. The zero value uses the default
// store limits and the standard evaluators, with the rule-based judge.
type OfflineOptions struct {
	Limits tracestore.Limits
	// Evaluators, when set, are the evaluators run; nil builds the standard
	// ones (evals.NewRegistry) with Judge and Logger.
	Evaluators *evals.Registry
	// Judge configures the LLM judge of the standard evaluators; the zero
	// value has no key, so the rule-based judge answers.
	Judge  evals.JudgeConfig
	Config evals.Config
	// Observe, when set, wraps each evaluator run (for tracing).
	Observe evals.Observer
	// Logger receives the evaluators' warnings; nil discards them.
	Logger *slog.Logger
}

// InputError is bad input the user must fix (a file that cannot be read or
// parsed); the CLI exits with status 2 for it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// AssessOTLPFiles reads OTLP JSON files (one ExportTraceServiceRequest per
// file or per line, or Jaeger's /api/v3/traces answer), rebuilds every
// trace they hold and runs the evaluators on each. Every file is read before
// any is assessed, so a bad file fails the run before work is done.
func AssessOTLPFiles(ctx context.Context, paths []string, opts OfflineOptions) (*report.Result, error) {
	if len(paths) == 0 {
		return nil, &InputError{Err: fmt.Errorf("no OTLP files given")}
	}
	registry := opts.Evaluators
	if registry == nil {
		registry = evals.NewRegistry(evals.Options{Judge: opts.Judge, Logger: opts.Logger})
	}
	store := tracestore.NewStore(opts.Limits)
	res := &report.Result{Schema: report.Schema, Domain: "otlp", Inputs: slices.Clone(paths), Tasks: []report.TaskResult{}}
	for _, path := range paths {
		batches, err := otlpdecode.ReadOTLPJSONFile(path)
		if err != nil {
			return nil, &InputError{Err: err}
		}
		for _, td := range batches {
			spans, warnings := otlpdecode.SpansFromTraces(td, otelmap.SourceOTLP)
			for _, w := range warnings {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %s", path, w))
			}
			if added := store.Add(spans); added.Rejected > 0 {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %d spans rejected: %s", path, added.Rejected, added.Reason))
			}
		}
	}
	for _, id := range store.TraceIDs() {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("assess: %w", err)
		}
		td := assemble.Trace(id, store.Spans(id))
		rep := registry.Run(ctx, td, evals.Inputs{Config: opts.Config}, opts.Observe)
		res.Tasks = append(res.Tasks, newTaskResult(td, rep))
	}
	return res, nil
}
