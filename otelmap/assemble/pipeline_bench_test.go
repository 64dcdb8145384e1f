package assemble_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
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
			bodies := pipelineBodies(b, n)
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

// pipelineBodies encodes n spans (traces of 100 spans over 2 resources, 6
// attributes each) as protobuf ExportTraceServiceRequests of 10,000 spans,
// the requests otlpreceiver's BenchmarkIngestProtobuf decodes.
func pipelineBodies(b *testing.B, n int) [][]byte {
	b.Helper()
	const batch = 10_000
	var bodies [][]byte
	for first := 0; first < n; first += batch {
		body, err := ptraceotlp.NewExportRequestFromTraces(pipelineTraces(first, min(batch, n-first), 100, 2)).MarshalProto()
		if err != nil {
			b.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	return bodies
}

// pipelineTraces builds spans first to first+n-1 of a set of traces of
// perTrace spans each (the first span of a trace its root, the rest its
// children), split over the given number of resources, each span with 6
// attributes. Ids are deterministic. It builds what otlptest.TracesFrom
// builds.
func pipelineTraces(first, n, perTrace, resources int) ptrace.Traces {
	td := ptrace.NewTraces()
	services := []string{"coordinator", "reviewer", "planner", "coder"}
	scopes := make([]ptrace.SpanSlice, resources)
	for r := range resources {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", services[r%len(services)])
		rs.Resource().Attributes().PutStr("telemetry.sdk.language", "go")
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("coordbench/bench")
		ss.Spans().EnsureCapacity(n/resources + 1)
		scopes[r] = ss.Spans()
	}
	base := pcommon.Timestamp(1_700_000_000_000_000_000)
	for i := range n {
		tr, pos := (first+i)/perTrace, (first+i)%perTrace
		var tid pcommon.TraceID
		tid[0], tid[1], tid[2], tid[3], tid[15] = 0xc0, byte(tr>>16), byte(tr>>8), byte(tr), 1
		sp := scopes[i%resources].AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID(pcommon.SpanID{0x5a, byte(tr >> 16), byte(tr >> 8), byte(tr), byte(pos >> 8), byte(pos), 0, 1})
		if pos > 0 {
			sp.SetParentSpanID(pcommon.SpanID{0x5a, byte(tr >> 16), byte(tr >> 8), byte(tr), 0, 0, 0, 1})
		}
		sp.SetName("invoke_agent reviewer")
		sp.SetKind(ptrace.SpanKindClient)
		sp.SetStartTimestamp(base + pcommon.Timestamp(i)*1000)
		sp.SetEndTimestamp(base + pcommon.Timestamp(i)*1000 + 500)
		a := sp.Attributes()
		a.EnsureCapacity(6)
		a.PutStr(string(otelmap.AttrGenAIOperationName), otelmap.OpInvokeAgent)
		a.PutStr(string(otelmap.AttrGenAIAgentName), "reviewer")
		a.PutStr(string(otelmap.AttrGenAIConversationID), "ctx-1234")
		a.PutStr(string(otelmap.AttrServerAddress), "reviewer.local")
		a.PutInt(string(otelmap.AttrServerPort), 9010)
		a.PutStr(string(otelmap.AttrCallType), "AGENT")
	}
	return td
}
