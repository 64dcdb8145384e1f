package otlpdecode

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// checkEachSpanAgrees decodes body with pdata and requires EachSpan to
// give, one reused span at a time, the spans SpansFromTraces gives, field
// by field, in the same order, sharing resources as they do; and a
// tracestore.Held fed from EachSpan (as the Collector connector feeds
// it), with a Dict and without, to give back each trace's spans (the
// first of each span id) field by field, grouped into the same processes
// (assembly's rule: one resource pointer, or one service.name).
func checkEachSpanAgrees(t testing.TB, body []byte) {
	t.Helper()
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		return
	}
	td := req.Traces()
	want, _ := SpansFromTraces(td, otelmap.SourceOTLP)
	var texts []string
	var resources []*otelmap.Resource
	EachSpan(td, otelmap.SourceOTLP, func(sp *otelmap.Span) {
		texts = append(texts, otlptest.SpansTextOf([]otelmap.Span{*sp}, false))
		resources = append(resources, sp.Resource)
	})
	if len(texts) != len(want) {
		t.Fatalf("EachSpan gave %d spans, SpansFromTraces %d", len(texts), len(want))
	}
	for i := range want {
		w := otlptest.SpansTextOf([]otelmap.Span{want[i]}, false)
		if texts[i] != w {
			t.Fatalf("span %d: EachSpan gave\n%s\nSpansFromTraces\n%s", i, texts[i], w)
		}
		for j := range i {
			if (resources[i] == resources[j]) != (want[i].Resource == want[j].Resource) {
				t.Fatalf("spans %d and %d: EachSpan shares their resource %v, SpansFromTraces %v",
					j, i, resources[i] == resources[j], want[i].Resource == want[j].Resource)
			}
		}
	}
	for _, dict := range []*tracestore.Dict{nil, tracestore.NewDict()} {
		checkHeldKeeps(t, []ptrace.Traces{td}, dict)
	}
	checkPackerAgrees(t, []ptrace.Traces{td, td})
}

// checkHeldKeeps feeds the spans of batches, in turn, to one Held per
// trace and compares what they give back with SpansFromTraces's spans of
// the batches.
func checkHeldKeeps(t testing.TB, batches []ptrace.Traces, dict *tracestore.Dict) {
	t.Helper()
	var want []otelmap.Span
	for _, td := range batches {
		spans, _ := SpansFromTraces(td, otelmap.SourceOTLP)
		want = append(want, spans...)
	}
	held := map[trace.TraceID]*tracestore.Held{}
	wantBy := map[trace.TraceID][]otelmap.Span{}
	for i := range want {
		sp := want[i]
		if !sp.TraceID.IsValid() || !sp.SpanID.IsValid() || slices.ContainsFunc(wantBy[sp.TraceID], func(h otelmap.Span) bool { return h.SpanID == sp.SpanID }) {
			continue
		}
		wantBy[sp.TraceID] = append(wantBy[sp.TraceID], sp)
	}
	// The first batch span by span (Held.Add), the others through a
	// Batch, as the connector adds them.
	var b tracestore.Batch
	for k, td := range batches {
		EachSpan(td, otelmap.SourceOTLP, func(sp *otelmap.Span) {
			if !sp.TraceID.IsValid() || !sp.SpanID.IsValid() {
				return
			}
			h := held[sp.TraceID]
			if h == nil {
				h = tracestore.NewHeld(dict)
				held[sp.TraceID] = h
			}
			dup := h.Has(sp.SpanID)
			var added bool
			if k == 0 && len(batches) > 1 {
				added = h.Add(sp)
			} else {
				added = b.Add(h, sp) == tracestore.Added
			}
			if added == dup {
				t.Fatalf("span %s: Has %v, added %v", sp.SpanID, dup, added)
			}
			if !h.Has(sp.SpanID) {
				t.Fatalf("span %s added, not held", sp.SpanID)
			}
		})
		b.Commit()
	}
	if len(held) != len(wantBy) {
		t.Fatalf("%d traces held, want %d", len(held), len(wantBy))
	}
	for id, h := range held {
		view := h.View()
		// Another batch for every trace after the view: the view still
		// reads what it saw.
		extra := otelmap.Span{TraceID: id, SpanID: trace.SpanID{0xee, 0xee}, ParentSpanID: trace.SpanID{0xee}, Name: "after the view", Resource: otelmap.EmptyResource()}
		for h.Has(extra.SpanID) {
			extra.SpanID[7]++
		}
		if b.Add(h, &extra) != tracestore.Added {
			t.Fatalf("trace %s: a span after the view refused", id)
		}
		b.Commit()
		all := h.Spans(id)
		if n := len(all); n != len(wantBy[id])+1 || all[n-1].Name != "after the view" {
			t.Fatalf("trace %s: %d spans held after one more, want %d", id, n, len(wantBy[id])+1)
		}
		for _, got := range [][]otelmap.Span{all[:len(all)-1], view.Spans(id)} {
			if w, g := otlptest.SpansTextOf(wantBy[id], false), otlptest.SpansTextOf(got, false); w != g {
				t.Fatalf("trace %s (dict %v): Held gave back\n%s\nwant\n%s", id, dict != nil, g, w)
			}
			if w, g := processes(wantBy[id]), processes(got); !slices.Equal(w, g) {
				t.Fatalf("trace %s (dict %v): Held groups the spans into processes %v, the batch into %v", id, dict != nil, g, w)
			}
		}
		root, ok := h.Root()
		i := slices.IndexFunc(wantBy[id], func(sp otelmap.Span) bool { return !sp.ParentSpanID.IsValid() })
		if ok != (i >= 0) || (ok && root != wantBy[id][i].SpanID) {
			t.Fatalf("trace %s: Root %s %v, want the span at %d", id, root, ok, i)
		}
	}
}

// processes numbers the spans' processes as assembly does (procOf): one
// resource pointer is one process, and so is one service.name.
func processes(spans []otelmap.Span) []int {
	byRes := map[*otelmap.Resource]int{}
	byName := map[string]int{}
	out := make([]int, len(spans))
	next := 0
	for i := range spans {
		r := spans[i].ResourceOrEmpty()
		p, ok := byRes[r]
		if !ok {
			if p, ok = byName[r.ServiceName]; !ok || r.ServiceName == "" {
				p = next
				next++
				if r.ServiceName != "" {
					byName[r.ServiceName] = p
				}
			}
			byRes[r] = p
		}
		out[i] = p
	}
	return out
}

// sharedResourcesTraces is a batch whose resources a holder could merge
// wrongly: two equal unnamed resources (two processes for assembly), two
// equal named ones and one of that name with other attributes (one
// process), a service.name that is not a string (unnamed), an empty
// resource, each with spans of the same two traces; salt sets the span
// ids apart.
func sharedResourcesTraces(salt byte) ptrace.Traces {
	td := ptrace.NewTraces()
	add := func(fill func(pcommon.Map)) {
		rs := td.ResourceSpans().AppendEmpty()
		fill(rs.Resource().Attributes())
		ss := rs.ScopeSpans().AppendEmpty()
		n := byte(td.ResourceSpans().Len())
		for k := range 3 {
			sp := ss.Spans().AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{7, byte(k % 2)})
			sp.SetSpanID(pcommon.SpanID{salt, n, byte(k + 1)})
			if n > 1 || salt > 0 {
				sp.SetParentSpanID(pcommon.SpanID{0, 1, byte(k%2 + 1)})
			}
			sp.SetName(fmt.Sprintf("span %d.%d.%d", salt, n, k))
			sp.SetKind(ptrace.SpanKindClient)
		}
	}
	add(func(m pcommon.Map) { m.PutStr("service.name", "planner"); m.PutStr("host.name", "a") })
	add(func(m pcommon.Map) { m.PutStr("host.name", "x") })
	add(func(m pcommon.Map) { m.PutStr("host.name", "x") })
	add(func(m pcommon.Map) { m.PutStr("service.name", "planner"); m.PutStr("host.name", "a") })
	add(func(m pcommon.Map) { m.PutStr("service.name", "planner"); m.PutStr("host.name", "b") })
	add(func(m pcommon.Map) { m.PutInt("service.name", 7) })
	add(func(pcommon.Map) {})
	add(func(m pcommon.Map) { m.PutStr("host.name", "x") })
	return td
}

// TestHeldSharedResources: the batches of sharedResourcesTraces, two in
// turn, through EachSpan into Held, come back grouped into the processes
// assembly reads in the batches' spans: unnamed resources equal in
// content stay apart, within a batch and across batches; named ones
// merge.
func TestHeldSharedResources(t *testing.T) {
	batches := []ptrace.Traces{sharedResourcesTraces(0), sharedResourcesTraces(1)}
	var all []otelmap.Span
	for _, td := range batches {
		spans, _ := SpansFromTraces(td, otelmap.SourceOTLP)
		all = append(all, spans...)
	}
	// The test's premise, per resource of the two batches (3 spans each).
	var perResource []int
	for i, p := range processes(all) {
		if i%3 == 0 {
			perResource = append(perResource, p)
		}
	}
	if want := []int{0, 1, 2, 0, 0, 3, 4, 5, 0, 6, 7, 0, 0, 8, 4, 9}; !slices.Equal(perResource, want) {
		t.Fatalf("the batches' processes by resource: %v, want %v", perResource, want)
	}
	for _, dict := range []*tracestore.Dict{nil, tracestore.NewDict()} {
		checkHeldKeeps(t, batches, dict)
	}
	for _, td := range batches {
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		checkEachSpanAgrees(t, body)
	}
	if !strings.Contains(otlptest.SpansText(all), "host.name") {
		t.Fatal("no resource attributes decoded")
	}
}
