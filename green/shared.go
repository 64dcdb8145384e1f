package green

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/sdkbridge"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/tracedata"
)

// The steps every assessed task goes through, whoever drives it (the demo,
// the A2A executor): a HOST span that is the root of the task's own trace,
// the wait for that trace to settle, assembly, and the evaluators.

// startTaskSpan starts task taskID's HOST span as a new root linked to the
// assessment span in ctx. Each task is a trace of its own, so its trace id
// opens exactly that task in a backend, and concurrent assessments never
// share a trace in the store.
func startTaskSpan(ctx context.Context, tracer trace.Tracer, taskID, assessmentID string, extra ...attribute.KeyValue) (context.Context, trace.Span) {
	attrs := append([]attribute.KeyValue{
		otelmap.AttrCallType.String(string(tracedata.CallHost)),
		otelmap.AttrTaskID.String(taskID),
		otelmap.AttrAssessmentID.String(assessmentID),
	}, extra...)
	return tracer.Start(ctx, otelmap.SpanTask,
		trace.WithNewRoot(),
		trace.WithLinks(trace.LinkFromContext(ctx)),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrs...))
}

// traceAssessor turns one task's ended span into a TaskResult: it waits
// for the task's trace to settle in the store, assembles it, forgets it,
// and runs the evaluators.
type traceAssessor struct {
	evaluators *evals.Registry
	telemetry  *EvalTelemetry
	log        *slog.Logger
	// conventions is the user's convention map, nil for none.
	conventions *assemble.Conventions
}

// settleOptions say when a task's trace is complete
// (docs/participants.md#when-a-tasks-trace-is-complete;
// [tracestore.SettleOptions]): every call Await names answered, then Quiet
// without new spans, at most MaxWait.
type settleOptions struct {
	Quiet   time.Duration
	MaxWait time.Duration
	Await   *tracestore.Await
}

// assess settles, assembles and evaluates the trace of task, whose span
// has ended. Evaluator spans are children of the ended task span (ctx
// gains it), so a backend shows the evaluation inside the task's trace;
// they start after the trace was assembled, so they are never part of
// what is assessed. The store then forgets the trace's spans and counts
// those that arrive later (tracestore.Store.MarkAssessed). Spans the
// assessor cannot vouch for are set aside before assembly (provenance.go).
// warning is set when the trace was not complete at the maximum wait, or
// spans were set aside; the evaluators
// learn it too (evals.Inputs.Collection), and silent names the callees
// none of whose awaited calls was answered. Only ctx ending is an error.
func (a *traceAssessor) assess(ctx context.Context, task trace.Span, tt *openTrace, taskID string, settle settleOptions, in evals.Inputs) (tr report.TaskResult, silent []string, warning string, err error) {
	traceID, root := task.SpanContext().TraceID(), task.SpanContext().SpanID()
	st, err := tt.settle(ctx, tracestore.SettleOptions{Quiet: settle.Quiet, MaxWait: settle.MaxWait, Await: settle.Await})
	if err != nil {
		return report.TaskResult{}, nil, "", fmt.Errorf("task %s: %w", taskID, err)
	}
	refused := st.Refused
	in.Collection = &evals.Collection{Settled: st.Complete, MaxWaitMS: settle.MaxWait.Milliseconds(), RefusedSpans: refused}
	if !st.Complete {
		for _, c := range st.Unanswered {
			in.Collection.Unanswered = append(in.Collection.Unanswered, c.Caller+" -> "+c.Callee)
		}
		warning = fmt.Sprintf("task %s: trace %s was not complete after the maximum wait of %s; assessed with the %d spans held",
			taskID, traceID, settle.MaxWait, len(st.Spans))
		if n := len(st.Unanswered); n > 0 {
			warning += fmt.Sprintf("; %d of %d awaited calls had no span of the callee's: %s (see docs/participants.md)",
				n, st.Awaited, strings.Join(in.Collection.Unanswered, ", "))
		}
	}
	// Traces that continue the task's trace (a participant whose runtime
	// starts a trace per message, linked back) are read with it, as green
	// assess reads them (joined.go).
	read, readSpans, capped := tt.fragments(st.Spans)
	all := st.Spans
	if len(read) > 0 {
		all = append(slices.Clip(st.Spans), readSpans...)
	}
	if capped {
		warning = joinWarning(warning, fmt.Sprintf("task %s: more than %d traces link into trace %s; the first %d were joined to it, the others are not assessed with it",
			taskID, maxLiveJoined, traceID, maxLiveJoined))
	}
	spans, aside, asideWarning := vouchedSpans(taskID, all, root)
	if aside != nil {
		in.Collection.SetAsideOutside = aside.Outside
	}
	if asideWarning != "" {
		warning = joinWarning(warning, asideWarning)
		if a.log != nil {
			a.log.Warn("spans set aside", "task", taskID, "trace_id", traceID.String(), "set_aside", aside.Spans,
				"impersonating", aside.Impersonating, "outside", aside.Outside)
		}
	}
	// A trace read is joined when provenance kept a span of it.
	joined := slices.DeleteFunc(slices.Clone(read), func(id trace.TraceID) bool {
		return !slices.ContainsFunc(spans, func(sp otelmap.Span) bool { return sp.TraceID == id })
	})
	td := assemble.TraceWith(traceID, spans, assemble.Options{Conventions: a.conventions, Joined: joined})
	st.markAssessed()
	tt.markJoined(read)
	if a.log != nil {
		a.log.Debug("task trace settled", "task", taskID, "trace_id", traceID.String(), "complete", st.Complete,
			"awaited_calls", st.Awaited, "unanswered_calls", len(st.Unanswered), "waited", st.Waited, "spans", len(st.Spans))
	}

	var observe evals.Observer
	if a.telemetry != nil {
		observe = a.telemetry.Observer(taskID)
	}
	rep := a.evaluators.Run(trace.ContextWithSpan(ctx, task), td, in, observe)
	tr = report.NewTaskResult(td, rep)
	tr.TaskID = taskID
	tr.Outcome = in.Outcome
	tr.RefusedSpans = refused
	tr.SetAside = aside
	return tr, st.Silent, warning, nil
}

// joinWarning appends w to warning, "; " between.
func joinWarning(warning, w string) string {
	if warning == "" {
		return w
	}
	return warning + "; " + w
}

// lateSpans fills each task's LateSpans from the store, and returns a
// warning when spans came late.
func lateSpans(store *tracestore.Store, res *report.Result) string {
	spans, tasks := 0, 0
	for i := range res.Tasks {
		t := &res.Tasks[i]
		id, err := trace.TraceIDFromHex(t.TraceID)
		if err != nil {
			continue
		}
		if n := store.LateSpans(id); n > 0 {
			t.LateSpans = n
			spans += n
			tasks++
		}
	}
	if spans == 0 {
		return ""
	}
	return fmt.Sprintf("%d spans of %d of %d tasks arrived after their trace was assessed, and the verdicts were made without them "+
		"(late_spans per task): a participant's exporter sends later than the maximum wait (settle_max_wait_ms); see docs/participants.md",
		spans, tasks, len(res.Tasks))
}

// scoreResult fills the leaderboard fields from the tasks' outcomes: Score
// is 100 × the mean outcome score (0..1; a task without an outcome counts
// 0), PassRate the share of tasks whose outcome succeeded, TimeUsed the
// seconds since started. With no tasks every number is 0.
func scoreResult(res *report.Result, started time.Time) {
	sum, passed := 0.0, 0
	for _, t := range res.Tasks {
		if t.Outcome == nil {
			continue
		}
		s := t.Outcome.Score
		if math.IsNaN(s) {
			s = 0
		}
		sum += math.Max(0, math.Min(1, s))
		if t.Outcome.Success {
			passed++
		}
	}
	score, passRate, maxScore := 0.0, 0.0, 100.0
	if n := len(res.Tasks); n > 0 {
		score = round(100*sum/float64(n), 2)
		passRate = round(float64(passed)/float64(n), 4)
	}
	used := round(time.Since(started).Seconds(), 3)
	res.Score, res.MaxScore, res.PassRate, res.TimeUsed = &score, &maxScore, &passRate, &used
}

// recordSpanError marks span failed, with the error.type the conventions
// ask of a failed operation.
func recordSpanError(span trace.Span, err error, errType string) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(otelmap.AttrErrorType.String(errType))
}

// round rounds x to n decimals, for leaderboard-friendly numbers.
func round(x float64, n int) float64 {
	p := math.Pow(10, float64(n))
	return math.Round(x*p) / p
}

// TaskTraceRecorder is the in-process road of spans
// (docs/design.md#three-roads-into-one-store) for a green agent that runs for
// long: a span processor that records into the store only the spans of task
// traces an assessment is collecting. Every other span of the green agent's
// provider (the server spans of A2A requests, the assessment span, card
// look-ups, evaluator spans that end after their task's trace was assembled)
// would otherwise become a trace in the store that nobody assesses or removes,
// and crowd out the traces that matter under the store's MaxTraces limit. Those
// spans still reach an OTLP backend through the provider's exporters.
type TaskTraceRecorder struct {
	rec *sdkbridge.Recorder

	mu sync.RWMutex
	// active holds the traces being recorded, each with the CLIENT and
	// PRODUCER spans the provider started in it (Started).
	active map[trace.TraceID]map[trace.SpanID]struct{}
}

var _ sdktrace.SpanProcessor = (*TaskTraceRecorder)(nil)

// NewTaskTraceRecorder records into store. Register it on the green
// agent's tracer provider, and give it to the executor (ExecutorOptions).
func NewTaskTraceRecorder(store *tracestore.Store) *TaskTraceRecorder {
	return &TaskTraceRecorder{rec: sdkbridge.NewRecorder(store), active: map[trace.TraceID]map[trace.SpanID]struct{}{}}
}

// track starts recording trace id; untrack stops it (a nil recorder does
// nothing, and untracking twice is harmless).
func (r *TaskTraceRecorder) track(id trace.TraceID) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active[id] == nil {
		r.active[id] = map[trace.SpanID]struct{}{}
	}
}

func (r *TaskTraceRecorder) untrack(id trace.TraceID) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.active, id)
}

// Tracking reports how many traces are being recorded.
func (r *TaskTraceRecorder) Tracking() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.active)
}

// OnStart implements sdktrace.SpanProcessor: it notes the id of a CLIENT
// or PRODUCER span when its trace is being collected (Started); only ended
// spans are recorded. Those are the spans whose context the green agent
// sends out (the traceparent of its A2A requests); the many SERVER spans
// a participant's requests cause are not kept, so the set stays as small
// as the green agent's own calls.
func (r *TaskTraceRecorder) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	if k := s.SpanKind(); k != trace.SpanKindClient && k != trace.SpanKindProducer {
		return
	}
	sc := s.SpanContext()
	r.mu.Lock()
	defer r.mu.Unlock()
	if own, ok := r.active[sc.TraceID()]; ok {
		own[sc.SpanID()] = struct{}{}
	}
}

// Started reports whether the provider started CLIENT or PRODUCER span sc
// in a trace being collected: the assessor's own span, whose context a
// participant may have received. The MCP host asks it of a traceparent a
// tool request carries (mcpserve.Options.OwnSpan).
func (r *TaskTraceRecorder) Started(sc trace.SpanContext) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.active[sc.TraceID()][sc.SpanID()]
	return ok
}

// OnEnd records s when its trace is being collected.
func (r *TaskTraceRecorder) OnEnd(s sdktrace.ReadOnlySpan) {
	r.mu.RLock()
	_, ok := r.active[s.SpanContext().TraceID()]
	r.mu.RUnlock()
	if ok {
		r.rec.OnEnd(s)
	}
}

// Shutdown implements sdktrace.SpanProcessor.
func (r *TaskTraceRecorder) Shutdown(ctx context.Context) error { return r.rec.Shutdown(ctx) }

// ForceFlush implements sdktrace.SpanProcessor.
func (r *TaskTraceRecorder) ForceFlush(ctx context.Context) error { return r.rec.ForceFlush(ctx) }
