package otlpreceiver

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// TestReceiverDecodesProtobufFromTheWire: over loopback HTTP, the receiver
// stores what SpansFromProto decodes, unknown groups included (pdata would
// reject the body), and rejects a malformed body whole.
func TestReceiverDecodesProtobufFromTheWire(t *testing.T) {
	st, rcv, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{})
	body := otlptest.HandBuiltBodies(true)[0]
	want, _, err := otlpdecode.SpansFromProto(body, otelmap.SourceOTLP)
	if err != nil {
		t.Fatal(err)
	}
	post := func(b []byte) int {
		t.Helper()
		resp, err := http.Post(srv.URL+TracesPath, otlpdecode.ContentTypeProtobuf, bytes.NewReader(b))
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
