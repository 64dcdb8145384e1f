package a2acall_test

import (
	"bytes"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/a2acall"
)

// TestNilLoggerDiscards: a Messenger without a Logger writes nothing to the
// process's default logger (a library must not log where it was not told
// to). Not parallel: it swaps slog's default for its duration.
func TestNilLoggerDiscards(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	// Credentials with a bad header name make New warn.
	bad := &a2acall.Credentials{Default: a2acall.Credential{Header: "bad header", Value: "x"}}
	m := a2acall.New(noop.NewTracerProvider(), nil, a2acall.Options{Credentials: bad})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("a Messenger with a nil Logger wrote to slog.Default(): %s", buf.String())
	}
	// With a Logger the same warning arrives there.
	var own bytes.Buffer
	m = a2acall.New(noop.NewTracerProvider(), nil, a2acall.Options{Credentials: bad, Logger: slog.New(slog.NewTextHandler(&own, nil))})
	_ = m.Close()
	if own.Len() == 0 {
		t.Error("the Messenger's own Logger received no warning")
	}
}
