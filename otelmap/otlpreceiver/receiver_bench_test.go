package otlpreceiver

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// BenchmarkIngestProtobuf measures ingest per span after the body is read
// by the pdata road: protobuf decoding with pdata, SpansFromTraces and
// Store.Add, into a fresh store each round. The receiver decodes protobuf
// with otlpdecode's wire decoder instead (BenchmarkIngestWire measures
// that road); this one is the reference it is compared with. It reports spans/s, allocations and bytes
// per span; B/op and allocs/op are per round of all n spans.
//
//	go test ./otelmap/otlpreceiver -run '^$' -bench IngestProtobuf -benchmem
//	go test ./otelmap/otlpreceiver -run '^$' -bench 'IngestProtobuf/spans=1000000' -benchtime 1x -benchmem
func BenchmarkIngestProtobuf(b *testing.B) {
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
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for b.Loop() {
				st := tracestore.NewStore(limits)
				for _, body := range bodies {
					req := ptraceotlp.NewExportRequest()
					if err := req.UnmarshalProto(body); err != nil {
						b.Fatal(err)
					}
					spans, _ := otlpdecode.SpansFromTraces(req.Traces(), otelmap.SourceOTLP)
					if count, res := len(spans), st.Add(spans); res.Accepted != count {
						b.Fatalf("store: %+v", res)
					}
				}
			}
			runtime.ReadMemStats(&m1)
			total := float64(n) * float64(b.N)
			b.ReportMetric(total/b.Elapsed().Seconds(), "spans/s")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/total, "allocs/span")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/total, "B/span")
		})
	}
}
