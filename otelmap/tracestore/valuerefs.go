package tracestore

import (
	"encoding/binary"
	"math"
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
//
// The table holds no pointer: a value is compared with its bytes where a
// record of the batch wrote them, in the batch's buffer (which only grows
// until Commit), and its trace is a number (owner, the trace's place in
// the batch + 1). Each pointer stored while the garbage collector marks
// is one its write barrier takes, and the collector marks through most
// of a receiver's batches (docs/performance.md, eighth pass).
type valueRefs struct {
	bySig map[uint64]int32 // the first of the signature's values in vals
	vals  []valueAt
	// added are the values the record being packed added, by index.
	added []int32
	// byKey is, by Dict key (AttrWriter.key), the value last written
	// under the key, as its index in vals + 1 (0: none): most values are
	// the one their key had in the span before (an address, an agent's
	// name, a conversation), in this trace or another, and are so found
	// with one comparison. keys lists the keys set in this batch.
	byKey []int32
	keys  []int32
	// owner is the trace being packed: its place in the Batch's traces + 1.
	owner uint32
}

type valueAt struct {
	// pos and n are where the value's bytes are in the batch's buffer
	// (valid while the record that wrote them is kept: undone, its owner
	// is 0 and its bytes may be another record's, so a comparison there
	// may fail but never wrongly succeed in a way that matters, as a
	// value found with no owner is written out again).
	pos, n uint32
	// owner is the trace whose record has the value (valueRefs.owner), 0
	// for none (forgotten: the record that wrote it was undone); at is
	// where, in that trace's bytes.
	owner, at uint32
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

// holds tells whether value i's bytes in buf are s.
func (r *valueRefs) holds(buf []byte, i int32, s string) bool {
	v := &r.vals[i]
	end := int(v.pos) + int(v.n)
	return int(v.n) == len(s) && end <= len(buf) && string(buf[v.pos:end]) == s
}

// find returns the index of s in vals (its bytes in buf), or -1, and s's
// signature.
func (r *valueRefs) find(buf []byte, s string) (int32, uint64) {
	sig := signature(s)
	i, ok := r.bySig[sig]
	if !ok {
		return -1, sig
	}
	for ; i >= 0; i = r.vals[i].next {
		if r.holds(buf, i, s) {
			return i, sig
		}
	}
	return -1, sig
}

// forget drops the values the record being packed added, as if it had
// never been packed.
func (r *valueRefs) forget() {
	for _, i := range r.added {
		if r.vals[i].owner == r.owner {
			r.vals[i].owner = 0
		}
	}
}

// reset forgets every value, keeping the memory.
func (r *valueRefs) reset() {
	for _, k := range r.keys {
		r.byKey[k] = 0
	}
	r.keys = r.keys[:0]
	clear(r.bySig)
	r.vals = r.vals[:0]
	r.added = r.added[:0]
	r.owner = 0
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
	p.putRefString(&b, s, key)
	return b
}

// putRefString is appendRefString appending to *b in place (putUvarint).
func (p *packedSpans) putRefString(b *[]byte, s string, key int32) {
	// A value past 4 GiB of the batch's buffer has no place a valueAt can
	// hold: it is written out.
	if p.refs == nil || len(s) < minValueRef || len(*b)+binary.MaxVarintLen64+len(s) > math.MaxUint32 {
		putUvarint(b, uint64(len(s))<<1)
		*b = append(*b, s...)
		return
	}
	r := p.refs
	i, sig := int32(-1), uint64(0)
	if key > 0 && int(key) < len(r.byKey) && r.byKey[key] > 0 && r.holds(*b, r.byKey[key]-1, s) {
		i = r.byKey[key] - 1
	} else {
		i, sig = r.find(*b, s)
	}
	if i >= 0 && r.vals[i].owner == r.owner {
		putUvarint(b, uint64(len(s))<<1|1)
		putUvarint(b, uint64(r.vals[i].at))
	} else {
		putUvarint(b, uint64(len(s))<<1)
		at := uint32(p.refBase + len(*b))
		if i < 0 { // not found, so looked up by signature
			if r.bySig == nil {
				r.bySig = map[uint64]int32{}
			}
			next, ok := r.bySig[sig]
			if !ok {
				next = -1
			}
			i = int32(len(r.vals))
			r.vals = append(r.vals, valueAt{next: next})
			r.bySig[sig] = i
		}
		// The value's bytes are now these: the earlier ones may be a
		// forgotten record's.
		r.vals[i].pos, r.vals[i].n, r.vals[i].owner, r.vals[i].at = uint32(len(*b)), uint32(len(s)), r.owner, at
		r.added = append(r.added, i)
		*b = append(*b, s...)
	}
	if key > 0 {
		for int(key) >= len(r.byKey) {
			r.byKey = append(r.byKey, 0)
		}
		if r.byKey[key] == 0 {
			r.keys = append(r.keys, key)
		}
		r.byKey[key] = i + 1
	}
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
