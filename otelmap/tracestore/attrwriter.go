package tracestore

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// AddWith is Add for a caller whose spans are in another form than
// otelmap.Span's attributes (the Collector's pdata: otlpdecode.Packer):
// sp gives every field but Attrs, which AddWith does not read, and attrs
// writes the attributes, one call of the AttrWriter for each, in order,
// as Add would pack sp with those Attrs: the record is byte for byte the
// one Add writes. count bounds how many attrs writes; from 128 on (a
// record's count then takes more than a byte, written before the
// attributes) it must be exactly how many, or AddWith panics.
//
// Writing the attributes straight from where they are, without an
// attribute.KeyValue for each, is most of what it saves over Add.
func (b *Batch) AddWith(h *Held, sp *otelmap.Span, count int, attrs func(w *AttrWriter)) AddOutcome {
	if h.Has(sp.SpanID) {
		return Duplicate
	}
	return b.AddNewWith(h, sp, count, attrs)
}

// AddNewWith is AddWith for a caller that has just found that h holds no
// span of sp's id (Held.Has, false), and so does not look again: it never
// returns Duplicate.
func (b *Batch) AddNewWith(h *Held, sp *otelmap.Span, count int, attrs func(w *AttrWriter)) AddOutcome {
	m := b.begin(h)
	b.packWith(h, sp, count, attrs)
	return b.finish(h, sp, m)
}

// packWith packs sp's record onto b.buf, in place: the record's head, then
// what attrs writes through the batch's writer.
func (b *Batch) packWith(h *Held, sp *otelmap.Span, count int, attrs func(w *AttrWriter)) {
	p := &h.p
	ri := p.resourceIndex(sp.Resource) // before the dict's lock: it may take it
	if p.dict != nil {
		p.dict.mu.Lock()
		defer p.dict.mu.Unlock()
	}
	// The writer is the batch's: one on the stack would escape to the heap
	// through attrs, a span's allocation. It writes onto b.buf in place,
	// and its pointers are stored only when they change (Commit clears
	// them): each store is one the garbage collector's write barrier sees
	// while it marks.
	w := &b.w
	if w.p != p {
		w.p = p
	}
	if w.buf != &b.buf {
		w.buf = &b.buf
	}
	w.n, w.flagsAt, w.key = 0, len(b.buf), 0
	p.putHead(&b.buf, sp, ri, &b.name)
	at := len(b.buf)
	putUvarint(&b.buf, uint64(count))
	attrs(w)
	switch {
	case w.n == count:
	case count < 0x80 && w.n < count:
		b.buf[at] = byte(w.n) // a one-byte count either way
	default:
		panic(fmt.Sprintf("tracestore: AddWith: %d attributes written, %d announced", w.n, count))
	}
}

// An AttrWriter writes a span's attributes into its record, for AddWith:
// each call writes one attribute as Add packs the attribute.KeyValue of
// that key and value.
type AttrWriter struct {
	p       *packedSpans
	buf     *[]byte // the Batch's buffer, written in place
	n       int
	flagsAt int // the record's first byte in *buf
	// key is the last key's place in the Dict (wordTable.appendWordAfter).
	key int32
}

// String writes a string attribute.
func (w *AttrWriter) String(key, v string) {
	w.n++
	p := w.p
	if p.dict == nil {
		*w.buf = otelmap.AppendPackedString(*w.buf, key, v)
		return
	}
	// In place (putUvarint): no store of the buffer's pointer per attribute.
	p.dict.keys.putWordAfter(w.buf, key, &w.key)
	*w.buf = append(*w.buf, byte(attribute.STRING))
	if p.valueRefs {
		p.putRefString(w.buf, v, w.key)
		return
	}
	putString(w.buf, v)
}

// Int writes an int64 attribute.
func (w *AttrWriter) Int(key string, v int64) {
	w.n++
	if w.p.dict == nil {
		*w.buf = otelmap.AppendPackedInt(*w.buf, key, v)
		return
	}
	w.p.dict.keys.putWordAfter(w.buf, key, &w.key)
	*w.buf = append(*w.buf, byte(attribute.INT64))
	putVarint(w.buf, v)
}

// Float writes a float64 attribute.
func (w *AttrWriter) Float(key string, v float64) {
	w.Value(attribute.Float64(key, v))
}

// Bool writes a boolean attribute.
func (w *AttrWriter) Bool(key string, v bool) {
	w.n++
	if w.p.dict == nil {
		*w.buf = otelmap.AppendPackedBool(*w.buf, key, v)
		return
	}
	w.p.dict.keys.putWordAfter(w.buf, key, &w.key)
	var x byte
	if v {
		x = 1
	}
	*w.buf = append(*w.buf, byte(attribute.BOOL), x)
}

// Value writes kv, of any type.
func (w *AttrWriter) Value(kv attribute.KeyValue) {
	w.n++
	if w.p.dict == nil {
		*w.buf = otelmap.AppendPackedAttr(*w.buf, kv)
		return
	}
	*w.buf = w.p.dict.keys.appendWordAfter(*w.buf, string(kv.Key), &w.key)
	if w.p.valueRefs && kv.Value.Type() == attribute.STRING {
		*w.buf = w.p.appendRefString(append(*w.buf, byte(attribute.STRING)), kv.Value.AsString(), w.key)
		return
	}
	*w.buf = otelmap.AppendPackedValue(*w.buf, kv.Value)
}

// SetSource sets the span's source, for a writer that finds it in the
// attributes (a span of the Traceability Extension's: otlpdecode.Packer).
// The span's Source and source must each be "", SourceInProcess,
// SourceOTLP or SourceExtension, which a record carries as a code in its
// first byte: a source of another name is written before the attributes,
// and SetSource panics.
func (w *AttrWriter) SetSource(source string) {
	code := sourceCode(source)
	if code == sourceOther || int((*w.buf)[w.flagsAt]&sourceMask)>>sourceShift == sourceOther {
		panic(fmt.Sprintf("tracestore: AttrWriter.SetSource(%q) on a record whose source is written out", source))
	}
	(*w.buf)[w.flagsAt] = (*w.buf)[w.flagsAt]&^sourceMask | byte(code)<<sourceShift
}
