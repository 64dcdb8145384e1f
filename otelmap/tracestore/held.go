package tracestore

import (
	"encoding/binary"
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
	// below that Has looks through the heads.
	ids map[trace.SpanID]struct{}
	// pending is the bytes of this trace's records in an open Batch, and
	// batchIndex the trace's place in its traces.
	pending    int
	batchIndex int32
}

// heldIndexFrom is the size from which a Held indexes its span ids: a scan
// of this many heads is about as quick as a map lookup, and most traces
// never need the map's memory.
const heldIndexFrom = 64

// NewHeld returns an empty trace whose records name keys and names through
// dict (nil: written out).
func NewHeld(dict *Dict) *Held {
	return &Held{p: packedSpans{dict: dict, batchResources: true, valueRefs: dict != nil}}
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
// held already or the trace's records would pass 4 GiB (false). sp's
// strings and attributes are copied: the caller may reuse them. A Batch
// adds a batch's spans with less copying.
func (h *Held) Add(sp *otelmap.Span) bool {
	if h.Has(sp.SpanID) || h.pending > 0 {
		return false
	}
	h.p.refs = nil // a Batch's, left by a record it undid
	var rec []byte
	if !h.p.add(sp, spanAttrs{}, sp.Resource, maxPackedBytes, &rec) {
		return false
	}
	h.p.place(rec)
	h.indexLast()
	return true
}

// indexLast adds the last head's id to the index, making the index when
// the trace reaches heldIndexFrom spans.
func (h *Held) indexLast() {
	switch {
	case h.ids != nil:
		h.ids[h.p.heads[len(h.p.heads)-1].id] = struct{}{}
	case h.p.len() >= heldIndexFrom:
		h.ids = make(map[trace.SpanID]struct{}, 2*h.p.len())
		for i := range h.p.heads {
			h.ids[h.p.heads[i].id] = struct{}{}
		}
	}
}

// Reserve makes room for the heads of n spans more, so that a batch's
// heads grow the trace's once, not by doubling.
func (h *Held) Reserve(n int) {
	if cap(h.p.heads)-len(h.p.heads) < n {
		heads := make([]spanHead, len(h.p.heads), len(h.p.heads)+n)
		copy(heads, h.p.heads)
		h.p.heads = heads
	}
}

// A Batch adds one export batch's spans to the traces they belong to:
// each span is packed into the batch's buffer, reused from batch to batch,
// and Commit moves every trace's new records into its bytes, grown once by
// exactly what they take. Adding record by record to each trace's bytes
// grows them by doubling, and so allocates and copies them several times
// over and leaves them up to twice their size. Between Add and Commit the
// traces added to must not be read, viewed or added to otherwise.
//
// With a Dict, a string attribute value that a span of the same trace in
// the same batch had already (a conversation id, an agent's name or
// address, a prompt a child span repeats) is held once: the later
// records refer to its bytes. In `make bench-collector`'s payload half of
// the value bytes repeat within their trace.
type Batch struct {
	buf     []byte
	records []batchRecord // in the order added
	traces  []*Held       // in the order first added to
	refs    valueRefs
	w       AttrWriter // AddWith's
	// name is the last span name AddWith wrote, as the Dict's word
	// (wordTable.appendWordAfter): a batch's spans repeat their order of
	// names trace after trace.
	name int32
}

// batchRecord is a record in the batch's buffer, of trace traces[t]:
// an index, not a *Held, so that adding it stores no pointer (a store the
// garbage collector's write barrier would see while it marks, which it
// mostly does while a receiver's batches come in).
type batchRecord struct {
	t      int32
	off, n int
}

// batchKeeps bounds the buffer a Batch keeps from one batch to the next.
const batchKeeps = 16 << 20

// AddOutcome is what Batch.Add did with a span.
type AddOutcome int

const (
	// Added: the span is held (once the batch is committed).
	Added AddOutcome = iota
	// Duplicate: a span with its id is held already.
	Duplicate
	// Full: the trace's records would pass 4 GiB.
	Full
)

// Add packs sp (its resource sp.Resource) for h, unless h holds a span
// with its id or has no room for it. sp's strings and attributes are
// copied: the caller may reuse them.
func (b *Batch) Add(h *Held, sp *otelmap.Span) AddOutcome {
	if h.Has(sp.SpanID) {
		return Duplicate
	}
	m := b.begin(h)
	b.buf = h.p.pack(b.buf, sp, spanAttrs{}, sp.Resource)
	return b.finish(h, sp, m)
}

// batchMark is what begin saved of a trace, for finish to undo the
// record it packs when the trace has no room for it.
type batchMark struct {
	start, off         int
	resources, details int
	lastRes            *otelmap.Resource
	lastIndex          int
}

// begin readies h to pack one record into b.buf.
func (b *Batch) begin(h *Held) batchMark {
	m := batchMark{start: len(b.buf), resources: len(h.p.resources), details: len(h.p.details),
		lastRes: h.p.lastRes, lastIndex: h.p.lastIndex, off: h.p.size + h.pending}
	if h.p.valueRefs {
		// refs stays the batch's until Commit (Held.Add clears it): one
		// pointer store per trace and batch, not two per span.
		if h.p.refs != &b.refs {
			h.p.refs = &b.refs
		}
		h.p.refBase = m.off - m.start
		b.refs.added = b.refs.added[:0]
		// The trace's place in traces + 1, which finish gives it if it has
		// none yet.
		if h.pending == 0 {
			b.refs.owner = uint32(len(b.traces)) + 1
		} else {
			b.refs.owner = uint32(h.batchIndex) + 1
		}
	}
	return m
}

// finish takes the record packed since begin (sp's: its ids) for h, or
// undoes it if the trace's records would pass 4 GiB.
func (b *Batch) finish(h *Held, sp *otelmap.Span, m batchMark) AddOutcome {
	n := len(b.buf) - m.start
	if m.off+n > maxPackedBytes {
		b.refs.forget()
		b.buf = b.buf[:m.start]
		clear(h.p.resources[m.resources:])
		h.p.resources = h.p.resources[:m.resources]
		clear(h.p.details[m.details:])
		h.p.details = h.p.details[:m.details]
		h.p.lastRes, h.p.lastIndex = m.lastRes, m.lastIndex
		if h.pending == 0 {
			h.p.refs = nil // Commit clears only the traces added to
		}
		return Full
	}
	if h.pending == 0 {
		h.batchIndex = int32(len(b.traces))
		b.traces = append(b.traces, h)
	}
	h.pending += n
	h.p.heads = append(h.p.heads, spanHead{id: sp.SpanID, parent: sp.ParentSpanID, off: uint32(m.off), n: uint32(n)})
	h.indexLast()
	b.records = append(b.records, batchRecord{t: h.batchIndex, off: m.start, n: n})
	return Added
}

// Commit moves the added records into their traces: each trace's records
// of the batch go to one new chunk of exactly their size (the chunks held
// already stay as they are, for Views reading them). A batch's records of
// a trace, which alone refer to each other's values, are so in one chunk,
// and a held trace's bytes are sized exactly, where the Store's grow by
// chunks with room to spare (packed.go): a held trace is read a few times
// and its size is the holder's memory. Copying a trace's bytes whole into
// one chunk at every batch instead was the connector's largest allocation
// (docs/performance.md, seventh pass).
func (b *Batch) Commit() {
	for _, h := range b.traces {
		h.p.chunks = append(h.p.chunks, chunk{start: uint32(h.p.size), b: make([]byte, 0, h.pending)})
		h.pending = 0
		h.p.firstPending = len(h.p.heads) // Held.Add places only the heads after these
		h.p.refs = nil
	}
	for _, r := range b.records {
		h := b.traces[r.t]
		c := &h.p.chunks[len(h.p.chunks)-1]
		c.b = append(c.b, b.buf[r.off:r.off+r.n]...)
		h.p.size = int(c.start) + len(c.b)
	}
	clear(b.records)
	b.records = b.records[:0]
	b.refs.reset()
	clear(b.traces)
	b.traces = b.traces[:0]
	b.w = AttrWriter{} // holds no batch's memory between batches
	b.buf = b.buf[:0]
	if cap(b.buf) > batchKeeps {
		b.buf = nil
	}
}

// Bytes returns how many bytes the records and heads take.
func (h *Held) Bytes() int {
	n := cap(h.p.heads) * 24
	for _, c := range h.p.chunks {
		n += cap(c.b)
	}
	return n
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
// only ever appends past them, or moves them to a larger array (Commit).
//
// Spans added through an open Batch are not in the view.
func (h *Held) View() *Held {
	// A Held never rewrites a head (it has no replace, for which the
	// Store's view copies them): the view shares them, cut to their
	// length, and h only appends past them or moves them (Reserve).
	v := &Held{p: h.p.viewOver(h.p.heads[:len(h.p.heads):len(h.p.heads)])}
	if h.pending > 0 {
		n := len(v.p.heads)
		for n > 0 && int(v.p.heads[n-1].off) >= v.p.size {
			n--
		}
		v.p.heads = v.p.heads[:n]
	}
	return v
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
	return h.spansIn(id, s, false)
}

// SpansForCheck is SpansIn for CheckEvidence: every CLIENT and PRODUCER
// span whole, and of the others their ids, kind and status alone, all
// that the settle rule reads of them (it reads attributes, resources and
// names of a client chain's spans only: evidence_rule.go, note and
// CallRule). Unpacking the attributes is most of the cost of reading a
// trace; TestSpansForCheck holds CheckEvidence's verdicts on these to its
// verdicts on Spans.
func (h *Held) SpansForCheck(id trace.TraceID, s *Scratch) []otelmap.Span {
	if s == nil {
		s = &Scratch{}
	}
	return h.spansIn(id, s, true)
}

func (h *Held) spansIn(id trace.TraceID, s *Scratch, clientAttrs bool) []otelmap.Span {
	n := h.p.len()
	if cap(s.spans) < n {
		s.spans = make([]otelmap.Span, n)
	}
	out, attrs := h.p.unpackInto(id, s.spans[:n], s.attrs[:0], clientAttrs)
	if cap(attrs) <= 8*scratchKeeps {
		s.attrs = attrs[:0]
	}
	if cap(s.spans) > scratchKeeps {
		s.spans = nil
	}
	return out
}

// findBatchResource is findResource for resources of the caller's batch
// (a decoder's, pointing into its memory): equal to one held when it is
// the empty resource, or has its service.name and attributes, since
// assembly takes resources with one service.name for one process;
// otherwise new, and copied. An unnamed resource is never matched by
// content: assembly tells unnamed processes apart by resource pointer, one
// per batch (resourceIndex matches a batch's spans of one resource, which
// come together, by pointer).
func (p *packedSpans) findBatchResource(res *otelmap.Resource) int {
	if res == nil || res == otelmap.EmptyResource() {
		res = otelmap.EmptyResource()
		for i, r := range p.resources {
			if r == res {
				return i
			}
		}
		p.resources = append(p.resources, res)
		return len(p.resources) - 1
	}
	own := (*otelmap.Resource)(nil)
	if res.ServiceName != "" {
		for i := len(p.resources) - 1; i >= 0; i-- {
			r := p.resources[i]
			if r.ServiceName == res.ServiceName && slices.Equal(r.Attrs, res.Attrs) {
				return i
			}
		}
		if p.dict != nil {
			own = p.dict.resource(res)
		}
	}
	if own == nil {
		own = cloneResource(res)
	}
	p.resources = append(p.resources, own)
	return len(p.resources) - 1
}

// AppendPacked appends what h holds, span by span: its ids, its record's
// length and bytes, and how many resources and details the records point
// at. Two roads that pack the same spans (Batch.Add, Batch.AddWith) must
// give equal bytes: their tests compare them.
func (h *Held) AppendPacked(b []byte) []byte {
	c := 0
	for i := range h.p.heads {
		hd := &h.p.heads[i]
		var rec []byte
		rec, c = h.p.record(hd, c)
		b = append(b, hd.id[:]...)
		b = append(b, hd.parent[:]...)
		b = binary.AppendUvarint(b, uint64(len(rec)))
		b = append(b, rec...)
	}
	b = binary.AppendUvarint(b, uint64(len(h.p.resources)))
	return binary.AppendUvarint(b, uint64(len(h.p.details)))
}
