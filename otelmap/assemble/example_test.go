package assemble_test

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
)

func ExampleTrace() {
	id := trace.TraceID{1}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	coord := &otelmap.Resource{ServiceName: "coordinator"}
	rev := &otelmap.Resource{ServiceName: "reviewer"}
	spans := []otelmap.Span{
		{TraceID: id, SpanID: trace.SpanID{1}, Name: "invoke_agent reviewer", Kind: trace.SpanKindClient, Resource: coord,
			Start: t0, End: t0.Add(30 * time.Millisecond), Attrs: invokeAttrs("reviewer")},
		{TraceID: id, SpanID: trace.SpanID{2}, ParentSpanID: trace.SpanID{1}, Name: "POST", Kind: trace.SpanKindServer, Resource: rev,
			Start: t0.Add(time.Millisecond), End: t0.Add(29 * time.Millisecond)},
	}
	td := assemble.Trace(id, spans)
	for _, in := range td.Interactions {
		fmt.Printf("%s -> %s: %d call(s), both sides %d, %v ms\n", in.From, in.To, in.Count, in.BothSides, in.LatenciesMS)
	}
	fmt.Println("complete:", td.Coverage.Complete)
	// Output:
	// coordinator -> reviewer: 1 call(s), both sides 1, [30] ms
	// complete: 1
}
