package assemble

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// A trace that begins with a received call (docs/trace-assembly.md): a
// trace whose top is the receiving side of a call from a caller the trace
// does not hold is a fragment of a larger run, and the graph drawn from it
// cannot say it saw everything (Coverage.Fragment).
//
// The top of a trace is a span without a parent id (a span whose parent id
// names a span the trace does not hold is read elsewhere: its caller is
// "unknown", or it is cut off from the root). Such a top is a fragment's
// when:
//
//  1. it is a side of a message or a call (PRODUCER, CONSUMER, SERVER)
//     linked to a span of another trace the assembly does not hold
//     (Options.Joined holds the ones joined): the message was created, or
//     the call sent, there (a runtime that starts a trace per message);
//  2. it is a CONSUMER span: a message consumed, which some program
//     produced; the trace does not hold it (unless the span links to a
//     span it holds: the producer's);
//  3. it is the server side of a request received by a library that reads
//     no trace context (recognize.Verdict.ReceivedBlind: the A2A Python
//     SDK's request handler, with no HTTP server span above it): nothing
//     says whether the caller was traced.
//
// A SERVER span without a parent that is none of these is the start of the
// trace, its caller the virtual user: an HTTP server's instrumentation
// looked for the caller's context and found none (a browser, curl, an
// untraced client), and a framework that marks its own runs SERVER (Ax)
// received no call. A link from a run to where its agent was created
// (GenAI's create_agent span, in a trace of its own) makes no fragment:
// an INTERNAL or CLIENT top is a run, not a delivery.
//
// Spans rebuilt from the Traceability Extension and the assessor's own
// spans are never a fragment's top. A received call of rule 2 or 3 under
// INTERNAL spans only is the trace's first received call all the same
// (wrappedReceipt).

// fragment returns why the trace is a fragment, "" when it is not.
func (a *assembler) fragment() string {
	why, at := "", int32(-1)
	for _, i := range a.order {
		n := &a.nodes[i]
		if n.depth > 0 {
			break // a.order holds the roots first
		}
		if n.parent >= 0 || n.flags&(fHasParentID|fExt) != 0 || a.procs[n.proc].assessor {
			continue
		}
		sp := a.span(i)
		delivery := deliveryKind(sp.Kind)
		w := ""
		if l, ok := a.linkOutside(i); ok && delivery {
			w = fmt.Sprintf("the trace begins with span %016x %q, linked to span %s of trace %s, which it does not hold: it continues another trace",
				n.id, sp.Name, l.SpanID, l.TraceID)
		} else if sp.Kind == trace.SpanKindConsumer && !a.linksInside(i) {
			w = fmt.Sprintf("the trace begins with span %016x %q, a message consumed from a producer the trace does not hold",
				n.id, sp.Name)
		} else if n.flags&fReceivedBlind != 0 {
			w = fmt.Sprintf("the trace begins with span %016x %q, the server side of a request handled by a library that reads no trace context: its caller may be traced in a trace not held",
				n.id, sp.Name)
		}
		if w != "" && (at < 0 || a.earlier(i, at)) {
			why, at = w, i
		}
	}
	if why != "" {
		return why
	}
	return a.wrappedReceipt()
}

// wrappedReceipt finds a received call (rules 2 and 3: a CONSUMER span
// linking to no span held, the server side of a request read blind) that
// is not the trace's top but has only INTERNAL spans above it: nothing in
// the trace sent it, so it is the trace's first received call under a span
// the receiver opened first (a worker's loop, or a wrapper forged to make
// the fragment look whole). It returns why, "" when there is none.
func (a *assembler) wrappedReceipt() string {
	why, at := "", int32(-1)
	for _, i := range a.order {
		n := &a.nodes[i]
		if n.parent < 0 || n.flags&fExt != 0 || a.procs[n.proc].assessor {
			continue
		}
		sp := a.span(i)
		consumed := sp.Kind == trace.SpanKindConsumer && !a.linksInside(i)
		if !consumed && n.flags&fReceivedBlind == 0 {
			continue
		}
		top := n.parent
		for x := n.parent; x >= 0; x = a.nodes[x].parent {
			if a.span(x).Kind != trace.SpanKindInternal || a.nodes[x].flags&fExt != 0 || a.procs[a.nodes[x].proc].assessor {
				top = -1
				break
			}
			top = x
		}
		if top < 0 || a.nodes[top].flags&fHasParentID != 0 {
			continue
		}
		what := "a message consumed from a producer the trace does not hold"
		if !consumed {
			what = "the server side of a request handled by a library that reads no trace context: its caller may be traced in a trace not held"
		}
		if at < 0 || a.earlier(i, at) {
			why, at = fmt.Sprintf("the trace's first received call is span %016x %q under span %016x %q, %s",
				n.id, sp.Name, a.nodes[top].id, a.span(top).Name, what), i
		}
	}
	return why
}

// linksInside reports whether node i's span links to a span the
// assembly holds that could have sent it: a message whose producer is in
// the trace (or a trace joined to it). The span itself and the spans
// under it ran after the message arrived: a link to them (forged to make
// the consumer look answered) is no producer.
func (a *assembler) linksInside(i int32) bool {
	for _, l := range a.span(i).Links() {
		j, ok := a.heldSpan(l.TraceID, l.SpanID)
		if !ok {
			continue
		}
		under := false
		for x := j; x >= 0 && !under; x = a.nodes[x].parent {
			under = x == i
		}
		if !under {
			return true
		}
	}
	return false
}

// linkOutside returns the first link of node i's span to a span of a
// trace the assembly does not read.
func (a *assembler) linkOutside(i int32) (otelmap.Link, bool) {
	for _, l := range a.span(i).Links() {
		if l.TraceID.IsValid() && l.SpanID.IsValid() && !a.inTrace(l.TraceID) {
			return l, true
		}
	}
	return otelmap.Link{}, false
}

// FragmentLinks returns the links of the tops of one trace's spans, by the
// rule above (a PRODUCER, CONSUMER or SERVER span without a parent id,
// linked to a span of another trace): where it continues another trace,
// which a reader holding that span joins to it (Options.Joined). Sorted by
// trace then span, without repeats.
func FragmentLinks(spans []otelmap.Span) []otelmap.Link {
	var out []otelmap.Link
	for i := range spans {
		sp := &spans[i]
		if sp.ParentSpanID.IsValid() || !deliveryKind(sp.Kind) {
			continue
		}
		for _, l := range sp.Links() {
			if l.TraceID.IsValid() && l.SpanID.IsValid() && l.TraceID != sp.TraceID {
				out = append(out, otelmap.Link{TraceID: l.TraceID, SpanID: l.SpanID})
			}
		}
	}
	slices.SortFunc(out, func(x, y otelmap.Link) int {
		return cmp.Or(bytes.Compare(x.TraceID[:], y.TraceID[:]), bytes.Compare(x.SpanID[:], y.SpanID[:]))
	})
	return slices.CompactFunc(out, func(x, y otelmap.Link) bool { return x.TraceID == y.TraceID && x.SpanID == y.SpanID })
}

// deliveryKind reports whether a span of kind k is a side of a message or
// a call: PRODUCER, CONSUMER or SERVER.
func deliveryKind(k trace.SpanKind) bool {
	return k == trace.SpanKindProducer || k == trace.SpanKindConsumer || k == trace.SpanKindServer
}
