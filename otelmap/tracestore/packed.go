package tracestore

import (
	"encoding/binary"
	"math"
	"slices"
	"sort"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// The store holds each trace's spans packed: every span's fields and
// attributes encoded into one byte slice per trace, with its ids beside
// it in a small fixed-size head. Neither holds a pointer, so the garbage
// collector marks a trace's spans as one object and never scans them: a
// store of a million decoded spans (Span, its attribute.KeyValues, their
// strings) is some fifteen million pointers for every collection to
// follow, and following them was nearly half of a server's CPU while it
// ingested (docs/performance.md). Spans are unpacked when read (Spans, the
// settle check), which happens once or a few times per trace; a span is
// written once, when it is stored.
//
// A record, in order:
//
//	flags     1 byte: flagError, flagStartZero, flagEndZero, flagDetail,
//	          flagNanoTimes, and the source's code in the bits of sourceMask
//	kind      zigzag varint
//	start     with flagNanoTimes, Unix nanoseconds in 8 bytes, little
//	          endian; else varint seconds, uvarint nanoseconds (absent if
//	          flagStartZero)
//	end       the same (absent if flagEndZero)
//	resource  uvarint: index into packedSpans.resources
//	detail    uvarint: index into packedSpans.details (if flagDetail)
//	name      uvarint length, bytes
//	status    uvarint length, bytes (the status message)
//	source    uvarint length, bytes (only for sourceOther)
//	attrs     uvarint count, then the attributes in otelmap's packed
//	          attribute encoding (otelmap.AppendPackedAttr).
//
// With a Dict (Held), the name and each attribute's key are the Dict's
// words (wordTable.appendWord), a key followed by the value as
// otelmap.AppendPackedValue writes it, and a string value of a Held with
// value references as appendRefString writes it.
//
// The trace id is the trace's own; the span and parent ids are in the head.
//
// A batch's records are first written to a buffer of the store's (its
// scratch), one after the other whichever trace they belong to, and moved
// into their traces' bytes when the batch is done (place). A trace's
// bytes are chunks: the records a batch brings go to the last chunk if it
// has room for them all, else to a new one made for them (and for a
// quarter of the trace more, if the batch brought less, so that a trace
// arriving a few spans at a time has few chunks); a chunk is never moved
// or grown past its capacity. Grown by append one record at a time, a
// trace's bytes were copied and zeroed some four times over, held up to a
// quarter unused, and left the copies as garbage, whose fresh pages were
// a sixth of a server's CPU while it ingested (docs/performance.md).
const (
	flagError     = 1 << 0
	flagStartZero = 1 << 1
	flagEndZero   = 1 << 2
	flagDetail    = 1 << 3
	sourceShift   = 4
	sourceMask    = 7 << sourceShift
	// flagNanoTimes: the times are Unix nanoseconds in 8 bytes, which
	// every time between the years 1678 and 2262 is. Read as a varint
	// pair, two times were a tenth of unpacking a span (a varint of 5
	// bytes takes binary.Varint's loop); 8 bytes are one load, and fewer
	// bytes than the pair's 9 or 10.
	flagNanoTimes = 1 << 7
)

// Source codes in a record's flags.
const (
	sourceEmpty = iota
	sourceInProcess
	sourceOTLP
	sourceExtension
	sourceOther // the source's text follows the status message
)

// spanHead is what the store looks up without unpacking a span.
type spanHead struct {
	id, parent trace.SpanID
	// off and n locate the record: n bytes from the trace's byte off,
	// counting the chunks' bytes one after the other (chunk.start).
	off, n uint32
}

// chunk is a run of a trace's records: bytes start to start+len(b) of
// the trace's.
type chunk struct {
	start uint32
	b     []byte
}

// packedSpans are one trace's spans, in arrival order.
type packedSpans struct {
	heads []spanHead
	// chunks hold the records; size is the bytes they hold in all.
	chunks []chunk
	size   int
	// resources and details are what records point at by index: few per
	// trace (a resource per batch and agent; details only for spans with
	// links or events). They are deep copies owned by the store.
	resources []*otelmap.Resource
	details   []*otelmap.SpanDetail
	// lastRes is the resource last looked up, lastIndex its index: a
	// batch's spans of one process come together.
	lastRes   *otelmap.Resource
	lastIndex int
	// expect is how many spans the trace's first batch brings (set when
	// the trace is made), so that heads can be sized for them all.
	expect int
	// The records of the batch being added are in the store's scratch
	// until place moves them here: those of heads[firstPending:], and of
	// the heads listed in replaced; pending is their length in all.
	firstPending int
	replaced     []int32
	pending      int
	// dict, when set, holds attribute keys and span names once for every
	// trace that shares it (dict.go); the records then name them by index.
	// The Store sets none.
	dict *Dict
	// batchResources: resources are the caller's batch's own (not copies
	// the holder owns), matched as assembly matches processes (Held).
	batchResources bool
	// valueRefs (Held, with a dict): string attribute values are written
	// as appendRefString writes them, a repeat of one earlier in the trace
	// as a reference to it; refs and refBase are a Batch's while it packs.
	valueRefs bool
	refs      *valueRefs
	refBase   int
}

func (p *packedSpans) len() int { return len(p.heads) }

// view returns the spans as they are now, to unpack without the store's
// lock: its heads are a copy (replace rewrites a head in place), and its
// bytes, resources and details are the parts of p's that exist now, which
// p never writes again (it only appends past them).
func (p *packedSpans) view() packedSpans {
	return p.viewOver(slices.Clone(p.heads))
}

// viewOver is view with heads, p's or a copy of them.
func (p *packedSpans) viewOver(heads []spanHead) packedSpans {
	return packedSpans{
		heads:     heads,
		chunks:    slices.Clone(p.chunks), // place appends to the last chunk's b
		size:      p.size,
		resources: p.resources[:len(p.resources):len(p.resources)],
		details:   p.details[:len(p.details):len(p.details)],
		dict:      p.dict,
		valueRefs: p.valueRefs,
	}
}

// record returns the record of h, and the chunk it is in; from is a chunk
// to look in first (the one the last record was in).
func (p *packedSpans) record(h *spanHead, from int) ([]byte, int) {
	c := from
	if c >= len(p.chunks) || h.off < p.chunks[c].start || h.off >= p.chunks[c].start+uint32(len(p.chunks[c].b)) {
		c = sort.Search(len(p.chunks), func(i int) bool { return p.chunks[i].start > h.off }) - 1
	}
	ch := &p.chunks[c]
	off := h.off - ch.start
	return ch.b[off : off+h.n], c
}

// sourceOf returns the source code of span i; scratch holds the records
// of the batch being added.
func (p *packedSpans) sourceOf(i int, scratch []byte) int {
	h := &p.heads[i]
	var flags byte
	if p.isPending(i) {
		flags = scratch[h.off]
	} else {
		rec, _ := p.record(h, len(p.chunks)-1)
		flags = rec[0]
	}
	return int(flags&sourceMask) >> sourceShift
}

// isPending tells whether span i's record is still in the store's scratch.
func (p *packedSpans) isPending(i int) bool {
	return i >= p.firstPending || slices.Contains(p.replaced, int32(i))
}

// maxPackedBytes is the most a trace's packed spans may take: records
// are found by 32-bit offsets (and an int must hold it).
const maxPackedBytes = min(math.MaxUint32, math.MaxInt)

// add appends sp, whose resource is res (a copy the store owns), its
// record written to scratch, unless the record would take the trace's
// packed bytes past maxBytes; it reports whether it did.
func (p *packedSpans) add(sp *otelmap.Span, attrs spanAttrs, res *otelmap.Resource, maxBytes int, scratch *[]byte) bool {
	off, ok := p.packWithin(sp, attrs, res, maxBytes, scratch)
	if !ok {
		return false
	}
	if len(p.heads) == 0 && p.expect > 1 {
		p.heads = make([]spanHead, 0, p.expect)
	}
	p.expect = 0
	p.heads = append(p.heads, spanHead{id: sp.SpanID, parent: sp.ParentSpanID, off: uint32(off), n: uint32(len(*scratch) - off)})
	return true
}

// replace puts sp in place of span i, its record written to scratch,
// unless the record would take the trace's packed bytes past maxBytes; it
// reports whether it did. The old record stays in data, unused: records
// are never rewritten, because spans read before point into them.
func (p *packedSpans) replace(i int, sp *otelmap.Span, attrs spanAttrs, res *otelmap.Resource, maxBytes int, scratch *[]byte) bool {
	off, ok := p.packWithin(sp, attrs, res, maxBytes, scratch)
	if !ok {
		return false
	}
	if p.isPending(i) {
		p.pending -= int(p.heads[i].n) // that record will not be placed
	} else {
		p.replaced = append(p.replaced, int32(i))
	}
	p.heads[i] = spanHead{id: sp.SpanID, parent: sp.ParentSpanID, off: uint32(off), n: uint32(len(*scratch) - off)}
	return true
}

// packWithin appends sp's record to scratch and returns where it starts,
// or, if the trace's bytes would then pass maxBytes, leaves scratch (and
// the resources and details) as they were and returns false.
func (p *packedSpans) packWithin(sp *otelmap.Span, attrs spanAttrs, res *otelmap.Resource, maxBytes int, scratch *[]byte) (int, bool) {
	off, resources, details := len(*scratch), len(p.resources), len(p.details)
	lastRes, lastIndex := p.lastRes, p.lastIndex
	*scratch = p.pack(*scratch, sp, attrs, res)
	n := len(*scratch) - off
	if p.size+p.pending+n > maxBytes {
		*scratch = (*scratch)[:off]
		clear(p.resources[resources:])
		p.resources = p.resources[:resources]
		clear(p.details[details:])
		p.details = p.details[:details]
		p.lastRes, p.lastIndex = lastRes, lastIndex
		return off, false
	}
	p.pending += n
	return off, true
}

// place moves the records of the batch being added from scratch into the
// last chunk, or into a new one if it has no room for them all.
func (p *packedSpans) place(scratch []byte) {
	if p.pending > 0 {
		last := p.room(p.pending)
		move := func(h *spanHead) {
			off := last.start + uint32(len(last.b))
			last.b = append(last.b, scratch[h.off:h.off+h.n]...)
			h.off = off
		}
		for i := p.firstPending; i < len(p.heads); i++ {
			move(&p.heads[i])
		}
		for _, i := range p.replaced {
			move(&p.heads[i])
		}
		p.size += p.pending
	}
	p.firstPending, p.replaced, p.pending = len(p.heads), p.replaced[:0], 0
}

// room returns the last chunk if it has room for n bytes more, else a
// new last chunk made for them and for a quarter of the trace more.
func (p *packedSpans) room(n int) *chunk {
	if k := len(p.chunks); k == 0 || cap(p.chunks[k-1].b)-len(p.chunks[k-1].b) < n {
		p.chunks = append(p.chunks, chunk{start: uint32(p.size), b: make([]byte, 0, max(n, p.size/4))})
	}
	return &p.chunks[len(p.chunks)-1]
}

// index returns the position of the span with id, or -1.
func (p *packedSpans) index(id trace.SpanID) int {
	for i := range p.heads {
		if p.heads[i].id == id {
			return i
		}
	}
	return -1
}

// resourceIndex returns the index of res in p.resources, adding it if
// the trace holds no resource equal to it: the spans of one process share
// one Resource in the trace, whichever batch they came in.
func (p *packedSpans) resourceIndex(res *otelmap.Resource) int {
	if res == p.lastRes {
		return p.lastIndex
	}
	p.lastRes, p.lastIndex = res, p.findResource(res)
	return p.lastIndex
}

func (p *packedSpans) findResource(res *otelmap.Resource) int {
	if p.batchResources {
		return p.findBatchResource(res)
	}
	for i := len(p.resources) - 1; i >= 0; i-- {
		r := p.resources[i]
		if r == res || (r != otelmap.EmptyResource() && res != otelmap.EmptyResource() &&
			r.ServiceName == res.ServiceName && slices.Equal(r.Attrs, res.Attrs)) {
			return i
		}
	}
	p.resources = append(p.resources, res)
	return len(p.resources) - 1
}

// spanAttrs are a span's attributes already packed (otelmap.PackedAttrs),
// when the decoder packed them: ok, count of them in packed. Otherwise the
// span's Attrs are packed.
type spanAttrs struct {
	packed []byte
	count  int
	ok     bool
}

func (p *packedSpans) pack(b []byte, sp *otelmap.Span, attrs spanAttrs, res *otelmap.Resource) []byte {
	ri := p.resourceIndex(res) // before the dict's lock: it may take it
	if p.dict != nil {
		p.dict.mu.Lock()
		defer p.dict.mu.Unlock()
	}
	p.putHead(&b, sp, ri, nil)
	switch {
	case attrs.ok && p.dict == nil:
		b = binary.AppendUvarint(b, uint64(attrs.count))
		return append(b, attrs.packed...)
	case attrs.ok:
		b = binary.AppendUvarint(b, uint64(attrs.count))
		for rest := attrs.packed; len(rest) > 0; {
			kv, n := otelmap.ReadPackedAttr(rest)
			b = p.appendDictAttr(b, kv)
			rest = rest[n:]
		}
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(sp.Attrs)))
	for _, kv := range sp.Attrs {
		if p.dict == nil {
			b = otelmap.AppendPackedAttr(b, kv)
		} else {
			b = p.appendDictAttr(b, kv)
		}
	}
	return b
}

// putHead writes the record's fields before its attributes onto *b, in
// place (putUvarint; sp.Attrs are not read), its resource at index ri
// (resourceIndex); the caller holds the dict's lock, if there is a dict.
// With prevName, the name is guessed from the one before
// (wordTable.appendWordAfter).
func (p *packedSpans) putHead(b *[]byte, sp *otelmap.Span, ri int, prevName *int32) {
	flags := byte(0)
	if sp.StatusError {
		flags |= flagError
	}
	if sp.Start.IsZero() {
		flags |= flagStartZero
	}
	if sp.End.IsZero() {
		flags |= flagEndZero
	}
	if sp.Detail != nil {
		flags |= flagDetail
	}
	nano := nanoTime(sp.Start) && nanoTime(sp.End)
	if nano {
		flags |= flagNanoTimes
	}
	code := sourceCode(sp.Source)
	flags |= byte(code) << sourceShift
	*b = append(*b, flags)
	putVarint(b, int64(sp.Kind))
	for _, t := range [2]time.Time{sp.Start, sp.End} {
		switch {
		case t.IsZero():
		case nano:
			*b = binary.LittleEndian.AppendUint64(*b, uint64(t.UnixNano()))
		default:
			putTime(b, t)
		}
	}
	putUvarint(b, uint64(ri))
	if sp.Detail != nil {
		p.details = append(p.details, cloneDetail(sp.Detail))
		putUvarint(b, uint64(len(p.details)-1))
	}
	if p.dict == nil {
		putString(b, sp.Name)
	} else if prevName != nil {
		p.dict.names.putWordAfter(b, sp.Name, prevName)
	} else {
		p.dict.names.putWordIndex(b, sp.Name)
	}
	putString(b, sp.StatusMessage)
	if code == sourceOther {
		putString(b, sp.Source)
	}
}

// appendDictAttr writes kv with its key through the dict (the caller holds
// its lock), and a string value as appendRefString writes it if the trace
// writes value references.
func (p *packedSpans) appendDictAttr(b []byte, kv attribute.KeyValue) []byte {
	b = p.dict.keys.appendWord(b, string(kv.Key))
	if p.valueRefs && kv.Value.Type() == attribute.STRING {
		return p.appendRefString(append(b, byte(attribute.STRING)), kv.Value.AsString(), -1)
	}
	return otelmap.AppendPackedValue(b, kv.Value)
}

func sourceCode(s string) int {
	switch s {
	case "":
		return sourceEmpty
	case otelmap.SourceInProcess:
		return sourceInProcess
	case otelmap.SourceOTLP:
		return sourceOTLP
	case otelmap.SourceExtension:
		return sourceExtension
	}
	return sourceOther
}

// Unix seconds whose times UnixNano holds (nanoTime).
const (
	minNanoSecond = math.MinInt64/int64(time.Second) + 1
	maxNanoSecond = math.MaxInt64/int64(time.Second) - 1
)

// nanoTime reports whether t is zero (not written) or its Unix
// nanoseconds are an int64: flagNanoTimes can carry it.
func nanoTime(t time.Time) bool {
	if t.IsZero() {
		return true
	}
	sec := t.Unix()
	return sec >= minNanoSecond && sec <= maxNanoSecond
}

// putTime appends t in place (putUvarint): its Unix seconds and
// nanoseconds.
func putTime(b *[]byte, t time.Time) {
	putVarint(b, t.Unix())
	putUvarint(b, uint64(t.Nanosecond()))
}

// putString appends s as uvarint(len(s)) and its bytes, to *b in place
// (putUvarint).
func putString(b *[]byte, s string) {
	putUvarint(b, uint64(len(s)))
	*b = append(*b, s...)
}

// putUvarint is binary.AppendUvarint appending to *b in place: the slice
// header is stored back whole only when the append grows it, else its
// length alone. A writer into a Batch's buffer (AttrWriter) so stores no
// pointer per attribute: each pointer stored into the heap while the
// garbage collector marks is one its write barrier takes, and in a
// Collector it marks through much of each receiver's batches
// (docs/performance.md, eighth pass).
func putUvarint(b *[]byte, v uint64) {
	for v >= 0x80 {
		*b = append(*b, byte(v)|0x80)
		v >>= 7
	}
	*b = append(*b, byte(v))
}

// putVarint is binary.AppendVarint in place (putUvarint).
func putVarint(b *[]byte, v int64) {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	putUvarint(b, u)
}

// unpackAll returns the trace's spans, in arrival order. Their strings
// point into the chunks, which are only ever appended to; their
// attributes share a few slices, each span's capacity cut to its length.
func (p *packedSpans) unpackAll(id trace.TraceID) []otelmap.Span {
	out, _ := p.unpackInto(id, make([]otelmap.Span, len(p.heads)), nil, false)
	return out
}

// unpackInto is unpackAll into out (len(p.heads) spans, which it
// overwrites) and attributes appended to attrs when it has room (else to
// new arrays); it returns the spans and the attribute array last written.
// With clientAttrs, only CLIENT and PRODUCER spans are unpacked whole; the
// others get their ids, kind and status alone (CheckEvidence reads no
// more of them: Held.SpansForCheck).
func (p *packedSpans) unpackInto(id trace.TraceID, out []otelmap.Span, attrs []attribute.KeyValue, clientAttrs bool) ([]otelmap.Span, []attribute.KeyValue) {
	var words dictTables
	if p.dict != nil {
		words = p.dict.tables()
	}
	c := 0
	for i := range p.heads {
		h := &p.heads[i]
		var rec []byte
		rec, c = p.record(h, c)
		out[i] = otelmap.Span{TraceID: id, SpanID: h.id, ParentSpanID: h.parent}
		r := reader{b: rec, words: words, refs: p.valueRefs, chunk: &p.chunks[c]}
		attrs = p.unpack(&out[i], r, attrs, len(p.heads)-i, clientAttrs)
	}
	return out, attrs
}

// maxAttrReserve bounds the attributes unpackAll reserves room for at
// once: one span with many attributes must not make it reserve that many
// for every span after it.
const maxAttrReserve = 1 << 16

// unpack decodes rec into sp, its attributes appended to attrs, and
// returns attrs. When attrs has no room for them, the new slice has room
// for the rest spans from this one on, if they have as many attributes.
//
// With clientAttrs, a span that is not a CLIENT or PRODUCER span gets its
// kind and status alone: the settle check reads nothing else of it
// (evidence_rule.go reads other spans' ids and kinds; a resource, a name,
// a time and attributes only of a client chain's spans), and the rest of
// the header is half of what decoding such a record costs.
func (p *packedSpans) unpack(sp *otelmap.Span, r reader, attrs []attribute.KeyValue, rest int, clientAttrs bool) []attribute.KeyValue {
	if clientAttrs {
		flags := r.b[0]
		r.pos = 1
		if k := trace.SpanKind(r.varint()); k != trace.SpanKindClient && k != trace.SpanKindProducer {
			sp.Kind, sp.StatusError = k, flags&flagError != 0
			return attrs
		}
		r.pos = 0
	}
	h := r.header()
	sp.StatusError = h.flags&flagError != 0
	sp.Kind = trace.SpanKind(h.kind)
	sp.Start, sp.End = h.start, h.end
	sp.Resource = p.resources[h.resource]
	if h.flags&flagDetail != 0 {
		sp.Detail = p.details[h.detail]
	}
	sp.Name, sp.StatusMessage = h.name, h.status
	switch int(h.flags&sourceMask) >> sourceShift {
	case sourceInProcess:
		sp.Source = otelmap.SourceInProcess
	case sourceOTLP:
		sp.Source = otelmap.SourceOTLP
	case sourceExtension:
		sp.Source = otelmap.SourceExtension
	case sourceOther:
		sp.Source = h.source
	}
	n := int(r.uvarint())
	if n == 0 || (clientAttrs && sp.Kind != trace.SpanKindClient && sp.Kind != trace.SpanKindProducer) {
		return attrs
	}
	if cap(attrs)-len(attrs) < n {
		attrs = make([]attribute.KeyValue, 0, max(n, min(rest*n, maxAttrReserve)))
	}
	first := len(attrs)
	attrs = attrs[:first+n]
	for k := first; k < len(attrs); k++ {
		r.attrInto(&attrs[k]) // in place: a KeyValue is 64 bytes to copy
	}
	sp.Attrs = attrs[first:len(attrs):len(attrs)]
	return attrs
}
