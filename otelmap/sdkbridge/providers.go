package sdkbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// ProviderOptions configure NewProviders.
type ProviderOptions struct {
	// ServiceName is the default service.name; OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override it, as the SDK specifies.
	ServiceName string
	// Attributes are added to the resource (e.g. coordbench.role).
	Attributes []attribute.KeyValue
	// Store, when set, receives every finished span in process (the first
	// road of spans).
	Store *tracestore.Store
	// MetricCardinalityLimit bounds the attribute sets per instrument
	// (default 2000); beyond it the SDK folds values into an overflow set.
	MetricCardinalityLimit int
	// Getenv reads the environment; nil means os.Getenv. Tests set it.
	Getenv func(string) string
}

// Providers are the tracer and meter providers of one process.
type Providers struct {
	Tracer   *sdktrace.TracerProvider
	Meter    metric.MeterProvider
	Resource *resource.Resource
	// ExportingTraces and ExportingMetrics tell whether an OTLP endpoint was
	// configured.
	ExportingTraces  bool
	ExportingMetrics bool
	shutdown         []func(context.Context) error
}

// NewProviders builds the process's providers from the standard
// OpenTelemetry environment variables. Spans go to the in-process store when
// one is given, and to OTLP/HTTP only when an endpoint is configured
// (OTEL_EXPORTER_OTLP_ENDPOINT or the per-signal variable) and the signal's
// exporter is not "none": with nothing set, nothing is exported and nothing
// fails.
func NewProviders(ctx context.Context, opts ProviderOptions) (*Providers, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	attrs := append([]attribute.KeyValue{otelmap.AttrServiceName.String(opts.ServiceName)}, opts.Attributes...)
	res, err := resource.New(ctx,
		resource.WithAttributes(attrs...),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("build resource: %w", err)
	}
	if err != nil {
		// A partial resource (e.g. a malformed OTEL_RESOURCE_ATTRIBUTES) is
		// still usable; say so rather than fail.
		slog.Warn("resource from environment is partial", "err", err)
	}
	p := &Providers{Resource: res}

	traceOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if opts.Store != nil {
		traceOpts = append(traceOpts, sdktrace.WithSpanProcessor(NewRecorder(opts.Store)))
	}
	if exportEnabled(getenv, "TRACES") {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		traceOpts = append(traceOpts, sdktrace.WithBatcher(exp))
		p.ExportingTraces = true
	}
	p.Tracer = sdktrace.NewTracerProvider(traceOpts...)
	p.shutdown = append(p.shutdown, p.Tracer.Shutdown)

	if exportEnabled(getenv, "METRICS") {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("OTLP metric exporter: %w", err), p.Tracer.Shutdown(ctx))
		}
		limit := opts.MetricCardinalityLimit
		if limit <= 0 {
			limit = 2000
		}
		mp := sdkmetric.NewMeterProvider(
			sdkmetric.WithResource(res),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(10*time.Second))),
			sdkmetric.WithCardinalityLimit(limit),
		)
		p.Meter = mp
		p.ExportingMetrics = true
		p.shutdown = append(p.shutdown, mp.Shutdown)
	} else {
		p.Meter = noop.NewMeterProvider()
	}
	if proto := getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); proto != "" && proto != "http/protobuf" && (p.ExportingTraces || p.ExportingMetrics) {
		slog.Warn("only OTLP over HTTP (http/protobuf) is built in; exporting with it", "OTEL_EXPORTER_OTLP_PROTOCOL", proto)
	}
	return p, nil
}

// Shutdown flushes and stops the providers; later calls are no-ops.
func (p *Providers) Shutdown(ctx context.Context) error {
	var errs []error
	for i := len(p.shutdown) - 1; i >= 0; i-- {
		if err := p.shutdown[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	p.shutdown = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("shut down telemetry: %w", err)
	}
	return nil
}

// exportEnabled reports whether the signal ("TRACES" or "METRICS") has an
// OTLP endpoint and its exporter is not switched off.
func exportEnabled(getenv func(string) string, signal string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_"+signal+"_EXPORTER")), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}
