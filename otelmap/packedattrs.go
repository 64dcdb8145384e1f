package otelmap

import (
	"encoding/binary"
	"math"
	"slices"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
)

// The packed attribute encoding: how the trace store keeps a span's
// attributes (otelmap/tracestore, packed.go), and how the OTLP receiver's
// decoder hands them to it without building an attribute.KeyValue for
// each (PackedAttrs). One attribute, in order: uvarint key length, key
// bytes, a type byte (attribute.Type), then the value: bool one byte,
// int64 zigzag varint, float64 8 bytes little-endian, string uvarint
// length and bytes; slices a uvarint count and their elements so. A span's
// attributes are their count (uvarint) and the attributes one after the
// other.

// AppendPackedAttr appends kv in the packed attribute encoding.
func AppendPackedAttr(b []byte, kv attribute.KeyValue) []byte {
	key := string(kv.Key)
	switch kv.Value.Type() {
	case attribute.STRING:
		return AppendPackedString(b, key, kv.Value.AsString())
	case attribute.INT64:
		return AppendPackedInt(b, key, kv.Value.AsInt64())
	case attribute.BOOL:
		return AppendPackedBool(b, key, kv.Value.AsBool())
	case attribute.FLOAT64:
		return AppendPackedFloat(b, key, kv.Value.AsFloat64())
	}
	return AppendPackedValue(appendPackedString(b, key), kv.Value)
}

// AppendPackedValue appends an attribute's type byte and value, as
// AppendPackedAttr writes them after the key: for a writer that writes
// keys its own way (the trace store's Dict), ReadPackedValue reads it.
func AppendPackedValue(b []byte, v attribute.Value) []byte {
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
		return appendPackedString(b, v.AsString())
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
		for _, x := range vs {
			b = appendPackedString(b, x)
		}
	}
	return b
}

// AppendPackedString appends a string attribute. Keys and values shorter
// than 128 bytes, the common case, are written with one check of b's room.
func AppendPackedString[K, V ~string | ~[]byte](b []byte, key K, val V) []byte {
	if len(key) >= 0x80 || len(val) >= 0x80 {
		b = appendPackedString(b, key)
		b = append(b, byte(attribute.STRING))
		return appendPackedString(b, val)
	}
	n := len(b)
	b = slices.Grow(b, 3+len(key)+len(val))[:n+3+len(key)+len(val)]
	b[n] = byte(len(key))
	n += 1 + copy(b[n+1:], key)
	b[n], b[n+1] = byte(attribute.STRING), byte(len(val))
	copy(b[n+2:], val)
	return b
}

// AppendPackedInt appends an int64 attribute.
func AppendPackedInt[K ~string | ~[]byte](b []byte, key K, v int64) []byte {
	b = appendPackedKey(b, key, attribute.INT64, binary.MaxVarintLen64)
	n := len(b)
	b = b[:n+binary.MaxVarintLen64]
	return b[:n+binary.PutVarint(b[n:], v)]
}

// AppendPackedBool appends a boolean attribute.
func AppendPackedBool[K ~string | ~[]byte](b []byte, key K, v bool) []byte {
	return append(appendPackedKey(b, key, attribute.BOOL, 1), boolByte(v))
}

// AppendPackedFloat appends a float64 attribute.
func AppendPackedFloat[K ~string | ~[]byte](b []byte, key K, v float64) []byte {
	return binary.LittleEndian.AppendUint64(appendPackedKey(b, key, attribute.FLOAT64, 8), math.Float64bits(v))
}

// appendPackedKey appends key and the type byte t, with room for value
// more bytes after them.
func appendPackedKey[K ~string | ~[]byte](b []byte, key K, t attribute.Type, value int) []byte {
	if len(key) >= 0x80 {
		return slices.Grow(append(appendPackedString(b, key), byte(t)), value)
	}
	n := len(b)
	b = slices.Grow(b, 2+len(key)+value)[:n+2+len(key)]
	b[n] = byte(len(key))
	n += 1 + copy(b[n+1:], key)
	b[n] = byte(t)
	return b
}

func appendPackedString[S ~string | ~[]byte](b []byte, s S) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// ReadPackedAttr decodes the attribute packed at the start of b, which
// must hold one written by an AppendPacked function (it is not checked:
// the encoding is a store's own), and returns it with its length. Strings
// point into b; slices are new.
func ReadPackedAttr(b []byte) (attribute.KeyValue, int) {
	r := packedReader{b: b}
	key := attribute.Key(r.string())
	kv, n := ReadPackedValue(key, b[r.pos:])
	return kv, r.pos + n
}

// ReadPackedValue decodes the value AppendPackedValue wrote at the start
// of b as key's, and returns it with its length; as ReadPackedAttr, it
// trusts b.
func ReadPackedValue(key attribute.Key, b []byte) (attribute.KeyValue, int) {
	r := packedReader{b: b}
	t := attribute.Type(r.b[r.pos])
	r.pos++
	var kv attribute.KeyValue
	switch t {
	case attribute.BOOL:
		kv = key.Bool(r.b[r.pos] != 0)
		r.pos++
	case attribute.INT64:
		kv = key.Int64(r.varint())
	case attribute.FLOAT64:
		kv = key.Float64(r.float())
	case attribute.STRING:
		kv = key.String(r.string())
	case attribute.BOOLSLICE:
		vs := make([]bool, r.uvarint())
		for i := range vs {
			vs[i] = r.b[r.pos] != 0
			r.pos++
		}
		kv = key.BoolSlice(vs)
	case attribute.INT64SLICE:
		vs := make([]int64, r.uvarint())
		for i := range vs {
			vs[i] = r.varint()
		}
		kv = key.Int64Slice(vs)
	case attribute.FLOAT64SLICE:
		vs := make([]float64, r.uvarint())
		for i := range vs {
			vs[i] = r.float()
		}
		kv = key.Float64Slice(vs)
	case attribute.STRINGSLICE:
		vs := make([]string, r.uvarint())
		for i := range vs {
			vs[i] = r.string()
		}
		kv = key.StringSlice(vs)
	default:
		kv = attribute.KeyValue{Key: key}
	}
	return kv, r.pos
}

type packedReader struct {
	b   []byte
	pos int
}

func (r *packedReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b[r.pos:])
	r.pos += n
	return v
}

func (r *packedReader) varint() int64 {
	v, n := binary.Varint(r.b[r.pos:])
	r.pos += n
	return v
}

func (r *packedReader) string() string {
	n := int(r.uvarint())
	if n == 0 {
		return ""
	}
	s := unsafe.String(&r.b[r.pos], n)
	r.pos += n
	return s
}

func (r *packedReader) float() float64 {
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.pos:]))
	r.pos += 8
	return v
}

// PackedAttrs are the attributes of a batch of spans in the packed
// encoding, for a decoder to hand them to the trace store without an
// attribute.KeyValue for each: span i's are Count(i) attributes, Of(i).
// The spans of such a batch have no Attrs of their own.
type PackedAttrs struct {
	// Buf holds every span's attributes, one span after the other.
	Buf []byte
	// Spans give each span's attributes: Buf[Spans[i].Start:Spans[i].End],
	// Spans[i].Count of them.
	Spans []PackedSpanAttrs
}

// PackedSpanAttrs locate one span's attributes in PackedAttrs.Buf.
type PackedSpanAttrs struct {
	Start, End, Count uint32
}

// Of returns span i's packed attributes and their count.
func (p *PackedAttrs) Of(i int) ([]byte, int) {
	s := p.Spans[i]
	return p.Buf[s.Start:s.End], int(s.Count)
}

// Select returns the attributes of the spans at positions keep, in that
// order (sharing Buf), for a batch cut to those spans.
func (p *PackedAttrs) Select(keep []int) *PackedAttrs {
	out := &PackedAttrs{Buf: p.Buf, Spans: make([]PackedSpanAttrs, len(keep))}
	for i, k := range keep {
		out.Spans[i] = p.Spans[k]
	}
	return out
}
