package otlpreceiver

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// TestReceiverReusedBodiesLeaveHeldSpansAlone: the receiver reads each
// protobuf body into a buffer an earlier request's body was read into; the
// spans held from that earlier request must not change when its buffer is
// overwritten, i.e. nothing decoded may point into a body. The buffers are
// overwritten with 0xff bytes (malformed bodies of the same size, read in
// full, then refused) and with other valid exports. (sync.Pool may drop a
// buffer, so a run may miss a reuse; it hands it on nearly always.)
func TestReceiverReusedBodiesLeaveHeldSpansAlone(t *testing.T) {
	st, _, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{})
	post := func(body []byte, want int) {
		t.Helper()
		resp, out := rcvDo(t, srv, rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: body})
		if resp.StatusCode != want {
			t.Fatalf("status %d, want %d: %s", resp.StatusCode, want, out)
		}
	}
	first := otlptest.Proto(t, otlptest.TracesFrom(0, 500, 50, 2))
	post(first, http.StatusOK)
	ids := st.TraceIDs()
	heldText := func() string { return heldSpansText(st, ids) }
	before := heldText()
	if len(ids) != 10 || !strings.Contains(before, "invoke_agent reviewer") {
		t.Fatalf("first export: %d traces held:\n%.300s", len(ids), before)
	}
	// Checked after each request: a later valid body of the same shape
	// would write the same names back at the same offsets.
	for i := 1; i <= 3; i++ {
		post(bytes.Repeat([]byte{0xff}, len(first)), http.StatusBadRequest)
		if after := heldText(); after != before {
			t.Fatalf("the first export's spans changed once a later body was read:\nbefore %.300s\nafter  %.300s", before, after)
		}
		post(otlptest.Proto(t, otlptest.TracesFrom(i*100_000, 500, 50, 2)), http.StatusOK)
	}
}

// TestBodyPoolCapacity: a buffer from the pool is empty and has exactly
// the capacity asked for, pooled or new, so the in-flight budget counts
// what the request holds.
func TestBodyPoolCapacity(t *testing.T) {
	var bp bodyPool
	for _, size := range []int64{bodyRound, 3 * bodyRound, bodyRound, 2 * bodyRound} {
		b := bp.get(size)
		if len(b) != 0 || int64(cap(b)) != size {
			t.Fatalf("get(%d): len %d cap %d", size, len(b), cap(b))
		}
		b = append(b, 1, 2, 3)
		bp.put(b)
	}
	bp.put(make([]byte, 0, maxPooledBody+1)) // not kept: too large
	if b := bp.get(bodyRound); len(b) != 0 || cap(b) != bodyRound {
		t.Fatalf("get after put: len %d cap %d", len(b), cap(b))
	}
	var none *bodyPool // a nil pool allocates
	if b := none.get(10); cap(b) != 10 {
		t.Fatalf("nil pool: cap %d", cap(b))
	}
	none.put(make([]byte, 5))
}

// TestReceiverReusedDecodersLeaveHeldSpansAlone: the receiver decodes each
// protobuf request with a decoder whose arenas (strings, attributes, the
// span array) an earlier request was decoded into; the spans held from
// that earlier request must not change when a later request of the same
// shape, with other strings in the same places, is decoded over them.
// (sync.Pool may drop a decoder, so a run may miss a reuse; it hands it
// on nearly always.)
func TestReceiverReusedDecodersLeaveHeldSpansAlone(t *testing.T) {
	st, _, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{})
	export := reuseTestExport
	post := func(body []byte) {
		t.Helper()
		if resp, out := rcvDo(t, srv, rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: body}); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, out)
		}
	}
	post(export(t, "a", 1))
	checkHeldAcrossDecodes(t, st, export, post)
}

// TestReusedDecoderAndStore is TestReceiverReusedDecodersLeaveHeldSpansAlone
// without HTTP and the pool: one decoder, so every decode reuses the last
// one's memory, and each body is overwritten once stored.
func TestReusedDecoderAndStore(t *testing.T) {
	st := tracestore.NewStore(tracestore.Limits{})
	dec := otlpdecode.NewDecoder()
	add := func(body []byte) {
		t.Helper()
		spans, _, err := dec.Decode(body, otlpdecode.FormatProtobuf)
		if err != nil {
			t.Fatal(err)
		}
		if res := st.AddFrom("test", spans); res.Accepted != len(spans) {
			t.Fatalf("store: %+v", res)
		}
		// The decoded strings point into the body, which the receiver
		// reuses once the store has the spans.
		for i := range body {
			body[i] = 0xff
		}
	}
	add(reuseTestExport(t, "a", 1))
	checkHeldAcrossDecodes(t, st, reuseTestExport, add)
}

// reuseTestExport is an export of 300 spans in 3 traces whose strings are
// made of letter, long ones and short ones, on spans, attributes, events
// and the resource.
func reuseTestExport(t testing.TB, letter string, traceByte byte) []byte {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc-"+letter)
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	for i := range 300 {
		sp := spans.AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{traceByte, byte(i / 100)})
		sp.SetSpanID(pcommon.SpanID{traceByte, byte(i), 1})
		sp.SetName(strings.Repeat(letter, 12))
		sp.Attributes().PutStr(strings.Repeat(letter, 8), strings.Repeat(letter, 20))
		sp.Attributes().PutStr("long", strings.Repeat(letter, 200))
		sp.Events().AppendEmpty().SetName("event-" + letter)
	}
	return otlptest.Proto(t, td)
}

// checkHeldAcrossDecodes checks that the spans st holds from export "a"
// stay as they were while exports "b" to "i" are stored by add.
func checkHeldAcrossDecodes(t *testing.T, st *tracestore.Store, export func(testing.TB, string, byte) []byte, add func([]byte)) {
	t.Helper()
	ids := st.TraceIDs()
	heldText := func() string { return heldSpansText(st, ids) }
	before := heldText()
	if len(ids) != 3 || !strings.Contains(before, `"aaaaaaaaaaaa"`) || !strings.Contains(before, `"svc-a"`) || !strings.Contains(before, `"event-a"`) {
		t.Fatalf("first export: %d traces held:\n%.300s", len(ids), before)
	}
	for i, letter := range strings.Split("bcdefghi", "") {
		add(export(t, letter, byte(2+i)))
		if after := heldText(); after != before {
			t.Fatalf("the first export's spans changed once export %q was decoded:\nbefore %.400s\nafter  %.400s", letter, before, after)
		}
	}
}

// heldSpansText is otlptest.SpansText of the spans st holds for ids, in that order.
func heldSpansText(st *tracestore.Store, ids []trace.TraceID) string {
	var held []otelmap.Span
	for _, id := range ids {
		held = append(held, st.Spans(id)...)
	}
	return otlptest.SpansText(held)
}
