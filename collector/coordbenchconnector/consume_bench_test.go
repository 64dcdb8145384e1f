package coordbenchconnector

import (
	"context"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/connector/connectortest"

	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// BenchmarkConsume isolates the road spans take into the hold: "consume"
// reads benchBatches's batches into a fresh core (core.consume: reading
// pdata, packing, committing), bounds wide enough that nothing is
// released; "unpack" unpacks every held trace as assessment does
// (Held.SpansIn into one Scratch), and reports the heap the hold keeps
// live per span; "check" makes the settle check of every held trace as
// core.due makes it. None counts the assessment, which
// BenchmarkConnector measures with them.
//
//	cd collector/coordbenchconnector && go test -run '^$' -bench Consume -benchmem -count 6
func BenchmarkConsume(b *testing.B) {
	batches, spans, traces := benchBatches(b)
	cfg := createDefaultConfig()
	cfg.MaxWait = time.Hour
	// Nothing is checked or released behind the benchmark's back: its
	// work is the same whatever the wall time (and so countable by
	// valgrind --tool=callgrind, which runs it fifty times slower).
	cfg.Quiet = time.Hour / 2
	cfg.MetricsFlushInterval = time.Hour
	cfg.MaxTraces = 4 * traces
	cfg.MaxSpans = 4 * spans
	ctx := context.Background()
	fill := func(b *testing.B) *core {
		c, err := newCore(connectortest.NewNopSettings(Type), cfg)
		if err != nil {
			b.Fatal(err)
		}
		for _, td := range batches {
			if err := c.consume(ctx, td); err != nil {
				b.Fatal(err)
			}
		}
		if c.spans != spans {
			b.Fatalf("%d spans held, want %d", c.spans, spans)
		}
		return c
	}
	stop := func(b *testing.B, c *core) {
		c.mu.Lock()
		for _, h := range c.held {
			c.removeLocked(h)
		}
		c.mu.Unlock()
		if err := c.shutdown(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("consume", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := fill(b)
			b.StopTimer()
			stop(b, c)
			b.StartTimer()
		}
		b.ReportMetric(float64(spans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
	})
	b.Run("unpack", func(b *testing.B) {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		c := fill(b)
		defer stop(b, c)
		runtime.GC()
		runtime.ReadMemStats(&m1)

		var scratch tracestore.Scratch
		b.ReportAllocs()
		for b.Loop() {
			for id, h := range c.held {
				if got := h.spans.SpansIn(id, &scratch); len(got) != h.spans.Len() {
					b.Fatalf("%d spans unpacked of %d", len(got), h.spans.Len())
				}
			}
		}
		b.ReportMetric(float64(spans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
		// The hold's memory: what the held spans keep live (b.Loop's
		// reset drops metrics reported before it).
		b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/float64(spans), "held-B/span")
	})
	b.Run("check", func(b *testing.B) {
		c := fill(b)
		defer stop(b, c)
		// The settle check of every held trace, as due makes it once a
		// trace is quiet: a view of the trace, its spans for the check,
		// the evidence under the connector's rule.
		var scratch tracestore.Scratch
		var evScratch tracestore.EvidenceScratch
		whole := 0
		b.ReportAllocs()
		for b.Loop() {
			whole = 0
			for id, h := range c.held {
				if tracestore.CheckEvidenceIn(h.spans.View().SpansForCheck(id, &scratch), c.await, &evScratch).Whole() {
					whole++
				}
			}
		}
		if whole == 0 || whole == traces {
			b.Fatalf("%d of %d traces whole: the payload no longer tells the check's outcomes apart", whole, traces)
		}
		b.ReportMetric(float64(spans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
	})
}
