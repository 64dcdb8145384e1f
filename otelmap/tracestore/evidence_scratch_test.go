package tracestore

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
)

// One EvidenceScratch checks trace after trace as fresh memory does: on
// every trace of the corpus (framework fixtures and live captures), in
// order and backwards, with a trace over scratchKeeps spans between, under
// several rules.
func TestCheckEvidenceInReusesNothingOfTheLastTrace(t *testing.T) {
	files, err := filepath.Glob("../assemble/testdata/frameworks/*.otlp.json")
	live, err2 := filepath.Glob("../assemble/testdata/live/*/captures/*.otlp.json")
	if err != nil || err2 != nil || len(files) == 0 || len(live) == 0 {
		t.Fatalf("corpus: %v %v", err, err2)
	}
	var traces [][]otelmap.Span
	for _, f := range append(files, live...) {
		batches, err := otlpdecode.ReadOTLPJSONFile(f)
		if err != nil {
			t.Fatal(err)
		}
		byTrace := map[trace.TraceID][]otelmap.Span{}
		var order []trace.TraceID
		for _, td := range batches {
			spans, _ := otlpdecode.SpansFromTraces(td, otelmap.SourceOTLP)
			for _, sp := range spans {
				if _, ok := byTrace[sp.TraceID]; !ok {
					order = append(order, sp.TraceID)
				}
				byTrace[sp.TraceID] = append(byTrace[sp.TraceID], sp)
			}
		}
		for _, id := range order {
			traces = append(traces, byTrace[id])
		}
	}
	big := settleBenchSpans(2 * scratchKeeps)
	traces = append(traces[:len(traces)/2:len(traces)/2], append([][]otelmap.Span{big}, traces[len(traces)/2:]...)...)
	backwards := slices.Clone(traces)
	slices.Reverse(backwards)
	rules := map[string]*Await{
		"all agents": {Calls: assemble.CallRule(nil), AllAgents: true},
		"assessor, agents, addresses, except": {Calls: assemble.CallRule(nil), Assessor: true,
			Agents: []string{"reviewer", "coder"}, Addresses: []string{"127.0.0.1:9999", "http://localhost"}, Except: []string{"planner"}},
		"none": nil,
	}
	for name, a := range rules {
		var s EvidenceScratch
		checked, unanswered := 0, 0
		for _, spans := range append(traces, backwards...) {
			want := CheckEvidence(spans, a)
			got := CheckEvidenceIn(spans, a, &s)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: trace %s: with a scratch %+v, fresh %+v", name, spans[0].TraceID, got, want)
			}
			checked++
			unanswered += len(want.Unanswered)
		}
		t.Logf("%s: %d traces checked, %d unanswered calls", name, checked, unanswered)
	}
}
