package assemble_test

import (
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
)

// TestJoinedTracesKeepTheirOwnSpans attacks the reading of traces joined
// to a task's (docs/trace-assembly.md, "A trace that begins with a received
// call"; green assess and green serve assemble them together with
// Options.Joined). A participant whose fragment is joined (its top links
// to a span of the task's trace) learns span ids of the task's trace: the
// caller's span id arrives in every request's traceparent. A span id names
// a span within its trace only, so the fragment can neither hang its spans
// under another trace's span by a parent id nor replace one by repeating
// its id.
func TestJoinedTracesKeepTheirOwnSpans(t *testing.T) {
	// The task's trace: the coordinator calls the reviewer (no answer in
	// the trace: one client-only call) and sends a message whose delivery
	// starts the participant's own trace.
	build := func() (task, frag *principleTrace, call, send int) {
		task = newPrincipleTrace(20)
		co := task.agent(-1, "coordinator")
		call = task.add(co, "invoke_agent reviewer", trace.SpanKindClient, invokeAgent("reviewer")...)
		send = task.add(co, "send message", trace.SpanKindProducer)
		frag = newPrincipleTrace(21)
		frag.res = &otelmap.Resource{ServiceName: "runtime"}
		c := frag.add(-1, "process message", trace.SpanKindConsumer)
		frag.link(c, task.id, task.spans[send].SpanID)
		frag.agent(c, "helper")
		return task, frag, call, send
	}
	// own gives the fragment's spans ids of their own (principleTrace
	// numbers every trace's spans alike).
	own := func(p *principleTrace) {
		for i := range p.spans {
			p.spans[i].SpanID[0] = 0x6c
			if p.spans[i].ParentSpanID[0] == 0x5b {
				p.spans[i].ParentSpanID[0] = 0x6c
			}
		}
	}
	read := func(task, frag *principleTrace) []string {
		all := append(append([]otelmap.Span(nil), task.spans...), frag.spans...)
		td := assemble.TraceWith(task.id, all, assemble.Options{Joined: []trace.TraceID{frag.id}})
		return countedEdges(td)
	}

	t.Run("a span of the joined trace parented by a span id of the task's", func(t *testing.T) {
		// The fragment's SERVER span names the coordinator's call span as
		// its parent, to take the call: coordinator -> intruder both
		// sides, the reviewer's call gone.
		task, frag, call, _ := build()
		own(frag)
		frag.res = &otelmap.Resource{ServiceName: "intruder"}
		srv := frag.add(-1, "POST /", trace.SpanKindServer)
		frag.spans[srv].SpanID = trace.SpanID{0x6d, 1}
		frag.spans[srv].ParentSpanID = task.spans[call].SpanID
		a := frag.add(-1, "invoke_agent intruder", trace.SpanKindInternal, invokeAgent("intruder")...)
		frag.spans[a].SpanID, frag.spans[a].ParentSpanID = trace.SpanID{0x6d, 2}, frag.spans[srv].SpanID
		got := read(task, frag)
		want := []string{"coordinator->helper x1", "coordinator->reviewer x1", "unknown->intruder x1"}
		if !slices.Equal(got, want) {
			t.Errorf("interactions %q, want %q", got, want)
		}
	})

	t.Run("a span of the joined trace repeating a span id of the task's", func(t *testing.T) {
		// The fragment repeats the coordinator's call span, failed and
		// starting earlier (which, of two spans with one id in one trace,
		// is kept), to make the coordinator's call fail.
		task, frag, call, _ := build()
		own(frag)
		fake := task.spans[call]
		fake.TraceID, fake.Start = frag.id, fake.Start.Add(-time.Millisecond)
		fake.StatusError, fake.StatusMessage = true, "forged"
		frag.spans = append(frag.spans, fake)
		all := append(append([]otelmap.Span(nil), task.spans...), frag.spans...)
		td := assemble.TraceWith(task.id, all, assemble.Options{Joined: []trace.TraceID{frag.id}})
		in := findPair(td, "coordinator", "reviewer")
		if in == nil || in.Errors != 0 || in.ClientOnly != 1 {
			t.Errorf("coordinator -> reviewer = %+v, want its own call, client only, not failed", in)
		}
		// In either order.
		all = append(append([]otelmap.Span(nil), frag.spans...), task.spans...)
		td = assemble.TraceWith(task.id, all, assemble.Options{Joined: []trace.TraceID{frag.id}})
		if in := findPair(td, "coordinator", "reviewer"); in == nil || in.Errors != 0 {
			t.Errorf("spans of the joined trace first: coordinator -> reviewer = %+v", in)
		}
	})

	t.Run("the control: the fragment's own spans read as before", func(t *testing.T) {
		task, frag, _, _ := build()
		own(frag)
		got := read(task, frag)
		want := []string{"coordinator->helper x1", "coordinator->reviewer x1"}
		if !slices.Equal(got, want) {
			t.Errorf("interactions %q, want %q", got, want)
		}
	})
}
