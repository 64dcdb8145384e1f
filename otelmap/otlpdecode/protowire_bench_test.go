package otlpdecode

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/internal/cputime"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	u, s, ok := cputime.Self()
	if !ok {
		b.Skip("no process CPU time here")
	}
	return u + s
}

// BenchmarkDecodeWire measures decoding one 10k-span request (the
// counterpart of BenchmarkDecodeProtobuf + BenchmarkSpansFromTraces):
// allocations and bytes per span decoded. "fresh" is SpansFromProto, whose
// caller owns what it returns; "reused" is the receiver's road, one
// decoder reusing its memory from request to request (the store copies
// what it keeps).
//
//	go test ./otelmap/otlpdecode -run '^$' -bench DecodeWire -benchmem
func BenchmarkDecodeWire(b *testing.B) {
	body := otlptest.Proto(b, otlptest.Traces(otlptest.BenchBatchSpans, 100, 2))
	reused := NewDecoder()
	for _, road := range []struct {
		name   string
		decode func() ([]otelmap.Span, []string, error)
	}{
		{"fresh", func() ([]otelmap.Span, []string, error) { return SpansFromProto(body, otelmap.SourceOTLP) }},
		{"reused", func() ([]otelmap.Span, []string, error) { return reused.wire.decode(body, otelmap.SourceOTLP, false) }},
	} {
		b.Run(road.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for b.Loop() {
				if _, _, err := road.decode(); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&m1)
			n := float64(otlptest.BenchBatchSpans) * float64(b.N)
			b.ReportMetric(n/b.Elapsed().Seconds(), "spans/s")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/span")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/n, "B/span")
		})
	}
}

// BenchmarkIngestWire is BenchmarkIngestProtobuf on the receiver's road
// since issue 14: a decoder that reuses its memory from request to
// request (SpansFromProto's, pooled in the receiver), the spans'
// attributes packed as it decodes them (DecodePacked), and
// Store.ConsumePackedSpans, which packs each span (packed.go), into a
// fresh store each round. Besides spans/s it reports spans per CPU-second (all the
// process's threads, the garbage collector's included) and, after a
// collection with the store still held, the live heap per span held.
// Run it in a fresh process with -benchtime 1x for the cold-heap figure
// (the first run is the one a fresh server has):
//
//	go test ./otelmap/otlpdecode -run '^$' -bench 'IngestWire/spans=1000000' -benchtime 1x -benchmem
func BenchmarkIngestWire(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("spans=%d", n), func(b *testing.B) {
			bodies := otlptest.BenchBodies(b, n)
			wire := 0
			for _, body := range bodies {
				wire += len(body)
			}
			limits := tracestore.Limits{MaxSpansPerTrace: 100, MaxTraces: n/100 + 1, MaxAge: time.Hour}
			b.ReportAllocs()
			b.SetBytes(int64(wire))
			var m0, m1, held runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			cpu0 := cpuTime(b)
			var st *tracestore.Store
			dec := NewDecoder()
			for b.Loop() {
				st = tracestore.NewStore(limits)
				for _, body := range bodies {
					spans, attrs, _, err := dec.DecodePacked(body)
					if err != nil {
						b.Fatal(err)
					}
					if count, res := len(spans), st.ConsumePackedSpans(context.Background(), "", "", spans, attrs); res.Accepted != count {
						b.Fatalf("store: %+v", res)
					}
				}
			}
			cpu := cpuTime(b) - cpu0
			runtime.ReadMemStats(&m1)
			total := float64(n) * float64(b.N)
			b.ReportMetric(total/b.Elapsed().Seconds(), "spans/s")
			b.ReportMetric(total/cpu.Seconds(), "spans/cpu-s")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/total, "allocs/span")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/total, "B/span")
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&held)
			if got := st.Stats().Spans; got != n {
				b.Fatalf("store holds %d spans, want %d", got, n)
			}
			b.ReportMetric(float64(int64(held.HeapAlloc)-int64(m0.HeapAlloc))/float64(n), "live-B/span")
			runtime.KeepAlive(st)
			runtime.KeepAlive(bodies) // held in m0 too
		})
	}
}

// BenchmarkIngestPdataHeld is the pdata road (the reference, and OTLP/JSON's
// road) with the same figures as BenchmarkIngestWire, for comparison.
//
//	go test ./otelmap/otlpdecode -run '^$' -bench 'IngestPdataHeld/spans=1000000' -benchtime 1x -benchmem
func BenchmarkIngestPdataHeld(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("spans=%d", n), func(b *testing.B) {
			bodies := otlptest.BenchBodies(b, n)
			limits := tracestore.Limits{MaxSpansPerTrace: 100, MaxTraces: n/100 + 1, MaxAge: time.Hour}
			var m0, held runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			cpu0 := cpuTime(b)
			var st *tracestore.Store
			for b.Loop() {
				st = tracestore.NewStore(limits)
				for _, body := range bodies {
					td, err := decodeTraces(body, FormatProtobuf)
					if err != nil {
						b.Fatal(err)
					}
					spans, _ := SpansFromTraces(td, otelmap.SourceOTLP)
					st.Add(spans)
				}
			}
			cpu := cpuTime(b) - cpu0
			total := float64(n) * float64(b.N)
			b.ReportMetric(total/b.Elapsed().Seconds(), "spans/s")
			b.ReportMetric(total/cpu.Seconds(), "spans/cpu-s")
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&held)
			b.ReportMetric(float64(int64(held.HeapAlloc)-int64(m0.HeapAlloc))/float64(n), "live-B/span")
			runtime.KeepAlive(st)
			runtime.KeepAlive(bodies) // held in m0 too
		})
	}
}

// BenchmarkSpansFromTraces isolates the conversion from pdata.
func BenchmarkSpansFromTraces(b *testing.B) {
	const n = otlptest.BenchBatchSpans
	td := otlptest.Traces(n, 100, 2)
	b.ReportAllocs()
	for b.Loop() {
		SpansFromTraces(td, otelmap.SourceOTLP)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkDecodeProtobuf isolates pdata's decoding of one 10k-span
// request, the largest share of BenchmarkIngestProtobuf.
func BenchmarkDecodeProtobuf(b *testing.B) {
	body := otlptest.Proto(b, otlptest.Traces(otlptest.BenchBatchSpans, 100, 2))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := ptraceotlp.NewExportRequest().UnmarshalProto(body); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(otlptest.BenchBatchSpans) * float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "spans/s")
}
