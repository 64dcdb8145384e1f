package tracestore

import (
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// TestStoreAddInterleavedTraces: interleaved traces are stored each in
// arrival order; a duplicate inside one batch is dropped; an extension
// copy and the real span in one batch leave the real one; a later batch
// appends to a held trace without overwriting the next trace of the
// first batch's array; Add leaves the caller's slice alone.
func TestStoreAddInterleavedTraces(t *testing.T) {
	st := NewStore(Limits{})
	ext := storeTestSpan(2, 9, 0, otelmap.SourceExtension)
	real := storeTestSpan(2, 9, 0, otelmap.SourceOTLP)
	real.Name = "real"
	batch := []otelmap.Span{
		storeTestSpan(1, 1, 0, otelmap.SourceOTLP),
		ext,
		storeTestSpan(1, 2, 1, otelmap.SourceOTLP),
		storeTestSpan(3, 1, 0, otelmap.SourceOTLP),
		storeTestSpan(1, 2, 1, otelmap.SourceOTLP), // duplicate in the batch
		real,
		storeTestSpan(1, 3, 1, otelmap.SourceOTLP),
		{TraceID: trace.TraceID{1}}, // invalid span id
	}
	res := st.Add(batch)
	if res.Accepted != 5 || res.Duplicates != 2 || res.Rejected != 1 {
		t.Fatalf("AddResult = %+v, want 5 accepted, 2 duplicates, 1 rejected", res)
	}
	ids := func(id byte) []byte {
		var out []byte
		for _, sp := range st.Spans(trace.TraceID{id}) {
			out = append(out, sp.SpanID[0])
		}
		return out
	}
	if got := ids(1); string(got) != "\x01\x02\x03" {
		t.Fatalf("trace 1 holds span ids %v, want 1 2 3 in arrival order", got)
	}
	if got := st.Spans(trace.TraceID{2}); len(got) != 1 || got[0].Name != "real" || got[0].Source != otelmap.SourceOTLP {
		t.Fatalf("trace 2 = %+v, want the real span only", got)
	}
	if got := ids(3); len(got) != 1 {
		t.Fatalf("trace 3 holds %v", got)
	}

	res = st.Add([]otelmap.Span{storeTestSpan(3, 2, 1, otelmap.SourceOTLP), storeTestSpan(1, 4, 1, otelmap.SourceOTLP)})
	if res.Accepted != 2 {
		t.Fatalf("second batch: %+v", res)
	}
	if got := ids(1); string(got) != "\x01\x02\x03\x04" {
		t.Fatalf("trace 1 holds %v after the second batch", got)
	}
	if got := ids(3); string(got) != "\x01\x02" {
		t.Fatalf("trace 3 holds %v after the second batch", got)
	}
	if got := st.Spans(trace.TraceID{2}); len(got) != 1 || got[0].Name != "real" {
		t.Fatalf("trace 2 = %+v after trace 1 grew", got)
	}

	// Add copies: the caller's slice stays the caller's.
	mine := []otelmap.Span{storeTestSpan(5, 1, 0, otelmap.SourceOTLP)}
	st.Add(mine)
	mine[0].Name = "changed by the caller"
	if got := st.Spans(trace.TraceID{5}); got[0].Name != "s" {
		t.Fatalf("Add kept the caller's slice: %q", got[0].Name)
	}
}
