package assemble_test

import (
	"context"
	"testing"
	"time"

	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/sdkbridge"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/tracedata"
)

// simProc is one simulated process: its own tracer provider, whose spans
// the in-process Recorder puts into a store.
type simProc struct {
	tr trace.Tracer
}

// newSimProc starts a tracer provider for service (no service.name when
// service is "") recording into store.
func newSimProc(t testing.TB, store *tracestore.Store, service string, extra ...attribute.KeyValue) *simProc {
	t.Helper()
	var attrs []attribute.KeyValue
	if service != "" {
		attrs = append(attrs, attribute.String("service.name", service))
	}
	attrs = append(attrs, extra...)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(sdkbridge.NewRecorder(store)),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
	)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &simProc{tr: tp.Tracer("coordbench/test")}
}

// clock hands out strictly increasing timestamps, so span order in time
// is under the test's control.
type clock struct{ t time.Time }

func newClock() *clock { return &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) tick() time.Time {
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// start opens a span at the clock's next tick.
func (p *simProc) start(ctx context.Context, c *clock, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return p.tr.Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(c.tick()), trace.WithAttributes(attrs...))
}

func end(c *clock, s trace.Span) { s.End(trace.WithTimestamp(c.tick())) }

// propagate carries ctx to another process as an HTTP call does: W3C trace
// context injected into headers and extracted on the other side.
func propagate(ctx context.Context) context.Context {
	h := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, h)
	return propagation.TraceContext{}.Extract(context.Background(), h)
}

func invokeAttrs(agent string) []attribute.KeyValue {
	return []attribute.KeyValue{
		otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String(agent), otelmap.AttrCallType.String("AGENT"),
	}
}

// remoteCall records the call figure (docs/design.md#one-call-in-spans) for one
// call from the process `from` to agent `to` served by process `srv`:
// invoke_agent CLIENT -> SendMessage CLIENT -> POST CLIENT there, POST SERVER ->
// SendMessage SERVER -> invoke_agent INTERNAL here, with work run inside the
// callee's agent span. It returns the client invoke_agent span's context.
func remoteCall(ctx context.Context, c *clock, from, srv *simProc, to string, work func(ctx context.Context)) trace.SpanContext {
	ctx, inv := from.start(ctx, c, otelmap.SpanInvokeAgentPrefix+to, trace.SpanKindClient,
		append(invokeAttrs(to), otelmap.AttrServerAddress.String("127.0.0.1"), otelmap.AttrServerPort.Int(9100))...)
	ctx, sm := from.start(ctx, c, "SendMessage", trace.SpanKindClient, otelmap.AttrA2AMethodName.String("SendMessage"))
	ctx, post := from.start(ctx, c, "POST", trace.SpanKindClient, attribute.String("http.request.method", "POST"))
	if srv != nil {
		sctx := propagate(ctx)
		sctx, spost := srv.start(sctx, c, "POST", trace.SpanKindServer, attribute.String("http.request.method", "POST"))
		sctx, ssm := srv.start(sctx, c, "SendMessage", trace.SpanKindServer, otelmap.AttrA2AMethodName.String("SendMessage"),
			otelmap.AttrA2ATaskState.String("completed"))
		sctx, sinv := srv.start(sctx, c, otelmap.SpanInvokeAgentPrefix+to, trace.SpanKindInternal, invokeAttrs(to)...)
		if work != nil {
			work(sctx)
		}
		end(c, sinv)
		end(c, ssm)
		end(c, spost)
	}
	end(c, post)
	end(c, sm)
	end(c, inv)
	return inv.SpanContext()
}

// chat records an LLM call: a chat CLIENT span with the HTTP call to the
// LLM API below it (a client chain that is not an interaction).
func chat(ctx context.Context, c *clock, p *simProc, model, in, out string) trace.SpanContext {
	ctx, ch := p.start(ctx, c, otelmap.SpanChatPrefix+model, trace.SpanKindClient,
		otelmap.AttrGenAIOperationName.String(otelmap.OpChat), otelmap.AttrGenAIRequestModel.String(model), otelmap.AttrCallType.String("TOOL"),
		otelmap.AttrGenAIInputTokens.Int(10), otelmap.AttrGenAIOutputTokens.Int(5),
		otelmap.AttrGenAIInputMessages.String(`[{"role":"user","parts":[{"type":"text","content":"`+in+`"}]}]`),
		otelmap.AttrGenAIOutputMessages.String(`[{"role":"assistant","parts":[{"type":"text","content":"`+out+`"},{"type":"tool_call","name":"x"}]}]`))
	_, post := p.start(ctx, c, "POST", trace.SpanKindClient, otelmap.AttrServerAddress.String("api.openai.com"), otelmap.AttrServerPort.Int(443))
	end(c, post)
	end(c, ch)
	return ch.SpanContext()
}

func findStep(t *testing.T, td *tracedata.TraceData, id trace.SpanID) *tracedata.Step {
	t.Helper()
	for i := range td.Steps {
		if td.Steps[i].StepID == id.String() {
			return &td.Steps[i]
		}
	}
	t.Fatalf("no step %s", id)
	return nil
}

func mustParent(t *testing.T, spans []otelmap.Span, id trace.SpanID) trace.SpanID {
	t.Helper()
	for _, s := range spans {
		if s.SpanID == id {
			return s.ParentSpanID
		}
	}
	t.Fatalf("no span %s", id)
	return trace.SpanID{}
}

// The helpers assembly's tests share with the families' tests
// (internal/assembletest).
var (
	loadLive                = assembletest.LoadLive
	liveCapture             = assembletest.LiveCapture
	editAttrs               = assembletest.EditAttrs
	agentNames              = assembletest.AgentNames
	findInteraction         = assembletest.FindInteraction
	edges                   = assembletest.Edges
	mustJSON                = assembletest.MustJSON
	hasWarning              = assembletest.HasWarning
	assertPermutationStable = assembletest.AssertPermutationStable
	nsSpans                 = assembletest.NSSpans
)
