package tracestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

func storeTestSpan(traceByte, spanByte, parentByte byte, source string) otelmap.Span {
	s := otelmap.Span{
		TraceID: trace.TraceID{traceByte},
		SpanID:  trace.SpanID{spanByte},
		Name:    "s",
		Source:  source,
		Start:   time.Unix(100, 0),
		End:     time.Unix(101, 0),
	}
	if parentByte != 0 {
		s.ParentSpanID = trace.SpanID{parentByte}
	}
	return s
}

func TestStoreLimitsAndCounters(t *testing.T) {
	st := NewStore(Limits{MaxSpansPerTrace: 2, MaxTraces: 2})
	res := st.Add([]otelmap.Span{
		storeTestSpan(1, 1, 0, otelmap.SourceOTLP),
		storeTestSpan(1, 2, 1, otelmap.SourceOTLP),
		storeTestSpan(1, 3, 1, otelmap.SourceOTLP), // trace 1 full
		storeTestSpan(2, 1, 0, otelmap.SourceOTLP),
		storeTestSpan(3, 1, 0, otelmap.SourceOTLP), // third trace: over MaxTraces
		{TraceID: trace.TraceID{4}},                // invalid span id
		storeTestSpan(1, 1, 0, otelmap.SourceOTLP), // duplicate
	})
	if res.Accepted != 3 || res.Rejected != 3 || res.Duplicates != 1 {
		t.Fatalf("AddResult = %+v, want 3 accepted, 3 rejected, 1 duplicate", res)
	}
	if res.Reason == "" {
		t.Error("a rejection must say why")
	}
	stats := st.Stats()
	want := Stats{Traces: 2, Spans: 3, SpansAccepted: 3, SpansDuplicate: 1, RejectedTraceFull: 1, RejectedMaxTraces: 1, RejectedInvalid: 1,
		Admission: AdmissionStats{Unsolicited: 2, Sources: 1}}
	if stats != want {
		t.Fatalf("Stats = %+v, want %+v", stats, want)
	}
	if got := st.TraceIDs(); len(got) != 2 || got[0] != (trace.TraceID{1}) || got[1] != (trace.TraceID{2}) {
		t.Fatalf("TraceIDs = %v, want sorted [1 2]", got)
	}
}

func TestStoreEvictsExpiredTracesToMakeRoom(t *testing.T) {
	st := NewStore(Limits{MaxTraces: 1, MaxAge: time.Minute})
	now := time.Unix(1000, 0)
	st.now = func() time.Time { return now }
	st.Add([]otelmap.Span{storeTestSpan(1, 1, 0, otelmap.SourceOTLP)})
	if r := st.Add([]otelmap.Span{storeTestSpan(2, 1, 0, otelmap.SourceOTLP)}); r.Rejected != 1 {
		t.Fatalf("second trace within MaxAge: %+v, want rejected", r)
	}
	now = now.Add(2 * time.Minute)
	if r := st.Add([]otelmap.Span{storeTestSpan(2, 1, 0, otelmap.SourceOTLP)}); r.Accepted != 1 {
		t.Fatalf("second trace after the first expired: %+v, want accepted", r)
	}
	if st.Spans(trace.TraceID{1}) != nil {
		t.Error("expired trace still held")
	}
	if st.Stats().TracesEvicted != 1 {
		t.Errorf("TracesEvicted = %d, want 1", st.Stats().TracesEvicted)
	}
}

func TestStoreRealSpanReplacesExtensionCopy(t *testing.T) {
	st := NewStore(Limits{})
	ext := storeTestSpan(1, 1, 0, otelmap.SourceExtension)
	ext.Name = "from extension"
	real := storeTestSpan(1, 1, 0, otelmap.SourceOTLP)
	real.Name = "as recorded"
	st.Add([]otelmap.Span{ext})
	st.Add([]otelmap.Span{real})
	got := st.Spans(trace.TraceID{1})
	if len(got) != 1 || got[0].Name != "as recorded" || got[0].Source != otelmap.SourceOTLP {
		t.Fatalf("spans = %+v, want the OTLP copy only", got)
	}
	// The reverse order keeps the real span.
	st.Add([]otelmap.Span{ext})
	if got := st.Spans(trace.TraceID{1}); got[0].Source != otelmap.SourceOTLP {
		t.Fatalf("extension copy replaced the real span: %+v", got[0])
	}
	if got[0].Resource == nil {
		t.Error("stored span has a nil resource")
	}
}

func TestWaitSettledWaitsForRootAndQuiet(t *testing.T) {
	st := NewStore(Limits{})
	id := trace.TraceID{9}
	ctx := context.Background()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		st.Add([]otelmap.Span{storeTestSpan(9, 2, 1, otelmap.SourceOTLP)}) // child first
		time.Sleep(30 * time.Millisecond)
		st.Add([]otelmap.Span{storeTestSpan(9, 1, 0, otelmap.SourceInProcess)}) // then the root
	}()
	spans, settled, err := st.WaitSettled(ctx, id, SettleOptions{Quiet: 50 * time.Millisecond, MaxWait: 10 * time.Second})
	wg.Wait()
	if err != nil || !settled {
		t.Fatalf("WaitSettled: settled=%v err=%v", settled, err)
	}
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want both", len(spans))
	}
}

func TestWaitSettledNamedRoot(t *testing.T) {
	st := NewStore(Limits{})
	st.Add([]otelmap.Span{storeTestSpan(9, 1, 0, otelmap.SourceOTLP)})
	// The named root (span 5) never arrives: the wait ends at MaxWait,
	// unsettled, with what is held.
	spans, settled, err := st.WaitSettled(context.Background(), trace.TraceID{9},
		SettleOptions{Root: trace.SpanID{5}, Quiet: time.Millisecond, MaxWait: 50 * time.Millisecond})
	if err != nil || settled || len(spans) != 1 {
		t.Fatalf("got settled=%v err=%v spans=%d, want unsettled with 1 span", settled, err, len(spans))
	}
}

func TestWaitSettledHonoursContext(t *testing.T) {
	st := NewStore(Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, settled, err := st.WaitSettled(ctx, trace.TraceID{7}, SettleOptions{Quiet: time.Second, MaxWait: time.Minute})
	if settled || !errors.Is(err, context.Canceled) {
		t.Fatalf("got settled=%v err=%v, want context.Canceled", settled, err)
	}
}

func TestStoreConcurrentAdd(t *testing.T) {
	st := NewStore(Limits{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				st.Add([]otelmap.Span{storeTestSpan(byte(w+1), byte(i+1), 0, otelmap.SourceOTLP)})
				st.Spans(trace.TraceID{byte(w + 1)})
			}
		}()
	}
	wg.Wait()
	if got := st.Stats().Spans; got != 8*200 {
		t.Fatalf("held %d spans, want %d", got, 8*200)
	}
}

// TestStoreByteLimitPerTrace: a span whose packed record would take its
// trace past MaxBytesPerTrace is rejected and counted as a full trace's;
// the trace keeps what it held, and a smaller span still fits. An
// extension span's replacement that would not fit leaves the extension
// span in place.
func TestStoreByteLimitPerTrace(t *testing.T) {
	st := NewStore(Limits{MaxBytesPerTrace: 300})
	small := storeTestSpan(1, 1, 0, otelmap.SourceOTLP)
	big := storeTestSpan(1, 2, 1, otelmap.SourceOTLP)
	big.Attrs = []attribute.KeyValue{attribute.String("content", strings.Repeat("x", 400))}
	if res := st.Add([]otelmap.Span{small, big}); res.Accepted != 1 || res.Rejected != 1 || !strings.Contains(res.Reason, "byte limit per trace") {
		t.Fatalf("AddResult = %+v, want the small span kept and the big one rejected for the byte limit", res)
	}
	if got := st.Stats().RejectedTraceFull; got != 1 {
		t.Errorf("spans_rejected_trace_full = %d, want 1", got)
	}
	ext := storeTestSpan(1, 3, 1, otelmap.SourceExtension)
	if res := st.Add([]otelmap.Span{ext}); res.Accepted != 1 {
		t.Fatalf("a small span after the rejection: %+v", res)
	}
	real := storeTestSpan(1, 3, 1, otelmap.SourceOTLP)
	real.Attrs = big.Attrs
	if res := st.Add([]otelmap.Span{real}); res.Rejected != 1 {
		t.Fatalf("replacing the extension span with one over the limit: %+v", res)
	}
	held := st.Spans(trace.TraceID{1})
	if len(held) != 2 || held[0].SpanID != small.SpanID || held[1].Source != otelmap.SourceExtension || len(held[1].Attrs) != 0 {
		t.Fatalf("held %+v, want the small span and the extension span as they were", held)
	}
	if got := NewStore(Limits{MaxBytesPerTrace: 1 << 40}).Limits().MaxBytesPerTrace; got != maxPackedBytes {
		t.Errorf("MaxBytesPerTrace 1 TiB became %d, want the packed layout's bound %d", got, maxPackedBytes)
	}
}

// TestStoreSpansWhileAdding: Spans unpacks outside the store's lock while
// the same trace grows, extension spans are replaced and spans over the
// byte limit are undone; every span read is whole and as it was added
// (run with -race).
func TestStoreSpansWhileAdding(t *testing.T) {
	st := NewStore(Limits{MaxBytesPerTrace: 64 << 10})
	id := trace.TraceID{7}
	mk := func(i int, source string, pad int) otelmap.Span {
		sp := storeTestSpan(7, 0, 0, source)
		sp.SpanID = trace.SpanID{1, byte(i >> 8), byte(i)}
		sp.Name = fmt.Sprintf("span-%d", i)
		sp.Attrs = []attribute.KeyValue{attribute.Int("i", i), attribute.String("pad", strings.Repeat("p", pad))}
		return sp
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 600 {
			st.Add([]otelmap.Span{mk(i, otelmap.SourceExtension, 10)})
			st.Add([]otelmap.Span{mk(i, otelmap.SourceOTLP, 10)})        // replaces the extension span
			st.Add([]otelmap.Span{mk(i+1000, otelmap.SourceOTLP, 2000)}) // past the limit once the trace is large
		}
	}()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		for _, sp := range st.Spans(id) {
			v, _ := sp.Attr("i")
			if want := fmt.Sprintf("span-%d", v.AsInt64()); sp.Name != want {
				t.Fatalf("span %s: name %q, want %q", sp.SpanID, sp.Name, want)
			}
			if pad, _, _ := sp.StringAttr("pad"); strings.Trim(pad, "p") != "" {
				t.Fatalf("span %s: pad %q", sp.SpanID, pad)
			}
		}
	}
	if got := st.Stats(); got.RejectedTraceFull == 0 {
		t.Fatalf("no span was refused for the byte limit: %+v", got)
	}
}
