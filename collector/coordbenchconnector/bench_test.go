package coordbenchconnector

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/coordbench/coordbench/internal/cputime"
	"github.com/coordbench/coordbench/internal/tracegen"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
)

// benchBatches is a smaller cut of `make bench-collector`'s payload: ten
// copies of every framework capture (each a trace id of its own) and 400
// generated traces of 50 spans, as export batches.
func benchBatches(b *testing.B) (batches []ptrace.Traces, spans, traces int) { return benchBatchesT(b) }

func benchBatchesT(b testing.TB) (batches []ptrace.Traces, spans, traces int) {
	files, err := filepath.Glob(filepath.Join("..", "..", "otelmap/assemble/testdata/frameworks/*.otlp.json"))
	if err != nil || len(files) == 0 {
		b.Fatalf("captures: %v", err)
	}
	sort.Strings(files)
	for k := range 10 {
		for _, f := range files {
			caps, err := otlpdecode.ReadOTLPJSONFile(f)
			if err != nil {
				b.Fatal(err)
			}
			ids := map[[16]byte]bool{}
			for _, td := range caps {
				for _, rs := range td.ResourceSpans().All() {
					for _, ss := range rs.ScopeSpans().All() {
						for _, s := range ss.Spans().All() {
							h := sha256.Sum256(fmt.Appendf(nil, "%s/%d/%s", f, k, s.TraceID()))
							s.SetTraceID([16]byte(h[:16]))
							ids[s.TraceID()] = true
						}
					}
				}
				spans += td.SpanCount()
				batches = append(batches, td)
			}
			traces += len(ids)
		}
	}
	shape := tracegen.Shape{Requests: 8, SpansPerRequest: 2500, SpansPerTrace: 50, OpenTraces: 20}
	for r := range shape.Requests {
		batches = append(batches, tracegen.Request(shape, r))
	}
	return batches, spans + shape.Spans(), traces + shape.Traces()
}

// BenchmarkConnector feeds the connector, built by its factory as the
// Collector builds it, the batches of benchBatches, and waits until every
// trace is assessed (max_wait 1s: the generated traces do not settle).
// "records" is a metrics and a logs pipeline (a record per trace);
// "metrics" a metrics pipeline alone, as servicegraph and span_metrics
// run. It reports spans per CPU-second of the whole process (its
// goroutines idle while the traces wait); with -cpuprofile it shows where
// the connector's time goes:
//
//	cd collector/coordbenchconnector && go test -run '^$' -bench Connector/metrics -benchtime 3x -cpuprofile /tmp/cpu.out
func BenchmarkConnector(b *testing.B) {
	batches, spans, traces := benchBatches(b)
	for _, withLogs := range []bool{true, false} {
		name := "metrics"
		if withLogs {
			name = "records"
		}
		b.Run(name, func(b *testing.B) { benchConnector(b, batches, spans, traces, withLogs) })
	}
}

func benchConnector(b *testing.B, batches []ptrace.Traces, spans, traces int, withLogs bool) {
	cfg := createDefaultConfig()
	cfg.Quiet = 200 * time.Millisecond
	cfg.MaxWait = time.Second
	cfg.MetricsFlushInterval = time.Hour // flushed at shutdown
	ctx := context.Background()
	cpu0 := processCPU(b)
	for b.Loop() {
		metrics, logs := new(consumertest.MetricsSink), new(consumertest.LogsSink)
		f := NewFactory()
		set := connectortest.NewNopSettings(Type)
		m, err := f.CreateTracesToMetrics(ctx, set, cfg, metrics)
		if err != nil {
			b.Fatal(err)
		}
		instances := []connector.Traces{m}
		if withLogs {
			l, err := f.CreateTracesToLogs(ctx, set, cfg, logs)
			if err != nil {
				b.Fatal(err)
			}
			instances = append(instances, l)
		}
		host := componenttest.NewNopHost()
		for _, in := range instances {
			if err := in.Start(ctx, host); err != nil {
				b.Fatal(err)
			}
		}
		for _, td := range batches {
			for _, in := range instances {
				if err := in.ConsumeTraces(ctx, td); err != nil {
					b.Fatal(err)
				}
			}
		}
		deadline := time.Now().Add(5 * time.Minute)
		for assessedTraces(m) < traces {
			if time.Now().After(deadline) {
				b.Fatalf("%d traces assessed of %d", assessedTraces(m), traces)
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, in := range instances {
			if err := in.Shutdown(ctx); err != nil {
				b.Fatal(err)
			}
		}
		if withLogs && logs.LogRecordCount() != traces {
			b.Fatalf("%d records of %d traces", logs.LogRecordCount(), traces)
		}
	}
	cpu := processCPU(b) - cpu0
	b.ReportMetric(float64(spans)*float64(b.N)/cpu.Seconds(), "spans/cpu-s")
	b.ReportMetric(float64(traces), "traces/op")
}

// assessedTraces is how many traces the core behind in has assessed.
func assessedTraces(in connector.Traces) int {
	a := in.(*instance).core.agg
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, v := range a.traces {
		n += int(v)
	}
	return n
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	u, s, ok := cputime.Self()
	if !ok {
		b.Skip("no process CPU time here")
	}
	return u + s
}
