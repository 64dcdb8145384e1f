package coordbenchconnector

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestMetricsAloneAgree feeds the whole corpus (every framework fixture
// and every run of every live-corpus program, at once) to a connector in
// a metrics and a logs pipeline and to one in a metrics pipeline alone,
// which runs only what the metrics take (no latency or text evaluator, no
// graph metric only the record shows), and requires the same metrics, data
// point for data point.
//
// With COORDBENCH_SNAPSHOT naming a file it also writes there what the
// first connector emitted: each log record's trace id, attributes and
// body, by trace id, and the last metrics' data points. Two snapshots,
// before and after a change, compared with cmp, say whether the change
// changed a result.
func TestMetricsAloneAgree(t *testing.T) {
	out := os.Getenv("COORDBENCH_SNAPSHOT")
	files, err := filepath.Glob("../../otelmap/assemble/testdata/frameworks/*.otlp.json")
	live, err2 := filepath.Glob("../../otelmap/assemble/testdata/live/*/captures/*.otlp.json")
	if err != nil || err2 != nil || len(files) == 0 || len(live) == 0 {
		t.Fatalf("corpus: %v %v", err, err2)
	}
	var batches []ptrace.Traces
	owner := map[pcommon.TraceID]string{}
	for _, f := range append(files, live...) {
		bs := readOTLP(t, strings.TrimPrefix(f, "../../"))
		for id := range traceIDs(bs) {
			if prev, ok := owner[id]; ok {
				t.Fatalf("trace %s in %s and %s", id, prev, f)
			}
			owner[id] = f
		}
		batches = append(batches, bs...)
	}
	cfg := testConfig()
	cfg.Quiet = time.Second
	cfg.MaxWait = 5 * time.Second

	var lines []string
	p := newPipeline(t, cfg)
	for _, td := range batches {
		p.send(td)
	}
	for _, rec := range p.waitRecords(len(owner)) {
		lines = append(lines, fmt.Sprintf("record %s span %s attrs %v body %s",
			pcommon.TraceID(rec.TraceID()), pcommon.SpanID(rec.SpanID()), rec.Attributes().AsRaw(), rec.Body().Str()))
	}
	p.shutdown()
	slices.Sort(lines)
	withLogs := canonicalMetrics(p.metrics.AllMetrics())

	metricsOnly := metricsOnlyRun(t, cfg, batches, len(owner))
	if !slices.Equal(withLogs, metricsOnly) {
		t.Errorf("metrics differ between a metrics and logs pipeline and a metrics pipeline alone:\n%s\n---\n%s",
			strings.Join(withLogs, "\n"), strings.Join(metricsOnly, "\n"))
	}
	lines = append(lines, withLogs...)
	if out == "" {
		return
	}
	if err := os.WriteFile(out, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	t.Logf("%d traces, %d lines, sha256 %x, written to %s", len(owner), len(lines), sum[:8], out)
}

// metricsOnlyRun feeds batches to a connector in a metrics pipeline alone
// and returns its last metrics, canonical.
func metricsOnlyRun(t *testing.T, cfg *Config, batches []ptrace.Traces, traces int) []string {
	t.Helper()
	ctx := context.Background()
	sink := new(consumertest.MetricsSink)
	m, err := NewFactory().CreateTracesToMetrics(ctx, connectortest.NewNopSettings(Type), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx, componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	for _, td := range batches {
		if err := m.ConsumeTraces(ctx, td); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for assessedTraces(m) < traces && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := assessedTraces(m); n != traces {
		t.Fatalf("metrics pipeline alone: %d traces assessed, want %d", n, traces)
	}
	return canonicalMetrics(sink.AllMetrics())
}

// canonicalMetrics is every data point of the last of all (cumulative:
// the last holds everything), one line each, timestamps left out, and a
// histogram's sum to 12 significant digits: the workers add a trace's
// durations in whichever order they finish, and float addition in another
// order differs in the last bits.
func canonicalMetrics(all []pmetric.Metrics) []string {
	if len(all) == 0 {
		return nil
	}
	md := all[len(all)-1]
	var out []string
	for _, rm := range md.ResourceMetrics().All() {
		res := fmt.Sprint(rm.Resource().Attributes().AsRaw())
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				head := fmt.Sprintf("metric %s %s %q %q", res, m.Name(), m.Unit(), m.Description())
				switch m.Type() {
				case pmetric.MetricTypeSum:
					for _, dp := range m.Sum().DataPoints().All() {
						out = append(out, fmt.Sprintf("%s sum %v %d", head, dp.Attributes().AsRaw(), dp.IntValue()))
					}
				case pmetric.MetricTypeHistogram:
					for _, dp := range m.Histogram().DataPoints().All() {
						out = append(out, fmt.Sprintf("%s histogram %v count %d sum %s min %v max %v bounds %v buckets %v",
							head, dp.Attributes().AsRaw(), dp.Count(), strconv.FormatFloat(dp.Sum(), 'g', 12, 64), dp.Min(), dp.Max(),
							dp.ExplicitBounds().AsRaw(), dp.BucketCounts().AsRaw()))
					}
				default:
					out = append(out, fmt.Sprintf("%s %s", head, m.Type()))
				}
			}
		}
	}
	return out
}
