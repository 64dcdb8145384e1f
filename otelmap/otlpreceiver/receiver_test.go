package otlpreceiver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// rcvServer starts a Receiver on a real loopback HTTP server.
func rcvServer(t *testing.T, sl tracestore.Limits, rl ReceiverLimits) (*tracestore.Store, *Receiver, *httptest.Server) {
	t.Helper()
	st := tracestore.NewStore(sl)
	rcv := NewReceiver(st, rl)
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	return st, rcv, srv
}

// rcvCheckAgainstSDK checks that the store holds every SDK span with the
// fields the SDK ended it with.
func rcvCheckAgainstSDK(t *testing.T, st *tracestore.Store, stubs tracetest.SpanStubs, service string) {
	t.Helper()
	for _, want := range stubs {
		var got *otelmap.Span
		for _, sp := range st.Spans(want.SpanContext.TraceID()) {
			if sp.SpanID == want.SpanContext.SpanID() {
				got = &sp
				break
			}
		}
		if got == nil {
			t.Errorf("span %q (%s) not stored", want.Name, want.SpanContext.SpanID())
			continue
		}
		if got.Name != want.Name || got.Kind != want.SpanKind || got.ParentSpanID != want.Parent.SpanID() {
			t.Errorf("span %q: got name %q kind %v parent %s, want kind %v parent %s",
				want.Name, got.Name, got.Kind, got.ParentSpanID, want.SpanKind, want.Parent.SpanID())
		}
		if !got.Start.Equal(want.StartTime) || !got.End.Equal(want.EndTime) {
			t.Errorf("span %q: times %v..%v, want %v..%v", want.Name, got.Start, got.End, want.StartTime, want.EndTime)
		}
		wantErr := want.Status.Code == otelcodes.Error
		if got.StatusError != wantErr || (wantErr && got.StatusMessage != want.Status.Description) {
			t.Errorf("span %q: status %v %q, want %v %q", want.Name, got.StatusError, got.StatusMessage, wantErr, want.Status.Description)
		}
		if got.Resource.ServiceName != service || got.Source != otelmap.SourceOTLP {
			t.Errorf("span %q: service %q source %q", want.Name, got.Resource.ServiceName, got.Source)
		}
		if !rcvSameAttrs(got.Attrs, want.Attributes) {
			t.Errorf("span %q: attrs %v, want %v", want.Name, got.Attrs, want.Attributes)
		}
		if !rcvSameAttrs(got.Resource.Attrs, want.Resource.Attributes()) {
			t.Errorf("span %q: resource attrs %v, want %v", want.Name, got.Resource.Attrs, want.Resource.Attributes())
		}
	}
}

func rcvSameAttrs(got, want []attribute.KeyValue) bool {
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		i := slices.IndexFunc(got, func(kv attribute.KeyValue) bool { return kv.Key == w.Key })
		if i < 0 || got[i].Value.Type() != w.Value.Type() || !reflect.DeepEqual(got[i].Value.AsInterface(), w.Value.AsInterface()) {
			return false
		}
	}
	return true
}

// TestReceiverSDKExport sends the real SDK exporter's bytes — protobuf and
// JSON, plain and gzip — and checks that every span arrives whole.
func TestReceiverSDKExport(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []otlptracehttp.Option
	}{
		{"protobuf", nil},
		{"protobuf+gzip", []otlptracehttp.Option{otlptracehttp.WithCompression(otlptracehttp.GzipCompression)}},
		{"json", []otlptracehttp.Option{otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON)}},
		{"json+gzip", []otlptracehttp.Option{otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON),
			otlptracehttp.WithCompression(otlptracehttp.GzipCompression)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, rcv, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{})
			stubs := otlptest.RecordAgentTrace(t, "coordinator")
			exp := otlptest.Exporter(t, srv, tc.opts...)
			if err := exp.ExportSpans(context.Background(), stubs.Snapshots()); err != nil {
				t.Fatalf("export: %v", err)
			}
			rcvCheckAgainstSDK(t, st, stubs, "coordinator")
			want := ReceiverStats{Requests: 1, SpansReceived: 3, SpansAccepted: 3}
			if got := rcvCounters(rcv); got != want {
				t.Fatalf("stats = %+v, want %+v", got, want)
			}
		})
	}
}

// TestReceiverSDKSeesPartialSuccess: the real exporter understands our
// partial_success answer and reports the rejected spans as an error.
func TestReceiverSDKSeesPartialSuccess(t *testing.T) {
	for _, enc := range []otlptracehttp.Encoding{otlptracehttp.EncodingProtobuf, otlptracehttp.EncodingJSON} {
		st, rcv, srv := rcvServer(t, tracestore.Limits{MaxSpansPerTrace: 1}, ReceiverLimits{})
		stubs := otlptest.RecordAgentTrace(t, "coordinator")
		exp := otlptest.Exporter(t, srv, otlptracehttp.WithEncoding(enc))
		err := exp.ExportSpans(context.Background(), stubs.Snapshots())
		if err == nil || !strings.Contains(err.Error(), "2 spans rejected") || !strings.Contains(err.Error(), "span limit per trace") {
			t.Fatalf("encoding %v: export error = %v, want a partial success naming 2 rejected spans", enc, err)
		}
		if got := rcv.Stats(); got.SpansReceived != 3 || got.SpansAccepted != 1 || got.SpansRejected != 2 {
			t.Fatalf("stats = %+v", got)
		}
		if s := st.Stats(); s.Spans != 1 || s.RejectedTraceFull != 2 {
			t.Fatalf("store = %+v", s)
		}
	}
}

// rcvRequest describes one hand-made request.
type rcvRequest struct {
	method, path, contentType, encoding string
	body                                []byte
	chunked                             bool // hide the length: Transfer-Encoding chunked
}

func rcvDo(t *testing.T, srv *httptest.Server, r rcvRequest) (*http.Response, []byte) {
	t.Helper()
	if r.method == "" {
		r.method = http.MethodPost
	}
	if r.path == "" {
		r.path = TracesPath
	}
	var body io.Reader = bytes.NewReader(r.body)
	if r.chunked {
		body = io.MultiReader(body)
	}
	req, err := http.NewRequest(r.method, srv.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if r.encoding != "" {
		req.Header.Set("Content-Encoding", r.encoding)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

// rcvExportResponse decodes a 200 answer in the encoding its Content-Type
// names.
func rcvExportResponse(t *testing.T, resp *http.Response, body []byte) ptraceotlp.ExportResponse {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, body %q", resp.StatusCode, body)
	}
	er := ptraceotlp.NewExportResponse()
	var err error
	switch ct := resp.Header.Get("Content-Type"); ct {
	case otlpdecode.ContentTypeProtobuf:
		err = er.UnmarshalProto(body)
	case otlpdecode.ContentTypeJSON:
		err = er.UnmarshalJSON(body)
	default:
		t.Fatalf("answer Content-Type %q", ct)
	}
	if err != nil {
		t.Fatalf("decode ExportTraceServiceResponse: %v", err)
	}
	return er
}

// rcvStatus decodes an error answer's google.rpc.Status.
func rcvStatus(t *testing.T, resp *http.Response, body []byte) *spb.Status {
	t.Helper()
	st := &spb.Status{}
	var err error
	switch ct := resp.Header.Get("Content-Type"); ct {
	case otlpdecode.ContentTypeProtobuf:
		err = proto.Unmarshal(body, st)
	case otlpdecode.ContentTypeJSON:
		err = protojson.Unmarshal(body, st)
	default:
		t.Fatalf("error answer Content-Type %q, body %q", ct, body)
	}
	if err != nil {
		t.Fatalf("decode google.rpc.Status %q: %v", body, err)
	}
	if st.Message == "" || st.Code == 0 {
		t.Fatalf("Status without code or message: %v", st)
	}
	return st
}

// rcvCounters is the receiver's stats without the gauges of bytes in
// flight, whose peak depends on how the body arrived.
func rcvCounters(rcv *Receiver) ReceiverStats {
	st := rcv.Stats()
	st.BytesInFlight, st.BytesInFlightPeak = 0, 0
	return st
}

// rcvSnapshot renders everything the store holds, to prove a rejected
// request changed nothing.
func rcvSnapshot(st *tracestore.Store) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%+v\n", st.Stats())
	for _, id := range st.TraceIDs() {
		for _, sp := range st.Spans(id) {
			fmt.Fprintf(&b, "%s %s %s %q %v\n", sp.TraceID, sp.SpanID, sp.ParentSpanID, sp.Name, sp.Attrs)
		}
	}
	return b.String()
}

// TestReceiverRejectsMalformed sends bad requests after a good one: each
// gets its status, a google.rpc.Status body, one count under its reason,
// and leaves the store exactly as it was.
func TestReceiverRejectsMalformed(t *testing.T) {
	valid := otlptest.Proto(t, otlptest.Traces(10, 5, 1))
	big := otlptest.Proto(t, otlptest.Traces(40, 5, 1))
	validJSON := otlptest.JSON(t, otlptest.Traces(10, 5, 1))
	corruptTrailer := otlptest.Gzip(t, valid)
	corruptTrailer[len(corruptTrailer)-6] ^= 0xff // CRC-32
	type counter func(RequestsRejected) uint64
	malformed := func(r RequestsRejected) uint64 { return r.Malformed }
	tooLarge := func(r RequestsRejected) uint64 { return r.TooLarge }
	media := func(r RequestsRejected) uint64 { return r.UnsupportedMediaType }
	method := func(r RequestsRejected) uint64 { return r.Method }
	notFound := func(r RequestsRejected) uint64 { return r.NotFound }
	small := ReceiverLimits{MaxBodyBytes: int64(len(valid)) + 100, MaxDecompressedBytes: int64(len(valid)) + 100}
	for _, tc := range []struct {
		name       string
		req        rcvRequest
		limits     ReceiverLimits
		wantStatus int
		wantCount  counter
		wantCT     string // Content-Type of the Status answer
	}{
		{"truncated protobuf", rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: valid[:len(valid)/2]}, ReceiverLimits{}, 400, malformed, otlpdecode.ContentTypeProtobuf},
		{"truncated protobuf by one byte", rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: valid[:len(valid)-1]}, ReceiverLimits{}, 400, malformed, otlpdecode.ContentTypeProtobuf},
		{"truncated protobuf, gzip", rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, encoding: "gzip", body: otlptest.Gzip(t, valid[:len(valid)/2])}, ReceiverLimits{}, 400, malformed, otlpdecode.ContentTypeProtobuf},
		{"bad JSON", rcvRequest{contentType: otlpdecode.ContentTypeJSON, body: []byte(`{"resourceSpans": [`)}, ReceiverLimits{}, 400, malformed, otlpdecode.ContentTypeJSON},
		{"truncated JSON", rcvRequest{contentType: otlpdecode.ContentTypeJSON, body: validJSON[:len(validJSON)/2]}, ReceiverLimits{}, 400, malformed, otlpdecode.ContentTypeJSON},
		{"JSON with a bad trace id", rcvRequest{contentType: otlpdecode.ContentTypeJSON,
			body: []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"0102030405060708"}]}]}]}`)}, ReceiverLimits{}, 400, malformed, otlpdecode.ContentTypeJSON},
		{"protobuf sent as JSON", rcvRequest{contentType: otlpdecode.ContentTypeJSON, body: valid}, ReceiverLimits{}, 400, malformed, otlpdecode.ContentTypeJSON},
		{"not gzip", rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, encoding: "gzip", body: valid}, ReceiverLimits{}, 400, malformed, otlpdecode.ContentTypeProtobuf},
		{"gzip with a bad checksum", rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, encoding: "gzip", body: corruptTrailer}, ReceiverLimits{}, 400, malformed, otlpdecode.ContentTypeProtobuf},
		{"wrong content type", rcvRequest{contentType: "text/plain", body: valid}, ReceiverLimits{}, 415, media, otlpdecode.ContentTypeJSON},
		{"no content type", rcvRequest{body: valid}, ReceiverLimits{}, 415, media, otlpdecode.ContentTypeJSON},
		{"unsupported encoding", rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, encoding: "br", body: valid}, ReceiverLimits{}, 415, media, otlpdecode.ContentTypeProtobuf},
		{"GET", rcvRequest{method: http.MethodGet}, ReceiverLimits{}, 405, method, otlpdecode.ContentTypeJSON},
		{"PUT", rcvRequest{method: http.MethodPut, contentType: otlpdecode.ContentTypeProtobuf, body: valid}, ReceiverLimits{}, 405, method, otlpdecode.ContentTypeProtobuf},
		{"other path", rcvRequest{path: "/v1/metrics", contentType: otlpdecode.ContentTypeProtobuf, body: valid}, ReceiverLimits{}, 404, notFound, otlpdecode.ContentTypeProtobuf},
		{"oversize body, declared", rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: big}, small, 413, tooLarge, otlpdecode.ContentTypeProtobuf},
		{"oversize body, chunked", rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: big, chunked: true}, small, 413, tooLarge, otlpdecode.ContentTypeProtobuf},
		{"oversize after decompression", rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, encoding: "gzip", body: otlptest.Gzip(t, big)},
			ReceiverLimits{MaxDecompressedBytes: int64(len(valid)) + 100}, 413, tooLarge, otlpdecode.ContentTypeProtobuf},
		{"oversize JSON, under the wire limit", rcvRequest{contentType: otlpdecode.ContentTypeJSON, body: otlptest.JSON(t, otlptest.Traces(40, 5, 1))},
			ReceiverLimits{MaxDecompressedBytes: int64(len(validJSON)) + 100}, 413, tooLarge, otlpdecode.ContentTypeJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, rcv, srv := rcvServer(t, tracestore.Limits{}, tc.limits)
			resp, body := rcvDo(t, srv, rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: valid})
			rcvExportResponse(t, resp, body)
			before, statsBefore := rcvSnapshot(st), rcv.Stats()
			if statsBefore.SpansAccepted != 10 {
				t.Fatalf("seed request: %+v", statsBefore)
			}

			resp, body = rcvDo(t, srv, tc.req)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d; body %q", resp.StatusCode, tc.wantStatus, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != tc.wantCT {
				t.Errorf("Content-Type %q, want %q", ct, tc.wantCT)
			}
			status := rcvStatus(t, resp, body)
			if strings.Contains(status.Message, "bigger context") || strings.Contains(status.Message, "error found in") {
				t.Errorf("the answer quotes the body: %q", status.Message)
			}
			if tc.wantStatus == 405 && resp.Header.Get("Allow") != http.MethodPost {
				t.Errorf("405 without Allow: POST (got %q)", resp.Header.Get("Allow"))
			}
			if tc.req.encoding == "br" && !strings.Contains(resp.Header.Get("Accept-Encoding"), "gzip") {
				t.Errorf("415 for an encoding should list Accept-Encoding, got %q", resp.Header.Get("Accept-Encoding"))
			}
			after := rcv.Stats()
			if d := tc.wantCount(after.RequestsRejected) - tc.wantCount(statsBefore.RequestsRejected); d != 1 ||
				after.RequestsRejected.Total() != statsBefore.RequestsRejected.Total()+1 {
				t.Errorf("rejections %+v -> %+v: want exactly one more under this reason", statsBefore.RequestsRejected, after.RequestsRejected)
			}
			if after.Requests != statsBefore.Requests+1 || after.SpansReceived != statsBefore.SpansReceived ||
				after.SpansAccepted != statsBefore.SpansAccepted || after.SpansRejected != statsBefore.SpansRejected {
				t.Errorf("span counters moved: %+v -> %+v", statsBefore, after)
			}
			if got := rcvSnapshot(st); got != before {
				t.Errorf("store changed:\n%s\n->\n%s", before, got)
			}
		})
	}
}

// TestReceiverPartialSuccess: spans the store turns away (invalid ids,
// spans per trace, traces held) are reported in partial_success, in the
// request's encoding, while the rest are stored.
func TestReceiverPartialSuccess(t *testing.T) {
	withBadIDs := otlptest.Traces(4, 4, 1)
	spans := withBadIDs.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	spans.At(1).SetTraceID(pcommon.TraceID{})
	spans.At(2).SetSpanID(pcommon.SpanID{})
	for _, tc := range []struct {
		name         string
		limits       tracestore.Limits
		td           ptrace.Traces
		wantAccepted int
		wantRejected int
		wantMsg      string
	}{
		{"invalid ids", tracestore.Limits{}, withBadIDs, 2, 2, "invalid trace or span id"},
		{"spans per trace", tracestore.Limits{MaxSpansPerTrace: 3}, otlptest.Traces(10, 5, 1), 6, 4, "span limit per trace reached (3 spans)"},
		{"traces held", tracestore.Limits{MaxTraces: 1}, otlptest.Traces(10, 5, 2), 5, 5, "trace limit reached (1 traces held)"},
	} {
		for _, format := range []string{otlpdecode.ContentTypeProtobuf, otlpdecode.ContentTypeJSON + "; charset=utf-8"} {
			t.Run(tc.name+" "+format, func(t *testing.T) {
				st, rcv, srv := rcvServer(t, tc.limits, ReceiverLimits{})
				body := otlptest.Proto(t, tc.td)
				if format != otlpdecode.ContentTypeProtobuf {
					body = otlptest.JSON(t, tc.td)
				}
				resp, out := rcvDo(t, srv, rcvRequest{contentType: format, body: body})
				er := rcvExportResponse(t, resp, out)
				ps := er.PartialSuccess()
				if ps.RejectedSpans() != int64(tc.wantRejected) || !strings.Contains(ps.ErrorMessage(), tc.wantMsg) {
					t.Fatalf("partial_success = %d %q, want %d %q", ps.RejectedSpans(), ps.ErrorMessage(), tc.wantRejected, tc.wantMsg)
				}
				want := ReceiverStats{Requests: 1, SpansReceived: uint64(tc.wantAccepted + tc.wantRejected),
					SpansAccepted: uint64(tc.wantAccepted), SpansRejected: uint64(tc.wantRejected)}
				if got := rcvCounters(rcv); got != want {
					t.Fatalf("stats = %+v, want %+v", got, want)
				}
				if got := st.Stats().Spans; got != tc.wantAccepted {
					t.Fatalf("store holds %d spans, want %d", got, tc.wantAccepted)
				}
			})
		}
	}
}

// TestReceiverNoPartialSuccessWhenAllStored: a full success leaves
// partial_success empty, and a resend counts as duplicates, not rejections.
func TestReceiverNoPartialSuccessWhenAllStored(t *testing.T) {
	st, rcv, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{})
	body := otlptest.Proto(t, otlptest.Traces(10, 5, 2))
	for range 2 {
		resp, out := rcvDo(t, srv, rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: body})
		if ps := rcvExportResponse(t, resp, out).PartialSuccess(); ps.RejectedSpans() != 0 || ps.ErrorMessage() != "" {
			t.Fatalf("partial_success = %d %q", ps.RejectedSpans(), ps.ErrorMessage())
		}
	}
	want := ReceiverStats{Requests: 2, SpansReceived: 20, SpansAccepted: 10, SpansDuplicate: 10}
	if got := rcvCounters(rcv); got != want {
		t.Fatalf("stats = %+v, want %+v", got, want)
	}
	if st.Stats().Spans != 10 {
		t.Fatalf("store = %+v", st.Stats())
	}
}

// TestReceiverEmptyRequest: a request with no spans succeeds, as the
// specification asks, whether its body is empty or an empty message.
func TestReceiverEmptyRequest(t *testing.T) {
	_, rcv, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{})
	for _, r := range []rcvRequest{
		{contentType: otlpdecode.ContentTypeProtobuf},
		{contentType: otlpdecode.ContentTypeJSON},
		{contentType: otlpdecode.ContentTypeJSON, body: []byte("{}")},
		{contentType: otlpdecode.ContentTypeJSON, body: []byte(`{"resourceSpans":[]}`)},
		{contentType: otlpdecode.ContentTypeProtobuf, encoding: "gzip", body: otlptest.Gzip(t, nil)},
	} {
		resp, out := rcvDo(t, srv, r)
		if ps := rcvExportResponse(t, resp, out).PartialSuccess(); ps.RejectedSpans() != 0 {
			t.Fatalf("%s %q: partial success %d", r.contentType, r.body, ps.RejectedSpans())
		}
	}
	if got := rcv.Stats(); got.Requests != 5 || got.RequestsRejected.Total() != 0 || got.SpansReceived != 0 {
		t.Fatalf("stats = %+v", got)
	}
}

// TestReceiverJSONCharset: a JSON body with a charset parameter is
// accepted, answered in JSON, and its attributes keep their types.
func TestReceiverJSONCharset(t *testing.T) {
	st, _, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{})
	td := otlptest.Traces(1, 1, 1)
	sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	sp.Attributes().PutDouble("coordbench.cost", 0.5)
	sp.Attributes().PutBool("coordbench.streaming", true)
	resp, out := rcvDo(t, srv, rcvRequest{contentType: "application/json; charset=utf-8", body: otlptest.JSON(t, td)})
	rcvExportResponse(t, resp, out)
	if ct := resp.Header.Get("Content-Type"); ct != otlpdecode.ContentTypeJSON {
		t.Fatalf("answer Content-Type %q", ct)
	}
	got := st.Spans(trace.TraceID(sp.TraceID()))
	if len(got) != 1 {
		t.Fatalf("stored %d spans", len(got))
	}
	if v, ok := got[0].IntAttr(otelmap.AttrServerPort); !ok || v != 9010 {
		t.Errorf("server.port = %v %v", v, ok)
	}
	if v, ok := got[0].Attr("coordbench.cost"); !ok || v.AsFloat64() != 0.5 {
		t.Errorf("cost = %v", v)
	}
	if v, ok := got[0].Attr("coordbench.streaming"); !ok || !v.AsBool() {
		t.Errorf("streaming = %v", v)
	}
}
