package tracestore

import (
	"encoding/binary"
	"math"
	"slices"
	"time"
	"unsafe"

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
//	flags     1 byte: flagError, flagStartZero, flagEndZero, flagDetail, and
//	          the source's code in the bits of sourceMask
//	kind      zigzag varint
//	start     varint seconds, uvarint nanoseconds (absent if flagStartZero)
//	end       the same (absent if flagEndZero)
//	resource  uvarint: index into packedSpans.resources
//	detail    uvarint: index into packedSpans.details (if flagDetail)
//	name      uvarint length, bytes
//	status    uvarint length, bytes (the status message)
//	source    uvarint length, bytes (only for sourceOther)
//	attrs     uvarint count, then per attribute: uvarint key length, key
//	          bytes, type byte (attribute.Type), value: bool 1 byte,
//	          int64 zigzag varint, float64 8 bytes, string uvarint length
//	          and bytes, slices uvarint count and their elements so.
//
// The trace id is the trace's own; the span and parent ids are in the head.
const (
	flagError     = 1 << 0
	flagStartZero = 1 << 1
	flagEndZero   = 1 << 2
	flagDetail    = 1 << 3
	sourceShift   = 4
	sourceMask    = 7 << sourceShift
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
	off, n     uint32 // the record: data[off : off+n]
}

// packedSpans are one trace's spans, in arrival order.
type packedSpans struct {
	heads []spanHead
	data  []byte
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
	// the trace is made), so that the first record can size data and
	// heads for them all rather than grow them by doubling.
	expect int
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
	return packedSpans{
		heads:     slices.Clone(p.heads),
		data:      p.data[:len(p.data):len(p.data)],
		resources: p.resources[:len(p.resources):len(p.resources)],
		details:   p.details[:len(p.details):len(p.details)],
		dict:      p.dict,
		valueRefs: p.valueRefs,
	}
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

// sourceOf returns the source code of span i.
func (p *packedSpans) sourceOf(i int) int {
	return int(p.data[p.heads[i].off]&sourceMask) >> sourceShift
}

// maxPackedBytes is the most a trace's packed spans may take: records
// are found by 32-bit offsets (and an int must hold it).
const maxPackedBytes = min(math.MaxUint32, math.MaxInt)

// maxReserve bounds the room a trace's first record reserves for the
// spans its batch brings after it: a batch whose first span is large must
// not make the store reserve that size a thousand times over.
const maxReserve = 4 << 20

// add appends sp, whose resource is res (a copy the store owns), unless
// its record would take the trace's packed bytes past maxBytes; it
// reports whether it did.
func (p *packedSpans) add(sp *otelmap.Span, res *otelmap.Resource, maxBytes int) bool {
	off, ok := p.packWithin(sp, res, maxBytes)
	if !ok {
		return false
	}
	if off == 0 && p.expect > 1 {
		// Room for the batch's other spans of this trace, if they are
		// the size of the first.
		data := make([]byte, len(p.data), max(len(p.data), min(len(p.data)*p.expect, maxReserve)))
		copy(data, p.data)
		p.data = data
		p.heads = make([]spanHead, 0, p.expect)
		p.expect = 0
	}
	p.heads = append(p.heads, spanHead{id: sp.SpanID, parent: sp.ParentSpanID, off: uint32(off), n: uint32(len(p.data) - off)})
	return true
}

// replace puts sp in place of span i, unless its record would take the
// trace's packed bytes past maxBytes; it reports whether it did. The old
// record stays in data, unused: records are never rewritten, because spans
// read before point into them.
func (p *packedSpans) replace(i int, sp *otelmap.Span, res *otelmap.Resource, maxBytes int) bool {
	off, ok := p.packWithin(sp, res, maxBytes)
	if !ok {
		return false
	}
	p.heads[i] = spanHead{id: sp.SpanID, parent: sp.ParentSpanID, off: uint32(off), n: uint32(len(p.data) - off)}
	return true
}

// packWithin appends sp's record to data and returns where it starts, or,
// if data would then pass maxBytes, leaves data (and the resources and
// details) as they were and returns false. Bytes written past data's
// length before the undo are never part of a record: nothing reads them.
func (p *packedSpans) packWithin(sp *otelmap.Span, res *otelmap.Resource, maxBytes int) (int, bool) {
	off, resources, details := len(p.data), len(p.resources), len(p.details)
	lastRes, lastIndex := p.lastRes, p.lastIndex
	p.data = p.pack(p.data, sp, res)
	if len(p.data) > maxBytes {
		p.data = p.data[:off]
		clear(p.resources[resources:])
		p.resources = p.resources[:resources]
		clear(p.details[details:])
		p.details = p.details[:details]
		p.lastRes, p.lastIndex = lastRes, lastIndex
		return off, false
	}
	return off, true
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

func (p *packedSpans) pack(b []byte, sp *otelmap.Span, res *otelmap.Resource) []byte {
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
	code := sourceCode(sp.Source)
	flags |= byte(code) << sourceShift
	b = append(b, flags)
	b = binary.AppendVarint(b, int64(sp.Kind))
	if !sp.Start.IsZero() {
		b = appendTime(b, sp.Start)
	}
	if !sp.End.IsZero() {
		b = appendTime(b, sp.End)
	}
	b = binary.AppendUvarint(b, uint64(p.resourceIndex(res)))
	if sp.Detail != nil {
		p.details = append(p.details, cloneDetail(sp.Detail))
		b = binary.AppendUvarint(b, uint64(len(p.details)-1))
	}
	if p.dict != nil {
		p.dict.mu.Lock()
		defer p.dict.mu.Unlock()
		b = p.dict.names.appendWord(b, sp.Name)
	} else {
		b = appendString(b, sp.Name)
	}
	b = appendString(b, sp.StatusMessage)
	if code == sourceOther {
		b = appendString(b, sp.Source)
	}
	b = binary.AppendUvarint(b, uint64(len(sp.Attrs)))
	for _, kv := range sp.Attrs {
		switch {
		case p.valueRefs && kv.Value.Type() == attribute.STRING:
			b = p.dict.keys.appendWord(b, string(kv.Key))
			b = p.appendRefString(append(b, byte(attribute.STRING)), kv.Value.AsString())
		case p.dict != nil:
			b = p.dict.keys.appendWord(b, string(kv.Key))
			b = appendValue(b, kv.Value)
		default:
			b = appendAttr(b, kv)
		}
	}
	return b
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

func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendAttr(b []byte, kv attribute.KeyValue) []byte {
	return appendValue(appendString(b, string(kv.Key)), kv.Value)
}

// appendValue writes an attribute's type byte and value.
func appendValue(b []byte, v attribute.Value) []byte {
	t := v.Type()
	b = append(b, byte(t))
	switch t {
	case attribute.BOOL:
		return append(b, boolByte(v.AsBool()))
	case attribute.INT64:
		return binary.AppendVarint(b, v.AsInt64())
	case attribute.FLOAT64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		return appendString(b, v.AsString())
	case attribute.BOOLSLICE:
		vs := v.AsBoolSlice()
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, x := range vs {
			b = append(b, boolByte(x))
		}
	case attribute.INT64SLICE:
		vs := v.AsInt64Slice()
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, x := range vs {
			b = binary.AppendVarint(b, x)
		}
	case attribute.FLOAT64SLICE:
		vs := v.AsFloat64Slice()
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, x := range vs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
	case attribute.STRINGSLICE:
		vs := v.AsStringSlice()
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, s := range vs {
			b = appendString(b, s)
		}
	}
	return b
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// unpackAll returns the trace's spans, in arrival order. Their strings
// point into p.data, which is only ever appended to; their attributes
// share a few slices, each span's capacity cut to its length.
func (p *packedSpans) unpackAll(id trace.TraceID) []otelmap.Span {
	out, _ := p.unpackInto(id, make([]otelmap.Span, len(p.heads)), nil, false)
	return out
}

// unpackInto is unpackAll into out (len(p.heads) spans, which it
// overwrites) and attributes appended to attrs when it has room (else to
// new arrays); it returns the spans and the attribute array last written.
// With clientAttrs, only CLIENT and PRODUCER spans get their attributes
// (CheckEvidence reads no others': Held.SpansForCheck).
func (p *packedSpans) unpackInto(id trace.TraceID, out []otelmap.Span, attrs []attribute.KeyValue, clientAttrs bool) ([]otelmap.Span, []attribute.KeyValue) {
	var words dictTables
	if p.dict != nil {
		words = p.dict.tables()
	}
	for i := range p.heads {
		h := &p.heads[i]
		out[i] = otelmap.Span{TraceID: id, SpanID: h.id, ParentSpanID: h.parent}
		attrs = p.unpack(&out[i], reader{b: p.data[h.off : h.off+h.n], words: words, refs: p.valueRefs, all: p.data}, attrs, len(p.heads)-i, clientAttrs)
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
func (p *packedSpans) unpack(sp *otelmap.Span, r reader, attrs []attribute.KeyValue, rest int, clientAttrs bool) []attribute.KeyValue {
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
	for range n {
		attrs = append(attrs, r.attr())
	}
	sp.Attrs = attrs[first:len(attrs):len(attrs)]
	return attrs
}

// reader reads a record the store wrote itself: it trusts the bytes.
// words are the tables of the dict the record was written with, if any.
type reader struct {
	b     []byte
	pos   int
	words dictTables
	// refs: string values as appendRefString writes them, references
	// into all, the trace's bytes.
	refs bool
	all  []byte
}

type recordHeader struct {
	flags                byte
	kind                 int64
	start, end           time.Time
	resource, detail     uint64
	name, status, source string
}

func (r *reader) header() recordHeader {
	var h recordHeader
	h.flags = r.b[r.pos]
	r.pos++
	h.kind = r.varint()
	if h.flags&flagStartZero == 0 {
		h.start = r.time()
	}
	if h.flags&flagEndZero == 0 {
		h.end = r.time()
	}
	h.resource = r.uvarint()
	if h.flags&flagDetail != 0 {
		h.detail = r.uvarint()
	}
	if r.words.on {
		h.name = r.word(r.words.names)
	} else {
		h.name = r.string()
	}
	h.status = r.string()
	if int(h.flags&sourceMask)>>sourceShift == sourceOther {
		h.source = r.string()
	}
	return h
}

func (r *reader) uvarint() uint64 {
	// Most are one byte (lengths, word indexes, counts): read inline.
	if r.pos < len(r.b) && r.b[r.pos] < 0x80 {
		x := r.b[r.pos]
		r.pos++
		return uint64(x)
	}
	v, n := binary.Uvarint(r.b[r.pos:])
	r.pos += n
	return v
}

func (r *reader) varint() int64 {
	if r.pos < len(r.b) && r.b[r.pos] < 0x80 {
		x := r.b[r.pos]
		r.pos++
		return int64(x>>1) ^ -int64(x&1) // zig-zag, as binary.Varint
	}
	v, n := binary.Varint(r.b[r.pos:])
	r.pos += n
	return v
}

func (r *reader) time() time.Time {
	sec := r.varint()
	return time.Unix(sec, int64(r.uvarint()))
}

// string returns the next string, pointing into the record's bytes.
func (r *reader) string() string {
	n := int(r.uvarint())
	if n == 0 {
		return ""
	}
	s := unsafe.String(&r.b[r.pos], n)
	r.pos += n
	return s
}

func (r *reader) float() float64 {
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.pos:]))
	r.pos += 8
	return v
}

func (r *reader) attr() attribute.KeyValue {
	var key attribute.Key
	if r.words.on {
		key = attribute.Key(r.word(r.words.keys))
	} else {
		key = attribute.Key(r.string())
	}
	t := attribute.Type(r.b[r.pos])
	r.pos++
	switch t {
	case attribute.BOOL:
		v := r.b[r.pos] != 0
		r.pos++
		return key.Bool(v)
	case attribute.INT64:
		return key.Int64(r.varint())
	case attribute.FLOAT64:
		return key.Float64(r.float())
	case attribute.STRING:
		if r.refs {
			return key.String(r.refString())
		}
		return key.String(r.string())
	case attribute.BOOLSLICE:
		vs := make([]bool, r.uvarint())
		for i := range vs {
			vs[i] = r.b[r.pos] != 0
			r.pos++
		}
		return key.BoolSlice(vs)
	case attribute.INT64SLICE:
		vs := make([]int64, r.uvarint())
		for i := range vs {
			vs[i] = r.varint()
		}
		return key.Int64Slice(vs)
	case attribute.FLOAT64SLICE:
		vs := make([]float64, r.uvarint())
		for i := range vs {
			vs[i] = r.float()
		}
		return key.Float64Slice(vs)
	case attribute.STRINGSLICE:
		vs := make([]string, r.uvarint())
		for i := range vs {
			vs[i] = r.string()
		}
		return key.StringSlice(vs)
	}
	return attribute.KeyValue{Key: key}
}
