package a2acall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// This file: the call spans (see the package doc for their shape). Send
// starts and ends the invoke_agent span; block, stream and poll wrap each
// a2a-go call in its A2A method span (a2aSpan, endA2ASpan); otelhttp makes
// the POST span (transport.go). The Traceability Extension steps a
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

// a2aSpan starts the A2A client span of one method; with NoTransportSpans
// it returns ctx as it is and a span that records nothing.
func (m *Messenger) a2aSpan(ctx context.Context, method string, p *participant, messageID, contextID string) (context.Context, trace.Span) {
	if m.opts.NoTransportSpans {
		return ctx, noopSpan
	}
	attrs := []attribute.KeyValue{
		otelmap.AttrA2AMethodName.String(method),
		otelmap.AttrA2AProtocolVersion.String(p.protocol),
	}
	if messageID != "" {
		attrs = append(attrs, otelmap.AttrA2AMessageID.String(messageID))
	}
	if contextID != "" {
		attrs = append(attrs, otelmap.AttrGenAIConversationID.String(contextID))
	}
	return m.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

func (m *Messenger) endA2ASpan(span trace.Span, p *participant, col *collector, err error) {
	if col.taskID != "" {
		span.SetAttributes(otelmap.AttrA2ATaskID.String(col.taskID))
	}
	if col.state != a2a.TaskStateUnspecified {
		span.SetAttributes(otelmap.AttrA2ATaskState.String(wireState(col.state, p.legacy)))
	}
	if col.contextID != "" {
		span.SetAttributes(otelmap.AttrGenAIConversationID.String(col.contextID))
	}
	if err != nil {
		failSpan(span, err, classify(err))
	}
	span.End()
}

// recordExtension turns the Traceability Extension payloads of an answer
// into spans under the invoke_agent span and stores them. The payload is the
// participant's word, so a malformed one is logged and ignored: it costs the
// trace those steps, not the call.
func (m *Messenger) recordExtension(ctx context.Context, parent trace.SpanContext, p *participant, metas []map[string]any) int {
	seen := make(map[trace.SpanID]struct{})
	var spans []otelmap.Span
	for _, meta := range metas {
		rt, err := tracedata.ResponseTraceFromMetadata(meta)
		if err == nil && rt != nil {
			var got []otelmap.Span
			got, err = otelmap.SpansFromResponseTrace(rt, parent, p.name)
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

// failSpan marks span failed with the error.type the conventions ask of a
// failed operation.
func failSpan(span trace.Span, err error, errType string) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(otelmap.AttrErrorType.String(errType))
}

func timeoutErr(err error) bool { return errors.Is(err, context.DeadlineExceeded) }

// dataParts wraps one data map as the list genAIContent takes.
func dataParts(d map[string]any) []map[string]any {
	if d == nil {
		return nil
	}
	return []map[string]any{d}
}

// GenAIContent renders a message as the GenAI conventions' JSON message
// list (gen_ai.input.messages / gen_ai.output.messages): the text as a text
// part and each data part JSON-encoded as one more, each bounded by
// otelmap.TruncateContent so the attribute stays valid JSON.
func GenAIContent(role, text string, data []map[string]any, finishReason string) string {
	type part struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	type message struct {
		Role         string `json:"role"`
		Parts        []part `json:"parts"`
		FinishReason string `json:"finish_reason,omitempty"`
	}
	msg := message{Role: role, Parts: []part{}, FinishReason: finishReason}
	if text != "" || len(data) == 0 {
		msg.Parts = append(msg.Parts, part{Type: "text", Content: otelmap.TruncateContent(text)})
	}
	for _, d := range data {
		b, err := json.Marshal(d)
		if err != nil {
			b = []byte(fmt.Sprint(d))
		}
		msg.Parts = append(msg.Parts, part{Type: "text", Content: otelmap.TruncateContent(string(b))})
	}
	b, err := json.Marshal([]message{msg})
	if err != nil { // strings only: cannot happen
		return ""
	}
	return string(b)
}

// noopSpan stands in for the A2A method span a caller without transport
// spans does not make; ending it does nothing.
var noopSpan = trace.SpanFromContext(context.Background())
