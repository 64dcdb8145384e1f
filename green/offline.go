// Package green is the assessor ("green agent"): it turns spans into
// assessed tasks. It serves A2A assessments (Server, with the OTLP/HTTP
// receiver on the same listener), whose Executor runs a scenario's tasks,
// each in a trace of its own that goes through one lifecycle (tasktrace.go:
// reserved and recorded, settled, marked assessed, closed); once the trace
// has settled its spans are vouched for, assembled and evaluated, and the
// assessment answers with one Result artifact. It also assesses OTLP span
// files (AssessOTLPFiles) and traces stored in Jaeger (AssessJaeger)
// offline, `green assess`, through the same assembly and evaluators. docs/green-agent.md describes it from outside.
package green

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/tracedata"
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
	Judge  llmconfig.Config
	Config evals.Config
	// Observe, when set, wraps each evaluator run (for tracing).
	Observe evals.Observer
	// Logger receives the evaluators' warnings; nil discards them.
	Logger *slog.Logger
	// Conventions, when set, is a user's convention map, read by trace
	// assembly before the built-in recognizers (docs/trace-assembly.md).
	Conventions *assemble.Conventions
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
	registry := opts.registry()
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
	ids := store.TraceIDs()
	held := make(map[trace.TraceID][]otelmap.Span, len(ids))
	spansOf := func(id trace.TraceID) []otelmap.Span {
		spans, ok := held[id]
		if !ok {
			spans = store.Spans(id)
			held[id] = spans
		}
		return spans
	}
	groups := joinGroups(ids, spansOf)
	traces := make([]assembledTrace, len(groups))
	for k, g := range groups {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("assess: %w", err)
		}
		traces[k] = opts.assembleJoined(g, spansOf)
	}
	tasks, err := opts.evaluateTraces(ctx, registry, traces, 1)
	if err != nil {
		return nil, err
	}
	res.Tasks = tasks
	return res, nil
}

// registry is the evaluators opts asks for.
func (opts OfflineOptions) registry() *evals.Registry {
	if opts.Evaluators != nil {
		return opts.Evaluators
	}
	return evals.NewRegistry(evals.Options{
		Judge:  judge.New(judge.Options{Config: judge.Config{LLM: opts.Judge}, Logger: opts.Logger}),
		Logger: opts.Logger,
	})
}

// assembledTrace is one trace assembled, and what the checks across
// traces read of its spans: the one path of every offline source (files,
// Jaeger) from spans to evaluation.
type assembledTrace struct {
	td    *tracedata.TraceData
	convs []string
	// detached counts the spans cut off from the trace's root
	// (tracestore.DetachedSpans): a trace at rest can have lost spans on
	// their way (a collector that died, a dropped export) as one in a
	// Collector can, and says so the same way.
	detached int
}

func (opts OfflineOptions) assembleTrace(id trace.TraceID, spans []otelmap.Span) assembledTrace {
	return assembledTrace{
		td:       assemble.TraceWith(id, spans, assemble.Options{Conventions: opts.Conventions}),
		convs:    conversationsOf(spans),
		detached: tracestore.DetachedSpans(spans),
	}
}

// evaluateTraces runs the evaluators on each trace, told what the traces
// say of each other (a conversation split across them), workers traces at
// a time; the tasks come in the order of traces.
func (opts OfflineOptions) evaluateTraces(ctx context.Context, registry *evals.Registry, traces []assembledTrace, workers int) ([]report.TaskResult, error) {
	tds := make([]*tracedata.TraceData, len(traces))
	convs := make([][]string, len(traces))
	detached := make([]int, len(traces))
	for k, t := range traces {
		tds[k], convs[k], detached[k] = t.td, t.convs, t.detached
	}
	split := splitConversations(tds, convs)
	tasks := make([]report.TaskResult, len(traces))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for k := range next {
				in := evals.Inputs{Config: opts.Config}
				if s, d := split[k], detached[k]; s != nil || d > 0 {
					in.Collection = &evals.Collection{Settled: true, Split: s, Detached: d}
				}
				tasks[k] = report.NewTaskResult(tds[k], registry.Run(ctx, tds[k], in, opts.Observe))
			}
		})
	}
	for k := range tds {
		if ctx.Err() != nil {
			break
		}
		next <- k
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("assess: %w", err)
	}
	return tasks, nil
}

// conversationsOf returns the gen_ai.conversation.id values the spans
// carry, sorted, without repeats.
func conversationsOf(spans []otelmap.Span) []string {
	var out []string
	for i := range spans {
		for _, kv := range spans[i].Attrs {
			if kv.Key == otelmap.AttrGenAIConversationID && kv.Value.Type() == attribute.STRING && kv.Value.AsString() != "" {
				out = append(out, kv.Value.AsString())
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// splitConversations finds the traces that hold only part of a
// conversation's agents: a framework that runs each agent as the root of a
// trace of its own (Mastra's agent network) leaves one agent per trace,
// tied together only by gen_ai.conversation.id. A trace of a conversation
// seen in several traces, lacking some agent named in another of them, is
// a fragment: no single trace shows how the agents coordinated
// (evals.SplitConversation). Traces of one conversation that all name the
// same agents (one agent's turns, a trace per turn) are no fragments.
func splitConversations(tds []*tracedata.TraceData, convs [][]string) map[int]*evals.SplitConversation {
	byConv := map[string][]int{}
	for k, cs := range convs {
		for _, c := range cs {
			byConv[c] = append(byConv[c], k)
		}
	}
	agentsOf := func(td *tracedata.TraceData) []string {
		var out []string
		for _, a := range td.Agents {
			if a.Measured() {
				out = append(out, a.Name)
			}
		}
		return out
	}
	out := map[int]*evals.SplitConversation{}
	for _, c := range slices.Sorted(maps.Keys(byConv)) {
		traces := byConv[c]
		if len(traces) < 2 {
			continue
		}
		var all []string
		for _, k := range traces {
			all = append(all, agentsOf(tds[k])...)
		}
		slices.Sort(all)
		all = slices.Compact(all)
		for _, k := range traces {
			own := agentsOf(tds[k])
			var missing []string
			for _, a := range all {
				if !slices.Contains(own, a) {
					missing = append(missing, a)
				}
			}
			if len(missing) > 0 && out[k] == nil {
				out[k] = &evals.SplitConversation{Conversation: c, Traces: len(traces), Agents: all, Missing: missing}
			}
		}
	}
	return out
}
