package mcpserve

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/mcpcall"
)

// The parent of a request's server span (docs/mcp.md#spans). An endpoint is
// opened for one task, so every request to it belongs to that task's trace,
// whatever the client sends:
//
//   - a traceparent in params._meta of the task's own trace makes the server
//     span the child of the span it names (the participant's client span), and
//     the span is recorded with the task's trace flags, so that a client cannot
//     unsample the task's record by sending flags 00;
//   - no traceparent (the MCP TypeScript SDK never sends one, the Python SDK
//     only under a live OpenTelemetry context), one that does not parse, one
//     of another trace (another task's: a participant grafting its calls into
//     another participant's trace), or one naming a span of the green agent's
//     own (Options.OwnSpan: the traceparent of the A2A request the participant
//     answers, forwarded as it came, which an OpenTelemetry API without an SDK
//     does in Go and JavaScript; under the assessor's call span the assembled
//     graph would lose the participant) makes it the child of the task's span.
//
// AttrTraceContext says which of these happened.

// AttrTraceContext on a server span says where its parent came from: one of
// the TraceContext values.
const AttrTraceContext = attribute.Key("coordbench.mcp.trace_context")

// Values of AttrTraceContext.
const (
	// TraceContextClient: the request's traceparent, of the task's trace.
	TraceContextClient = "client"
	// TraceContextAbsent: the request carried no traceparent; the parent is
	// the task's span.
	TraceContextAbsent = "absent"
	// TraceContextMalformed: a traceparent that is no valid W3C trace
	// context (or not a string); the parent is the task's span.
	TraceContextMalformed = "malformed"
	// TraceContextOtherTrace: a valid traceparent of another trace than the
	// task's; the parent is the task's span.
	TraceContextOtherTrace = "other_trace"
	// TraceContextAssessorSpan: a traceparent naming one of the green
	// agent's own spans; the parent is the task's span.
	TraceContextAssessorSpan = "assessor_span"
)

// keyTraceparent is the W3C header's name, the key in params._meta.
const keyTraceparent = "traceparent"

// serverParent returns ctx with the parent of the server span of a request
// to the endpoint of the task whose span is task, and the AttrTraceContext
// value; own tells the green agent's spans (nil: only task). An endpoint
// opened with no span (a scenario's test) keeps the client's context as it
// comes, as any MCP server would.
func serverParent(ctx context.Context, task trace.SpanContext, own func(trace.SpanContext) bool, p mcp.Params) (context.Context, string) {
	client := trace.SpanContextFromContext(mcpcall.Extract(context.Background(), p))
	how := TraceContextAbsent
	switch {
	case client.IsValid() && client.TraceID() == task.TraceID() && (client.SpanID() == task.SpanID() || own != nil && own(client)):
		how = TraceContextAssessorSpan
	case client.IsValid() && client.TraceID() == task.TraceID():
		how = TraceContextClient
	case client.IsValid():
		how = TraceContextOtherTrace
	case hasTraceparent(p):
		how = TraceContextMalformed
	}
	switch {
	case !task.IsValid():
		if client.IsValid() {
			return trace.ContextWithRemoteSpanContext(ctx, client), how
		}
		return ctx, how
	case how == TraceContextClient:
		return trace.ContextWithRemoteSpanContext(ctx, client.WithTraceFlags(task.TraceFlags())), how
	}
	return trace.ContextWithSpanContext(ctx, task), how
}

// hasTraceparent reports whether the request's _meta has a traceparent key,
// whatever its value.
func hasTraceparent(p mcp.Params) bool {
	if mcpcall.Absent(p) {
		return false
	}
	_, ok := p.GetMeta()[keyTraceparent]
	return ok
}
