package assemble_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// The framework fixtures stand for participants of other people's
// software. Under an assessor's call (their root's parent the assessor's
// CLIENT span, as W3C trace context makes it), provenance (tracestore.Vouch)
// keeps every span of every fixture; their trees are whole, and their span
// links point inside them. Without that parent, as a participant whose
// context propagation broke would send them in the task's trace, every
// span is set aside, and reported.
func TestFrameworkFixturesUnderAnAssessorCall(t *testing.T) {
	green := &otelmap.Resource{ServiceName: "coordbench-green", Attrs: []attribute.KeyValue{
		otelmap.AttrServiceName.String("coordbench-green"), otelmap.AttrRole.String(otelmap.RoleAssessor)}}
	for _, name := range frameworkNames(t) {
		t.Run(name, func(t *testing.T) {
			id, spans, _ := loadFramework(t, name)
			held := map[trace.SpanID]bool{}
			for _, s := range spans {
				held[s.SpanID] = true
			}
			task := otelmap.Span{TraceID: id, SpanID: trace.SpanID{0xee, 1}, Name: otelmap.SpanTask, Kind: trace.SpanKindInternal,
				Resource: green, Source: otelmap.SourceInProcess, Start: time.Unix(1, 0), End: time.Unix(2, 0)}
			call := otelmap.Span{TraceID: id, SpanID: trace.SpanID{0xee, 2}, ParentSpanID: task.SpanID, Name: "invoke_agent",
				Kind: trace.SpanKindClient, Resource: green, Source: otelmap.SourceInProcess, Start: time.Unix(1, 0), End: time.Unix(2, 0),
				Attrs: []attribute.KeyValue{otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent)}}

			loose := append([]otelmap.Span{task, call}, spans...)
			if kept, aside := tracestore.Vouch(loose, task.SpanID); len(kept) != 2 || aside.Outside != len(spans) || aside.Impersonating != 0 {
				t.Errorf("fixture not under the assessor's call: kept %d, set aside %+v; want all %d of its spans set aside", len(kept), aside, len(spans))
			}

			roots := 0
			grafted := []otelmap.Span{task, call}
			for _, s := range spans {
				if !s.ParentSpanID.IsValid() || !held[s.ParentSpanID] {
					s.ParentSpanID = call.SpanID
					roots++
				}
				grafted = append(grafted, s)
			}
			if roots != 1 {
				t.Fatalf("%d roots; the test grafts a fixture's one root", roots)
			}
			kept, aside := tracestore.Vouch(grafted, task.SpanID)
			if len(kept) != len(grafted) || aside.Spans != 0 {
				t.Errorf("under the assessor's call: kept %d of %d, set aside %+v", len(kept), len(grafted), aside)
			}
		})
	}
}
