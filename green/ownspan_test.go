package green

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// TestRecorderKnowsItsOwnSpans: the recorder tells the CLIENT spans the
// green agent's provider started in a trace being collected (what the MCP
// host asks of a tool request's traceparent, docs/mcp.md#spans), and
// nothing of other traces, of spans another provider made with the same
// trace id, of SERVER spans, or of a trace no longer collected.
func TestRecorderKnowsItsOwnSpans(t *testing.T) {
	rec := NewTaskTraceRecorder(tracestore.NewStore(tracestore.Limits{}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(t.Context()) }()
	tracer := tp.Tracer("green")
	ctx, task := tracer.Start(t.Context(), "coordbench.task", trace.WithNewRoot())
	rec.track(task.SpanContext().TraceID())
	_, call := tracer.Start(ctx, "invoke_agent x", trace.WithSpanKind(trace.SpanKindClient))
	_, other := tracer.Start(t.Context(), "another trace", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient))
	// A tool request's SERVER span: its context is never sent out.
	_, server := tracer.Start(ctx, "tools/call x", trace.WithSpanKind(trace.SpanKindServer))
	// A participant's span in the task's trace, from its own provider.
	_, theirs := sdktrace.NewTracerProvider().Tracer("purple").Start(trace.ContextWithRemoteSpanContext(t.Context(), call.SpanContext()), "tools/call x")
	if rec.Started(task.SpanContext()) {
		t.Error("the task span, started before its trace was tracked, counts as started")
	}
	if !rec.Started(call.SpanContext()) {
		t.Error("the call span of a tracked trace is not known")
	}
	if rec.Started(other.SpanContext()) || rec.Started(theirs.SpanContext()) || rec.Started(server.SpanContext()) {
		t.Error("a span of an untracked trace, of another provider, or a SERVER span counts as one the recorder keeps")
	}
	call.End()
	if !rec.Started(call.SpanContext()) {
		t.Error("an ended span of a tracked trace is forgotten")
	}
	rec.untrack(task.SpanContext().TraceID())
	if rec.Started(call.SpanContext()) || rec.Tracking() != 0 {
		t.Error("an untracked trace's spans are still known")
	}
	var nilRec *TaskTraceRecorder
	if nilRec.Started(call.SpanContext()) {
		t.Error("a nil recorder knows a span")
	}
}
