package coordbenchconnector

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/report"
)

// BenchmarkAssessMetrics is what a worker runs per released trace in a
// metrics pipeline alone (core.assess without a logs pipeline: assembly
// without steps, the evaluators with metricsCfg, the task result and the
// aggregate), on every trace of benchBatches' payload, held packed as
// the hold holds them. BenchmarkConnector/metrics measures it with the
// hold, the settle check and the packing around it; this one alone,
// without their noise:
//
//	cd collector/coordbenchconnector && go test -run '^$' -bench AssessMetrics -benchmem -cpuprofile /tmp/cpu.out
func BenchmarkAssessMetrics(b *testing.B) {
	batches, _, _ := benchBatches(b)
	c, err := newCore(connectortest.NewNopSettings(Type), testConfig())
	if err != nil {
		b.Fatal(err)
	}
	byTrace := map[trace.TraceID]*tracestore.Held{}
	var order []trace.TraceID
	nspans := 0
	for _, td := range batches {
		spans, _ := otlpdecode.SpansFromTraces(td, otelmap.SourceOTLP)
		for i := range spans {
			id := spans[i].TraceID
			if _, ok := byTrace[id]; !ok {
				order = append(order, id)
				byTrace[id] = tracestore.NewHeld(c.dict)
			}
			byTrace[id].Add(&spans[i])
			nspans++
		}
	}
	var scratch tracestore.Scratch
	// How each trace's wait ends, as the hold would end it: settled when
	// its evidence is whole, else at max_wait with the calls unanswered
	// (the generated traces).
	collections := map[trace.TraceID]*evals.Collection{}
	for _, id := range order {
		ev := tracestore.CheckEvidence(byTrace[id].SpansIn(id, &scratch), c.await)
		col := &evals.Collection{Settled: ev.Whole(), MaxWaitMS: c.cfg.MaxWait.Milliseconds()}
		if !col.Settled {
			col.Detached = ev.Detached
			for _, u := range ev.Unanswered {
				col.Unanswered = append(col.Unanswered, u.Caller+" -> "+u.Callee)
			}
		}
		collections[id] = col
	}
	close(c.work) // the benchmark runs assess's steps itself
	c.workers.Wait()
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for b.Loop() {
		for _, id := range order {
			spans := byTrace[id].SpansIn(id, &scratch)
			col := *collections[id]
			in := evals.Inputs{Config: c.metricsCfg, Collection: &col}
			td := assemble.TraceWith(id, spans, assemble.Options{WithoutSteps: true})
			rep := c.registry.Run(context.Background(), td, in, nil)
			tr := report.NewTaskResult(td, rep)
			completion := completionSettled
			if !col.Settled {
				completion = completionMaxWait
			}
			c.agg.record(&tr, completion)
		}
	}
	cpu := processCPU(b) - cpu0 // the garbage collector's and the runtime's other threads too
	b.ReportMetric(float64(nspans)*float64(b.N)/cpu.Seconds(), "spans/cpu-s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(len(order)), "traces/op")
}
