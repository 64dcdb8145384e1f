package purple

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/sdkbridge"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// An agent's spans: its own tracer provider, whose spans leave by the
// roads its options open (docs/design.md#three-roads-into-one-store):
//
//   - OTLP/HTTP to Options.OTLPEndpoint (in the benchmark and the demo, the
//     green agent's receiver), and to the endpoint the standard
//     OpenTelemetry environment names, each through a batcher;
//   - an in-process store of its own spans, from which it answers a caller
//     that activated the Traceability Extension with the steps of its work
//     on that call.
//
// Steps its peers returned through the extension are kept in the store too
// (so they travel on in the agent's own extension answers) and, when the
// agent exports, forwarded through its exporters, so a backend sees the
// whole trace even when a callee reports only steps.

// instrumentationName is the purple agent's instrumentation scope.
const instrumentationName = "github.com/coordbench/coordbench/purple"

// forwardScope marks spans rebuilt from peers' extension steps that the
// agent forwards to its exporters.
var forwardScope = instrumentation.Scope{Name: instrumentationName + "/extension-forward"}

// DefaultExportInterval is how often an agent's batcher exports unless
// OTEL_BSP_SCHEDULE_DELAY or Options.ExportInterval says otherwise: far
// shorter than the SDK's 5 s, so an assessment need not wait for a
// batch (the green agent waits for every call's server side, up to its
// maximum, so the SDK default works too, only slower).
const DefaultExportInterval = 100 * time.Millisecond

// storeMaxAge bounds how long the agent keeps the spans of a trace for its
// extension answers; traces older than that are swept (and past
// storeMaxTraces the least recent go first: tracelru.go).
const storeMaxAge = 10 * time.Minute

type telemetry struct {
	tp *sdktrace.TracerProvider
	// store holds the agent's spans for extension answers; nil when it
	// returns no steps.
	store *tracestore.Store
	// lru makes room in store for every new trace (tracelru.go); nil with
	// store.
	lru *traceLRU
	// exporters are the batchers of the OTLP exporters, for forwarding.
	exporters []sdktrace.SpanProcessor
	// tokens are the ingest tokens of the traces the agent was called in
	// (ingest.go), nil with Options.NoIngestToken (or no spans at all).
	tokens *ingestTokens

	mu        sync.Mutex
	resources map[string]*resource.Resource
}

// newTelemetry builds the agent's tracer provider. The resource is the
// agent's name (service.name), and, when the environment is the process's
// own, OTEL_RESOURCE_ATTRIBUTES; OTEL_SERVICE_NAME is not read, since the
// name must be the agent's (several in-process agents share one
// environment).
func newTelemetry(ctx context.Context, opts *Options) (*telemetry, error) {
	t := &telemetry{resources: map[string]*resource.Resource{}}
	resOpts := []resource.Option{}
	if opts.Getenv == nil {
		resOpts = append(resOpts, resource.WithFromEnv())
	}
	resOpts = append(resOpts, resource.WithAttributes(
		otelmap.AttrServiceName.String(opts.Name),
		attribute.String("coordbench.purple.role", opts.Role),
	))
	res, err := resource.New(ctx, resOpts...)
	if err != nil && res == nil {
		return nil, fmt.Errorf("resource: %w", err)
	}
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if opts.Faults.NoSpans {
		// Spans are made (trace context still propagates) and go nowhere.
		t.tp = sdktrace.NewTracerProvider(tpOpts...)
		return t, nil
	}
	maxTraces := storeMaxTraces
	if opts.storedTraces > 0 {
		maxTraces = opts.storedTraces
	}
	if !opts.NoExtension {
		t.store = tracestore.NewStore(tracestore.Limits{MaxAge: storeMaxAge, MaxTraces: maxTraces})
		// The LRU runs first, so a new trace finds room when its first
		// span ends.
		t.lru = newTraceLRU(t.store, maxTraces)
		tpOpts = append(tpOpts, sdktrace.WithSpanProcessor(t.lru), sdktrace.WithSpanProcessor(sdkbridge.NewRecorder(t.store)))
	}
	if !opts.NoIngestToken {
		t.tokens = newIngestTokens(maxTraces, storeMaxAge)
	}
	var exporters []sdktrace.SpanExporter
	if opts.OTLPEndpoint != "" {
		endpoint := otlptracehttp.WithEndpointURL(tracesURL(opts.OTLPEndpoint))
		headers := opts.OTLPHeaders
		expOpts := []otlptracehttp.Option{endpoint}
		if len(headers) > 0 {
			expOpts = append(expOpts, otlptracehttp.WithHeaders(headers))
		} else {
			// The exporter reads them from the environment, and one given
			// a token header by option would not. The SDK reads the
			// process's environment whatever Options.Getenv says.
			headers = envHeaders(os.Getenv)
		}
		exp, err := otlptracehttp.New(ctx, expOpts...)
		if err != nil {
			return nil, fmt.Errorf("OTLP exporter to %s: %w", opts.OTLPEndpoint, err)
		}
		exporters = append(exporters, t.withIngest(exp, opts, func(ctx context.Context, in ingest) (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(ctx, endpoint, otlptracehttp.WithHeaders(withIngestHeader(headers, in)))
		}))
	}
	if envExport(opts.getenv()) {
		// The SDK reads the endpoint, headers and the rest from the
		// process's environment.
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("OTLP exporter from the environment: %w", err), shutdownExporters(ctx, exporters))
		}
		headers := envHeaders(os.Getenv)
		exporters = append(exporters, t.withIngest(exp, opts, func(ctx context.Context, in ingest) (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(ctx, otlptracehttp.WithHeaders(withIngestHeader(headers, in)))
		}))
	}
	for _, exp := range exporters {
		bsp := sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithBatchTimeout(opts.ExportInterval))
		t.exporters = append(t.exporters, bsp)
		tpOpts = append(tpOpts, sdktrace.WithSpanProcessor(bsp))
	}
	t.tp = sdktrace.NewTracerProvider(tpOpts...)
	return t, nil
}

// withIngest wraps exp so that the spans of traces with an ingest token go
// with its header (ingestexport.go); without tokens exp is used as it is.
func (t *telemetry) withIngest(exp sdktrace.SpanExporter, opts *Options, mk newIngestExporterFunc) sdktrace.SpanExporter {
	if t.tokens == nil {
		return exp
	}
	return newIngestExporter(exp, t.tokens, mk, opts.Logger)
}

func shutdownExporters(ctx context.Context, exps []sdktrace.SpanExporter) error {
	var errs []error
	for _, e := range exps {
		errs = append(errs, e.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// tracesURL turns a base URL (http://host:port) into the OTLP traces URL;
// a URL that already names a path is used as it is.
func tracesURL(endpoint string) string {
	e := strings.TrimRight(endpoint, "/")
	rest := strings.TrimPrefix(strings.TrimPrefix(e, "http://"), "https://")
	if strings.Contains(rest, "/") {
		return e
	}
	return e + otelmap.OTLPTracesPath
}

// envExport reports whether the environment names an OTLP trace endpoint
// and does not switch the exporter off.
func envExport(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// exporting reports whether the agent's spans leave by OTLP.
func (t *telemetry) exporting() bool { return len(t.exporters) > 0 }

// forward hands spans rebuilt from peers' extension steps to the
// exporters. They keep their ids and coordbench.source=extension, so a
// receiver that also gets the real spans keeps those.
func (t *telemetry) forward(spans []otelmap.Span) {
	if len(t.exporters) == 0 || len(spans) == 0 {
		return
	}
	for i := range spans {
		ro := t.readOnly(&spans[i])
		for _, p := range t.exporters {
			p.OnEnd(ro)
		}
	}
}

// readOnly makes an SDK span of a stored one.
func (t *telemetry) readOnly(sp *otelmap.Span) sdktrace.ReadOnlySpan {
	stub := tracetest.SpanStub{
		Name: sp.Name,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: sp.TraceID, SpanID: sp.SpanID, TraceFlags: trace.FlagsSampled,
		}),
		SpanKind:             sp.Kind,
		StartTime:            sp.Start,
		EndTime:              sp.End,
		Attributes:           sp.Attrs,
		Resource:             t.resource(sp.Resource),
		InstrumentationScope: forwardScope,
	}
	if sp.ParentSpanID.IsValid() {
		stub.Parent = trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: sp.TraceID, SpanID: sp.ParentSpanID, TraceFlags: trace.FlagsSampled, Remote: true,
		})
	}
	if sp.StatusError {
		stub.Status = sdktrace.Status{Code: codes.Error, Description: sp.StatusMessage}
	}
	return stub.Snapshot()
}

// resource returns one SDK resource per stored resource's service name, so
// forwarded spans of one agent share it (and a batch groups them).
func (t *telemetry) resource(r *otelmap.Resource) *resource.Resource {
	key := ""
	if r != nil {
		key = r.ServiceName
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if res, ok := t.resources[key]; ok {
		return res
	}
	var attrs []attribute.KeyValue
	if r != nil {
		attrs = r.Attrs
	}
	res := resource.NewSchemaless(attrs...)
	if len(t.resources) < 256 {
		t.resources[key] = res
	}
	return res
}

func (t *telemetry) shutdown(ctx context.Context) error {
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracer provider: %w", err)
	}
	return nil
}

// getenv is Options.Getenv, else os.Getenv.
func (o *Options) getenv() func(string) string {
	if o.Getenv != nil {
		return o.Getenv
	}
	return os.Getenv
}
