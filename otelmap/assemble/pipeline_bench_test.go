package assemble_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// BenchmarkPipeline measures the whole path a span takes in the assessor:
// protobuf decoding straight into spans (SpansFromProto, the receiver's
// road), the store (Add), and assembly of every trace held.
// The aim is 300k spans/s per core for the three together; run it with
// -cpu 1 to read it per core. held-B/span is the live heap per span once all
// spans are stored (before assembly), which shows memory growing linearly
// with the spans held.
//
//	go test ./otelmap/assemble -run '^$' -bench Pipeline -benchmem -cpu 1
//	go test ./otelmap/assemble -run '^$' -bench 'Pipeline/spans=1000000' -benchtime 1x -benchmem -cpu 1
func BenchmarkPipeline(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("spans=%d", n), func(b *testing.B) {
			bodies := otlptest.BenchBodies(b, n) // the requests otlpreceiver's BenchmarkIngestProtobuf decodes
			limits := tracestore.Limits{MaxSpansPerTrace: 100, MaxTraces: n/100 + 1, MaxAge: time.Hour}
			b.ReportAllocs()
			var m0, m1 runtime.MemStats
			var heldBytes float64
			runtime.ReadMemStats(&m0)
			for b.Loop() {
				st := tracestore.NewStore(limits)
				for _, body := range bodies {
					spans, _, err := otlpdecode.SpansFromProto(body, otelmap.SourceOTLP)
					if err != nil {
						b.Fatal(err)
					}
					if count, res := len(spans), st.Add(spans); res.Accepted != count {
						b.Fatalf("store: %+v", res)
					}
				}
				if heldBytes == 0 {
					b.StopTimer()
					heldBytes = liveHeapPerSpan(n)
					b.StartTimer()
				}
				steps := 0
				for _, id := range st.TraceIDs() {
					steps += len(assemble.Trace(id, st.Spans(id)).Steps)
				}
				if steps == 0 {
					b.Fatal("assembly produced no steps")
				}
			}
			runtime.ReadMemStats(&m1)
			total := float64(n) * float64(b.N)
			b.ReportMetric(total/b.Elapsed().Seconds(), "spans/s")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/total, "allocs/span")
			b.ReportMetric(heldBytes, "held-B/span")
		})
	}
}

// liveHeapPerSpan is the live heap after a collection, divided by the spans
// held; the benchmark's inputs are included, so it overstates a little.
func liveHeapPerSpan(n int) float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / float64(n)
}
