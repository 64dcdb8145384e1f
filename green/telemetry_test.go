package green

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/otelmap/sdkbridge"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/tracedata"
)

// otlpBackend is a loopback OTLP/HTTP backend: traces go into coordbench's
// own receiver, metrics are decoded with pdata and kept.
type otlpBackend struct {
	store   *tracestore.Store
	mu      sync.Mutex
	metrics []pmetric.Metrics
}

func startOTLPBackend(t *testing.T) (*otlpBackend, string) {
	t.Helper()
	b := &otlpBackend{store: tracestore.NewStore(tracestore.Limits{})}
	mux := http.NewServeMux()
	mux.Handle("/v1/traces", otlpreceiver.NewReceiver(b.store, otlpreceiver.ReceiverLimits{}))
	mux.HandleFunc("/v1/metrics", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := pmetricotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		b.metrics = append(b.metrics, req.Metrics())
		b.mu.Unlock()
		out, _ := pmetricotlp.NewExportResponse().MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return b, srv.URL
}

// gaugePoints returns the evaluation gauge's points as
// "evaluator/metric/task" -> value.
func (b *otlpBackend) gaugePoints() map[string]float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	points := map[string]float64{}
	for _, md := range b.metrics {
		rms := md.ResourceMetrics()
		for i := range rms.Len() {
			sms := rms.At(i).ScopeMetrics()
			for j := range sms.Len() {
				ms := sms.At(j).Metrics()
				for k := range ms.Len() {
					m := ms.At(k)
					if m.Name() != MetricEvaluation || m.Type() != pmetric.MetricTypeGauge {
						continue
					}
					dps := m.Gauge().DataPoints()
					for p := range dps.Len() {
						dp := dps.At(p)
						key := attrString(dp.Attributes(), "coordbench.evaluator") + "/" +
							attrString(dp.Attributes(), "coordbench.metric") + "/" +
							attrString(dp.Attributes(), "coordbench.task.id")
						points[key] = dp.DoubleValue()
					}
				}
			}
		}
	}
	return points
}

func attrString(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok {
		return v.AsString()
	}
	return ""
}

// telemetryTestTrace is a small trace: a coordinator calling two reviewers.
func telemetryTestTrace() *tracedata.TraceData {
	t0 := time.Unix(1_700_000_000, 0).UTC()
	step := func(id, parent, agent, caller string, startMS, endMS int) tracedata.Step {
		return tracedata.Step{
			StepID: id, TraceID: "t", ParentStepID: parent, CallType: tracedata.CallAgent,
			Name: "invoke_agent " + agent, Agent: agent, Caller: caller,
			StartTime: t0.Add(time.Duration(startMS) * time.Millisecond),
			EndTime:   t0.Add(time.Duration(endMS) * time.Millisecond),
			LatencyMS: float64(endMS - startMS), Latency: int64(endMS - startMS),
			Output: agent + " reviewed the paper",
		}
	}
	return &tracedata.TraceData{
		TraceID: "t",
		Steps: []tracedata.Step{
			step("a", "", "coordinator", "user", 0, 100),
			step("b", "a", "reviewer-1", "coordinator", 10, 60),
			step("c", "a", "reviewer-2", "coordinator", 10, 90),
		},
		Agents: []tracedata.Agent{{Name: "coordinator", Steps: 1}, {Name: "reviewer-1", Steps: 1}, {Name: "reviewer-2", Steps: 1}},
		Interactions: []tracedata.Interaction{
			{From: "coordinator", To: "reviewer-1", Count: 1, LatenciesMS: []float64{50}, BothSides: 1},
			{From: "coordinator", To: "reviewer-2", Count: 1, LatenciesMS: []float64{80}, BothSides: 1},
		},
		Coverage: tracedata.Coverage{Interactions: 2, BothSides: 2, Complete: 1},
	}
}

func TestEvaluationsLeaveAsOTLP(t *testing.T) {
	backend, url := startOTLPBackend(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
	ctx := context.Background()
	p, err := sdkbridge.NewProviders(ctx, sdkbridge.ProviderOptions{ServiceName: "coordbench-green"})
	if err != nil {
		t.Fatal(err)
	}
	if !p.ExportingTraces || !p.ExportingMetrics {
		t.Fatalf("exporting traces=%v metrics=%v, want both with an endpoint set", p.ExportingTraces, p.ExportingMetrics)
	}
	tel, err := NewEvalTelemetry(p.Tracer, p.Meter)
	if err != nil {
		t.Fatal(err)
	}
	registry := evals.NewRegistry(evals.Options{})
	rep := registry.Run(ctx, telemetryTestTrace(), evals.Inputs{}, tel.Observer("task-1"))
	if len(rep.Errors) > 0 {
		t.Fatalf("evaluator errors: %v", rep.Errors)
	}
	if err := p.Shutdown(ctx); err != nil { // flushes both signals
		t.Fatal(err)
	}

	points := backend.gaugePoints()
	for _, name := range registry.Names() {
		headline := rep.Results[name].Headline()
		if len(headline) == 0 {
			continue
		}
		for k, want := range headline {
			got, ok := points[name+"/"+k+"/task-1"]
			if !ok {
				t.Errorf("metric point %s/%s missing; have %v", name, k, points)
				continue
			}
			if got != want {
				t.Errorf("metric %s/%s = %v, want %v", name, k, got, want)
			}
		}
	}

	// One HOST span per evaluator, carrying its headline numbers.
	evaluatorSpans := map[string]otelmap.Span{}
	for _, id := range backend.store.TraceIDs() {
		for _, s := range backend.store.Spans(id) {
			if v, ok := s.Attr(otelmap.AttrEvaluator); ok {
				evaluatorSpans[v.AsString()] = s
			}
		}
	}
	for _, name := range registry.Names() {
		s, ok := evaluatorSpans[name]
		if !ok {
			t.Errorf("no span for evaluator %s", name)
			continue
		}
		if s.Name != otelmap.SpanEvaluatorPrefix+name {
			t.Errorf("span name %q", s.Name)
		}
		if v, _ := s.Attr(otelmap.AttrCallType); v.AsString() != string(tracedata.CallHost) {
			t.Errorf("evaluator span %s call type %q, want HOST", name, v.AsString())
		}
		for k := range rep.Results[name].Headline() {
			if _, ok := s.Attr(attribute.Key("coordbench." + name + "." + k)); !ok {
				t.Errorf("evaluator span %s lacks headline attribute %s", name, k)
			}
		}
	}
}

func TestNothingExportedWithoutEndpoint(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		t.Setenv(k, "")
	}
	store := tracestore.NewStore(tracestore.Limits{})
	p, err := sdkbridge.NewProviders(context.Background(), sdkbridge.ProviderOptions{ServiceName: "g", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	if p.ExportingTraces || p.ExportingMetrics {
		t.Fatalf("exporting traces=%v metrics=%v with no endpoint", p.ExportingTraces, p.ExportingMetrics)
	}
	// The in-process road still records.
	_, span := p.Tracer.Tracer("t").Start(context.Background(), "x")
	span.End()
	if got := store.Stats().Spans; got != 1 {
		t.Fatalf("store holds %d spans, want the one recorded in process", got)
	}
}

func TestExporterSwitchedOff(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	p, err := sdkbridge.NewProviders(context.Background(), sdkbridge.ProviderOptions{ServiceName: "g"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	if p.ExportingTraces || p.ExportingMetrics {
		t.Fatal("OTEL_*_EXPORTER=none must switch exporting off")
	}
}
