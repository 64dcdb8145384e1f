package a2acall

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/url"
	"strconv"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/extension"
	"github.com/coordbench/coordbench/tracedata"
)

// This file: the call spans (see the package doc for their shape). Send
// starts and ends the invoke_agent span; block, stream and poll wrap each
// a2a-go call in its A2A method span (a2aSpan, methodSpan.end); the HTTP
// transport makes the POST span (httpclient.go). The Traceability Extension steps a
// participant returns become spans under invoke_agent here too.
//
// The A2A method span is not an a2aclient.CallInterceptor, although a2a-go
// offers that extension point: an interceptor's After runs once per event
// of a stream and never when the stream ends or the caller stops reading
// it, so it cannot end a streaming call's span; and the span's a2a.task.id,
// a2a.task.state and (for GetTask) gen_ai.conversation.id come from the
// whole answer gathered so far, which the interceptor does not see. The
// span would have to travel back to the caller through the context to be
// ended there: two places instead of one, for the same span.

// instrumentationName is the tracer's instrumentation scope.
const instrumentationName = "github.com/coordbench/coordbench/a2acall"

// methodSpan is the A2A method span of one a2a-go call. Its attributes
// are set once, when it ends, and only when it records: a span that nobody
// records costs its start and end alone. (A sampler therefore sees only its
// name and kind; coordbench samples by parent.)
type methodSpan struct {
	span                         trace.Span
	method, messageID, contextID string
}

// a2aSpan starts the A2A client span of one method; with NoTransportSpans
// it returns ctx as it is and a span that records nothing.
func (m *Messenger) a2aSpan(ctx context.Context, method, messageID, contextID string) (context.Context, methodSpan) {
	if m.opts.NoTransportSpans || skipSpan(m.noopTracer, ctx) {
		return ctx, methodSpan{span: noopSpan}
	}
	ctx, span := m.tracer.Start(ctx, method, m.asClient...)
	return ctx, methodSpan{span: span, method: method, messageID: messageID, contextID: contextID}
}

// end ends the span with what the answer gathered so far says: task id and
// state, the conversation, the error.
func (s methodSpan) end(p *participant, col *collector, err error) {
	if !s.span.IsRecording() {
		s.span.End()
		return
	}
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs,
		otelmap.AttrA2AMethodName.String(s.method),
		otelmap.AttrA2AProtocolVersion.String(p.protocol))
	if s.messageID != "" {
		attrs = append(attrs, otelmap.AttrA2AMessageID.String(s.messageID))
	}
	if col.taskID != "" {
		attrs = append(attrs, otelmap.AttrA2ATaskID.String(col.taskID))
	}
	if col.state != a2a.TaskStateUnspecified {
		attrs = append(attrs, otelmap.AttrA2ATaskState.String(wireState(col.state, p.legacy)))
	}
	if conv := cmp.Or(col.contextID, s.contextID); conv != "" {
		attrs = append(attrs, otelmap.AttrGenAIConversationID.String(conv))
	}
	if err != nil {
		attrs = append(attrs, failSpan(s.span, err, classify(err)))
	}
	s.span.SetAttributes(attrs...)
	s.span.End()
}

// recordExtension turns the Traceability Extension payloads of an answer
// into spans under the invoke_agent span (ctx's span) and stores them. The
// payload is the participant's word, so a malformed one is logged and
// ignored: it costs the trace those steps, not the call.
func (m *Messenger) recordExtension(ctx context.Context, p *participant, metas []map[string]any) int {
	if len(metas) == 0 {
		return 0
	}
	parent := trace.SpanContextFromContext(ctx)
	seen := make(map[trace.SpanID]struct{})
	var spans []otelmap.Span
	for _, meta := range metas {
		rt, err := tracedata.ResponseTraceFromMetadata(meta)
		if err == nil && rt != nil {
			var got []otelmap.Span
			got, err = extension.SpansFromResponseTrace(rt, parent, p.name)
			for _, sp := range got {
				if _, dup := seen[sp.SpanID]; !dup {
					seen[sp.SpanID] = struct{}{}
					spans = append(spans, sp)
				}
			}
		}
		if err != nil {
			m.log.Warn("participant returned a malformed traceability extension payload; its steps are ignored",
				"participant", p.url, "agent", p.name, "err", err)
		}
	}
	if len(spans) == 0 {
		return 0
	}
	if m.store == nil {
		if m.opts.OnExtensionSpans != nil {
			m.opts.OnExtensionSpans(ctx, spans)
		} else {
			m.log.Debug("traceability extension steps dropped: the messenger has no store", "participant", p.url, "steps", len(spans))
		}
		return len(spans)
	}
	if res := m.store.Add(spans); res.Rejected > 0 {
		m.log.Warn("traceability extension spans not stored", "participant", p.url, "rejected", res.Rejected, "reason", res.Reason)
	}
	if m.opts.OnExtensionSpans != nil {
		m.opts.OnExtensionSpans(ctx, spans)
	}
	return len(spans)
}

// serverAttrs are server.address and server.port of a participant URL, the
// port defaulting to the scheme's.
func serverAttrs(base string) []attribute.KeyValue {
	u, err := url.Parse(base)
	if err != nil {
		return nil
	}
	attrs := []attribute.KeyValue{otelmap.AttrServerAddress.String(u.Hostname())}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		port = 80
		if u.Scheme == "https" {
			port = 443
		}
	}
	return append(attrs, otelmap.AttrServerPort.Int(port))
}

// classify gives error.type a low-cardinality value.
func classify(err error) string {
	var opErr *net.OpError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	// Before the connection case: a refused host fails in the dialer.
	case errors.Is(err, ErrNotAllowed):
		return "not_allowed"
	case timeoutErr(err):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &opErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection"
	case errors.Is(err, ErrNoResult):
		return "no_result"
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr):
		return "protocol"
	}
	return "_OTHER"
}

// failSpan records err on span and sets its status; it returns the
// error.type attribute the conventions ask of a failed operation, for the
// caller to set with the span's other attributes.
func failSpan(span trace.Span, err error, errType string) attribute.KeyValue {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	return otelmap.AttrErrorType.String(errType)
}

func timeoutErr(err error) bool { return errors.Is(err, context.DeadlineExceeded) }

// noopSpan stands in for a span the Messenger does not make (without
// transport spans, or under a no-op tracer); ending it does nothing.
var noopSpan = trace.SpanFromContext(context.Background())

// isNoopTracer tells a tracer whose spans never record: the no-op
// TracerProvider's (go.opentelemetry.io/otel/trace/noop), which is how
// coordbench turns tracing off.
func isNoopTracer(t trace.Tracer) bool {
	_, ok := t.(noop.Tracer)
	return ok
}

// skipSpan tells whether a span to be started in ctx can be left unmade:
// under a no-op tracer whose parent does not record, Start would return
// the parent's span context in a non-recording span and a context holding
// it, which is what ctx already says for every use (traceparent, the
// Traceability Extension steps' parent). Skipping it saves the context,
// the options and, for the caller, the attributes it would pass. A
// recording parent (another provider's span) still gets its no-op child,
// so that ending the child never ends the parent.
func skipSpan(noopTracer bool, ctx context.Context) bool {
	return noopTracer && !trace.SpanFromContext(ctx).IsRecording()
}
