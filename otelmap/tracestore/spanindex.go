package tracestore

import (
	"hash/maphash"

	"go.opentelemetry.io/otel/trace"
)

// spanIndex finds a trace's spans by id: an open-addressing table of
// positions in the trace's heads (packed.go), which hold the ids. It
// replaces a map[trace.SpanID]struct{} per trace: a map's insert was the
// store's costliest step after packing, and it held 14 to 25 bytes per
// span beside the heads that hold the same ids; the table holds 4 bytes
// per slot, at most half of them used. The hash is seeded per store, as a
// map's is, so that an exporter cannot pick span ids that collide.
type spanIndex struct {
	// slots hold a head's position + 1; 0 is empty. Its length is 0 or a
	// power of two.
	slots []int32
	used  int
}

// find returns the position in heads of the span with id, or -1.
func (x *spanIndex) find(seed maphash.Seed, heads []spanHead, id trace.SpanID) int {
	if len(x.slots) == 0 {
		return -1
	}
	mask := uint64(len(x.slots) - 1)
	for i := maphash.Comparable(seed, id) & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return -1
		}
		if heads[s-1].id == id {
			return int(s - 1)
		}
	}
}

// add indexes heads[pos], whose id the index does not hold.
func (x *spanIndex) add(seed maphash.Seed, heads []spanHead, pos int) {
	if 2*(x.used+1) > len(x.slots) {
		x.grow(seed, heads, max(16, 2*len(x.slots)))
	}
	x.insert(seed, heads, pos)
	x.used++
}

// reserve makes room for spans more spans without growing.
func (x *spanIndex) reserve(seed maphash.Seed, heads []spanHead, spans int) {
	want := 16
	for want < 2*(x.used+spans) {
		want *= 2
	}
	if want > len(x.slots) {
		x.grow(seed, heads, want)
	}
}

func (x *spanIndex) grow(seed maphash.Seed, heads []spanHead, size int) {
	old := x.slots
	x.slots = make([]int32, size)
	for _, s := range old {
		if s != 0 {
			x.insert(seed, heads, int(s-1))
		}
	}
}

func (x *spanIndex) insert(seed maphash.Seed, heads []spanHead, pos int) {
	mask := uint64(len(x.slots) - 1)
	i := maphash.Comparable(seed, heads[pos].id) & mask
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = int32(pos + 1)
}
