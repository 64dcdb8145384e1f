package otlpdecode

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// FuzzProtoDecodersAgree feeds the same bytes to both protobuf decoders —
// SpansFromProto, and pdata followed by SpansFromTraces — and requires the
// same spans, field by field, with the same warnings, or a rejection by
// both.
//
//	go test ./otelmap/otlpdecode -run '^$' -fuzz FuzzProtoDecodersAgree -fuzztime 1m
func FuzzProtoDecodersAgree(f *testing.F) {
	for _, seed := range protoSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecodersAgree(t, body)
	})
}

func checkDecodersAgree(t testing.TB, body []byte) {
	t.Helper()
	want, wantWarn, wantErr := spansViaPdata(body)
	got, gotWarn, gotErr := spansFromProto(body, otelmap.SourceOTLP, true)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("pdata error %v, SpansFromProto error %v", wantErr, gotErr)
	}
	if gotErr != nil {
		if got != nil {
			t.Fatalf("rejected body yielded %d spans", len(got))
		}
		return
	}
	if w, g := otlptest.SpansText(want), otlptest.SpansText(got); w != g {
		t.Fatalf("spans differ:\npdata:\n%s\nSpansFromProto:\n%s", w, g)
	}
	if w, g := strings.Join(wantWarn, "\n"), strings.Join(gotWarn, "\n"); w != g {
		t.Fatalf("warnings differ:\npdata: %s\nSpansFromProto: %s", w, g)
	}
	// The receiver's decoder (reused, its strings pointing into the body)
	// yields the same spans, twice in a row; the store keeps them once the
	// body is overwritten.
	dec := NewDecoder()
	var copied []byte
	var again []otelmap.Span
	for range 2 {
		copied = slices.Clone(body)
		var againWarn []string
		var err error
		again, againWarn, err = dec.wire.decode(copied, otelmap.SourceOTLP, true)
		if err != nil {
			t.Fatalf("the receiver's decoder rejects what SpansFromProto accepts: %v", err)
		}
		if w, g := otlptest.SpansText(want), otlptest.SpansText(again); w != g {
			t.Fatalf("spans differ:\npdata:\n%s\nthe receiver's decoder:\n%s", w, g)
		}
		if w, g := strings.Join(wantWarn, "\n"), strings.Join(againWarn, "\n"); w != g {
			t.Fatalf("warnings differ:\npdata: %s\nthe receiver's decoder: %s", w, g)
		}
	}
	checkEachSpanAgrees(t, body)
	checkStoreKeeps(t, got, nil, func() {})
	checkStoreKeeps(t, again, nil, func() {
		for i := range copied {
			copied[i] = 0xff
		}
	})
	// The receiver's road to the store (DecodePacked): the same spans,
	// their attributes packed as the store packs the KeyValues; and the
	// store keeps them as it keeps the others.
	copied = slices.Clone(body)
	dec.wire.packAttrs = true
	bare, bareWarn, err := dec.wire.decode(copied, otelmap.SourceOTLP, true)
	dec.wire.packAttrs = false
	if err != nil {
		t.Fatalf("packing attributes, the decoder rejects what it accepts otherwise: %v", err)
	}
	if w, g := strings.Join(wantWarn, "\n"), strings.Join(bareWarn, "\n"); w != g {
		t.Fatalf("warnings differ:\npdata: %s\npacking attributes: %s", w, g)
	}
	attrs := &dec.wire.packed
	if len(attrs.Spans) != len(bare) || len(bare) != len(want) {
		t.Fatalf("packing attributes: %d spans, %d of them with attributes, want %d", len(bare), len(attrs.Spans), len(want))
	}
	stripped := slices.Clone(want)
	for i := range stripped {
		var packed []byte
		for _, kv := range stripped[i].Attrs {
			packed = otelmap.AppendPackedAttr(packed, kv)
		}
		gotPacked, count := attrs.Of(i)
		if count != len(stripped[i].Attrs) || !bytes.Equal(gotPacked, packed) {
			t.Fatalf("span %d: %d attributes packed as %x, want %d as %x", i, count, gotPacked, len(stripped[i].Attrs), packed)
		}
		if bare[i].Attrs != nil {
			t.Fatalf("span %d: has %d attributes besides the packed ones", i, len(bare[i].Attrs))
		}
		stripped[i].Attrs = nil
	}
	if w, g := otlptest.SpansText(stripped), otlptest.SpansText(bare); w != g {
		t.Fatalf("spans differ:\npdata, attributes left out:\n%s\npacking attributes:\n%s", w, g)
	}
	checkStoreKeeps(t, want, func(st *tracestore.Store) {
		st.ConsumePackedSpans(context.Background(), "fuzz", "", bare, attrs)
	}, func() {
		for i := range copied {
			copied[i] = 0xff
		}
	})
}

// checkStoreKeeps stores spans and requires the store to give back, per
// trace, every span it accepted as it was, field by field (resources by
// their contents): packing (packed.go) loses nothing. Which spans it
// accepts follows Add's rules: valid ids, the first of each span id,
// except that a span from another road replaces one rebuilt from the
// Traceability Extension. add, if not nil, stores them another way than
// AddFrom; afterAdd runs once the store has the spans (it overwrites the
// body that aliasing spans point into).
func checkStoreKeeps(t testing.TB, spans []otelmap.Span, add func(*tracestore.Store), afterAdd func()) {
	t.Helper()
	want := map[trace.TraceID][]otelmap.Span{}
	var order []trace.TraceID
	for _, sp := range spans {
		if !sp.TraceID.IsValid() || !sp.SpanID.IsValid() {
			continue
		}
		held, ok := want[sp.TraceID]
		if !ok {
			order = append(order, sp.TraceID)
		}
		i := slices.IndexFunc(held, func(h otelmap.Span) bool { return h.SpanID == sp.SpanID })
		switch {
		case i < 0:
			want[sp.TraceID] = append(held, sp)
		case held[i].Source == otelmap.SourceExtension && sp.Source != otelmap.SourceExtension:
			held[i] = sp
		}
	}
	wantText := map[trace.TraceID]string{}
	for _, id := range order {
		wantText[id] = otlptest.SpansTextOf(want[id], false)
	}
	st := tracestore.NewStore(tracestore.Limits{MaxTraces: len(spans) + 1, MaxSpansPerTrace: len(spans) + 1,
		Admission: tracestore.AdmissionLimits{MaxTracesPerSource: len(spans) + 1}})
	if add != nil {
		add(st)
	} else {
		st.AddFrom("fuzz", spans)
	}
	afterAdd()
	for _, id := range order {
		if g := otlptest.SpansTextOf(st.Spans(id), false); wantText[id] != g {
			t.Fatalf("trace %s: the store gave back\n%s\nwant\n%s", id, g, wantText[id])
		}
	}
	if got := st.Stats().Traces; got != len(order) {
		t.Fatalf("store holds %d traces, want %d", got, len(order))
	}
}

func spansViaPdata(body []byte) ([]otelmap.Span, []string, error) {
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		return nil, nil, err
	}
	spans, warnings := SpansFromTraces(req.Traces(), otelmap.SourceOTLP)
	return spans, warnings, nil
}

// protoSeeds are real OTLP protobuf bodies: the SDK's exporter's, pdata's
// encoding of the fixtures and of generated batches, a batch with every
// value type, and hand-built bodies with unknown fields of every wire
// type, groups, deprecated fields and repeated singular fields.
func protoSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	var seeds [][]byte
	add := func(td ptrace.Traces) {
		b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	add(otlptest.Traces(3, 3, 1))
	add(otlptest.Traces(8, 2, 3))
	add(protoEveryValueTraces())
	add(sharedResourcesTraces(0))
	for _, path := range []string{twoAgentsFixture, sdkFixture} {
		raw, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 16<<20)
		if path == twoAgentsFixture {
			sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
				if atEOF && len(data) > 0 {
					return len(data), data, nil
				}
				return 0, nil, nil
			})
		}
		for sc.Scan() {
			td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(sc.Bytes())
			if err != nil {
				tb.Fatalf("%s: %v", path, err)
			}
			add(td)
		}
	}
	seeds = append(seeds, sdkExportedBody(tb))
	seeds = append(seeds, otlptest.HandBuiltBodies(false)...)
	seeds = append(seeds, otlptest.HandBuiltBodies(true)...)
	seeds = append(seeds, packedAttrBodies()...)
	n := len(seeds)
	for _, s := range seeds[:n] {
		seeds = append(seeds, s[:len(s)/2], s[:len(s)-1])
	}
	return seeds
}

// sdkExportedBody is what the OpenTelemetry Go SDK's OTLP/HTTP exporter
// (otlptracehttp, its own protobuf marshalling) posts for the spans of
// otlptest.RecordAgentTrace's shape, caught by a loopback server.
func sdkExportedBody(tb testing.TB) []byte {
	tb.Helper()
	var (
		mu   sync.Mutex
		body []byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		body = b
		mu.Unlock()
		w.Header().Set("Content-Type", ContentTypeProtobuf)
	}))
	defer srv.Close()
	stubs := otlptest.RecordAgentTrace(tb, "sdk-exported")
	exp := otlptest.Exporter(tb, srv)
	if err := exp.ExportSpans(context.Background(), stubs.Snapshots()); err != nil {
		tb.Fatal(err)
	}
	_ = exp.Shutdown(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if len(body) == 0 {
		tb.Fatal("the SDK exporter posted nothing")
	}
	return body
}

// protoEveryValueTraces has attributes of every OTLP value type (maps,
// bytes, mixed and empty arrays, empty values, duplicate keys), links,
// events, kinds 0 to 6, status codes, zero times and invalid ids.
func protoEveryValueTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "every-value")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("every-value")
	ss.Scope().Attributes().PutStr("scope.attr", "x")
	for k := range 7 {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1, byte(k)})
		sp.SetSpanID(pcommon.SpanID{2, byte(k)})
		sp.SetKind(ptrace.SpanKind(k))
		sp.SetName(fmt.Sprintf("span %d", k))
		if k > 0 {
			sp.SetStartTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + k))
		}
		sp.Status().SetCode(ptrace.StatusCode(k % 3))
		sp.Status().SetMessage("status message")
		a := sp.Attributes()
		a.PutStr("s", "v")
		a.PutStr("s", "duplicate")
		a.PutBool("b", true)
		a.PutDouble("f", math.NaN())
		a.PutDouble("g", math.Copysign(0, -1))
		a.PutEmpty("empty")
		a.PutEmptyBytes("bytes").FromRaw([]byte{0, 1, 2, 0xff})
		m := a.PutEmptyMap("map")
		m.PutStr("k", "<v&>")
		m.PutEmptySlice("nested").AppendEmpty().SetInt(1)
		mixed := a.PutEmptySlice("mixed")
		mixed.AppendEmpty().SetStr("a")
		mixed.AppendEmpty().SetInt(1)
		a.PutEmptySlice("none")
		for _, typ := range []string{"str", "int", "double", "bool"} {
			s := a.PutEmptySlice("slice." + typ)
			for i := range 2 {
				switch typ {
				case "str":
					s.AppendEmpty().SetStr(fmt.Sprint(i))
				case "int":
					s.AppendEmpty().SetInt(int64(i))
				case "double":
					s.AppendEmpty().SetDouble(float64(i) + 0.5)
				case "bool":
					s.AppendEmpty().SetBool(i == 1)
				}
			}
		}
		if k == 3 {
			a.PutStr(string(otelmap.AttrSource), otelmap.SourceExtension)
		}
		l := sp.Links().AppendEmpty()
		l.SetTraceID(pcommon.TraceID{9})
		l.SetSpanID(pcommon.SpanID{8})
		l.Attributes().PutStr("link.kind", "sender")
		sp.Links().AppendEmpty()
		e := sp.Events().AppendEmpty()
		e.SetName("exception")
		e.SetTimestamp(1)
		e.Attributes().PutStr("exception.message", "boom")
		sp.Events().AppendEmpty()
	}
	for k := range 12 { // invalid ids: a few warnings, then a count
		sp := ss.Spans().AppendEmpty()
		sp.SetName(fmt.Sprintf("no ids %d", k))
	}
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetTraceID(pcommon.TraceID{3})
	return td
}

// TestSpansFromProtoSkipsGroups: unknown fields of the group wire type,
// nested, are skipped as protobuf requires (pdata cannot: see wireSkip),
// and the spans are those of the same bodies without them.
func TestSpansFromProtoSkipsGroups(t *testing.T) {
	plain, grouped := otlptest.HandBuiltBodies(false), otlptest.HandBuiltBodies(true)
	for i := range plain {
		want, _, wantErr := SpansFromProto(plain[i], otelmap.SourceOTLP)
		got, _, gotErr := SpansFromProto(grouped[i], otelmap.SourceOTLP)
		if (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("body %d: without groups error %v, with groups error %v", i, wantErr, gotErr)
		}
		if w, g := otlptest.SpansText(want), otlptest.SpansText(got); w != g {
			t.Fatalf("body %d: groups changed the spans:\n%s\n%s", i, w, g)
		}
		if _, _, err := spansViaPdata(grouped[i]); err == nil {
			t.Errorf("body %d: pdata skipped the groups; the note on wireSkip is out of date", i)
		}
	}
	// A group whose end names another field is malformed.
	bad := protowire.AppendTag(nil, 60, protowire.StartGroupType)
	bad = protowire.AppendTag(bad, 61, protowire.EndGroupType)
	if _, _, err := SpansFromProto(bad, otelmap.SourceOTLP); err == nil {
		t.Fatal("a group closed by another field's end tag was accepted")
	}
}

// packedAttrBodies are bodies for the decoder that packs attributes
// (DecodePacked): spans whose coordbench.source attribute comes twice,
// first empty (dropped), of another type, or another string, then
// "extension", in the protobuf runtimes' field order and in pdata's
// (value first); keys and values of 127, 128 and 300 bytes (one- and
// two-byte lengths); integers at their bounds, booleans, doubles; a
// bytes value among them (packed from the KeyValue pdata makes of it).
func packedAttrBodies() [][]byte {
	tag := func(b []byte, num protowire.Number, typ protowire.Type) []byte {
		return protowire.AppendTag(b, num, typ)
	}
	bytesField := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(tag(nil, num, protowire.BytesType), v)
	}
	str := func(v string) []byte { return bytesField(1, []byte(v)) } // AnyValue.string_value
	integer := func(v int64) []byte { return protowire.AppendVarint(tag(nil, 3, protowire.VarintType), uint64(v)) }
	boolean := func(v bool) []byte {
		return protowire.AppendVarint(tag(nil, 2, protowire.VarintType), protowire.EncodeBool(v))
	}
	double := func(v float64) []byte {
		return protowire.AppendFixed64(tag(nil, 4, protowire.Fixed64Type), math.Float64bits(v))
	}
	raw := func(v []byte) []byte { return bytesField(7, v) }
	kv := func(key string, value []byte, valueFirst bool) []byte {
		k, v := bytesField(1, []byte(key)), bytesField(2, value)
		if valueFirst {
			return bytesField(9, append(v, k...))
		}
		return bytesField(9, append(k, v...))
	}
	span := func(id byte, attrs ...[]byte) []byte {
		b := bytesField(1, bytes.Repeat([]byte{id}, 16))
		b = append(b, bytesField(2, bytes.Repeat([]byte{id}, 8))...)
		b = append(b, bytesField(5, []byte("span"))...)
		for _, a := range attrs {
			b = append(b, a...)
		}
		return bytesField(2, b)
	}
	body := func(spans ...[]byte) []byte {
		return bytesField(1, bytesField(2, bytes.Join(spans, nil)))
	}
	src := string(otelmap.AttrSource)
	var out [][]byte
	for _, valueFirst := range []bool{false, true} {
		out = append(out, body(
			span(1, kv(src, nil, valueFirst), kv(src, str(otelmap.SourceExtension), valueFirst)),
			span(2, kv(src, str(otelmap.SourceOTLP), valueFirst), kv(src, str(otelmap.SourceExtension), valueFirst)),
			span(3, kv(src, integer(1), valueFirst), kv(src, str(otelmap.SourceExtension), valueFirst)),
			span(4, kv(src, raw([]byte("extension")), valueFirst), kv(src, str(otelmap.SourceExtension), valueFirst)),
			span(5, kv(src, str(otelmap.SourceExtension), valueFirst), kv(src, str(otelmap.SourceOTLP), valueFirst)),
			span(6,
				kv(strings.Repeat("k", 127), str(strings.Repeat("v", 127)), valueFirst),
				kv(strings.Repeat("k", 128), str(strings.Repeat("v", 128)), valueFirst),
				kv(strings.Repeat("k", 300), str(strings.Repeat("v", 300)), valueFirst),
				kv(strings.Repeat("i", 200), integer(math.MinInt64), valueFirst),
				kv("max", integer(math.MaxInt64), valueFirst),
				kv("no", boolean(false), valueFirst),
				kv(strings.Repeat("b", 130), boolean(true), valueFirst),
				kv("nan", double(math.NaN()), valueFirst),
				kv(strings.Repeat("d", 129), double(-1.5), valueFirst),
				kv("bytes", raw([]byte{0, 0xff}), valueFirst),
				kv("", str(""), valueFirst)),
		))
	}
	return out
}
