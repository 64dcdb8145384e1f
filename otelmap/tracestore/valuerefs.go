package tracestore

import (
	"encoding/binary"
	"unsafe"
)

// valueRefs are where a batch's string values sit in their traces' bytes:
// for each value, the trace that last had it and where. A value two
// traces share is remembered for the last one: a batch's spans of a trace
// mostly come together, and a value not found is only held again.
//
// They are found by a signature of the value (its length and three of its
// 8-byte words), not a hash of all of it: values are long (prompts,
// messages), and hashing each whole was most of the cost of packing a
// span (docs/performance.md, issue 31). Values of one signature are
// chained and told apart by comparison.
type valueRefs struct {
	bySig map[uint64]int32 // the first of the signature's values in vals
	vals  []valueAt
	// added are the values the record being packed added, by index.
	added []int32
	// byKey is, by Dict key (AttrWriter.key), the value last written
	// under the key: most values are the one their key had in the span
	// before (an address, an agent's name, a conversation), in this trace
	// or another, and are so found with one comparison. keys lists the
	// keys set in this batch.
	byKey []keyValue
	keys  []int32
}

// keyValue is a value of vals under a key: vals[i-1].s == s.
type keyValue struct {
	s string
	i int32
}

type valueSig struct {
	n               int
	head, mid, tail uint64
}

type valueAt struct {
	s  string
	p  *packedSpans // nil: forgotten (the record that wrote it was undone)
	at uint32
	// next is the next value of the same signature, -1 for none.
	next int32
}

// signature is s's signature, its length and three of its words mixed;
// len(s) >= minValueRef.
func signature(s string) uint64 {
	n := len(s)
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8)) }
	h := uint64(n)*0x9e3779b97f4a7c15 ^ word(0)
	h = (h^h>>29)*0xbf58476d1ce4e5b9 ^ word(n/2-4)
	h = (h^h>>32)*0x94d049bb133111eb ^ word(n-8)
	return h ^ h>>31
}

// find returns the index of s in vals, or -1, and s's signature.
func (r *valueRefs) find(s string) (int32, uint64) {
	sig := signature(s)
	i, ok := r.bySig[sig]
	if !ok {
		return -1, sig
	}
	for ; i >= 0; i = r.vals[i].next {
		if r.vals[i].s == s {
			return i, sig
		}
	}
	return -1, sig
}

// forget drops the values the record being packed for p added, as if it
// had never been packed.
func (r *valueRefs) forget(p *packedSpans) {
	for _, i := range r.added {
		if r.vals[i].p == p {
			r.vals[i].p = nil
		}
	}
}

// reset forgets every value, keeping the memory.
func (r *valueRefs) reset() {
	for _, k := range r.keys {
		r.byKey[k] = keyValue{}
	}
	r.keys = r.keys[:0]
	clear(r.bySig)
	clear(r.vals)
	r.vals = r.vals[:0]
	r.added = r.added[:0]
}

// minValueRef is the shortest value written as a reference: shorter ones
// cost about what the reference would.
const minValueRef = 8

// appendRefString writes a string value: uvarint(len<<1 | 1) and the
// uvarint offset of its bytes in the trace's bytes, for a value a record
// of this trace in the Batch being packed has already; else
// uvarint(len<<1) and the bytes. key is the value's key (AttrWriter.key:
// > 0 for a key of the Dict), to find the value by (byKey).
func (p *packedSpans) appendRefString(b []byte, s string, key int32) []byte {
	if p.refs == nil || len(s) < minValueRef {
		b = binary.AppendUvarint(b, uint64(len(s))<<1)
		return append(b, s...)
	}
	r := p.refs
	i, sig := int32(-1), uint64(0)
	if key > 0 && int(key) < len(r.byKey) && r.byKey[key].i > 0 && r.byKey[key].s == s {
		i = r.byKey[key].i - 1
	} else {
		i, sig = r.find(s)
	}
	if i >= 0 && r.vals[i].p == p {
		b = binary.AppendUvarint(b, uint64(len(s))<<1|1)
		b = binary.AppendUvarint(b, uint64(r.vals[i].at))
	} else {
		b = binary.AppendUvarint(b, uint64(len(s))<<1)
		at := uint32(p.refBase + len(b))
		if i < 0 { // not found, so looked up by signature
			if r.bySig == nil {
				r.bySig = map[uint64]int32{}
			}
			next, ok := r.bySig[sig]
			if !ok {
				next = -1
			}
			i = int32(len(r.vals))
			r.vals = append(r.vals, valueAt{s: s, next: next})
			r.bySig[sig] = i
		}
		if r.vals[i].p != p {
			r.vals[i].p = p
		}
		r.vals[i].at = at
		r.added = append(r.added, i)
		b = append(b, s...)
	}
	if key > 0 {
		for int(key) >= len(r.byKey) {
			r.byKey = append(r.byKey, keyValue{})
		}
		kv := &r.byKey[key]
		if kv.i == 0 {
			r.keys = append(r.keys, key)
		}
		// Stored only when it changes (vals[i].s is s, byte for byte):
		// most values are their key's last, and each store is one the
		// garbage collector's write barrier sees while it marks.
		if kv.i != i+1 {
			*kv = keyValue{s: s, i: i + 1}
		}
	}
	return b
}

// refString reads what appendRefString wrote.
func (r *reader) refString() string {
	x := r.uvarint()
	n := int(x >> 1)
	if n == 0 {
		return ""
	}
	if x&1 == 1 {
		at := int(r.uvarint()) - int(r.chunk.start)
		return unsafe.String(&r.chunk.b[at], n)
	}
	s := unsafe.String(&r.b[r.pos], n)
	r.pos += n
	return s
}
