package tracestore

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
)

func heldSpan(n int, name string, attrs ...attribute.KeyValue) otelmap.Span {
	return otelmap.Span{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{0x5a, byte(n >> 16), byte(n >> 8), byte(n), 1},
		ParentSpanID: trace.SpanID{0x5a, 0, 0, 0, 1}, Name: name, Kind: trace.SpanKindClient, Attrs: attrs,
		Resource: &otelmap.Resource{ServiceName: "svc"}, Source: otelmap.SourceOTLP}
}

// TestDictBounds: past its bounds a Dict stops taking words and records
// carry them as the Store writes them: more distinct keys than dictWords,
// and keys and names longer than dictWordLen, come back whole; the keys
// the Dict holds make a trace's records smaller than without it.
func TestDictBounds(t *testing.T) {
	dict := NewDict()
	with, without := NewHeld(dict), NewHeld(nil)
	var want []otelmap.Span
	long := strings.Repeat("k", dictWordLen+1)
	edge := strings.Repeat("e", dictWordLen)
	for i := range dictWords + 500 {
		sp := heldSpan(i, fmt.Sprintf("name %d", i%3),
			attribute.String(fmt.Sprintf("key.%d", i), "v"),
			attribute.Int(long, i), attribute.Bool(edge, true), attribute.String("", "no key"))
		if i == 7 {
			sp.Name = long
		}
		for _, h := range []*Held{with, without} {
			if !h.Add(&sp) {
				t.Fatalf("span %d refused", i)
			}
		}
		want = append(want, sp)
	}
	w := otlptest.SpansTextOf(want, false)
	for _, h := range []*Held{with, without} {
		if g := otlptest.SpansTextOf(h.Spans(trace.TraceID{1}), false); g != w {
			t.Fatalf("Held gave back other spans than it was given (first 2000 bytes):\n%.2000s\nwant\n%.2000s", g, w)
		}
	}
	keys, names := dict.Len()
	if keys != dictWords || names != 3 {
		t.Errorf("dict holds %d keys and %d names, want %d (its bound) and 3 (not the one of %d bytes)", keys, names, dictWords, dictWordLen+1)
	}
	if _, ok := dict.keys.ids[edge]; !ok {
		t.Errorf("a key of dictWordLen bytes is not in the dict")
	}
	if with.Bytes() >= without.Bytes()*3/4 {
		t.Errorf("records with the dict take %d bytes, without %d: the dict saves less than a quarter", with.Bytes(), without.Bytes())
	}
}

// TestHeldDuplicates: a span id held once is refused after, both while
// Has looks through the heads and once the trace indexes its ids.
func TestHeldDuplicates(t *testing.T) {
	h := NewHeld(NewDict())
	for round := range 2 {
		for i := range 3 * heldIndexFrom {
			sp := heldSpan(i, "s")
			if added := h.Add(&sp); added != (round == 0) {
				t.Fatalf("round %d, span %d: Add %v", round, i, added)
			}
			if round == 0 && i < heldIndexFrom-1 && h.ids != nil {
				t.Fatalf("span %d: indexed before %d spans", i, heldIndexFrom)
			}
		}
	}
	if h.Len() != 3*heldIndexFrom {
		t.Errorf("%d spans held, want %d", h.Len(), 3*heldIndexFrom)
	}
}

// TestHeldViewWhileAdding: traces sharing one Dict are added to (by
// batches of spans, as the connector adds them, and one by one) and read
// (View, Spans) at once from several goroutines, as the connector does
// under its lock and outside it; under -race.
func TestHeldViewWhileAdding(t *testing.T) {
	dict := NewDict()
	var mu sync.Mutex
	traces := make([]*Held, 4)
	for i := range traces {
		traces[i] = NewHeld(dict)
	}
	var wg sync.WaitGroup
	for w := range len(traces) {
		wg.Go(func() {
			var b Batch
			for i := range 300 {
				sp := heldSpan(i, fmt.Sprintf("op %d", i%40), attribute.String(fmt.Sprintf("k%d.%d", w, i%50), "a repeated value"))
				mu.Lock()
				if i%3 == 0 {
					traces[w].Add(&sp)
				} else if b.Add(traces[w], &sp); i%3 == 2 {
					b.Commit()
				}
				// A view of a trace with an open batch leaves its spans out.
				v := traces[(w+1)%len(traces)].View()
				mu.Unlock()
				for _, got := range v.Spans(trace.TraceID{1}) {
					if !strings.HasPrefix(got.Name, "op ") || len(got.Attrs) != 1 || got.Attrs[0].Value.AsString() != "a repeated value" {
						t.Errorf("span read while adding: %+v", got)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for _, h := range traces {
		if h.Len() != 300 || len(h.View().Spans(trace.TraceID{1})) != 300 {
			t.Errorf("%d spans held, want 300", h.Len())
		}
	}
}
