package tracestore

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
)

// TestPackedRoundTrip: every field of a span, every attribute type
// (slices, NaN, the invalid type), zero and far times, odd kinds and
// sources, links and events, comes back from the store as it went in; the
// store's copy does not change when the caller's span or its resource
// does.
func TestPackedRoundTrip(t *testing.T) {
	res := &otelmap.Resource{ServiceName: "svc", Attrs: []attribute.KeyValue{attribute.String("service.name", "svc"), attribute.Int("process.pid", 7)}}
	attrs := []attribute.KeyValue{
		attribute.String("s", "text"),
		attribute.String("empty", ""),
		attribute.Bool("yes", true),
		attribute.Bool("no", false),
		attribute.Int64("neg", math.MinInt64),
		attribute.Int64("max", math.MaxInt64),
		attribute.Float64("nan", math.NaN()),
		attribute.Float64("inf", math.Inf(-1)),
		attribute.BoolSlice("bools", []bool{true, false}),
		attribute.Int64Slice("ints", []int64{-1, 0, 1 << 40}),
		attribute.Float64Slice("floats", []float64{0.5, -0}),
		attribute.StringSlice("strs", []string{"a", "", "ünïcode"}),
		attribute.StringSlice("none", []string{}),
		{Key: "invalid"},
	}
	now := time.Now() // a monotonic reading, as the recorder's spans have
	spans := []otelmap.Span{
		{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, Name: "root", Kind: trace.SpanKindServer,
			Start: now, End: now.Add(time.Millisecond), Attrs: attrs, Resource: res, Source: otelmap.SourceInProcess},
		{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, ParentSpanID: trace.SpanID{1}, Name: "", Kind: trace.SpanKind(-3),
			StatusError: true, StatusMessage: "boom", Source: "a road of its own",
			Start: time.Date(1500, 1, 1, 0, 0, 0, 1, time.UTC), End: time.Date(3000, 1, 1, 0, 0, 0, 999_999_999, time.UTC),
			Detail: &otelmap.SpanDetail{
				Links:  []otelmap.Link{{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}, Attrs: []attribute.KeyValue{attribute.String("k", "v")}}},
				Events: []otelmap.Event{{Name: "e", Time: now, Attrs: []attribute.KeyValue{attribute.Int("n", 1)}}, {Name: "bare"}},
			}},
		{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{3}, ParentSpanID: trace.SpanID{1}, Source: "", Resource: res},
	}
	// The store gives a span without a resource the empty one.
	wantSpans := slices.Clone(spans)
	wantSpans[1].Resource = otelmap.EmptyResource()
	want := otlptest.SpansTextOf(wantSpans, false)
	st := NewStore(Limits{})
	if r := st.Add(spans); r.Accepted != len(spans) {
		t.Fatalf("Add: %+v", r)
	}
	spans[0].Name, spans[0].Attrs[0] = "changed", attribute.String("s", "changed")
	res.ServiceName, res.Attrs[1] = "changed", attribute.Int("process.pid", 8)
	spans[1].Detail.Events[0].Name = "changed"
	got := st.Spans(trace.TraceID{1})
	if g := otlptest.SpansTextOf(got, false); g != want {
		t.Fatalf("the store gave back\n%s\nwant\n%s", g, want)
	}
	// The text compares times by UnixNano, which years 1500 and 3000
	// overflow.
	for i := range got {
		if !got[i].Start.Equal(spans[i].Start) || !got[i].End.Equal(spans[i].End) {
			t.Errorf("span %d: %v – %v, want %v – %v", i, got[i].Start, got[i].End, spans[i].Start, spans[i].End)
		}
	}
	if got[0].Resource != got[2].Resource {
		t.Errorf("spans of one resource hold %p and %p, want one shared copy", got[0].Resource, got[2].Resource)
	}
	if got[1].Resource != otelmap.EmptyResource() {
		t.Errorf("a span without a resource has %+v, want the empty resource", got[1].Resource)
	}
}

// TestReaderVarints: the reader's one-byte shortcut reads what
// encoding/binary writes, for values around every length boundary, signed
// and not, one after another.
func TestReaderVarints(t *testing.T) {
	var us []uint64
	var vs []int64
	for shift := range 64 {
		for _, d := range []int64{-1, 0, 1} {
			u := uint64(1)<<shift + uint64(d)
			us = append(us, u)
			vs = append(vs, int64(u), -int64(u))
		}
	}
	us = append(us, 0, math.MaxUint64)
	vs = append(vs, 0, math.MinInt64, math.MaxInt64)
	var b []byte
	for k := range us {
		b = binary.AppendUvarint(b, us[k])
	}
	for k := range vs {
		b = binary.AppendVarint(b, vs[k])
	}
	r := reader{b: b}
	for _, want := range us {
		if got := r.uvarint(); got != want {
			t.Fatalf("uvarint %d read as %d", want, got)
		}
	}
	for _, want := range vs {
		if got := r.varint(); got != want {
			t.Fatalf("varint %d read as %d", want, got)
		}
	}
	if r.pos != len(b) {
		t.Fatalf("read %d of %d bytes", r.pos, len(b))
	}
}
