package spanindex

import (
	"math/rand/v2"
	"testing"
)

// TestIndex: the index agrees with a map on puts, repeated puts and gets,
// filled to the n it was made for, whether made by New or by Reset of an
// index that held other ids (one index for traces of growing and
// shrinking sizes).
func TestIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var reused Index
	for _, n := range []int{0, 1, 7, 8, 9, 1000, 300, 9, 8, 1, 0, 20, 5000} {
		fresh := New(n)
		reused.Reset(n)
		for _, x := range []*Index{&fresh, &reused} {
			checkIndex(t, rng, x, n)
		}
	}
}

func checkIndex(t *testing.T, rng *rand.Rand, x *Index, n int) {
	t.Helper()
	want := map[uint64]int32{}
	for len(want) < n {
		// Few distinct ids, so that repeats happen.
		k := 1 + rng.Uint64N(uint64(2*n))
		held, dup := x.Put(k, int32(len(want)))
		if w, ok := want[k]; ok {
			if !dup || held != w {
				t.Fatalf("n=%d: Put(%d) again = %d, %v; want %d, true", n, k, held, dup, w)
			}
			continue
		}
		if dup {
			t.Fatalf("n=%d: Put(%d) first time reports a duplicate", n, k)
		}
		want[k] = int32(len(want))
	}
	for k := uint64(1); k <= uint64(2*n)+1; k++ {
		v, ok := x.Get(k)
		if w, in := want[k]; ok != in || v != w {
			t.Fatalf("n=%d: Get(%d) = %d, %v; want %d, %v", n, k, v, ok, w, in)
		}
	}
}

// BenchmarkIndex puts a million random span ids and looks each up once
// as a parent, as assembly does, in the Index and in a map sized up front.
//
//	go test ./otelmap/assemble/internal/spanindex -run '^$' -bench Index
func BenchmarkIndex(b *testing.B) {
	const n = 1_000_000
	rng := rand.New(rand.NewPCG(1, 1))
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = rng.Uint64() | 1
	}
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			x := New(n)
			for i, k := range ids {
				x.Put(k, int32(i))
			}
			for _, k := range ids {
				x.Get(k)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "ids/s")
	})
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			m := make(map[uint64]int32, n)
			for i, k := range ids {
				if _, ok := m[k]; !ok {
					m[k] = int32(i)
				}
			}
			for _, k := range ids {
				_ = m[k]
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "ids/s")
	})
}
