package otlpreceiver

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/trace"

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

// spansOnly hides a consumer's ConsumePackedSpans: the receiver then
// hands it spans with their attributes, as to any Consumer.
type spansOnly struct{ Consumer }

// TestReceiverPackedRoad: over loopback HTTP, a store reached through its
// packed road (PackedConsumer: the receiver decodes with DecodePacked)
// holds what a store reached as a plain Consumer holds, span for span,
// for protobuf bodies of many shapes (hand-built ones with unknown fields
// and groups, generated batches, an ingest token that refuses some
// spans); JSON bodies take the plain road either way.
func TestReceiverPackedRoad(t *testing.T) {
	packedStore := tracestore.NewStore(tracestore.Limits{})
	plainStore := tracestore.NewStore(tracestore.Limits{})
	for _, st := range []*tracestore.Store{packedStore, plainStore} {
		if err := st.Reserve(trace.TraceID(otlptest.Traces(3, 3, 1).ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID()), "tok"); err != nil {
			t.Fatal(err)
		}
	}
	var packedRcv Consumer = packedStore
	if _, ok := packedRcv.(PackedConsumer); !ok {
		t.Fatal("the store is not a PackedConsumer")
	}
	servers := []*httptest.Server{
		httptest.NewServer(NewReceiver(packedStore, ReceiverLimits{})),
		httptest.NewServer(NewReceiver(spansOnly{plainStore}, ReceiverLimits{})),
	}
	for _, srv := range servers {
		t.Cleanup(srv.Close)
	}
	var bodies [][]byte
	bodies = append(bodies, otlptest.HandBuiltBodies(false)...)
	bodies = append(bodies, otlptest.HandBuiltBodies(true)...)
	for _, n := range []int{1, 50, 300} {
		bodies = append(bodies, otlptest.Proto(t, otlptest.Traces(n, 7, 2)))
	}
	for i, body := range bodies {
		for _, token := range []string{"", "tok"} {
			var codes [2]int
			var answers [2]string
			for k, srv := range servers {
				req, err := http.NewRequest(http.MethodPost, srv.URL+TracesPath, bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", otlpdecode.ContentTypeProtobuf)
				if token != "" {
					req.Header.Set(otelmap.IngestTokenHeader, token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				codes[k], answers[k] = resp.StatusCode, string(b)
			}
			if codes[0] != codes[1] || answers[0] != answers[1] {
				t.Fatalf("body %d, token %q: packed road answered %d %q, plain road %d %q", i, token, codes[0], answers[0], codes[1], answers[1])
			}
		}
	}
	ids := packedStore.TraceIDs()
	if len(ids) == 0 || !slices.Equal(ids, plainStore.TraceIDs()) {
		t.Fatalf("packed road holds traces %v, plain road %v", ids, plainStore.TraceIDs())
	}
	for _, id := range ids {
		if w, g := otlptest.SpansTextOf(plainStore.Spans(id), false), otlptest.SpansTextOf(packedStore.Spans(id), false); w != g {
			t.Fatalf("trace %s: packed road holds\n%s\nplain road\n%s", id, g, w)
		}
	}
	if a, b := packedStore.Stats(), plainStore.Stats(); a != b {
		t.Fatalf("packed road's store %+v, plain road's %+v", a, b)
	} else if a.Admission.RefusedToken == 0 {
		t.Fatalf("the ingest token refused no span: %+v", a)
	}
}
