// Package otlptest holds what the tests of otelmap's packages share: OTLP
// batches built with pdata, their protobuf, JSON and gzip encodings, spans
// recorded and exported by the real OpenTelemetry SDK, and a text of every
// field of decoded spans to compare decoders and the store by, and the
// caller's side of an extension call (CallerSpan, RemoteParent,
// SpansFromSDK) for the extension codec's and assembly's tests. Tests only.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// AttrsPerSpan is how many attributes Traces puts on a span,
// like a real agent span.
const AttrsPerSpan = 6

// Traces builds n spans over traces of perTrace spans each (the
// first span of a trace its root, the rest its children), split over the
// given number of resources, each span with AttrsPerSpan
// attributes. Ids are deterministic.
func Traces(n, perTrace, resources int) ptrace.Traces {
	return TracesFrom(0, n, perTrace, resources)
}

// TracesFrom is Traces for spans first to first+n-1 of a
// larger set, so that batches of one set have ids of their own.
func TracesFrom(first, n, perTrace, resources int) ptrace.Traces {
	td := ptrace.NewTraces()
	services := []string{"coordinator", "reviewer", "planner", "coder"}
	scopes := make([]ptrace.SpanSlice, resources)
	for r := range resources {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", services[r%len(services)])
		rs.Resource().Attributes().PutStr("telemetry.sdk.language", "go")
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("coordbench/bench")
		ss.Spans().EnsureCapacity(n/resources + 1)
		scopes[r] = ss.Spans()
	}
	base := pcommon.Timestamp(1_700_000_000_000_000_000)
	for i := range n {
		tr, pos := (first+i)/perTrace, (first+i)%perTrace
		var tid pcommon.TraceID
		tid[0], tid[1], tid[2], tid[3], tid[15] = 0xc0, byte(tr>>16), byte(tr>>8), byte(tr), 1
		sp := scopes[i%resources].AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID(pcommon.SpanID{0x5a, byte(tr >> 16), byte(tr >> 8), byte(tr), byte(pos >> 8), byte(pos), 0, 1})
		if pos > 0 {
			sp.SetParentSpanID(pcommon.SpanID{0x5a, byte(tr >> 16), byte(tr >> 8), byte(tr), 0, 0, 0, 1})
		}
		sp.SetName("invoke_agent reviewer")
		sp.SetKind(ptrace.SpanKindClient)
		sp.SetStartTimestamp(base + pcommon.Timestamp(i)*1000)
		sp.SetEndTimestamp(base + pcommon.Timestamp(i)*1000 + 500)
		a := sp.Attributes()
		a.EnsureCapacity(AttrsPerSpan)
		a.PutStr(string(otelmap.AttrGenAIOperationName), otelmap.OpInvokeAgent)
		a.PutStr(string(otelmap.AttrGenAIAgentName), "reviewer")
		a.PutStr(string(otelmap.AttrGenAIConversationID), "ctx-1234")
		a.PutStr(string(otelmap.AttrServerAddress), "reviewer.local")
		a.PutInt(string(otelmap.AttrServerPort), 9010)
		a.PutStr(string(otelmap.AttrCallType), "AGENT")
	}
	return td
}

// SpansText renders every field of spans, resources by their contents and
// by which spans share one, floats by their bits.
func SpansText(spans []otelmap.Span) string { return SpansTextOf(spans, true) }

// SpansTextOf is SpansText, which shows which spans share a resource only
// if sharing is set.
func SpansTextOf(spans []otelmap.Span, sharing bool) string {
	var b strings.Builder
	resources := map[*otelmap.Resource]int{}
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
			fmt.Fprintf(&b, "  resource %d empty=%v service %q attrs %s\n", r, sp.Resource == otelmap.EmptyResource(),
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
			fmt.Fprintf(&b, " %q=%s:%q", kv.Key, v.Type(), v.String())
		}
	}
	return b.String()
}

// RecordAgentTrace records one agent call with the real SDK: an
// invoke_agent CLIENT root with attributes of every SDK type, its HTTP
// CLIENT child, and a failed chat span. It returns the ended spans.
func RecordAgentTrace(t testing.TB, service string) tracetest.SpanStubs {
	t.Helper()
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(otelmap.AttrServiceName.String(service), attribute.String("deployment.environment.name", "test"))),
		sdktrace.WithSyncer(mem),
	)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := tp.Tracer("coordbench/otelmap-test")
	ctx, root := tr.Start(context.Background(), "invoke_agent reviewer",
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent),
			otelmap.AttrGenAIAgentName.String("reviewer"),
			otelmap.AttrGenAIConversationID.String("ctx-1"),
			otelmap.AttrCallType.String("AGENT"),
			otelmap.AttrGenAIInputTokens.Int(120),
			attribute.Float64("coordbench.cost", 0.25),
			attribute.Bool("coordbench.streaming", false),
			attribute.StringSlice("coordbench.tags", []string{"a", "b"}),
			attribute.Int64Slice("coordbench.retries", []int64{1, 2}),
		))
	_, post := tr.Start(ctx, "POST", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(otelmap.AttrServerAddress.String("reviewer.local"), otelmap.AttrServerPort.Int(9010)))
	post.End()
	_, chat := tr.Start(ctx, "chat gpt-4o", trace.WithAttributes(otelmap.AttrGenAIOperationName.String(otelmap.OpChat)))
	chat.SetStatus(codes.Error, "rate limited")
	chat.End()
	root.End()
	return mem.GetSpans()
}

// Exporter is the real OTLP/HTTP exporter pointed at srv.
func Exporter(t testing.TB, srv *httptest.Server, opts ...otlptracehttp.Option) sdktrace.SpanExporter {
	t.Helper()
	opts = append([]otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(srv.URL + "/v1/traces"), // the OTLP/HTTP default path
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
	}, opts...)
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	return exp
}

func Proto(t testing.TB, td ptrace.Traces) []byte {
	t.Helper()
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func JSON(t testing.TB, td ptrace.Traces) []byte {
	t.Helper()
	var m ptrace.JSONMarshaler
	b, err := m.MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func Gzip(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// BenchBatchSpans is the spans per export request in the benchmarks: the
// size of a Collector batch (the SDK's is 512), well under the receiver's
// default decompressed limit.
const BenchBatchSpans = 10_000

// BenchBodies encodes n spans (traces of 100 spans over 2 resources, 6
// attributes each) as protobuf ExportTraceServiceRequests.
func BenchBodies(b *testing.B, n int) [][]byte {
	b.Helper()
	var bodies [][]byte
	for first := 0; first < n; first += BenchBatchSpans {
		bodies = append(bodies, Proto(b, TracesFrom(first, min(BenchBatchSpans, n-first), 100, 2)))
	}
	return bodies
}

// (which start 0xc0).
func AdmissionTraceID(n int) trace.TraceID {
	return trace.TraceID{0xad, byte(n >> 16), byte(n >> 8), byte(n), 15: 1}
}

// AdmissionTraces builds perTrace spans for each trace id; salt keeps the span
// ids of two batches for one trace apart.
func AdmissionTraces(ids []trace.TraceID, perTrace int, salt byte) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "reviewer")
	ss := rs.ScopeSpans().AppendEmpty().Spans()
	ss.EnsureCapacity(len(ids) * perTrace)
	base := pcommon.Timestamp(1_700_000_000_000_000_000)
	for n, id := range ids {
		for i := range perTrace {
			sp := ss.AppendEmpty()
			sp.SetTraceID(pcommon.TraceID(id))
			sp.SetSpanID(pcommon.SpanID{salt, byte(n >> 16), byte(n >> 8), byte(n), byte(i >> 8), byte(i), 0, 1})
			sp.SetName("invoke_agent reviewer")
			sp.SetKind(ptrace.SpanKindServer)
			sp.SetStartTimestamp(base)
			sp.SetEndTimestamp(base + 500)
		}
	}
	return td
}

func AdmissionIDs(first, n int) []trace.TraceID {
	ids := make([]trace.TraceID, n)
	for i := range ids {
		ids[i] = AdmissionTraceID(first + i)
	}
	return ids
}

// ClientFrom is an HTTP client whose connections come from local address
// ip (a loopback address: a source of its own).
func ClientFrom(t *testing.T, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 30 * time.Second}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 2 * time.Minute}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// HandBuiltBodies are bodies pdata would never write: unknown fields of
// every wire type (groups too) in every message, repeated singular
// fields, the deprecated instrumentation_library_spans (field 1000) alone
// and beside scope_spans, ids of the wrong length.
func HandBuiltBodies(groups bool) [][]byte {
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

// RecordingTracer returns a real SDK tracer of service, and the recorder of
// its ended spans.
func RecordingTracer(t testing.TB, service string) (trace.Tracer, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(otelmap.AttrServiceName.String(service))),
	)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp.Tracer("coordbench-test"), rec
}

// CallerSpan starts and ends the caller's CLIENT invoke_agent span of a
// call to callee, as the green agent records it, and returns it as the store
// holds it.
func CallerSpan(t testing.TB, callee string) otelmap.Span {
	t.Helper()
	tr, rec := RecordingTracer(t, "green")
	_, span := tr.Start(context.Background(), otelmap.SpanInvokeAgentPrefix+callee,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(time.Date(2025, 6, 3, 9, 14, 6, 0, time.UTC)),
		trace.WithAttributes(
			otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent),
			otelmap.AttrGenAIAgentName.String(callee),
			otelmap.AttrCallType.String(string(tracedata.CallAgent)),
		))
	span.End(trace.WithTimestamp(time.Date(2025, 6, 3, 9, 14, 10, 0, time.UTC)))
	return SpansFromSDK(rec.Ended(), otelmap.SourceInProcess)[0]
}

// RemoteParent is the caller's span context as the participant receives it
// through traceparent.
func RemoteParent(caller otelmap.Span) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: caller.TraceID, SpanID: caller.SpanID, TraceFlags: trace.FlagsSampled, Remote: true,
	})
}

// SpansFromSDK converts SDK spans as the in-process road would.
func SpansFromSDK(ended []sdktrace.ReadOnlySpan, source string) []otelmap.Span {
	out := make([]otelmap.Span, 0, len(ended))
	resources := map[string]*otelmap.Resource{}
	for _, s := range ended {
		svc := ""
		for _, kv := range s.Resource().Attributes() {
			if kv.Key == otelmap.AttrServiceName {
				svc = kv.Value.AsString()
			}
		}
		r := resources[svc]
		if r == nil {
			r = &otelmap.Resource{ServiceName: svc, Attrs: s.Resource().Attributes()}
			resources[svc] = r
		}
		out = append(out, otelmap.Span{
			TraceID:       s.SpanContext().TraceID(),
			SpanID:        s.SpanContext().SpanID(),
			ParentSpanID:  s.Parent().SpanID(),
			Name:          s.Name(),
			Kind:          s.SpanKind(),
			Start:         s.StartTime(),
			End:           s.EndTime(),
			StatusError:   s.Status().Code == codes.Error,
			StatusMessage: s.Status().Description,
			Attrs:         s.Attributes(),
			Resource:      r,
			Source:        source,
		})
	}
	return out
}

// ResponseTraceFixture decodes tracedata/testdata/<name>, an extension
// answer the tests of the extension codec and of assembly share.
func ResponseTraceFixture(t testing.TB, name string) *tracedata.ResponseTrace {
	t.Helper()
	b, err := os.ReadFile(testenv.RepoFile(t, "tracedata/testdata/"+name))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := tracedata.DecodeResponseTrace(b)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// SpansByName indexes spans by name, failing on duplicates.
func SpansByName(t testing.TB, spans []otelmap.Span) map[string]*otelmap.Span {
	t.Helper()
	m := map[string]*otelmap.Span{}
	for i := range spans {
		if _, dup := m[spans[i].Name]; dup {
			t.Fatalf("two spans named %q", spans[i].Name)
		}
		m[spans[i].Name] = &spans[i]
	}
	return m
}
