package purple

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// lockedWriter is a log sink for the batch processor's goroutine and the
// test's.
type lockedWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestExportPanicLosesOnlyItsBatch: the OpenTelemetry SDK's batch span
// processor runs the exporter (and its shutdown) in goroutines of its own;
// an exporter made for a caller's ingest token that panics there loses
// that batch, logged with the stack, and the agent's next batches are
// exported (before, the panic ended the process).
func TestExportPanicLosesOnlyItsBatch(t *testing.T) {
	logs := &lockedWriter{}
	tokens := newIngestTokens(100, time.Hour)
	base := tracetest.NewInMemoryExporter()
	x := newIngestExporter(base, tokens, func(context.Context, ingest) (sdktrace.SpanExporter, error) {
		var e *tracetest.InMemoryExporter
		return e, nil // a nil exporter: ExportSpans on it panics
	}, slog.New(slog.NewTextHandler(logs, nil)))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(x, sdktrace.WithBatchTimeout(10*time.Millisecond)))
	defer func() {
		if err := tp.Shutdown(context.Background()); err == nil || !strings.Contains(err.Error(), "shutdown failed unexpectedly") {
			t.Errorf("the shutdown of a panicking exporter: %v", err)
		}
	}()
	tracer := tp.Tracer("test")

	_, tokened := tracer.Start(t.Context(), "with a token")
	tokens.remember(tokened.SpanContext().TraceID(), ingest{Token: "t", Header: "H"})
	tokened.End()
	if err := tp.ForceFlush(t.Context()); err == nil || !strings.Contains(err.Error(), "span export failed unexpectedly") {
		t.Errorf("the panicking export: %v", err)
	}
	_, plain := tracer.Start(t.Context(), "plain")
	plain.End()
	if err := tp.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := base.GetSpans(); len(got) != 1 || got[0].Name != "plain" {
		t.Errorf("the next batch: %v", got)
	}
	if out := logs.String(); !strings.Contains(out, "span export panicked") || !strings.Contains(out, "stack=") {
		t.Errorf("the log: %s", out)
	}
}
