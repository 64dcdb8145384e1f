package otelmap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestRecorderConvertsSpans: what the SDK ended is what the store holds,
// with the road it came by, and one converted resource per provider.
func TestRecorderConvertsSpans(t *testing.T) {
	store := NewStore(Limits{})
	rec := NewRecorder(store)
	spy := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(rec),
		sdktrace.WithSpanProcessor(spy),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "svc"), AttrRole.String(RoleAssessor))),
	)
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := tp.Tracer("test")

	ctx, parent := tr.Start(context.Background(), "parent")
	_, child := tr.Start(ctx, "invoke_agent x", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(invokeAttrs("x")...))
	child.SetStatus(codes.Error, "refused")
	child.End()
	_, rebuilt := tr.Start(ctx, "chat", trace.WithAttributes(AttrSource.String(SourceExtension)))
	rebuilt.End()
	parent.End()

	id := parent.SpanContext().TraceID()
	spans := store.Spans(id)
	if len(spans) != 3 {
		t.Fatalf("store holds %d spans, want 3", len(spans))
	}
	byName := map[string]Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	c := byName["invoke_agent x"]
	if c.Kind != trace.SpanKindClient || !c.StatusError || c.StatusMessage != "refused" ||
		c.ParentSpanID != parent.SpanContext().SpanID() || c.Source != SourceInProcess || c.TraceID != id {
		t.Errorf("client span = %+v", c)
	}
	if v, _, _ := c.StringAttr(AttrGenAIAgentName); v != "x" {
		t.Errorf("attributes = %v", c.Attrs)
	}
	if p := byName["parent"]; p.ParentSpanID.IsValid() || p.Start.IsZero() || p.End.Before(p.Start) {
		t.Errorf("parent span = %+v", p)
	}
	if r := byName["chat"]; r.Source != SourceExtension {
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

	td := Assemble(id, spans)
	if a := td.Agent("svc"); a == nil || a.Role != RoleAssessor {
		t.Errorf("assessor node = %+v", a)
	}
}

// TestRecorderConcurrentEnds: spans ended on many goroutines at once all
// arrive, and assembly may read the store meanwhile (run with -race).
func TestRecorderConcurrentEnds(t *testing.T) {
	store := NewStore(Limits{})
	tps := make([]*sdktrace.TracerProvider, 3)
	for i := range tps {
		tps[i] = sdktrace.NewTracerProvider(
			sdktrace.WithSpanProcessor(NewRecorder(store)),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", fmt.Sprintf("svc%d", i)))),
		)
		defer func() { _ = tps[i].Shutdown(context.Background()) }()
	}
	ctx, root := tps[0].Tracer("t").Start(context.Background(), "invoke_agent root",
		trace.WithAttributes(invokeAttrs("root")...))
	id := root.SpanContext().TraceID()

	const workers, perWorker = 8, 100
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				Assemble(id, store.Spans(id))
			}
		}
	})
	for w := range workers {
		wg.Go(func() {
			tr := tps[w%len(tps)].Tracer("t")
			agent := fmt.Sprintf("agent%d", w)
			for range perWorker {
				actx, inv := tr.Start(ctx, "invoke_agent "+agent, trace.WithAttributes(invokeAttrs(agent)...))
				_, ch := tr.Start(actx, "chat m", trace.WithSpanKind(trace.SpanKindClient),
					trace.WithAttributes(AttrGenAIOperationName.String(OpChat)))
				ch.End()
				inv.End()
			}
		})
	}
	wg.Wait()
	root.End()
	close(stop)
	readers.Wait()

	spans := store.Spans(id)
	if want := 1 + 2*workers*perWorker; len(spans) != want {
		t.Fatalf("store holds %d spans, want %d", len(spans), want)
	}
	td := Assemble(id, spans)
	if len(td.Steps) != len(spans) {
		t.Errorf("steps = %d, want %d", len(td.Steps), len(spans))
	}
	// Workers on svc0 nest in root's process: in-process calls; the others
	// run in other processes under a span of svc0, which is no call.
	var got []string
	for _, in := range td.Interactions {
		got = append(got, fmt.Sprintf("%s->%s x%d", in.From, in.To, in.Count))
	}
	want := []string{"root->agent0 x100", "root->agent3 x100", "root->agent6 x100"}
	if !slices.Equal(got, want) {
		t.Errorf("interactions = %v, want %v", got, want)
	}
}

// TestRecorderShutdown: after Shutdown nothing is recorded, and both
// Shutdown and ForceFlush report a done context.
func TestRecorderShutdown(t *testing.T) {
	store := NewStore(Limits{})
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
	store := NewStore(Limits{MaxSpansPerTrace: 2})
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
