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
// live per span. Neither counts the assessment, which
// BenchmarkConnector measures with them.
//
//	cd collector/coordbenchconnector && go test -run '^$' -bench Consume -benchmem -count 6
func BenchmarkConsume(b *testing.B) {
	batches, spans, traces := benchBatches(b)
	cfg := createDefaultConfig()
	cfg.MaxWait = time.Hour
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
}
