package tracestore

import (
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// Held is one trace's spans packed as the Store packs them (packed.go),
// for a holder that keeps traces itself: the Collector connector, which
// holds each trace until it settles. A held span costs its packed record
// (with a Dict, its attribute keys and name as an index) and a 24-byte
// head, and nothing the garbage collector scans; Spans unpacks them when
// the trace is read, a few times in its life.
//
// Resources are the caller's batch's: Add copies one the trace does not
// hold yet, and takes a resource for one the trace holds as assembly
// takes resources for processes (assemble's procOf): the same pointer as
// the last one added, the empty resource, or equal in service.name and
// attributes with a service.name. So the spans Spans returns group into
// the processes the batches' spans would, and assembly reads them alike.
//
// A Held is not safe for concurrent use; View gives a copy to read while
// the holder goes on adding.
type Held struct {
	p packedSpans
	// ids holds the span ids once the trace passes heldIndexFrom spans;
	// below that Add looks through the heads.
	ids map[trace.SpanID]struct{}
}

// heldIndexFrom is the size from which a Held indexes its span ids: a scan
// of this many heads is about as quick as a map lookup, and most traces
// never need the map's memory.
const heldIndexFrom = 64

// NewHeld returns an empty trace whose records name keys and names through
// dict (nil: written out), sized for expect spans of its first batch.
func NewHeld(dict *Dict, expect int) *Held {
	return &Held{p: packedSpans{dict: dict, batchResources: true, expect: min(expect, initialIDs)}}
}

// Len returns how many spans are held.
func (h *Held) Len() int { return h.p.len() }

// Has tells whether a span with id is held.
func (h *Held) Has(id trace.SpanID) bool {
	if h.ids != nil {
		_, ok := h.ids[id]
		return ok
	}
	return h.p.index(id) >= 0
}

// Add holds sp, whose resource is sp.Resource, unless a span with its id is
// held already (false). sp's strings and attributes are copied: the caller
// may reuse them.
func (h *Held) Add(sp *otelmap.Span) bool {
	if h.Has(sp.SpanID) {
		return false
	}
	h.p.add(sp, sp.Resource, maxPackedBytes)
	switch {
	case h.ids != nil:
		h.ids[sp.SpanID] = struct{}{}
	case h.p.len() >= heldIndexFrom:
		h.ids = make(map[trace.SpanID]struct{}, 2*h.p.len())
		for i := range h.p.heads {
			h.ids[h.p.heads[i].id] = struct{}{}
		}
	}
	return true
}

// Reserve makes room for n spans more, as large as the next one added.
func (h *Held) Reserve(n int) {
	h.p.expect = min(n, initialIDs)
}

// Trim gives back the room past the held spans when it is more than an
// eighth of them: a batch's appends may leave up to as much again. The
// bytes already written are not touched (a View may be reading them):
// the held records move to a new array of their size.
func (h *Held) Trim() {
	if len(h.p.data) > 0 && cap(h.p.data)-len(h.p.data) > len(h.p.data)/8 {
		h.p.data = slices.Clone(h.p.data)
	}
	if len(h.p.heads) > 0 && cap(h.p.heads)-len(h.p.heads) > len(h.p.heads)/8 {
		h.p.heads = slices.Clone(h.p.heads)
	}
}

// Bytes returns how many bytes the records and heads take.
func (h *Held) Bytes() int {
	return cap(h.p.data) + cap(h.p.heads)*24
}

// Root returns the id of the first span held without a parent.
func (h *Held) Root() (trace.SpanID, bool) {
	for i := range h.p.heads {
		if !h.p.heads[i].parent.IsValid() {
			return h.p.heads[i].id, true
		}
	}
	return trace.SpanID{}, false
}

// View returns the spans held now, to unpack while h goes on adding: h
// only ever appends past them, or moves them (Trim).
func (h *Held) View() *Held {
	return &Held{p: h.p.view()}
}

// Spans returns the held spans of trace id, in the order they were added.
// Their strings point into the held bytes, which stay as they are.
func (h *Held) Spans(id trace.TraceID) []otelmap.Span {
	return h.p.unpackAll(id)
}

// Scratch is memory SpansIn reuses from one call to the next, so that a
// reader unpacking trace after trace (a settle check, an assessor) does
// not allocate every span and attribute again. Its zero value is ready.
type Scratch struct {
	spans []otelmap.Span
	attrs []attribute.KeyValue
}

// scratchKeeps bounds the spans (and eight times as many attributes) a
// Scratch keeps between calls: one very large trace must not pin its
// size for good.
const scratchKeeps = 4096

// SpansIn is Spans in s's memory: the spans, their attribute slices and
// the Span values are valid until the next call with s (their strings
// until h is dropped). A nil s allocates, as Spans does.
func (h *Held) SpansIn(id trace.TraceID, s *Scratch) []otelmap.Span {
	if s == nil {
		return h.Spans(id)
	}
	n := h.p.len()
	if cap(s.spans) < n {
		s.spans = make([]otelmap.Span, n)
	}
	out, attrs := h.p.unpackInto(id, s.spans[:n], s.attrs[:0])
	if cap(attrs) <= 8*scratchKeeps {
		s.attrs = attrs[:0]
	}
	if cap(s.spans) > scratchKeeps {
		s.spans = nil
	}
	return out
}
