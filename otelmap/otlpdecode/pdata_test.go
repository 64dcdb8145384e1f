package otlpdecode

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

func mustTraceID(t testing.TB, s string) trace.TraceID {
	t.Helper()
	id, err := trace.TraceIDFromHex(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustSpanID(t testing.TB, s string) trace.SpanID {
	t.Helper()
	id, err := trace.SpanIDFromHex(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestSpansFromTracesTwoAgents checks every field of the hand-written
// fixture's four spans as the store will hold them.
func TestSpansFromTracesTwoAgents(t *testing.T) {
	tds, err := ReadOTLPJSONFile("../testdata/two_agents.otlp.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(tds) != 1 {
		t.Fatalf("got %d documents, want 1", len(tds))
	}
	spans, warnings := SpansFromTraces(tds[0], otelmap.SourceOTLP)
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
	tid := mustTraceID(t, "4bf92f3577b34da6a3ce929d0e0e4736")
	base := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	want := []struct {
		span, parent, name, service string
		kind                        trace.SpanKind
		start, end                  time.Time
		attrs                       []attribute.KeyValue
	}{
		{"00f067aa0ba902b7", "", "invoke_agent reviewer", "coordinator", trace.SpanKindClient, ms(0), ms(900),
			[]attribute.KeyValue{otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("reviewer")}},
		{"b9c7c989f97918e1", "00f067aa0ba902b7", "POST", "coordinator", trace.SpanKindClient, ms(100), ms(800),
			[]attribute.KeyValue{attribute.String("http.request.method", "POST"), otelmap.AttrServerAddress.String("reviewer"), otelmap.AttrServerPort.Int64(9010)}},
		{"53995c3f42cd8ad8", "b9c7c989f97918e1", "POST", "reviewer", trace.SpanKindServer, ms(150), ms(750),
			[]attribute.KeyValue{attribute.String("http.request.method", "POST")}},
		{"6e0c63257de34c92", "53995c3f42cd8ad8", "invoke_agent reviewer", "reviewer", trace.SpanKindInternal, ms(200), ms(700),
			[]attribute.KeyValue{otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String("reviewer")}},
	}
	if len(spans) != len(want) {
		t.Fatalf("got %d spans, want %d", len(spans), len(want))
	}
	for i, w := range want {
		sp := spans[i]
		var parent trace.SpanID
		if w.parent != "" {
			parent = mustSpanID(t, w.parent)
		}
		if sp.TraceID != tid || sp.SpanID != mustSpanID(t, w.span) || sp.ParentSpanID != parent {
			t.Errorf("span %d ids = %s/%s parent %s, want %s/%s parent %s", i, sp.TraceID, sp.SpanID, sp.ParentSpanID, tid, w.span, parent)
		}
		if sp.Name != w.name || sp.Kind != w.kind || sp.Resource.ServiceName != w.service || sp.Source != otelmap.SourceOTLP {
			t.Errorf("span %d = %q kind %v service %q source %q, want %q %v %q %q",
				i, sp.Name, sp.Kind, sp.Resource.ServiceName, sp.Source, w.name, w.kind, w.service, otelmap.SourceOTLP)
		}
		if !sp.Start.Equal(w.start) || !sp.End.Equal(w.end) {
			t.Errorf("span %d times %v..%v, want %v..%v", i, sp.Start, sp.End, w.start, w.end)
		}
		if sp.StatusError || sp.StatusMessage != "" {
			t.Errorf("span %d status error=%v %q, want unset", i, sp.StatusError, sp.StatusMessage)
		}
		if !reflect.DeepEqual(sp.Attrs, w.attrs) {
			t.Errorf("span %d attrs = %v, want %v", i, sp.Attrs, w.attrs)
		}
	}
	// One *Resource per ResourceSpans, shared by its spans.
	if spans[0].Resource != spans[1].Resource || spans[2].Resource != spans[3].Resource || spans[0].Resource == spans[2].Resource {
		t.Error("spans of one ResourceSpans must share one *Resource, and only they")
	}
	if got := spans[0].Resource.Attrs; !reflect.DeepEqual(got, []attribute.KeyValue{otelmap.AttrServiceName.String("coordinator")}) {
		t.Errorf("resource attrs = %v", got)
	}
}

// TestSpansFromTracesAttributeTypes checks the conversion of every OTLP
// value type: scalars and homogeneous arrays keep their type; maps, bytes
// and mixed arrays become JSON text; empty values are dropped.
func TestSpansFromTracesAttributeTypes(t *testing.T) {
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{1})
	m := sp.Attributes()
	m.PutStr("str", "v")
	m.PutInt("int", -7)
	m.PutDouble("double", 2.5)
	m.PutBool("bool", true)
	m.PutEmpty("empty")
	m.PutEmptyBytes("bytes").FromRaw([]byte{0xde, 0xad})
	mm := m.PutEmptyMap("map")
	mm.PutStr("a", "<b>")
	mm.PutInt("n", 1)
	_ = m.PutEmptySlice("strs").FromRaw([]any{"x", "y"})
	_ = m.PutEmptySlice("ints").FromRaw([]any{int64(1), int64(2)})
	_ = m.PutEmptySlice("doubles").FromRaw([]any{1.5, 2.0})
	_ = m.PutEmptySlice("bools").FromRaw([]any{true, false})
	_ = m.PutEmptySlice("mixed").FromRaw([]any{"x", int64(1)})
	_ = m.PutEmptySlice("nested").FromRaw([]any{[]any{"x"}})
	m.PutEmptySlice("none")

	spans, _ := SpansFromTraces(td, otelmap.SourceOTLP)
	want := []attribute.KeyValue{
		attribute.String("str", "v"),
		attribute.Int64("int", -7),
		attribute.Float64("double", 2.5),
		attribute.Bool("bool", true),
		attribute.String("bytes", "3q0="),
		attribute.String("map", `{"a":"<b>","n":1}`),
		attribute.StringSlice("strs", []string{"x", "y"}),
		attribute.Int64Slice("ints", []int64{1, 2}),
		attribute.Float64Slice("doubles", []float64{1.5, 2}),
		attribute.BoolSlice("bools", []bool{true, false}),
		attribute.String("mixed", `["x",1]`),
		attribute.String("nested", `[["x"]]`),
		attribute.StringSlice("none", []string{}),
	}
	got := spans[0].Attrs
	if len(got) != len(want) {
		t.Fatalf("got %d attrs %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i].Key != want[i].Key || got[i].Value.Type() != want[i].Value.Type() ||
			!reflect.DeepEqual(got[i].Value.AsInterface(), want[i].Value.AsInterface()) {
			t.Errorf("attr %d = %s (%v) %#v, want %s (%v) %#v", i, got[i].Key, got[i].Value.Type(), got[i].Value.AsInterface(),
				want[i].Key, want[i].Value.Type(), want[i].Value.AsInterface())
		}
	}
}

func TestSpansFromTracesKindStatusTimes(t *testing.T) {
	kinds := []struct {
		in   ptrace.SpanKind
		want trace.SpanKind
	}{
		{ptrace.SpanKindUnspecified, trace.SpanKindInternal},
		{ptrace.SpanKindInternal, trace.SpanKindInternal},
		{ptrace.SpanKindServer, trace.SpanKindServer},
		{ptrace.SpanKindClient, trace.SpanKindClient},
		{ptrace.SpanKindProducer, trace.SpanKindProducer},
		{ptrace.SpanKindConsumer, trace.SpanKindConsumer},
		{ptrace.SpanKind(42), trace.SpanKindInternal},
	}
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i, k := range kinds {
		sp := ss.AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1})
		sp.SetSpanID(pcommon.SpanID{byte(i + 1)})
		sp.SetKind(k.in)
	}
	errSpan := ss.At(0)
	errSpan.Status().SetCode(ptrace.StatusCodeError)
	errSpan.Status().SetMessage("boom")
	okSpan := ss.At(1)
	okSpan.Status().SetCode(ptrace.StatusCodeOk)
	okSpan.Status().SetMessage("ignored: only errors carry a description")
	okSpan.SetStartTimestamp(pcommon.Timestamp(1_700_000_000_123_456_789))
	okSpan.SetEndTimestamp(pcommon.Timestamp(1_700_000_001_000_000_000))

	spans, _ := SpansFromTraces(td, otelmap.SourceOTLP)
	for i, k := range kinds {
		if spans[i].Kind != k.want {
			t.Errorf("kind %v -> %v, want %v", k.in, spans[i].Kind, k.want)
		}
	}
	if !spans[0].StatusError || spans[0].StatusMessage != "boom" {
		t.Errorf("error status = %v %q", spans[0].StatusError, spans[0].StatusMessage)
	}
	if spans[1].StatusError || spans[1].StatusMessage != "" {
		t.Errorf("ok status = %v %q", spans[1].StatusError, spans[1].StatusMessage)
	}
	if !spans[0].Start.IsZero() || !spans[0].End.IsZero() {
		t.Errorf("zero timestamps became %v, %v; want the zero time", spans[0].Start, spans[0].End)
	}
	if got := spans[1].Start.UnixNano(); got != 1_700_000_000_123_456_789 {
		t.Errorf("start = %d", got)
	}
}

// TestSpansFromTracesInvalidIDs: spans with invalid ids are returned for
// the store to reject and count, with a bounded number of warnings.
func TestSpansFromTracesInvalidIDs(t *testing.T) {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	good := ss.AppendEmpty()
	good.SetTraceID(pcommon.TraceID{1})
	good.SetSpanID(pcommon.SpanID{1})
	noTrace := ss.AppendEmpty()
	noTrace.SetName("no trace id")
	noTrace.SetSpanID(pcommon.SpanID{2})
	noSpan := ss.AppendEmpty()
	noSpan.SetName("no span id")
	noSpan.SetTraceID(pcommon.TraceID{1})
	spans, warnings := SpansFromTraces(td, otelmap.SourceOTLP)
	if len(spans) != 3 {
		t.Fatalf("got %d spans, want all 3", len(spans))
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], `"no trace id"`) || !strings.Contains(warnings[1], `"no span id"`) {
		t.Fatalf("warnings = %q", warnings)
	}
	st := tracestore.NewStore(tracestore.Limits{})
	if res := st.Add(spans); res.Accepted != 1 || res.Rejected != 2 {
		t.Fatalf("store: %+v", res)
	}

	many := ptrace.NewTraces()
	ms := many.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for range maxIDWarnings + 5 {
		ms.AppendEmpty()
	}
	_, warnings = SpansFromTraces(many, otelmap.SourceOTLP)
	if len(warnings) != maxIDWarnings+1 || warnings[maxIDWarnings] != "5 more spans with an invalid trace or span id" {
		t.Fatalf("got %d warnings, last %q", len(warnings), warnings[len(warnings)-1])
	}
}

func TestSpansFromTracesResources(t *testing.T) {
	td := ptrace.NewTraces()
	rsNum := td.ResourceSpans().AppendEmpty()
	rsNum.Resource().Attributes().PutInt("service.name", 3) // not a string: no name
	rsNum.Resource().Attributes().PutStr("host.name", "h")
	sp := rsNum.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{1})
	rsNone := td.ResourceSpans().AppendEmpty()
	sp = rsNone.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{2})

	spans, _ := SpansFromTraces(td, otelmap.SourceOTLP)
	if r := spans[0].Resource; r.ServiceName != "" || len(r.Attrs) != 2 {
		t.Errorf("resource with numeric service.name = %+v", r)
	}
	if spans[1].Resource != otelmap.EmptyResource() {
		t.Errorf("a resource with no attributes must be the shared empty resource, got %+v", spans[1].Resource)
	}
}

// TestSpansFromTracesAttrsDoNotAlias: spans' Attrs share backing arrays,
// so each slice's capacity must end at its length.
func TestSpansFromTracesAttrsDoNotAlias(t *testing.T) {
	td := otlptest.Traces(2, 2, 1)
	spans, _ := SpansFromTraces(td, otelmap.SourceOTLP)
	before := fmt.Sprint(spans[1].Attrs)
	spans[0].Attrs = append(spans[0].Attrs, attribute.String("appended", "x"))
	if after := fmt.Sprint(spans[1].Attrs); after != before {
		t.Fatalf("appending to one span's attrs changed the next: %s -> %s", before, after)
	}
}

func TestSpansFromTracesKeepsExtensionSource(t *testing.T) {
	td := otlptest.Traces(2, 2, 1)
	sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(1)
	sp.Attributes().PutStr(string(otelmap.AttrSource), otelmap.SourceExtension)
	spans, _ := SpansFromTraces(td, otelmap.SourceOTLP)
	if spans[0].Source != otelmap.SourceOTLP || spans[1].Source != otelmap.SourceExtension {
		t.Fatalf("sources = %q, %q; want otlp, extension", spans[0].Source, spans[1].Source)
	}
}

// TestSpansFromTracesAllocations bounds allocations: a handful per batch,
// not per span (the time it takes is for the benchmarks).
func TestSpansFromTracesAllocations(t *testing.T) {
	const n = 2000
	td := otlptest.Traces(n, 100, 2)
	allocs := testing.AllocsPerRun(5, func() { SpansFromTraces(td, otelmap.SourceOTLP) })
	// 1 span slice, 2 resources (struct + attrs), n*6/1024 attribute chunks.
	if limit := 1 + 2*2 + float64(n*otlptest.AttrsPerSpan/attrChunk+2); allocs > limit {
		t.Fatalf("%v allocations for %d spans, want at most %v", allocs, n, limit)
	}
}

// TestSpansFromTracesSmallBatchSmallChunk: a batch of a few spans (an
// SDK exporter's usual export) takes attribute storage for its own
// attributes, not a whole chunk; a held trace of it pins no more.
func TestSpansFromTracesSmallBatchSmallChunk(t *testing.T) {
	for _, n := range []int{1, 3, 40} {
		td := otlptest.Traces(n, 10, 1)
		var attrs int
		for _, sp := range td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().All() {
			attrs += sp.Attributes().Len()
		}
		var before, after runtime.MemStats
		const runs = 50
		runtime.ReadMemStats(&before)
		for range runs {
			SpansFromTraces(td, otelmap.SourceOTLP)
		}
		runtime.ReadMemStats(&after)
		perRun := int(after.TotalAlloc-before.TotalAlloc) / runs
		// The spans, the resource and the attributes, with room to spare;
		// one chunk alone is 64 KiB.
		spanSize, kvSize := int(unsafe.Sizeof(otelmap.Span{})), int(unsafe.Sizeof(attribute.KeyValue{}))
		if limit := 2*(n*spanSize+(attrs+4)*kvSize) + 1024; perRun > limit {
			t.Errorf("%d spans (%d attributes): %d bytes allocated per conversion, want at most %d", n, attrs, perRun, limit)
		}
	}
}

// TestSpansFromTracesLinksAndEvents: links and events are kept, with their
// attributes, ids and times; a span without them has nil slices.
func TestSpansFromTracesLinksAndEvents(t *testing.T) {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	sp := ss.AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{2})
	l := sp.Links().AppendEmpty()
	l.SetTraceID(pcommon.TraceID{1})
	l.SetSpanID(pcommon.SpanID{3})
	l.Attributes().PutStr("link.kind", "sender")
	other := sp.Links().AppendEmpty()
	other.SetTraceID(pcommon.TraceID{9})
	other.SetSpanID(pcommon.SpanID{4})
	e := sp.Events().AppendEmpty()
	e.SetName("gen_ai.tool.message")
	e.SetTimestamp(pcommon.Timestamp(1_700_000_000_000_000_001))
	e.Attributes().PutStr("content", `{"agent_name":"writer"}`)
	sp.Events().AppendEmpty().SetName("bare")
	plain := ss.AppendEmpty()
	plain.SetTraceID(pcommon.TraceID{1})
	plain.SetSpanID(pcommon.SpanID{5})

	spans, _ := SpansFromTraces(td, otelmap.SourceOTLP)
	got := spans[0]
	if len(got.Links()) != 2 || got.Links()[0].TraceID != (trace.TraceID{1}) || got.Links()[0].SpanID != (trace.SpanID{3}) ||
		len(got.Links()[0].Attrs) != 1 || got.Links()[0].Attrs[0].Value.AsString() != "sender" ||
		got.Links()[1].TraceID != (trace.TraceID{9}) || got.Links()[1].Attrs != nil {
		t.Errorf("links = %+v", got.Links())
	}
	if len(got.Events()) != 2 || got.Events()[0].Name != "gen_ai.tool.message" || got.Events()[0].Time.UnixNano() != 1_700_000_000_000_000_001 ||
		len(got.Events()[0].Attrs) != 1 || got.Events()[0].Attrs[0].Value.AsString() != `{"agent_name":"writer"}` ||
		got.Events()[1].Name != "bare" || !got.Events()[1].Time.IsZero() {
		t.Errorf("events = %+v", got.Events())
	}
	if spans[1].Detail != nil {
		t.Errorf("span without links or events = %+v", spans[1])
	}
}
