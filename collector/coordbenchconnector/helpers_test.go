package coordbenchconnector

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/report"
)

// pipeline is one connector id built the way the Collector builds it for
// a config naming it in a metrics and a logs pipeline: two instances of
// one factory, both fed every traces batch.
type pipeline struct {
	t       *testing.T
	metrics *consumertest.MetricsSink
	logs    *consumertest.LogsSink
	m, l    connector.Traces
	reader  *sdkmetric.ManualReader
}

// testConfig settles quickly: a test waits for results, never for time.
func testConfig() *Config {
	cfg := createDefaultConfig()
	cfg.Quiet = 50 * time.Millisecond
	cfg.MaxWait = 2 * time.Minute
	cfg.MetricsFlushInterval = time.Hour // flushed at shutdown
	return cfg
}

func newPipeline(t *testing.T, cfg *Config) *pipeline {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() { testenv.CheckNoGoroutineLeak(t, before) })
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	p := &pipeline{t: t, metrics: new(consumertest.MetricsSink), logs: new(consumertest.LogsSink), reader: sdkmetric.NewManualReader()}
	f := NewFactory()
	set := connectortest.NewNopSettings(Type)
	set.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(p.reader))
	ctx := context.Background()
	var err error
	if p.m, err = f.CreateTracesToMetrics(ctx, set, cfg, p.metrics); err != nil {
		t.Fatal(err)
	}
	if p.l, err = f.CreateTracesToLogs(ctx, set, cfg, p.logs); err != nil {
		t.Fatal(err)
	}
	host := componenttest.NewNopHost()
	for _, c := range []component.Component{p.m, p.l} {
		if err := c.Start(ctx, host); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { p.shutdown() })
	return p
}

// send gives td to both instances, as the Collector's fan-out does.
func (p *pipeline) send(td ptrace.Traces) {
	p.t.Helper()
	for _, c := range []connector.Traces{p.m, p.l} {
		if err := c.ConsumeTraces(context.Background(), td); err != nil {
			p.t.Fatalf("ConsumeTraces: %v", err)
		}
	}
}

func (p *pipeline) shutdown() {
	for _, c := range []component.Component{p.m, p.l} {
		if err := c.Shutdown(context.Background()); err != nil {
			p.t.Errorf("Shutdown: %v", err)
		}
	}
}

// waitRecords waits until at least n log records arrived (generously: the machine
// may be slow; nothing here measures time).
func (p *pipeline) waitRecords(n int) []plog.LogRecord {
	p.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		recs := records(p.logs.AllLogs())
		if len(recs) >= n || time.Now().After(deadline) {
			if len(recs) < n {
				p.t.Fatalf("%d log records, want %d", len(recs), n)
			}
			return recs
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func records(all []plog.Logs) []plog.LogRecord {
	var out []plog.LogRecord
	for _, ld := range all {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			sls := ld.ResourceLogs().At(i).ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					out = append(out, lrs.At(k))
				}
			}
		}
	}
	return out
}

// taskOf decodes a record's body.
func taskOf(t *testing.T, rec plog.LogRecord) report.TaskResult {
	t.Helper()
	var tr report.TaskResult
	if err := json.Unmarshal([]byte(rec.Body().Str()), &tr); err != nil {
		t.Fatalf("record body is not a task result: %v\n%s", err, rec.Body().Str())
	}
	return tr
}

func attr(rec plog.LogRecord, key string) string {
	v, _ := rec.Attributes().Get(key)
	return v.AsString()
}

// readOTLP reads a committed OTLP JSON file of the main module.
func readOTLP(t *testing.T, rel string) []ptrace.Traces {
	t.Helper()
	batches, err := otlpdecode.ReadOTLPJSONFile(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return batches
}

func traceIDs(batches []ptrace.Traces) map[pcommon.TraceID]bool {
	ids := map[pcommon.TraceID]bool{}
	for _, td := range batches {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			sss := td.ResourceSpans().At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				ss := sss.At(j).Spans()
				for k := 0; k < ss.Len(); k++ {
					ids[ss.At(k).TraceID()] = true
				}
			}
		}
	}
	return ids
}

// series is a metric's data points by their attributes, summed over
// resources (several collectors' series merge by addition).
type series map[string]map[string]float64

func sumSeries(all []pmetric.Metrics) series {
	out := series{}
	// Cumulative points: only each resource's last emission counts.
	last := map[string]pmetric.Metrics{}
	for _, md := range all {
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			id := ""
			if v, ok := md.ResourceMetrics().At(i).Resource().Attributes().Get("service.instance.id"); ok {
				id = v.AsString()
			}
			last[id] = md
		}
	}
	for _, md := range last {
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			sms := md.ResourceMetrics().At(i).ScopeMetrics()
			for j := 0; j < sms.Len(); j++ {
				ms := sms.At(j).Metrics()
				for k := 0; k < ms.Len(); k++ {
					m := ms.At(k)
					if out[m.Name()] == nil {
						out[m.Name()] = map[string]float64{}
					}
					switch m.Type() {
					case pmetric.MetricTypeSum:
						for d := 0; d < m.Sum().DataPoints().Len(); d++ {
							dp := m.Sum().DataPoints().At(d)
							out[m.Name()][attrKey(dp.Attributes())] += float64(dp.IntValue())
						}
					case pmetric.MetricTypeHistogram:
						for d := 0; d < m.Histogram().DataPoints().Len(); d++ {
							dp := m.Histogram().DataPoints().At(d)
							key := attrKey(dp.Attributes())
							out[m.Name()][key+" count"] += float64(dp.Count())
							for b, n := range dp.BucketCounts().AsRaw() {
								out[m.Name()][key+" bucket "+string(rune('a'+b))] += float64(n)
							}
						}
					}
				}
			}
		}
	}
	return out
}

func attrKey(m pcommon.Map) string {
	raw := m.AsRaw()
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		v, _ := m.Get(k)
		s += k + "=" + v.AsString() + ";"
	}
	return s
}

// ownMetric is the value of one of the connector's own counters, summed
// over the attribute sets matching want.
func (p *pipeline) ownMetric(name string, want map[string]string) int64 {
	p.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := p.reader.Collect(context.Background(), &rm); err != nil {
		p.t.Fatal(err)
	}
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			var points []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				points = d.DataPoints
			case metricdata.Gauge[int64]:
				points = d.DataPoints
			}
		next:
			for _, dp := range points {
				for k, v := range want {
					if got, ok := dp.Attributes.Value(attribute.Key(k)); !ok || got.AsString() != v {
						continue next
					}
				}
				total += dp.Value
			}
		}
	}
	return total
}
