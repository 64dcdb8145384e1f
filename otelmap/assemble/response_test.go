package assemble_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/extension"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/tracedata"
)

// TestResponseTraceForCall: the base purple agent's answer: its own spans of one call become steps,
// those of that call only, and the caller turns them back into spans with
// the same ids, which the store matches against the real ones.
func TestResponseTraceForCall(t *testing.T) {
	caller := otlptest.CallerSpan(t, "purple")
	parent := otlptest.RemoteParent(caller)
	tr, rec := otlptest.RecordingTracer(t, "purple")
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	agentAttrs := func(agent string) trace.SpanStartOption {
		return trace.WithAttributes(otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String(agent),
			otelmap.AttrCallType.String(string(tracedata.CallAgent)))
	}

	ctx, post := tr.Start(ctx, "POST", trace.WithSpanKind(trace.SpanKindServer))
	ctx, send := tr.Start(ctx, "SendMessage", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(otelmap.AttrA2AMethodName.String("SendMessage")))
	rctx, root := tr.Start(ctx, "invoke_agent purple", agentAttrs("purple"))
	_, chat := tr.Start(rctx, "chat gpt-4o-mini", trace.WithAttributes(
		otelmap.AttrGenAIOperationName.String(otelmap.OpChat), otelmap.AttrGenAIRequestModel.String("gpt-4o-mini")))
	time.Sleep(time.Millisecond)
	chat.End()
	cctx, call := tr.Start(rctx, "invoke_agent booking", trace.WithSpanKind(trace.SpanKindClient), agentAttrs("booking"))
	_, a2a := tr.Start(cctx, "SendMessage", trace.WithSpanKind(trace.SpanKindClient))
	a2a.End()
	call.SetStatus(codes.Error, "booking failed")
	call.End()
	root.End()
	// Work of the same trace outside this call's handling.
	_, other := tr.Start(ctx, "execute_tool housekeeping", trace.WithAttributes(otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool)))
	other.End()
	send.End()
	post.End()
	own := otlptest.SpansFromSDK(rec.Ended(), otelmap.SourceInProcess)

	rootID := root.SpanContext().SpanID()
	rt := assemble.ResponseTraceForCall(caller.TraceID, own, rootID)
	if rt.TraceID != caller.TraceID.String() {
		t.Errorf("trace id %q", rt.TraceID)
	}
	got := map[string]tracedata.Step{}
	for _, s := range rt.Steps {
		got[s.StepID] = s
	}
	want := map[string]string{ // step id -> parent step id
		rootID.String():                      "",
		chat.SpanContext().SpanID().String(): rootID.String(),
		call.SpanContext().SpanID().String(): rootID.String(),
	}
	if len(got) != len(want) {
		t.Errorf("steps %v, want %v", stepIDs(rt.Steps), want)
	}
	for id, p := range want {
		s, ok := got[id]
		if !ok {
			t.Errorf("step %s missing", id)
			continue
		}
		if s.ParentStepID != p {
			t.Errorf("step %s parent %q, want %q", id, s.ParentStepID, p)
		}
		if s.TraceID != caller.TraceID.String() {
			t.Errorf("step %s trace id %q", id, s.TraceID)
		}
	}

	// Over the wire and back into spans of the caller's trace.
	b, err := tracedata.EncodeResponseTrace(rt)
	if err != nil {
		t.Fatal(err)
	}
	back, err := tracedata.DecodeResponseTrace(b)
	if err != nil {
		t.Fatal(err)
	}
	spans, err := extension.SpansFromResponseTrace(back, parent, "purple")
	if err != nil {
		t.Fatal(err)
	}
	realByID := map[trace.SpanID]otelmap.Span{}
	for _, sp := range own {
		realByID[sp.SpanID] = sp
	}
	for _, sp := range spans {
		r, ok := realByID[sp.SpanID]
		if !ok {
			t.Errorf("span %q has id %s, not one of the purple's", sp.Name, sp.SpanID)
			continue
		}
		if sp.SpanID == rootID {
			if sp.ParentSpanID != caller.SpanID {
				t.Errorf("root parent %s, want the caller's span %s", sp.ParentSpanID, caller.SpanID)
			}
		} else if sp.ParentSpanID != r.ParentSpanID {
			t.Errorf("span %q parent %s, real %s", sp.Name, sp.ParentSpanID, r.ParentSpanID)
		}
		if !sp.Start.Equal(r.Start) || !sp.End.Equal(r.End) {
			t.Errorf("span %q times %v..%v, real %v..%v", sp.Name, sp.Start, sp.End, r.Start, r.End)
		}
	}
	byName := otlptest.SpansByName(t, spans)
	if sp := byName["invoke_agent booking"]; sp == nil || sp.Kind != trace.SpanKindClient || !sp.StatusError {
		t.Errorf("booking call span %+v", sp)
	}
	if sp := byName["invoke_agent purple"]; sp == nil || sp.Kind != trace.SpanKindServer {
		t.Errorf("purple root span %+v", sp)
	}

	// An invalid root keeps every step; an unknown root none.
	if all := assemble.ResponseTraceForCall(caller.TraceID, own, trace.SpanID{}); len(all.Steps) != 4 {
		t.Errorf("invalid root: steps %v", stepIDs(all.Steps))
	}
	if none := assemble.ResponseTraceForCall(caller.TraceID, own, trace.SpanID{1}); len(none.Steps) != 0 || none.Steps == nil {
		t.Errorf("unknown root: steps %v", none.Steps)
	}
}
