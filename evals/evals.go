// Package evals scores one interaction trace: an Evaluator reads a
// tracedata.TraceData (plus the results of evaluators that ran before it and
// the task's outcome) and returns a typed, JSON-encodable result. The graph,
// latency and text evaluators live here, the LLM judge in evals/judge (the
// one package that speaks to an LLM); NewRegistry builds a registry of them
// for one executor, with the judge and the logger passed in, and the caller
// picks evaluators per request with Config. The package holds no mutable
// state of its own.
//
// evals imports tracedata only: no OpenTelemetry, no A2A, no LLM client.
// Whoever runs the evaluators wraps them in spans through an Observer.
package evals

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/coordbench/coordbench/tracedata"
)

// Evaluator scores one trace.
type Evaluator interface {
	// Name is the result's key in the JSON ("graph", "latency", ...).
	Name() string
	// Tier orders evaluators: lower tiers run first, and later tiers see
	// their results (1 graph; 2 latency; 3 judge and text).
	Tier() int
	Evaluate(ctx context.Context, trace *tracedata.TraceData, in Inputs) (Result, error)
}

// Result is an evaluator's output. It must encode with encoding/json.
type Result interface {
	// Headline returns the few numbers worth a span attribute or a metric,
	// keyed by metric name. Keys must be a fixed set per evaluator, so
	// metric cardinality stays bounded.
	Headline() map[string]float64
}

// Inputs is what an evaluator may read besides the trace.
type Inputs struct {
	// Prior holds the results of the evaluators that already ran, by name.
	Prior map[string]Result
	// Outcome is whether the task itself succeeded; nil when unknown.
	Outcome *Outcome
	// Config is the request's evaluator configuration.
	Config Config
	// Participants are the agent names the request named, so an agent that
	// took no part still counts (as an isolated node).
	Participants []string
	// Collection says how the trace's spans were collected (whether the
	// wait for them ended complete); nil when unknown. It weighs in the
	// evidence for the graph's verdict (JudgeEvidence).
	Collection *Collection
}

// Outcome is the task's result as the scenario judged it.
type Outcome struct {
	Success bool `json:"success"`
	// Score is the scenario's 0..1 score for the task.
	Score float64 `json:"score"`
	// Summary says in words what was expected and what came back.
	Summary string `json:"summary"`
	// Details are scenario-specific.
	Details map[string]any `json:"details,omitempty"`
}

// Config switches evaluators and graph metrics per request. The zero value
// runs every registered evaluator with every metric.
type Config struct {
	// Evaluators maps an evaluator name to on/off; names not listed are on.
	Evaluators map[string]bool `json:"evaluators,omitempty"`
	// GraphMetrics maps a graph metric name to on/off; names not listed are
	// on.
	GraphMetrics map[string]bool `json:"graph_metrics,omitempty"`
	// IncludeVirtualNodes puts virtual callers ("user", the assessor) into
	// the graph metrics; by default they are drawn but not measured.
	IncludeVirtualNodes bool `json:"include_virtual_nodes,omitempty"`
	// WithoutReasons leaves out the evidence's reasons (JudgeEvidence),
	// text only a reader of the result sees: the level, and so the
	// graph's label, is as without it. For a caller that reads the
	// results' values alone (the collector connector in a metrics
	// pipeline); never set from a request.
	WithoutReasons bool `json:"-"`
}

// Enabled reports whether the evaluator called name is on.
func (c Config) Enabled(name string) bool {
	on, listed := c.Evaluators[name]
	return !listed || on
}

// MetricEnabled reports whether the graph metric called name is on.
func (c Config) MetricEnabled(name string) bool {
	on, listed := c.GraphMetrics[name]
	return !listed || on
}

// Options configure NewRegistry.
type Options struct {
	// Judge is the tier-3 judge evaluator (evals/judge.New builds it, with
	// its LLM configuration and chat observer); nil leaves the registry
	// without a judge.
	Judge Evaluator
	// Logger receives the warnings of evaluator runs (a failed evaluator);
	// nil discards them.
	Logger *slog.Logger
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// Registry holds evaluators in tier order. NewRegistry returns one holding
// the standard evaluators; the zero value is an empty registry that logs
// nothing.
type Registry struct {
	log        *slog.Logger
	mu         sync.RWMutex
	evaluators []Evaluator
}

// NewRegistry returns a registry of the standard evaluators, in run order:
// graph (tier 1), latency (tier 2), opts.Judge and text (tier 3; the judge
// first). The judge sees the graph and latency results. Each executor
// builds its own, so two in one process share nothing.
func NewRegistry(opts Options) *Registry {
	evaluators := []Evaluator{GraphEvaluator{}, latencyEvaluator{}}
	if opts.Judge != nil {
		evaluators = append(evaluators, opts.Judge)
	}
	return &Registry{
		log:        opts.logger(),
		evaluators: append(evaluators, textEvaluator{}),
	}
}

// Register adds e. A second evaluator of the same name is an error, and so
// is a name that is not a lower-case identifier ("graph", "text_sim"): it
// keys the result and names spans and attributes.
func (r *Registry) Register(e Evaluator) error {
	if err := checkName(e.Name()); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, have := range r.evaluators {
		if have.Name() == e.Name() {
			return fmt.Errorf("evaluator %q registered twice", e.Name())
		}
	}
	r.evaluators = append(r.evaluators, e)
	slices.SortStableFunc(r.evaluators, func(a, b Evaluator) int { return a.Tier() - b.Tier() })
	return nil
}

// Evaluators returns the registered evaluators in run order.
func (r *Registry) Evaluators() []Evaluator {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.evaluators)
}

// Names returns the registered evaluator names in run order.
func (r *Registry) Names() []string {
	var names []string
	for _, e := range r.Evaluators() {
		names = append(names, e.Name())
	}
	return names
}

// Observer wraps each evaluator run, for tracing: it is called before the
// evaluator starts and returns the context to run it in and a function to
// call with its result.
type Observer func(ctx context.Context, e Evaluator) (context.Context, func(Result, error))

// Report is the outcome of running the evaluators on one trace.
type Report struct {
	// Results by evaluator name.
	Results map[string]Result
	// Errors by evaluator name, for evaluators that failed; the others still
	// ran.
	Errors map[string]string
}

// evaluate runs one evaluator: a panic in it (an evaluator is an extension
// point; the trace it reads is the participants' doing) is that
// evaluator's error, logged with the stack, and the others still run.
func (r *Registry) evaluate(ctx context.Context, e Evaluator, trace *tracedata.TraceData, in Inputs) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			if r.log != nil {
				r.log.ErrorContext(ctx, "evaluator panicked", "evaluator", e.Name(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
			res, err = nil, fmt.Errorf("evaluator %s failed unexpectedly (a panic: %v)", e.Name(), p)
		}
	}()
	return e.Evaluate(ctx, trace, in)
}

// Run runs the enabled evaluators of r on trace in tier order, each seeing
// the results of those before it. An evaluator's error is recorded and the
// rest still run.
func (r *Registry) Run(ctx context.Context, trace *tracedata.TraceData, in Inputs, observe Observer) Report {
	rep := Report{Results: map[string]Result{}, Errors: map[string]string{}}
	var traceID string
	if trace != nil {
		traceID = trace.TraceID
	}
	for _, e := range r.Evaluators() {
		if !in.Config.Enabled(e.Name()) {
			continue
		}
		if err := ctx.Err(); err != nil {
			rep.Errors[e.Name()] = fmt.Sprintf("not run: %v", err)
			continue
		}
		in.Prior = rep.Results
		runCtx, done := ctx, func(Result, error) {}
		if observe != nil {
			runCtx, done = observe(ctx, e)
		}
		res, err := r.evaluate(runCtx, e, trace, in)
		done(res, err)
		if err != nil {
			if r.log != nil {
				r.log.WarnContext(ctx, "evaluator failed", "evaluator", e.Name(), "trace_id", traceID, "err", err)
			}
			rep.Errors[e.Name()] = err.Error()
			continue
		}
		rep.Results[e.Name()] = res
	}
	return rep
}
