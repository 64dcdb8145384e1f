package a2acall_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/otelmap"
)

// TestMessengerNoopTracer: under a no-op TracerProvider the Messenger makes
// no span, yet the participant sees the caller's span context in
// traceparent and the Traceability Extension steps land under it, as the
// no-op tracer's own spans would have placed them; without a span in the
// context no traceparent is sent.
func TestMessengerNoopTracer(t *testing.T) {
	p := a2atest.Start(t, a2atest.Options{Name: "solver", Extension: true, Chat: true})
	var mu sync.Mutex
	var got []otelmap.Span
	m := a2acall.New(noop.NewTracerProvider(), nil, a2acall.Options{Logger: quietLogger, OnExtensionSpans: func(_ context.Context, spans []otelmap.Span) {
		mu.Lock()
		got = append(got, spans...)
		mu.Unlock()
	}})
	t.Cleanup(func() { _ = m.Close() })

	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x0a, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		SpanID:     trace.SpanID{0x0b, 1, 2, 3, 4, 5, 6, 7},
		TraceFlags: trace.FlagsSampled,
		Remote:     true,
	})
	reply, err := m.Send(trace.ContextWithRemoteSpanContext(t.Context(), sc), a2acall.SendRequest{URL: p.URL, Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Send(t.Context(), a2acall.SendRequest{URL: p.URL, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	calls := p.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d calls", len(calls))
	}
	if got, want := calls[0].Header.Get("Traceparent"), fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID()); got != want {
		t.Errorf("traceparent %q, want %q", got, want)
	}
	if got := calls[1].Header.Get("Traceparent"); got != "" {
		t.Errorf("traceparent %q without a span in the context", got)
	}

	mu.Lock()
	defer mu.Unlock()
	if reply.ExtensionSteps == 0 || len(got) < reply.ExtensionSteps {
		t.Fatalf("reply says %d steps, callback got %d spans", reply.ExtensionSteps, len(got))
	}
	roots := 0
	for _, s := range got[:reply.ExtensionSteps] {
		if s.TraceID != sc.TraceID() {
			t.Errorf("extension span %s in trace %s, want %s", s.Name, s.TraceID, sc.TraceID())
		}
		if s.ParentSpanID == sc.SpanID() {
			roots++
		}
	}
	if roots == 0 {
		t.Errorf("no extension span under the caller's span %s: %+v", sc.SpanID(), got)
	}
}
