package tracestore

import (
	"hash/maphash"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// TestSpanIndex: every id added is found at its position, through the
// table's growth and after a reserve; ids not added are not found, among
// them ids that differ from one added in a single byte, and ids whose
// hashes share their low bits with one added (the slot they would probe
// first).
func TestSpanIndex(t *testing.T) {
	seed := maphash.MakeSeed()
	r := rand.New(rand.NewPCG(5, 6))
	var x spanIndex
	var heads []spanHead
	have := map[trace.SpanID]int{}
	for i := range 5000 {
		var id trace.SpanID
		for j := range id {
			id[j] = byte(r.IntN(4)) // few values: many ids close to each other
		}
		if i == 1000 {
			x.reserve(seed, heads, 3000)
		}
		if _, dup := have[id]; dup {
			if got := x.find(seed, heads, id); got != have[id] {
				t.Fatalf("id %v: found at %d, added at %d", id, got, have[id])
			}
			continue
		}
		if got := x.find(seed, heads, id); got != -1 {
			t.Fatalf("id %v not added yet, found at %d", id, got)
		}
		heads = append(heads, spanHead{id: id})
		x.add(seed, heads, len(heads)-1)
		have[id] = len(heads) - 1
	}
	for id, pos := range have {
		if got := x.find(seed, heads, id); got != pos {
			t.Fatalf("id %v: found at %d, added at %d", id, got, pos)
		}
	}
	if 2*x.used > len(x.slots) {
		t.Fatalf("%d of %d slots used", x.used, len(x.slots))
	}
	// Absent ids whose first probe lands on a used slot.
	mask := uint64(len(x.slots) - 1)
	misses := 0
	for n := 0; misses < 200 && n < 1_000_000; n++ {
		var id trace.SpanID
		for j := range id {
			id[j] = byte(r.IntN(256))
		}
		if _, ok := have[id]; ok || x.slots[maphash.Comparable(seed, id)&mask] == 0 {
			continue
		}
		misses++
		if got := x.find(seed, heads, id); got != -1 {
			t.Fatalf("absent id %v found at %d", id, got)
		}
	}
	if misses < 200 {
		t.Fatalf("only %d absent ids probed a used slot first", misses)
	}
}
