package tracestore

import (
	"math"
	"testing"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
)

// TestCloneDetail: a span's links and events copied in one buffer and one
// attribute array read back equal, nil lists nil and empty ones empty;
// they share no byte with the original (its strings overwritten after);
// and each attribute list's capacity is its length, so that a reader's
// append does not overwrite the next list's.
func TestCloneDetail(t *testing.T) {
	buf := []byte("mutable-event-name mutable-key mutable-value")
	str := func(from, to int) string { return unsafe.String(&buf[from], to-from) }
	all := []attribute.KeyValue{
		attribute.String(str(19, 30), str(31, 44)),
		attribute.Int64("neg", math.MinInt64),
		attribute.Float64("nan", math.NaN()),
		attribute.Bool("yes", true),
		attribute.StringSlice("strs", []string{"a", "", str(0, 7)}),
		attribute.Int64Slice("ints", []int64{-1, 1 << 40}),
		attribute.BoolSlice("bools", []bool{false}),
		attribute.Float64Slice("floats", []float64{0.5}),
		{Key: "invalid"},
	}
	d := &otelmap.SpanDetail{
		Links: []otelmap.Link{
			{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}},
			{TraceID: trace.TraceID{3}, SpanID: trace.SpanID{4}, Attrs: []attribute.KeyValue{}},
			{TraceID: trace.TraceID{5}, SpanID: trace.SpanID{6}, Attrs: all},
		},
		Events: []otelmap.Event{
			{Name: str(0, 18), Time: time.Unix(7, 8), Attrs: all[:2:2]},
			{},
			{Name: "x", Attrs: all},
		},
	}
	text := func(d *otelmap.SpanDetail) string {
		return otlptest.SpansTextOf([]otelmap.Span{{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, Detail: d}}, false)
	}
	want := text(d)
	got := cloneDetail(d)
	if g := text(got); g != want {
		t.Fatalf("cloneDetail gave\n%s\nwant\n%s", g, want)
	}
	if got.Links[0].Attrs != nil || got.Links[1].Attrs == nil || got.Events[1].Attrs != nil {
		t.Fatalf("nil and empty attribute lists not kept apart: %v %v %v", got.Links[0].Attrs == nil, got.Links[1].Attrs == nil, got.Events[1].Attrs == nil)
	}
	for i := range buf {
		buf[i] = 'X'
	}
	if g := text(got); g != want {
		t.Fatalf("the copy changed with the original's bytes:\n%s\nwant\n%s", g, want)
	}
	_ = append(got.Events[0].Attrs, attribute.String("appended", "by a reader"))
	if g := text(got); g != want {
		t.Fatalf("an append to one list changed another:\n%s\nwant\n%s", g, want)
	}
	d2 := &otelmap.SpanDetail{Events: []otelmap.Event{}}
	if c := cloneDetail(d2); c.Events == nil || c.Links != nil {
		t.Fatalf("an empty event list: %#v", c)
	}
}
