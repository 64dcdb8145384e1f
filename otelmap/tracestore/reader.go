package tracestore

import (
	"encoding/binary"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// reader reads a record the store wrote itself: it trusts the bytes.
// words are the tables of the dict the record was written with, if any.
type reader struct {
	b     []byte
	pos   int
	words dictTables
	// refs: string values as appendRefString writes them, references
	// into chunk, the record's (a batch's records of a trace, which alone
	// refer to each other, are placed in one chunk).
	refs  bool
	chunk *chunk
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
	if h.flags&flagNanoTimes != 0 {
		if h.flags&flagStartZero == 0 {
			h.start = r.nanoTime()
		}
		if h.flags&flagEndZero == 0 {
			h.end = r.nanoTime()
		}
	} else {
		if h.flags&flagStartZero == 0 {
			h.start = r.time()
		}
		if h.flags&flagEndZero == 0 {
			h.end = r.time()
		}
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
	// Most are one byte (lengths, word indexes, counts), many two (word
	// indexes past 63, value references' offsets): read inline.
	b, i := r.b, r.pos
	if i+1 < len(b) {
		if x := b[i]; x < 0x80 {
			r.pos = i + 1
			return uint64(x)
		} else if y := b[i+1]; y < 0x80 {
			r.pos = i + 2
			return uint64(x&0x7f) | uint64(y)<<7
		}
	} else if i < len(b) && b[i] < 0x80 {
		r.pos = i + 1
		return uint64(b[i])
	}
	v, n := binary.Uvarint(b[i:])
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

// nanoTime reads a time flagNanoTimes wrote.
func (r *reader) nanoTime() time.Time {
	ns := int64(binary.LittleEndian.Uint64(r.b[r.pos:]))
	r.pos += 8
	return time.Unix(0, ns)
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

func (r *reader) attr() attribute.KeyValue {
	var kv attribute.KeyValue
	r.attrInto(&kv)
	return kv
}

// attrInto reads the next attribute into kv.
func (r *reader) attrInto(kv *attribute.KeyValue) {
	if !r.words.on {
		var n int
		*kv, n = otelmap.ReadPackedAttr(r.b[r.pos:])
		r.pos += n
		return
	}
	key := attribute.Key(r.word(r.words.keys))
	switch attribute.Type(r.b[r.pos]) {
	case attribute.STRING:
		r.pos++
		if r.refs {
			*kv = key.String(r.refString())
		} else {
			*kv = key.String(r.string())
		}
		return
	case attribute.INT64:
		r.pos++
		*kv = key.Int64(r.varint())
		return
	case attribute.BOOL:
		*kv = key.Bool(r.b[r.pos+1] != 0)
		r.pos += 2
		return
	}
	var n int
	*kv, n = otelmap.ReadPackedValue(key, r.b[r.pos:])
	r.pos += n
}
