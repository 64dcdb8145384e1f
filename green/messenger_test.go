package green

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/sdkbridge"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// The Messenger's own tests are in package a2acall. What is left here is
// the green side of the package's scenario tests: a Messenger whose spans,
// and the spans it rebuilds from the Traceability Extension, land in one
// store, as in the assessor.
type testGreen struct {
	m      *a2acall.Messenger
	store  *tracestore.Store
	tracer trace.Tracer
}

func newTestGreen(t *testing.T, opts a2acall.Options) *testGreen {
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
	g := &testGreen{m: a2acall.New(tp, store, opts), store: store, tracer: tp.Tracer("test")}
	t.Cleanup(func() {
		_ = g.m.Close()
		_ = tp.Shutdown(context.Background())
	})
	return g
}
