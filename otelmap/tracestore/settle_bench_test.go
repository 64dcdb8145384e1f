package tracestore

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
)

// BenchmarkSettleCheck measures the check a settle wait makes each time a
// batch arrives: finding the client chains of a trace and whether each
// awaited call was answered. It is linear in the spans; a wait makes one
// per batch.
func BenchmarkSettleCheck(b *testing.B) {
	for _, calls := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("calls=%d", calls), func(b *testing.B) {
			spans := settleBenchSpans(calls)
			rule := (&Await{Calls: assemble.CallRule(nil), Assessor: true, Agents: []string{"reviewer"}}).compile()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if c := rule.check(spans); c.awaited != calls || len(c.unanswered) != 0 {
					b.Fatalf("awaited %d, unanswered %d", c.awaited, len(c.unanswered))
				}
			}
			b.ReportMetric(float64(len(spans))*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
		})
	}
}

// settleBenchSpans is a trace of calls answered calls: per call, an
// invoke_agent -> POST client chain and the callee's SERVER span and work
// span (4 spans).
func settleBenchSpans(calls int) []otelmap.Span {
	caller := &otelmap.Resource{ServiceName: "coordinator"}
	callee := &otelmap.Resource{ServiceName: "reviewer"}
	id := uint64(1)
	next := func() trace.SpanID {
		var s trace.SpanID
		for i := range 8 {
			s[i] = byte(id >> (8 * i))
		}
		id++
		return s
	}
	root := next()
	spans := []otelmap.Span{{TraceID: trace.TraceID{1}, SpanID: root, Kind: trace.SpanKindServer, Resource: caller}}
	for range calls {
		inv, post, srv, work := next(), next(), next(), next()
		spans = append(spans,
			otelmap.Span{TraceID: trace.TraceID{1}, SpanID: inv, ParentSpanID: root, Kind: trace.SpanKindClient, Resource: caller,
				Attrs: []attribute.KeyValue{otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("reviewer")}},
			otelmap.Span{TraceID: trace.TraceID{1}, SpanID: post, ParentSpanID: inv, Kind: trace.SpanKindClient, Resource: caller,
				Attrs: []attribute.KeyValue{attribute.Int("http.response.status_code", 200)}},
			otelmap.Span{TraceID: trace.TraceID{1}, SpanID: srv, ParentSpanID: post, Kind: trace.SpanKindServer, Resource: callee},
			otelmap.Span{TraceID: trace.TraceID{1}, SpanID: work, ParentSpanID: srv, Kind: trace.SpanKindInternal, Resource: callee},
		)
	}
	return spans
}
