package tracestore

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// TestBatchValueRefs: a batch's repeated string values are written once
// per trace and referred to after (valuerefs.go), and each trace's spans
// come back with every value as it was added, whatever the batch mixes:
// one value in several traces, interleaved span by span; a value under
// one key, then another; values of one length and the same first, middle
// and last words (one signature) that differ elsewhere; a value equal to
// one written by another trace's record; batches that follow one another
// (the references never cross a Commit); and a value added by Held.Add
// between batches. References must not point into another trace's bytes
// or a stale place in the batch's buffer, so every trace is read back
// after all batches, from its own bytes alone.
func TestBatchValueRefs(t *testing.T) {
	dict := NewDict()
	traces := make([]*Held, 4)
	for i := range traces {
		traces[i] = NewHeld(dict)
	}
	long := strings.Repeat("a prompt the agents repeat. ", 8)
	// Same length, same words at 0, n/2-4 and n-8: one signature.
	lookA := "XXXXXXXX" + "1111" + "MMMMMMMM" + "2222" + "ZZZZZZZZ"
	lookB := "XXXXXXXX" + "3333" + "MMMMMMMM" + "4444" + "ZZZZZZZZ"
	if signature(lookA) != signature(lookB) || lookA == lookB {
		t.Fatal("the look-alikes do not share a signature")
	}
	values := []string{long, lookA, lookB, "conversation-000042", "short", long + "!"}
	keys := []string{"gen_ai.prompt", "gen_ai.conversation.id", "a2a.message.id", "other.key"}
	want := make([][]otelmap.Span, len(traces))
	n := 0
	var b Batch
	for batch := range 3 {
		for step := range 40 {
			ti := (step*7 + batch) % len(traces)
			h := traces[ti]
			var attrs []attribute.KeyValue
			for a := range 1 + step%4 {
				attrs = append(attrs, attribute.String(keys[(step+a+batch)%len(keys)], values[(step*3+a*5+batch)%len(values)]))
			}
			sp := heldSpan(n, fmt.Sprintf("op %d", step%5), attrs...)
			sp.TraceID = trace.TraceID{byte(ti + 1)}
			n++
			if got := b.Add(h, &sp); got != Added {
				t.Fatalf("batch %d, step %d: %v", batch, step, got)
			}
			want[ti] = append(want[ti], sp)
		}
		b.Commit()
		// One span between batches, added alone.
		sp := heldSpan(n, "alone", attribute.String(keys[0], values[batch%len(values)]))
		sp.TraceID = trace.TraceID{1}
		n++
		if !traces[0].Add(&sp) {
			t.Fatalf("Held.Add after batch %d refused", batch)
		}
		want[0] = append(want[0], sp)
	}
	shared := 0
	for ti, h := range traces {
		got := h.Spans(trace.TraceID{byte(ti + 1)})
		if len(got) != len(want[ti]) {
			t.Fatalf("trace %d: %d spans back, want %d", ti, len(got), len(want[ti]))
		}
		for i := range got {
			if !slices.Equal(got[i].Attrs, want[ti][i].Attrs) {
				t.Errorf("trace %d, span %d: attributes\n%v\nwant\n%v", ti, i, got[i].Attrs, want[ti][i].Attrs)
			}
		}
		shared += h.Bytes()
	}
	// The references are taken: without them every value is written out.
	plain := 0
	for ti := range traces {
		h := NewHeld(dict)
		h.p.valueRefs = false
		for i := range want[ti] {
			if !h.Add(&want[ti][i]) {
				t.Fatalf("plain trace %d refused span %d", ti, i)
			}
		}
		plain += h.Bytes()
	}
	if shared >= plain {
		t.Errorf("%d bytes with references, %d without: no value was referred to", shared, plain)
	}
}
