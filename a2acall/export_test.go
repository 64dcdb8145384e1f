package a2acall

import (
	"net/http"

	"go.opentelemetry.io/otel/trace"
)

// NewWithTransport is New over base instead of a fresh *http.Transport, for
// the benchmarks that replay answers in process.
func NewWithTransport(tp trace.TracerProvider, store SpanStore, opts Options, base http.RoundTripper) *Messenger {
	return newMessenger(tp, store, opts, closeless{base})
}

type closeless struct{ http.RoundTripper }

func (closeless) CloseIdleConnections() {}
