package coordbenchconnector

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/internal/tracegen"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// TestSpansForCheck: the settle check reads the spans the connector
// unpacks for it (tracestore.Held.SpansForCheck: a client chain's spans'
// attributes, no others') as it reads every span whole, on every trace of
// the corpus and on generated teams, under the connector's rule and under the assessor's, by
// agent name and by address.
func TestSpansForCheck(t *testing.T) {
	files, err := filepath.Glob("../../otelmap/assemble/testdata/frameworks/*.otlp.json")
	live, err2 := filepath.Glob("../../otelmap/assemble/testdata/live/*/captures/*.otlp.json")
	if err != nil || err2 != nil || len(files)+len(live) < 50 {
		t.Fatalf("corpus: %v %v", err, err2)
	}
	rules := []*tracestore.Await{
		{Calls: assemble.CallRule(nil), AllAgents: true},
		{Calls: assemble.CallRule(nil), Assessor: true, Agents: []string{"researcher", "writer", "reviewer"}},
		{Addresses: []string{"localhost:9999", "http://127.0.0.1:8000", "localhost"}},
		{Calls: assemble.CallRule(nil), AllAgents: true, Except: []string{"researcher"}},
	}
	dict := tracestore.NewDict()
	var scratch tracestore.Scratch
	traces, whole := 0, 0
	inputs := map[string][]ptrace.Traces{}
	for _, f := range append(files, live...) {
		inputs[f] = readOTLP(t, strings.TrimPrefix(f, "../../"))
	}
	// Generated teams (internal/tracegen): agent calls no server answers.
	for i, size := range []int{2, 5, 9, 16, 30, 61} {
		shape := tracegen.Shape{Requests: i + 1, SpansPerRequest: size, SpansPerTrace: size, OpenTraces: 1}
		inputs[fmt.Sprintf("generated team of %d", size)] = []ptrace.Traces{tracegen.Request(shape, i)}
	}
	for f, batches := range inputs {
		held := map[trace.TraceID]*tracestore.Held{}
		var b tracestore.Batch
		for _, td := range batches {
			otlpdecode.EachSpan(td, otelmap.SourceOTLP, func(sp *otelmap.Span) {
				if !sp.TraceID.IsValid() || !sp.SpanID.IsValid() {
					return
				}
				h := held[sp.TraceID]
				if h == nil {
					h = tracestore.NewHeld(dict)
					held[sp.TraceID] = h
				}
				b.Add(h, sp)
			})
			b.Commit()
		}
		for id, h := range held {
			traces++
			all := h.Spans(id)
			for k, rule := range rules {
				want := tracestore.CheckEvidence(all, rule)
				got := tracestore.CheckEvidence(h.SpansForCheck(id, &scratch), rule)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s, trace %s, rule %d: evidence %+v from the spans for the check, %+v from every span whole", f, id, k, got, want)
				}
				if k == 0 && want.Whole() {
					whole++
				}
			}
		}
	}
	if whole == 0 || whole == traces {
		t.Errorf("%d of %d traces whole: the corpus no longer tells the check's outcomes apart", whole, traces)
	}
	t.Logf("%d traces, %d whole under the connector's rule", traces, whole)
}
