package coordbenchconnector

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/trace"
)

// A panic while a batch is read and packed (readHook makes one, where a
// bug some exporter's spans reach would) refuses that batch with an
// error and leaves the connector whole: the lock released, what was
// packed before it held, the trace the batch evicted assessed, and the
// next batches taken. Before the spans were read under the connector's
// lock a panic there could not leave it locked; now it must not.
func TestPanicWhileReadingLeavesTheHoldWhole(t *testing.T) {
	cfg := testConfig()
	cfg.MaxTraces = 1 // each new trace evicts the one held
	p := newPipeline(t, cfg)
	ctx := context.Background()
	p.send(agentTrace(1, false)) // A: held, its call unanswered

	t.Cleanup(func() { readHook = nil })
	readHook = func(sp ptrace.Span) {
		if trace.SpanID(sp.SpanID()) == (trace.SpanID{2, 2}) {
			panic("a bug reached by this span")
		}
	}
	// B: its root is packed (evicting A), its call span panics.
	done := make(chan error, 1)
	go func() { done <- p.m.ConsumeTraces(ctx, agentTrace(2, false)) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "a bug reached by this span") {
			t.Fatalf("ConsumeTraces after a panic: %v, want the panic as an error", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("ConsumeTraces did not return after a panic")
	}
	readHook = nil

	// C: taken (evicting B), answered, settles.
	go func() { done <- p.m.ConsumeTraces(ctx, agentTrace(3, true)) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the batch after the panic: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the connector took no batch after a panic: its lock is held")
	}
	got := map[pcommon.TraceID]string{}
	for _, rec := range p.waitRecords(3) {
		id := pcommon.TraceID(rec.TraceID())
		if _, twice := got[id]; twice {
			t.Errorf("trace %s assessed twice", id)
		}
		got[id] = attr(rec, attrCompletion) + " " + attr(rec, "coordbench.trace.spans")
	}
	want := map[pcommon.TraceID]string{
		{0xc0, 1, 1}: completionEvicted + " 2", // evicted by B's root, before the panic
		{0xc0, 2, 1}: completionEvicted + " 1", // B's root alone, evicted by C
		{0xc0, 3, 1}: completionSettled + " 3",
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("trace %s: %q, want %q (all: %v)", id, got[id], w, got)
		}
	}
}
