package otlpdecode

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
)

// This file: the decoder's memory. Attribute slices are carved from shared
// chunks and strings copied into shared arenas (or, for the receiver's
// decoder, pointed into the body), repeated strings interned per request;
// a decoder made for reuse keeps its chunks and span array from one
// request to the next; and the attribute values of a request are counted
// against the receiver's bound.

// strChunk is the size of one shared string arena: SpansFromProto copies
// a span's name, keys and string values into such chunks, so a request
// costs one allocation per chunk, not one per string, and a caller that
// keeps some spans longer than others pins a few chunks of other spans'
// strings, not the whole body. Longer strings get their own allocation.
const strChunk = 32 << 10

// countValue counts one more attribute value decoded, and refuses it past
// maxValues.
func (d *wireDecoder) countValue() error {
	d.values++
	if d.maxValues > 0 && d.values > d.maxValues {
		return &errTooManyValues{d.maxValues}
	}
	return nil
}

// errTooManyValues: a request holds more attribute values than the
// decoder may decode.
type errTooManyValues struct{ limit int }

func (e *errTooManyValues) Is(target error) bool { return target == ErrOverLimit }

func (e *errTooManyValues) Error() string {
	return fmt.Sprintf("the request holds more than %d attribute values (attributes, and the elements of array and map values); send smaller batches", e.limit)
}

// reserve makes room in the attribute arena for one more attribute after
// those from *first on, moving them to a new chunk when the current one is
// full.
func (d *wireDecoder) reserve(first *int) {
	if len(d.attrs) < cap(d.attrs) {
		return
	}
	used := d.attrs[*first:]
	need := max(attrChunk, 2*(len(used)+1))
	var chunk []attribute.KeyValue
	if d.attrNext < len(d.attrChunks) && cap(d.attrChunks[d.attrNext]) >= need {
		chunk = d.attrChunks[d.attrNext][:0]
		d.attrNext++
	} else {
		chunk = make([]attribute.KeyValue, 0, need)
		if d.reuse && d.attrNext == len(d.attrChunks) {
			d.attrChunks = append(d.attrChunks, chunk)
			d.attrNext++
		}
	}
	d.attrs = append(chunk, used...)
	*first = 0
}

// carve returns the attributes appended since first, with the capacity cut
// to the length so that a reader's append copies rather than overwriting
// the next span's attributes.
func (d *wireDecoder) carve(first int) []attribute.KeyValue {
	if len(d.attrs) == first {
		return nil
	}
	return d.attrs[first:len(d.attrs):len(d.attrs)]
}

// str copies b into the string arena (or, for an aliasing decoder,
// returns b as a string).
func (d *wireDecoder) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if d.alias {
		return unsafe.String(&b[0], len(b))
	}
	if len(b) > strChunk/8 {
		return string(b)
	}
	if cap(d.strs)-len(d.strs) < len(b) {
		if d.strNext < len(d.strChunks) {
			d.strs = d.strChunks[d.strNext][:0]
		} else {
			d.strs = make([]byte, 0, strChunk)
			if d.reuse {
				d.strChunks = append(d.strChunks, d.strs)
			}
		}
		d.strNext++
	}
	at := len(d.strs)
	d.strs = append(d.strs, b...)
	// The arena is only ever appended to, never rewritten, within one
	// decode: what a string points at stays as it was until a reused
	// decoder's next decode.
	return unsafe.String(&d.strs[at], len(b))
}

// key returns b as an interned string: attribute keys, span names and
// short string values repeat across the spans of a batch, and a string
// held once costs its bytes once for as long as the trace is kept. The
// table is a lossy cache indexed by internHash (a map cost a fifth of the
// decoding): a collision only costs a copy.
func (d *wireDecoder) key(b []byte) string {
	n := len(b)
	if n == 0 {
		return ""
	}
	if n > maxInterned || d.alias {
		return d.str(b)
	}
	h := internHash(b) & uint64(len(d.interned)-1)
	if k := d.interned[h]; k == string(b) { // no allocation for the comparison
		return k
	}
	k := d.str(b)
	d.interned[h] = k
	return k
}

// internHash is the intern table's hash of b (1 to maxInterned bytes): its
// length and its first and last eight bytes, mixed by one multiplication.
// It reads at most sixteen bytes of b however long b is, which is what
// makes it cheaper than hash/maphash here. It is not seeded: an exporter
// that sends colliding strings only makes the table miss, and a miss
// costs one copy of the string, as an uninterned string does.
func internHash(b []byte) uint64 {
	n := len(b)
	var a, z uint64
	switch {
	case n >= 8:
		a, z = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[n-8:])
	case n >= 4:
		a, z = uint64(binary.LittleEndian.Uint32(b)), uint64(binary.LittleEndian.Uint32(b[n-4:]))
	default:
		a = uint64(b[0]) | uint64(b[n/2])<<8 | uint64(b[n-1])<<16
	}
	h := (a ^ bits.RotateLeft64(z, 29) ^ uint64(n)<<56) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// Interning: strings longer than maxInterned are rarely repeated (message
// contents, URLs with ids); the table has a slot per 128 bytes of body,
// within these bounds.
const (
	maxInterned    = 64
	minInternSlots = 16
	maxInternSlots = 1024
)
