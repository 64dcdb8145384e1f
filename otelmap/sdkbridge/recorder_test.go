package sdkbridge

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// TestRecorderConvertsSpans: what the SDK ended is what the store holds,
// with the road it came by, and one converted resource per provider.
func TestRecorderConvertsSpans(t *testing.T) {
	store := tracestore.NewStore(tracestore.Limits{})
	rec := NewRecorder(store)
	spy := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(rec),
		sdktrace.WithSpanProcessor(spy),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "svc"), otelmap.AttrRole.String(otelmap.RoleAssessor))),
	)
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := tp.Tracer("test")

	ctx, parent := tr.Start(context.Background(), "parent")
	_, child := tr.Start(ctx, "invoke_agent x", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("x"), otelmap.AttrCallType.String("AGENT")),
		trace.WithLinks(trace.Link{SpanContext: parent.SpanContext(), Attributes: []attribute.KeyValue{attribute.String("why", "sent by")}}))
	child.AddEvent("handoff", trace.WithAttributes(attribute.String("agent_name", "y")))
	child.SetStatus(codes.Error, "refused")
	child.End()
	_, rebuilt := tr.Start(ctx, "chat", trace.WithAttributes(otelmap.AttrSource.String(otelmap.SourceExtension)))
	rebuilt.End()
	parent.End()

	id := parent.SpanContext().TraceID()
	spans := store.Spans(id)
	if len(spans) != 3 {
		t.Fatalf("store holds %d spans, want 3", len(spans))
	}
	byName := map[string]otelmap.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	c := byName["invoke_agent x"]
	if c.Kind != trace.SpanKindClient || !c.StatusError || c.StatusMessage != "refused" ||
		c.ParentSpanID != parent.SpanContext().SpanID() || c.Source != otelmap.SourceInProcess || c.TraceID != id {
		t.Errorf("client span = %+v", c)
	}
	if v, _, _ := c.StringAttr(otelmap.AttrGenAIAgentName); v != "x" {
		t.Errorf("attributes = %v", c.Attrs)
	}
	if len(c.Links()) != 1 || c.Links()[0].SpanID != parent.SpanContext().SpanID() || c.Links()[0].TraceID != id ||
		len(c.Links()[0].Attrs) != 1 || c.Links()[0].Attrs[0].Value.AsString() != "sent by" {
		t.Errorf("links = %+v", c.Links())
	}
	if len(c.Events()) != 1 || c.Events()[0].Name != "handoff" || c.Events()[0].Time.IsZero() ||
		len(c.Events()[0].Attrs) != 1 || c.Events()[0].Attrs[0].Value.AsString() != "y" {
		t.Errorf("events = %+v", c.Events())
	}
	if p := byName["parent"]; p.Detail != nil {
		t.Errorf("parent span has links or events: %+v", p)
	}
	if p := byName["parent"]; p.ParentSpanID.IsValid() || p.Start.IsZero() || p.End.Before(p.Start) {
		t.Errorf("parent span = %+v", p)
	}
	if r := byName["chat"]; r.Source != otelmap.SourceExtension {
		t.Errorf("span marked coordbench.source=extension has Source %q", r.Source)
	}
	if c.Resource.ServiceName != "svc" || c.Resource != byName["parent"].Resource || c.Resource != byName["chat"].Resource {
		t.Errorf("resources = %p %p %p (%+v), want one shared conversion", c.Resource, byName["parent"].Resource, byName["chat"].Resource, c.Resource)
	}

	// SpanFromReadOnly gives the same span, with its own resource copy.
	for _, ro := range spy.Ended() {
		got := SpanFromReadOnly(ro)
		want := byName[ro.Name()]
		if got.SpanID != want.SpanID || got.ParentSpanID != want.ParentSpanID || got.Source != want.Source ||
			got.StatusError != want.StatusError || got.Resource.ServiceName != "svc" || len(got.Attrs) != len(want.Attrs) {
			t.Errorf("SpanFromReadOnly(%s) = %+v, want %+v", ro.Name(), got, want)
		}
	}

}

// TestRecorderShutdown: after Shutdown nothing is recorded, and both
// Shutdown and ForceFlush report a done context.
func TestRecorderShutdown(t *testing.T) {
	store := tracestore.NewStore(tracestore.Limits{})
	rec := NewRecorder(store)
	spy := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spy))
	_, s := tp.Tracer("t").Start(context.Background(), "late")
	s.End()
	ro := spy.Ended()[0]

	if err := rec.ForceFlush(context.Background()); err != nil {
		t.Errorf("ForceFlush: %v", err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := rec.ForceFlush(done); !errors.Is(err, context.Canceled) {
		t.Errorf("ForceFlush(done ctx) = %v, want context.Canceled", err)
	}
	rec.OnStart(context.Background(), nil)
	rec.OnEnd(ro)
	if n := len(store.Spans(ro.SpanContext().TraceID())); n != 1 {
		t.Fatalf("recorded %d spans before shutdown, want 1", n)
	}
	if err := rec.Shutdown(done); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown(done ctx) = %v, want context.Canceled", err)
	}
	store.Remove(ro.SpanContext().TraceID())
	rec.OnEnd(ro)
	if n := len(store.Spans(ro.SpanContext().TraceID())); n != 0 {
		t.Errorf("recorded %d spans after shutdown", n)
	}
	if err := rec.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// TestRecorderFullStore: spans over the store's limit are rejected and
// counted, and recording goes on without error.
func TestRecorderFullStore(t *testing.T) {
	store := tracestore.NewStore(tracestore.Limits{MaxSpansPerTrace: 2})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(NewRecorder(store)))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, root := tp.Tracer("t").Start(context.Background(), "root")
	for range 5 {
		_, s := tp.Tracer("t").Start(ctx, "child")
		s.End()
	}
	root.End()
	if n := len(store.Spans(root.SpanContext().TraceID())); n != 2 {
		t.Errorf("store holds %d spans, want 2", n)
	}
	if st := store.Stats(); st.RejectedTraceFull != 4 {
		t.Errorf("stats = %+v, want 4 rejected", st)
	}
}
