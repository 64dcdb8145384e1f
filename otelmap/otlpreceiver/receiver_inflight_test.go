package otlpreceiver

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// inflightLimit is the per-request limit of these tests; the budget is
// then the smallest allowed, 2*(inflightLimit+1), which two holders of a
// body just under the limit fill.
const inflightLimit = 64 << 10

// inflightBatch is a valid protobuf export of n spans numbered from
// first, so that batches do not collide.
func inflightBatch(t *testing.T, first, n int) []byte {
	t.Helper()
	return otlptest.Proto(t, otlptest.TracesFrom(first, n, 10, 1))
}

// inflightBatchUnder is the largest batch from first that stays under
// size bytes, and its span count.
func inflightBatchUnder(t *testing.T, first, size int) ([]byte, int) {
	t.Helper()
	n := 1
	body := inflightBatch(t, first, n)
	for {
		next := inflightBatch(t, first, n+1)
		if len(next) >= size {
			return body, n
		}
		body, n = next, n+1
	}
}

// holder is an export whose body is held back: the receiver has taken
// its buffer from the budget and waits for the bytes.
type holder struct {
	pw    *io.PipeWriter
	body  []byte
	spans int
	done  chan int // the answer's status
}

func startHolder(t *testing.T, srv *httptest.Server, body []byte, spans int) *holder {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, srv.URL+TracesPath, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", otlpdecode.ContentTypeProtobuf)
	h := &holder{pw: pw, body: body, spans: spans, done: make(chan int, 1)}
	go func() {
		resp, err := srv.Client().Do(req)
		if err != nil {
			h.done <- -1
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		h.done <- resp.StatusCode
	}()
	t.Cleanup(func() { _ = pw.CloseWithError(io.ErrUnexpectedEOF) })
	return h
}

// finish sends the held body and returns the answer's status.
func (h *holder) finish(t *testing.T) int {
	t.Helper()
	go func() {
		_, _ = h.pw.Write(h.body)
		_ = h.pw.Close()
	}()
	select {
	case code := <-h.done:
		return code
	case <-time.After(2 * time.Minute):
		t.Fatal("no answer to the held export")
		return 0
	}
}

// waitFor polls cond until it holds (generous: the machine may be slow).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fillBudget starts two holders that together take the whole budget and
// waits until the receiver holds their buffers.
func fillBudget(t *testing.T, srv *httptest.Server, rcv *Receiver, first int) []*holder {
	t.Helper()
	var hs []*holder
	var want int64
	for i := range 2 {
		body, n := inflightBatchUnder(t, first+i*1000, inflightLimit)
		hs = append(hs, startHolder(t, srv, body, n))
		lim := rcv.Limits()
		want += bodyStartSize(min(lim.MaxBodyBytes, lim.MaxDecompressedBytes), int64(len(body))) // what readLimited preallocates
	}
	waitFor(t, "the holders' buffers", func() bool { return rcv.Stats().BytesInFlight == want })
	if free := rcv.Limits().MaxInflightBytes - want; free > 8<<10 {
		t.Fatalf("the holders leave %d bytes free; the test wants the budget full", free)
	}
	return hs
}

func storedSpans(st *tracestore.Store) int {
	n := 0
	for _, id := range st.TraceIDs() {
		n += len(st.Spans(id))
	}
	return n
}

// TestReceiverBoundsBytesInFlight: while the bytes in flight are at their
// limit, exports are answered 503 with Retry-After and counted; none is
// lost silently: every export answered 200 is stored, and only those.
func TestReceiverBoundsBytesInFlight(t *testing.T) {
	st, rcv, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{MaxBodyBytes: inflightLimit, MaxDecompressedBytes: inflightLimit, ReclaimAfterBytes: -1})
	rcv.SetLogger(slog.New(slog.DiscardHandler))
	if got, want := rcv.Limits().MaxInflightBytes, int64(2*(inflightLimit+1)); got != want {
		t.Fatalf("MaxInflightBytes = %d, want the floor %d", got, want)
	}
	holders := fillBudget(t, srv, rcv, 0)

	// With the budget full, every export is turned away, and says when to
	// come back.
	body := inflightBatch(t, 10_000, 60)
	for range 5 {
		resp, out := rcvDo(t, srv, rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: body})
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("status %d with the budget full, want 503: %s", resp.StatusCode, out)
		}
		if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("Retry-After %q, want a number of seconds", resp.Header.Get("Retry-After"))
		}
		if s := rcvStatus(t, resp, out); s.Message == "" {
			t.Errorf("no message in %v", s)
		}
	}
	if got := rcv.Stats().RequestsRejected.Overloaded; got != 5 {
		t.Errorf("overloaded = %d, want 5", got)
	}
	if storedSpans(st) != 0 {
		t.Fatalf("spans stored while every export was turned away")
	}
	// The holders complete and are stored.
	wantSpans := 0
	for _, h := range holders {
		if code := h.finish(t); code != http.StatusOK {
			t.Fatalf("held export answered %d", code)
		}
		wantSpans += h.spans
	}
	if got := storedSpans(st); got != wantSpans {
		t.Fatalf("stored %d spans, want the holders' %d", got, wantSpans)
	}

	// A free-for-all: each export is stored or told to retry, never lost.
	const n = 20
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, k := inflightBatchUnder(t, 20_000+i*1000, inflightLimit)
			req, err := http.NewRequest(http.MethodPost, srv.URL+TracesPath, bytes.NewReader(b))
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("Content-Type", otlpdecode.ContentTypeProtobuf)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			mu.Lock()
			codes[resp.StatusCode]++
			if resp.StatusCode == http.StatusOK {
				wantSpans += k
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[http.StatusOK]+codes[http.StatusServiceUnavailable] != n {
		t.Errorf("answers %v, want only 200 and 503", codes)
	}
	stats := rcv.Stats()
	if got := storedSpans(st); got != wantSpans {
		t.Errorf("stored %d spans, want %d (those of the %d exports answered 200)", got, wantSpans, codes[http.StatusOK])
	}
	if stats.RequestsRejected.Overloaded != 5+uint64(codes[http.StatusServiceUnavailable]) {
		t.Errorf("overloaded = %d, want %d", stats.RequestsRejected.Overloaded, 5+codes[http.StatusServiceUnavailable])
	}
	if stats.BytesInFlight != 0 || stats.BytesInFlightPeak > rcv.Limits().MaxInflightBytes {
		t.Errorf("bytes in flight %d (peak %d, limit %d)", stats.BytesInFlight, stats.BytesInFlightPeak, rcv.Limits().MaxInflightBytes)
	}
	t.Logf("free-for-all of %d exports of ~%d KB: %v; peak %d bytes in flight", n, inflightLimit>>10, codes, stats.BytesInFlightPeak)
}

// TestReceiverOverloadedSDKRetries: the OTel Go SDK's exporter retries an
// export answered 503 with Retry-After (otlptracehttp's client.go treats
// 429, 502, 503 and 504 as retryable and waits the Retry-After), so its
// spans arrive once the budget frees up.
func TestReceiverOverloadedSDKRetries(t *testing.T) {
	st, rcv, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{MaxBodyBytes: inflightLimit, MaxDecompressedBytes: inflightLimit, ReclaimAfterBytes: -1})
	rcv.SetLogger(slog.New(slog.DiscardHandler))
	holders := fillBudget(t, srv, rcv, 0)

	exp := otlptest.Exporter(t, srv, otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
		Enabled: true, InitialInterval: 50 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: 5 * time.Minute,
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ended := make(chan struct{})
	var traceID string
	go func() {
		defer close(ended)
		// Large enough that it cannot fit beside the holders.
		_, sp := tp.Tracer("inflight-test").Start(context.Background(), "invoke_agent big",
			trace.WithAttributes(attribute.String("coordbench.padding", strings.Repeat("x", 16<<10))))
		traceID = sp.SpanContext().TraceID().String()
		sp.End() // the syncer exports here, retrying
	}()
	waitFor(t, "the SDK's export to be turned away", func() bool { return rcv.Stats().RequestsRejected.Overloaded >= 1 })
	for _, h := range holders {
		if code := h.finish(t); code != http.StatusOK {
			t.Fatalf("held export answered %d", code)
		}
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Minute):
		t.Fatal("the SDK's export never returned")
	}
	found := false
	for _, id := range st.TraceIDs() {
		if id.String() == traceID {
			found = true
		}
	}
	if !found {
		t.Fatalf("the retried span is not stored (stats %+v)", rcv.Stats())
	}
	t.Logf("turned away %d times before it was stored", rcv.Stats().RequestsRejected.Overloaded)
}

// TestReceiverReclaimsAfterBurst: once idle after a burst of at least
// ReclaimAfterBytes, the receiver returns memory to the OS, and counts it.
func TestReceiverReclaimsAfterBurst(t *testing.T) {
	_, rcv, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{MaxBodyBytes: inflightLimit, MaxDecompressedBytes: inflightLimit, ReclaimAfterBytes: 16 << 10})
	rcv.SetLogger(slog.New(slog.DiscardHandler))
	body, _ := inflightBatchUnder(t, 0, 32<<10)
	resp, out := rcvDo(t, srv, rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: body})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	// The reclaim runs after the answer was flushed, before the handler
	// returns.
	waitFor(t, "the reclaim", func() bool { return rcv.Stats().MemoryReclaims == 1 })
	// A small export right after does not reclaim again.
	small := inflightBatch(t, 5000, 1)
	if resp, out := rcvDo(t, srv, rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: small}); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	if got := rcv.Stats().MemoryReclaims; got != 1 {
		t.Errorf("reclaims = %d after a small export, want 1", got)
	}
}
