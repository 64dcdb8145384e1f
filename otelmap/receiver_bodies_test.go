package otelmap

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// TestReceiverReusedBodiesLeaveHeldSpansAlone: the receiver reads each
// protobuf body into a buffer an earlier request's body was read into; the
// spans held from that earlier request must not change when its buffer is
// overwritten, i.e. nothing decoded may point into a body. The buffers are
// overwritten with 0xff bytes (malformed bodies of the same size, read in
// full, then refused) and with other valid exports. (sync.Pool may drop a
// buffer, so a run may miss a reuse; it hands it on nearly always.)
func TestReceiverReusedBodiesLeaveHeldSpansAlone(t *testing.T) {
	st, _, srv := rcvServer(t, Limits{}, ReceiverLimits{})
	post := func(body []byte, want int) {
		t.Helper()
		resp, out := rcvDo(t, srv, rcvRequest{contentType: ContentTypeProtobuf, body: body})
		if resp.StatusCode != want {
			t.Fatalf("status %d, want %d: %s", resp.StatusCode, want, out)
		}
	}
	first := rcvProto(t, otlpTestTracesFrom(0, 500, 50, 2))
	post(first, http.StatusOK)
	ids := st.TraceIDs()
	heldText := func() string {
		var held []Span
		for _, id := range ids {
			held = append(held, st.Spans(id)...)
		}
		return spansText(held)
	}
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
		post(rcvProto(t, otlpTestTracesFrom(i*100_000, 500, 50, 2)), http.StatusOK)
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
