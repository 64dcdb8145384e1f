package tracestore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
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

// TestStorePlacesBatchRecords: a batch's records go to their traces
// whole and in arrival order however the batch's traces interleave; a
// trace's chunks hold its records one after the other and, while each
// batch brings it at least a quarter more, reserve no byte more; an extension span replaced in a later
// batch, and one replaced in its own, are placed like the others; a batch
// whose records pass the scratch's bound is placed in parts, and the
// store does not keep a scratch that large.
func TestStorePlacesBatchRecords(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	span := func(tr, i int, source string) otelmap.Span {
		sp := otelmap.Span{TraceID: trace.TraceID{byte(tr)}, SpanID: trace.SpanID{byte(i), byte(i >> 8), 1},
			Name: fmt.Sprintf("span %d of %d", i, tr), Source: source, Start: time.Unix(int64(i), 0), End: time.Unix(int64(i), 5)}
		for k := range r.IntN(6) {
			sp.Attrs = append(sp.Attrs, attribute.String(fmt.Sprint("k", k), strings.Repeat("v", r.IntN(100))))
		}
		sp.Attrs = slices.Clip(sp.Attrs)
		if r.IntN(5) == 0 {
			sp.Detail = &otelmap.SpanDetail{Events: []otelmap.Event{{Name: "e"}}}
		}
		return sp
	}
	st := NewStore(Limits{})
	want := map[trace.TraceID][]otelmap.Span{}
	check := func(what string, exact bool) {
		t.Helper()
		for id, tr := range st.traces {
			used := 0
			for _, h := range tr.spans.heads {
				used += int(h.n)
			}
			held, reserved := 0, 0
			for _, c := range tr.spans.chunks {
				if c.start != uint32(held) {
					t.Fatalf("%s, trace %v: a chunk starts at %d after %d bytes", what, id, c.start, held)
				}
				held, reserved = held+len(c.b), reserved+cap(c.b)
			}
			if used > held || held != tr.spans.size || (exact && reserved != used) {
				t.Fatalf("%s, trace %v: records take %d bytes, chunks hold %d (size %d) in %d", what, id, used, held, tr.spans.size, reserved)
			}
			wantSpans := slices.Clone(want[id])
			for i := range wantSpans {
				wantSpans[i].Resource = otelmap.EmptyResource()
			}
			if got, w := otlptest.SpansTextOf(st.Spans(id), false), otlptest.SpansTextOf(wantSpans, false); got != w {
				t.Fatalf("%s, trace %v: the store gave back\n%s\nwant\n%s", what, id, got, w)
			}
		}
	}
	for b := range 6 {
		var batch []otelmap.Span
		for i := range 150 {
			tr := 1 + (i+b)%3
			source := otelmap.SourceOTLP
			if b == 2 && i < 30 {
				source = otelmap.SourceExtension // replaced in batch 3
			}
			sp := span(tr, b*150+i, source)
			batch = append(batch, sp)
			want[sp.TraceID] = append(want[sp.TraceID], sp)
		}
		if b == 3 {
			// The extension spans of batch 2, as recorded; and an extension
			// span of this batch replaced in it.
			for i := range 30 {
				sp := span(1+(i+2)%3, 2*150+i, otelmap.SourceOTLP)
				batch = append(batch, sp)
				list := want[sp.TraceID]
				list[slices.IndexFunc(list, func(w otelmap.Span) bool { return w.SpanID == sp.SpanID })] = sp
			}
			ext, real := span(1, 999, otelmap.SourceExtension), span(1, 999, otelmap.SourceOTLP)
			real.Name = "real"
			batch = append(batch, ext, span(2, 998, otelmap.SourceOTLP), real)
			want[ext.TraceID] = append(want[ext.TraceID], real)
			want[trace.TraceID{2}] = append(want[trace.TraceID{2}], batch[len(batch)-2])
		}
		if res := st.Add(batch); res.Rejected != 0 {
			t.Fatalf("batch %d: %+v", b, res)
		}
		check(fmt.Sprint("batch ", b), b < 2)
	}

	// A trace arriving a span at a time: a chunk for every quarter more.
	for i := range 3000 {
		sp := span(7, i, otelmap.SourceOTLP)
		if res := st.Add([]otelmap.Span{sp}); res.Accepted != 1 {
			t.Fatalf("span %d of trace 7: %+v", i, res)
		}
		want[sp.TraceID] = append(want[sp.TraceID], sp)
	}
	check("a span at a time", false)
	if n := len(st.traces[trace.TraceID{7}].spans.chunks); n > 40 {
		t.Fatalf("3000 spans added one at a time are in %d chunks", n)
	}

	// Records past the scratch's bound.
	big := strings.Repeat("x", 1<<20)
	var batch []otelmap.Span
	for i := range maxScratch>>20 + 8 {
		sp := span(4+i%3, i, otelmap.SourceOTLP)
		sp.Attrs = slices.Clip(append(sp.Attrs, attribute.String("big", big)))
		batch = append(batch, sp)
		want[sp.TraceID] = append(want[sp.TraceID], sp)
	}
	if res := st.Add(batch); res.Accepted != len(batch) {
		t.Fatalf("large batch: %+v", res)
	}
	check("large batch", false)
	if st.scratch != nil {
		t.Fatalf("the store keeps a scratch of %d bytes after a large batch", cap(st.scratch))
	}
}

// TestConsumePackedSpans: spans whose attributes come packed (the OTLP
// receiver's road, otlpdecode.Decoder.DecodePacked) are admitted, refused
// and stored as ConsumeSpans stores the same spans with their attributes:
// without an ingest token, with a token that refuses other traces' spans
// in the middle of the batch (the packed attributes stay with their
// spans), and under strict ingest.
func TestConsumePackedSpans(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var spans []otelmap.Span
	for i := range 60 {
		sp := otelmap.Span{TraceID: trace.TraceID{byte(1 + i%3)}, SpanID: trace.SpanID{byte(i + 1)}, Name: fmt.Sprint("span ", i),
			Source: otelmap.SourceOTLP, Start: time.Unix(int64(i), 0)}
		for k := range r.IntN(5) {
			sp.Attrs = append(sp.Attrs, attribute.String(fmt.Sprint("k", k), fmt.Sprint(i, "-", k)), attribute.Int(fmt.Sprint("n", k), i))
		}
		spans = append(spans, sp)
	}
	attrs := &otelmap.PackedAttrs{}
	bare := slices.Clone(spans)
	for i := range bare {
		start := len(attrs.Buf)
		for _, kv := range bare[i].Attrs {
			attrs.Buf = otelmap.AppendPackedAttr(attrs.Buf, kv)
		}
		attrs.Spans = append(attrs.Spans, otelmap.PackedSpanAttrs{Start: uint32(start), End: uint32(len(attrs.Buf)), Count: uint32(len(bare[i].Attrs))})
		bare[i].Attrs = nil
	}
	for _, c := range []struct {
		name, token string
		strict      bool
	}{{"no token", "", false}, {"token", "tok", false}, {"strict", "", true}} {
		t.Run(c.name, func(t *testing.T) {
			stores := [2]*Store{}
			results := [2]otelmap.AddResult{}
			for k := range stores {
				st := NewStore(Limits{Admission: AdmissionLimits{StrictIngest: c.strict}})
				if err := st.Reserve(trace.TraceID{2}, "tok"); err != nil {
					t.Fatal(err)
				}
				if k == 0 {
					results[k] = st.ConsumeSpans(context.Background(), "src", c.token, spans)
				} else {
					results[k] = st.ConsumePackedSpans(context.Background(), "src", c.token, bare, attrs)
				}
				stores[k] = st
			}
			if results[0] != results[1] {
				t.Fatalf("ConsumeSpans %+v, ConsumePackedSpans %+v", results[0], results[1])
			}
			if results[0].Rejected == 0 && c.name != "no token" {
				t.Fatalf("nothing refused: %+v", results[0])
			}
			for tr := range byte(3) {
				id := trace.TraceID{tr + 1}
				if w, g := otlptest.SpansTextOf(stores[0].Spans(id), false), otlptest.SpansTextOf(stores[1].Spans(id), false); w != g {
					t.Fatalf("trace %d: packed road gave\n%s\nwant\n%s", tr+1, g, w)
				}
			}
		})
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
	// Each alone, its last byte the record's (the two-byte shortcut
	// looks one byte ahead).
	for _, want := range us {
		one := reader{b: binary.AppendUvarint(nil, want)}
		if got := one.uvarint(); got != want || one.pos != len(one.b) {
			t.Fatalf("uvarint %d alone read as %d, %d bytes of %d", want, got, one.pos, len(one.b))
		}
	}
}

// TestPackedTimes: a record's times come back as the varint pair gave them
// (time.Unix of their seconds and nanoseconds: no monotonic reading, the
// local zone), written in 8 bytes when both fit UnixNano, around the
// years 1678 and 2262 where they stop fitting, before 1970, zero on either
// side, and with one time in range and one not.
func TestPackedTimes(t *testing.T) {
	now := time.Now() // with a monotonic reading
	var zero time.Time
	minIn, maxIn := time.Unix(minNanoSecond, 0), time.Unix(maxNanoSecond, 999_999_999)
	minOut, maxOut := time.Unix(minNanoSecond-1, 999_999_999), time.Unix(maxNanoSecond+1, 0)
	before1970 := time.Date(1969, 12, 31, 23, 59, 59, 1, time.UTC)
	cases := []struct {
		start, end time.Time
		nano       bool
	}{
		{now, now.Add(time.Millisecond), true},
		{zero, now, true},
		{now, zero, true},
		{zero, zero, true},
		{before1970, before1970.Add(time.Nanosecond), true},
		{minIn, maxIn, true},
		{minOut, now, false},
		{now, maxOut, false},
		{time.Unix(maxNanoSecond+1, 999_999_999), now, false}, // past int64's nanoseconds
		{now, time.Unix(minNanoSecond-2, 0), false},           // before them
		{time.Date(1500, 1, 1, 0, 0, 0, 1, time.UTC), zero, false},
		{zero, time.Date(3000, 1, 1, 0, 0, 0, 999_999_999, time.FixedZone("x", 3600)), false},
	}
	asPair := func(x time.Time) time.Time {
		if x.IsZero() {
			return x
		}
		return time.Unix(x.Unix(), int64(x.Nanosecond()))
	}
	for i, c := range cases {
		var p packedSpans
		var b []byte
		sp := otelmap.Span{Name: "n", Start: c.start, End: c.end, Kind: trace.SpanKindClient}
		p.putHead(&b, &sp, 3, nil)
		if got := b[0]&flagNanoTimes != 0; got != c.nano {
			t.Errorf("case %d: written in 8 bytes %v, want %v", i, got, c.nano)
		}
		r := reader{b: b}
		h := r.header()
		// == and not Equal: the struct as time.Unix makes it, zone and all.
		if h.start != asPair(c.start) || h.end != asPair(c.end) {
			t.Errorf("case %d: read %v – %v, want %v – %v", i, h.start, h.end, asPair(c.start), asPair(c.end))
		}
		if h.resource != 3 || h.name != "n" || r.pos != len(b) {
			t.Errorf("case %d: then resource %d, name %q, %d of %d bytes read", i, h.resource, h.name, r.pos, len(b))
		}
	}
}
