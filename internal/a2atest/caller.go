package a2atest

import (
	"context"
	"net"
	"testing"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/sdkbridge"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// RefusedURL returns a loopback URL where nothing listens.
func RefusedURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// Caller is the calling side of an A2A test, as in the green agent: a
// Messenger whose spans, and the spans it rebuilds from the Traceability
// Extension, land in Store, recorded by a tracer provider whose resource is
// the assessor's (service "green", coordbench.role=assessor).
type Caller struct {
	Messenger *a2acall.Messenger
	Store     *tracestore.Store
	// Tracer is the provider's, for the HOST spans a test wraps calls in.
	Tracer trace.Tracer
}

// NewCaller returns a Caller with opts (logs discarded unless opts.Logger
// is set); its Messenger and provider close at the end of the test.
func NewCaller(t testing.TB, opts a2acall.Options) *Caller {
	t.Helper()
	store := tracestore.NewStore(tracestore.Limits{})
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(otelmap.AttrServiceName.String("green"),
			otelmap.AttrRole.String(otelmap.RoleAssessor))),
		sdktrace.WithSpanProcessor(sdkbridge.NewRecorder(store)),
	)
	if opts.Logger == nil {
		opts.Logger = quietLogger
	}
	c := &Caller{Messenger: a2acall.New(tp, store, opts), Store: store, Tracer: tp.Tracer("test")}
	t.Cleanup(func() {
		_ = c.Messenger.Close()
		_ = tp.Shutdown(context.Background())
	})
	return c
}
