package coordbenchconnector

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// telemetry is the connector's own telemetry, through the meter the
// Collector's settings give it (the collector's /metrics, with the
// otelcol_ prefix the Collector's components use).
type telemetry struct {
	meter       metric.Meter
	tracesHeld  metric.Int64ObservableGauge
	spansHeld   metric.Int64ObservableGauge
	assessedN   metric.Int64Counter
	assessDur   metric.Float64Histogram
	evictedN    metric.Int64Counter
	refusedN    metric.Int64Counter
	lateN       metric.Int64Counter
	duplicateN  metric.Int64Counter
	seriesN     metric.Int64Counter
	emitFailedN metric.Int64Counter
	reg         metric.Registration
}

func newTelemetry(mp metric.MeterProvider) (*telemetry, error) {
	t := &telemetry{meter: mp.Meter(scopeName)}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := t.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	var err error
	t.tracesHeld, err = t.meter.Int64ObservableGauge("otelcol_connector_coordbench_traces_held",
		metric.WithUnit("{trace}"), metric.WithDescription("Traces held, waiting to be complete."))
	errs = append(errs, err)
	t.spansHeld, err = t.meter.Int64ObservableGauge("otelcol_connector_coordbench_spans_held",
		metric.WithUnit("{span}"), metric.WithDescription("Spans held in traces waiting to be complete."))
	errs = append(errs, err)
	t.assessDur, err = t.meter.Float64Histogram("otelcol_connector_coordbench_assess_duration",
		metric.WithUnit("s"), metric.WithDescription("Time to assemble and evaluate one trace."))
	errs = append(errs, err)
	t.assessedN = counter("otelcol_connector_coordbench_traces_assessed", "{trace}", "Traces assessed, by how their wait ended (completion).")
	t.evictedN = counter("otelcol_connector_coordbench_traces_evicted", "{trace}", "Traces assessed early because max_traces or max_spans was reached (reason).")
	t.refusedN = counter("otelcol_connector_coordbench_spans_refused", "{span}", "Spans refused: invalid ids, or over max_spans_per_trace (reason).")
	t.lateN = counter("otelcol_connector_coordbench_spans_late", "{span}", "Spans of traces already assessed, dropped.")
	t.duplicateN = counter("otelcol_connector_coordbench_spans_duplicate", "{span}", "Spans received twice (retried exports), dropped.")
	t.seriesN = counter("otelcol_connector_coordbench_calls_dropped", "{call}", "Calls not counted because max_call_series was reached.")
	t.emitFailedN = counter("otelcol_connector_coordbench_emit_failed", "{batch}", "Metrics or log batches the next consumer refused (signal).")
	return t, errors.Join(errs...)
}

// observeHeld reports the hold's size, read by held at each collection.
func (t *telemetry) observeHeld(held func() (traces, spans int64)) {
	reg, err := t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		traces, spans := held()
		o.ObserveInt64(t.tracesHeld, traces)
		o.ObserveInt64(t.spansHeld, spans)
		return nil
	}, t.tracesHeld, t.spansHeld)
	if err == nil {
		t.reg = reg
	}
}

func (t *telemetry) close() error {
	if t.reg == nil {
		return nil
	}
	return t.reg.Unregister()
}

func (t *telemetry) assessed(completion string, took time.Duration) {
	ctx := context.Background()
	opt, ok := completionAttrs[completion]
	if !ok {
		opt = metric.WithAttributes(attribute.String("completion", completion))
	}
	t.assessedN.Add(ctx, 1, opt)
	t.assessDur.Record(ctx, took.Seconds())
}

// completionAttrs are the assessed counter's attribute sets, made once:
// WithAttributes sorts and copies its attributes at every call, once per
// trace.
var completionAttrs = func() map[string]metric.MeasurementOption {
	m := map[string]metric.MeasurementOption{}
	for _, c := range []string{completionSettled, completionMaxWait, completionEvicted, completionShutdown} {
		m[c] = metric.WithAttributeSet(attribute.NewSet(attribute.String("completion", c)))
	}
	return m
}()

func (t *telemetry) evicted(reason string) {
	t.evictedN.Add(context.Background(), 1, metric.WithAttributes(attribute.String("reason", reason)))
}

func (t *telemetry) spansDropped(ctx context.Context, invalid, late, dup, overTrace int) {
	if invalid > 0 {
		t.refusedN.Add(ctx, int64(invalid), metric.WithAttributes(attribute.String("reason", "invalid_id")))
	}
	if overTrace > 0 {
		t.refusedN.Add(ctx, int64(overTrace), metric.WithAttributes(attribute.String("reason", "max_spans_per_trace")))
	}
	if late > 0 {
		t.lateN.Add(ctx, int64(late))
	}
	if dup > 0 {
		t.duplicateN.Add(ctx, int64(dup))
	}
}

func (t *telemetry) seriesDropped(calls int) {
	if calls > 0 {
		t.seriesN.Add(context.Background(), int64(calls))
	}
}

func (t *telemetry) emitFailed(signal string) {
	t.emitFailedN.Add(context.Background(), 1, metric.WithAttributes(attribute.String("signal", signal)))
}
