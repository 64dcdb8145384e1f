package green

import (
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/internal/a2atest"
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
	c := a2atest.NewCaller(t, opts)
	return &testGreen{m: c.Messenger, store: c.Store, tracer: c.Tracer}
}
