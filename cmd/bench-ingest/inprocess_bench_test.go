package main

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/cputime"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// BenchmarkDecodeStorePayload decodes and stores make bench-ingest's
// default payload in this process, one request after the other, with no
// HTTP: what green serve's CPU per span would be if the server added
// nothing around decoding and Store.AddFrom; and, with the store still
// held after a collection, the live heap per span held. "receiver" decodes
// and stores as the OTLP receiver does (one Decoder reused from request to
// request, its spans pointing into the body, their attributes packed:
// DecodePacked, ConsumePackedSpans), "fresh" with SpansFromProto (memory
// of its own per request) and AddFrom. Run it once per process (a cold heap, as a
// fresh server has):
//
//	go test ./cmd/bench-ingest -run '^$' -bench 'DecodeStorePayload/receiver' -benchtime 1x
func BenchmarkDecodeStorePayload(b *testing.B) {
	p, err := generate(payloadShape{requests: 200, spansPerRequest: 5000, spansPerTrace: 250, openTraces: 50})
	if err != nil {
		b.Fatal(err)
	}
	dec := otlpdecode.NewDecoder()
	for _, road := range []struct {
		name  string
		store func(st *tracestore.Store, body []byte) (otelmap.AddResult, int, error)
	}{
		{"receiver", func(st *tracestore.Store, body []byte) (otelmap.AddResult, int, error) {
			spans, attrs, _, err := dec.DecodePacked(body)
			if err != nil {
				return otelmap.AddResult{}, 0, err
			}
			return st.ConsumePackedSpans(context.Background(), "bench", "", spans, attrs), len(spans), nil
		}},
		{"fresh", func(st *tracestore.Store, body []byte) (otelmap.AddResult, int, error) {
			spans, _, err := otlpdecode.SpansFromProto(body, otelmap.SourceOTLP)
			return st.AddFrom("bench", spans), len(spans), err
		}},
	} {
		b.Run(road.name, func(b *testing.B) {
			n := p.shape.spans()
			b.SetBytes(int64(p.bytes))
			var m0, held runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			cpu0 := cpuTime(b)
			start := time.Now()
			var st *tracestore.Store
			for b.Loop() {
				st = tracestore.NewStore(tracestore.Limits{MaxSpansPerTrace: p.shape.spansPerTrace, MaxTraces: p.shape.traces(), MaxAge: time.Hour,
					Admission: tracestore.AdmissionLimits{MaxTracesPerSource: p.shape.traces()}})
				for _, body := range p.bodies {
					res, n, err := road.store(st, body)
					if err != nil {
						b.Fatal(err)
					}
					if res.Accepted != n {
						b.Fatalf("store: %+v", res)
					}
				}
			}
			cpu, wall := cpuTime(b)-cpu0, time.Since(start)
			total := float64(n) * float64(b.N)
			b.ReportMetric(total/cpu.Seconds(), "spans/cpu-s")
			b.ReportMetric(total/wall.Seconds(), "spans/s")
			b.StopTimer()
			st0 := st
			runtime.GC()
			runtime.ReadMemStats(&held)
			b.ReportMetric(float64(int64(held.HeapAlloc)-int64(m0.HeapAlloc))/float64(n), "live-B/span")
			runtime.KeepAlive(st0)
		})
	}
	runtime.KeepAlive(p)
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	u, s, ok := cputime.Self()
	if !ok {
		b.Skip("no process CPU time here")
	}
	return u + s
}
