package otlpreceiver

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// captureHandler is a slog.Handler that keeps every record's message and
// its "suppressed" attribute.
type captureHandler struct {
	mu         sync.Mutex
	byMessage  map[string]int
	suppressed uint64 // the sum of the summaries' counts
}

func newCaptureHandler() *captureHandler { return &captureHandler{byMessage: map[string]int{}} }

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *captureHandler) WithGroup(string) slog.Handler            { return h }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byMessage[r.Message]++
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "suppressed" {
			h.suppressed += a.Value.Uint64()
		}
		return true
	})
	return nil
}

func (h *captureHandler) lines() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.byMessage {
		n += c
	}
	return n
}

// TestLogLimiterWindows checks the limiter on a clock of its own: burst
// messages per key per interval, the count held back handed to the first
// message of the next interval, keys independent.
func TestLogLimiterWindows(t *testing.T) {
	l := newLogLimiter(3, time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	allowed := 0
	for range 10 {
		if ok, held := l.allow("a", t0); ok {
			allowed++
			if held != 0 {
				t.Errorf("held back %d in the first window", held)
			}
		}
	}
	if allowed != 3 || l.total() != 7 {
		t.Fatalf("allowed %d, suppressed %d; want 3 and 7", allowed, l.total())
	}
	if ok, _ := l.allow("b", t0.Add(time.Second)); !ok {
		t.Error("another key shares the first key's share")
	}
	if ok, _ := l.allow("a", t0.Add(59*time.Second)); ok {
		t.Error("allowed within the spent window")
	}
	ok, held := l.allow("a", t0.Add(time.Minute))
	if !ok || held != 8 {
		t.Errorf("next window: ok %v, held back %d; want true and 8", ok, held)
	}
	if ok, held := l.allow("a", t0.Add(time.Minute+time.Second)); !ok || held != 0 {
		t.Errorf("second message of the window: ok %v, held back %d", ok, held)
	}
	if l.total() != 8 {
		t.Errorf("total suppressed %d, want 8", l.total())
	}
}

// TestReceiverRejectionLogsBounded: 10,000 bad exports over loopback HTTP,
// of two kinds, produce a bounded number of log lines, and the counters
// account for every one: each rejection is either logged or counted as
// suppressed.
func TestReceiverRejectionLogsBounded(t *testing.T) {
	const (
		total   = 10_000
		workers = 4
		burst   = 10
	)
	_, rcv, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{LogBurst: burst})
	h := newCaptureHandler()
	rcv.SetLogger(slog.New(h))
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < total; i += workers {
				var resp *http.Response
				var err error
				if i%2 == 0 { // malformed protobuf: 400
					resp, err = srv.Client().Post(srv.URL+TracesPath, otlpdecode.ContentTypeProtobuf, strings.NewReader("\xff\xff\xff"))
				} else { // a media type OTLP does not speak: 415
					resp, err = srv.Client().Post(srv.URL+TracesPath, "text/plain", strings.NewReader("hello"))
				}
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	st := rcv.Stats()
	if st.Requests != total || st.RequestsRejected.Malformed != total/2 || st.RequestsRejected.UnsupportedMediaType != total/2 || st.RequestsRejected.Total() != total {
		t.Errorf("counters %+v, want %d requests, %d malformed, %d unsupported", st, total, total/2, total/2)
	}
	rejectedLines := h.byMessage["otlp receiver: request rejected"]
	summaries := h.byMessage["otlp receiver: suppressed similar messages"]
	// Two reasons; each interval lets burst lines of each through, and
	// one summary of each after the first.
	windows := int(elapsed/DefaultLogInterval) + 1
	if maxLines := 2 * windows * burst; rejectedLines > maxLines || rejectedLines < 2*burst {
		t.Errorf("%d rejection lines in %v, want %d..%d", rejectedLines, elapsed, 2*burst, maxLines)
	}
	if summaries > 2*windows {
		t.Errorf("%d summary lines, want at most %d", summaries, 2*windows)
	}
	if uint64(rejectedLines)+st.LogsSuppressed != total {
		t.Errorf("%d lines logged + %d suppressed = %d, want %d", rejectedLines, st.LogsSuppressed, uint64(rejectedLines)+st.LogsSuppressed, total)
	}
	if h.suppressed > st.LogsSuppressed {
		t.Errorf("the summaries report %d suppressed, more than the %d counted", h.suppressed, st.LogsSuppressed)
	}
	t.Logf("%d bad exports in %v: %d log lines (%d summaries), %d suppressed", total, elapsed.Round(time.Millisecond), h.lines(), summaries, st.LogsSuppressed)
}
