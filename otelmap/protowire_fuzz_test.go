package otelmap

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
	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/encoding/protowire"
)

// FuzzProtoDecodersAgree feeds the same bytes to both protobuf decoders —
// SpansFromProto, and pdata followed by SpansFromTraces — and requires the
// same spans, field by field, with the same warnings, or a rejection by
// both.
//
//	go test ./otelmap -run '^$' -fuzz FuzzProtoDecodersAgree -fuzztime 1m
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
	got, gotWarn, gotErr := spansFromProto(body, SourceOTLP, true)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("pdata error %v, SpansFromProto error %v", wantErr, gotErr)
	}
	if gotErr != nil {
		if got != nil {
			t.Fatalf("rejected body yielded %d spans", len(got))
		}
		return
	}
	if w, g := spansText(want), spansText(got); w != g {
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
	var again []Span
	for range 2 {
		copied = slices.Clone(body)
		var againWarn []string
		var err error
		again, againWarn, err = dec.wire.decode(copied, SourceOTLP, true)
		if err != nil {
			t.Fatalf("the receiver's decoder rejects what SpansFromProto accepts: %v", err)
		}
		if w, g := spansText(want), spansText(again); w != g {
			t.Fatalf("spans differ:\npdata:\n%s\nthe receiver's decoder:\n%s", w, g)
		}
		if w, g := strings.Join(wantWarn, "\n"), strings.Join(againWarn, "\n"); w != g {
			t.Fatalf("warnings differ:\npdata: %s\nthe receiver's decoder: %s", w, g)
		}
	}
	checkStoreKeeps(t, got, func() {})
	checkStoreKeeps(t, again, func() {
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
// Traceability Extension. afterAdd runs once the store has the spans (it
// overwrites the body that aliasing spans point into).
func checkStoreKeeps(t testing.TB, spans []Span, afterAdd func()) {
	t.Helper()
	want := map[trace.TraceID][]Span{}
	var order []trace.TraceID
	for _, sp := range spans {
		if !sp.TraceID.IsValid() || !sp.SpanID.IsValid() {
			continue
		}
		held, ok := want[sp.TraceID]
		if !ok {
			order = append(order, sp.TraceID)
		}
		i := slices.IndexFunc(held, func(h Span) bool { return h.SpanID == sp.SpanID })
		switch {
		case i < 0:
			want[sp.TraceID] = append(held, sp)
		case held[i].Source == SourceExtension && sp.Source != SourceExtension:
			held[i] = sp
		}
	}
	wantText := map[trace.TraceID]string{}
	for _, id := range order {
		wantText[id] = spansTextOf(want[id], false)
	}
	st := NewStore(Limits{MaxTraces: len(spans) + 1, MaxSpansPerTrace: len(spans) + 1,
		Admission: AdmissionLimits{MaxTracesPerSource: len(spans) + 1}})
	st.AddFrom("fuzz", spans)
	afterAdd()
	for _, id := range order {
		if g := spansTextOf(st.Spans(id), false); wantText[id] != g {
			t.Fatalf("trace %s: the store gave back\n%s\nwant\n%s", id, g, wantText[id])
		}
	}
	if got := st.Stats().Traces; got != len(order) {
		t.Fatalf("store holds %d traces, want %d", got, len(order))
	}
}

func spansViaPdata(body []byte) ([]Span, []string, error) {
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		return nil, nil, err
	}
	spans, warnings := SpansFromTraces(req.Traces(), SourceOTLP)
	return spans, warnings, nil
}

// spansText renders every field of spans, resources by their contents and
// by which spans share one, floats by their bits.
func spansText(spans []Span) string { return spansTextOf(spans, true) }

// spansTextOf is spansText, which shows which spans share a resource only
// if sharing is set.
func spansTextOf(spans []Span, sharing bool) string {
	var b strings.Builder
	resources := map[*Resource]int{}
	for i := range spans {
		sp := &spans[i]
		r, ok := resources[sp.Resource]
		if !ok {
			r = len(resources)
			resources[sp.Resource] = r
		}
		fmt.Fprintf(&b, "span %d: trace %s span %s parent %s name %q kind %d start %d/%v end %d/%v error %v %q source %q\n",
			i, sp.TraceID, sp.SpanID, sp.ParentSpanID, sp.Name, sp.Kind, sp.Start.UnixNano(), sp.Start.IsZero(),
			sp.End.UnixNano(), sp.End.IsZero(), sp.StatusError, sp.StatusMessage, sp.Source)
		fmt.Fprintf(&b, "  attrs %s\n", attrsText(sp.Attrs))
		if sp.Resource == nil {
			fmt.Fprintf(&b, "  resource nil\n")
		} else {
			if !sharing {
				r = 0
			}
			fmt.Fprintf(&b, "  resource %d empty=%v service %q attrs %s\n", r, sp.Resource == EmptyResource(),
				sp.Resource.ServiceName, attrsText(sp.Resource.Attrs))
		}
		fmt.Fprintf(&b, "  detail nil=%v\n", sp.Detail == nil)
		fmt.Fprintf(&b, "  links nil=%v\n", sp.Links() == nil)
		for _, l := range sp.Links() {
			fmt.Fprintf(&b, "  link %s %s %s\n", l.TraceID, l.SpanID, attrsText(l.Attrs))
		}
		fmt.Fprintf(&b, "  events nil=%v\n", sp.Events() == nil)
		for _, e := range sp.Events() {
			fmt.Fprintf(&b, "  event %q %d/%v %s\n", e.Name, e.Time.UnixNano(), e.Time.IsZero(), attrsText(e.Attrs))
		}
	}
	return b.String()
}

func attrsText(kvs []attribute.KeyValue) string {
	if kvs == nil {
		return "nil"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "len=%d cap=%d", len(kvs), cap(kvs))
	for _, kv := range kvs {
		v := kv.Value
		switch v.Type() {
		case attribute.FLOAT64:
			fmt.Fprintf(&b, " %q=float:%x", kv.Key, math.Float64bits(v.AsFloat64()))
		case attribute.FLOAT64SLICE:
			fmt.Fprintf(&b, " %q=floats:", kv.Key)
			for _, f := range v.AsFloat64Slice() {
				fmt.Fprintf(&b, "%x,", math.Float64bits(f))
			}
		default:
			fmt.Fprintf(&b, " %q=%s:%q", kv.Key, v.Type(), v.Emit())
		}
	}
	return b.String()
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
	add(otlpTestTraces(3, 3, 1))
	add(otlpTestTraces(8, 2, 3))
	add(protoEveryValueTraces())
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
	seeds = append(seeds, handBuiltBodies(false)...)
	seeds = append(seeds, handBuiltBodies(true)...)
	n := len(seeds)
	for _, s := range seeds[:n] {
		seeds = append(seeds, s[:len(s)/2], s[:len(s)-1])
	}
	return seeds
}

// sdkExportedBody is what the OpenTelemetry Go SDK's OTLP/HTTP exporter
// (otlptracehttp, its own protobuf marshalling) posts for the spans of
// rcvRecordAgentTrace's shape, caught by a loopback server.
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
	stubs := rcvRecordAgentTrace(tb, "sdk-exported")
	exp := rcvExporter(tb, srv)
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
		a.PutDouble("g", -0.0)
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
			a.PutStr(string(AttrSource), SourceExtension)
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

// handBuiltBodies are bodies pdata would never write: unknown fields of
// every wire type (groups too) in every message, repeated singular
// fields, the deprecated instrumentation_library_spans (field 1000) alone
// and beside scope_spans, ids of the wrong length.
func handBuiltBodies(groups bool) [][]byte {
	unknown := func(b []byte) []byte {
		b = protowire.AppendTag(b, 50, protowire.VarintType)
		b = protowire.AppendVarint(b, 300)
		b = protowire.AppendTag(b, 51, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, 7)
		b = protowire.AppendTag(b, 52, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, 7)
		b = protowire.AppendTag(b, 53, protowire.BytesType)
		b = protowire.AppendBytes(b, []byte("skip me"))
		if !groups {
			return b
		}
		b = protowire.AppendTag(b, 54, protowire.StartGroupType)
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
		b = protowire.AppendTag(b, 55, protowire.StartGroupType)
		b = protowire.AppendTag(b, 55, protowire.EndGroupType)
		b = protowire.AppendTag(b, 54, protowire.EndGroupType)
		return b
	}
	msg := func(num protowire.Number, parts ...[]byte) []byte {
		// Unknown fields first: pdata rejects a group that ends its message.
		body := append(unknown(nil), bytes.Join(parts, nil)...)
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), body)
	}
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	fixed64 := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), v)
	}
	kv := func(num protowire.Number, key string, value ...[]byte) []byte {
		return msg(num, str(1, key), msg(2, value...))
	}
	span := func(id byte, extra ...[]byte) []byte {
		parts := [][]byte{
			str(1, string(bytes.Repeat([]byte{id}, 16))), str(2, string(bytes.Repeat([]byte{id}, 8))),
			str(5, "first name"), str(5, "hand-built"), varint(6, 2), fixed64(7, 10), fixed64(8, 20),
			kv(9, "s", str(1, "v")), kv(9, "i", varint(3, 1<<40)), kv(9, "changed", str(1, "x"), varint(2, 1)),
			kv(9, "strindex", varint(8, 3)), msg(9, str(1, "no value")),
			msg(15, varint(3, 2)), msg(15, str(2, "merged message")),
			msg(11, fixed64(1, 5), str(2, "event"), kv(3, "e", str(1, "v"))),
			msg(13, str(1, string(bytes.Repeat([]byte{7}, 16))), str(2, string(bytes.Repeat([]byte{7}, 8))), kv(4, "l", varint(2, 0))),
		}
		return msg(2, append(parts, extra...)...)
	}
	resource := msg(1, kv(1, "service.name", str(1, "hand")), msg(3, str(1, "url"), str(2, "type"), str(3, "id")))
	scope := msg(1, str(1, "scope"), kv(3, "scope.attr", str(1, "x")))
	current := msg(1, resource, msg(2, scope, span(1), span(2, str(1, ""))))
	deprecated := msg(1, resource, msg(1000, scope, span(3)))
	both := msg(1, msg(1000, span(4)), resource, msg(2, span(5)), msg(1000, span(6)))
	// The first service.name is not a string: the resource has none.
	services := func(first ...[]byte) []byte {
		return msg(1, msg(1, kv(1, "service.name", first...), kv(1, "service.name", str(1, "second"))), msg(2, span(9)))
	}
	badID := msg(1, msg(2, span(8, str(2, "short"))))
	return [][]byte{
		current, deprecated, both, badID,
		services(), services(varint(3, 7)), services(msg(6, kv(1, "k", str(1, "v")))), services(str(1, "first")),
		unknown(bytes.Join([][]byte{current, deprecated}, nil)),
	}
}

// TestSpansFromProtoSkipsGroups: unknown fields of the group wire type,
// nested, are skipped as protobuf requires (pdata cannot: see wireSkip),
// and the spans are those of the same bodies without them.
func TestSpansFromProtoSkipsGroups(t *testing.T) {
	plain, grouped := handBuiltBodies(false), handBuiltBodies(true)
	for i := range plain {
		want, _, wantErr := SpansFromProto(plain[i], SourceOTLP)
		got, _, gotErr := SpansFromProto(grouped[i], SourceOTLP)
		if (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("body %d: without groups error %v, with groups error %v", i, wantErr, gotErr)
		}
		if w, g := spansText(want), spansText(got); w != g {
			t.Fatalf("body %d: groups changed the spans:\n%s\n%s", i, w, g)
		}
		if _, _, err := spansViaPdata(grouped[i]); err == nil {
			t.Errorf("body %d: pdata skipped the groups; the note on wireSkip is out of date", i)
		}
	}
	// A group whose end names another field is malformed.
	bad := protowire.AppendTag(nil, 60, protowire.StartGroupType)
	bad = protowire.AppendTag(bad, 61, protowire.EndGroupType)
	if _, _, err := SpansFromProto(bad, SourceOTLP); err == nil {
		t.Fatal("a group closed by another field's end tag was accepted")
	}
}

// TestReceiverDecodesProtobufFromTheWire: over loopback HTTP, the receiver
// stores what SpansFromProto decodes, unknown groups included (pdata would
// reject the body), and rejects a malformed body whole.
func TestReceiverDecodesProtobufFromTheWire(t *testing.T) {
	st, rcv, srv := rcvServer(t, Limits{}, ReceiverLimits{})
	body := handBuiltBodies(true)[0]
	want, _, err := SpansFromProto(body, SourceOTLP)
	if err != nil {
		t.Fatal(err)
	}
	post := func(b []byte) int {
		t.Helper()
		resp, err := http.Post(srv.URL+TracesPath, ContentTypeProtobuf, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if code := post(body); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	held := 0
	for _, id := range st.TraceIDs() {
		held += len(st.Spans(id))
	}
	valid := 0 // the body has a span with an empty trace id, rejected by the store
	for _, sp := range want {
		if sp.TraceID.IsValid() && sp.SpanID.IsValid() {
			valid++
		}
	}
	if held != valid || held == 0 {
		t.Fatalf("store holds %d spans, the decoder gave %d with valid ids", held, valid)
	}
	if code := post(body[:len(body)-3]); code != http.StatusBadRequest {
		t.Fatalf("truncated body: status %d, want 400", code)
	}
	if got := rcv.Stats().SpansReceived; got != uint64(len(want)) {
		t.Fatalf("received %d spans after the malformed body, want %d", got, len(want))
	}
}
