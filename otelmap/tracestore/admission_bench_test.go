package tracestore

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
)

// BenchmarkFloodAdmission is issue 15's flood as the store meets it: one
// export request of 100,000 spans, each in a trace of its own, from one
// source, into a fresh store with the default limits and one reserved
// trace; 2,500 traces are admitted (the quota per source) and the rest
// refused. It measures decode, conversion and admission per span.
//
//	go test ./otelmap/tracestore -run '^$' -bench FloodAdmission -benchmem
func BenchmarkFloodAdmission(b *testing.B) {
	const n = 100_000
	body := otlptest.Proto(b, otlptest.AdmissionTraces(otlptest.AdmissionIDs(0, n), 1, 1))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		st := NewStore(Limits{})
		if err := st.Reserve(otlptest.AdmissionTraceID(1<<22), "token"); err != nil {
			b.Fatal(err)
		}
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			b.Fatal(err)
		}
		spans, _ := otlpdecode.SpansFromTraces(req.Traces(), otelmap.SourceOTLP)
		spans, _, _ = st.filterIngest("", spans, nil)
		res := st.AddFrom("ip:192.0.2.1", spans)
		if want := DefaultMaxTraces / 4; res.Accepted != want || res.Rejected != n-want {
			b.Fatalf("store: %+v", res)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}
