package stack

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/report"
)

// collector-coordbench.yaml, the coordbench connector in the Collector
// distribution tools/otelcol builds: the file validates, and the real
// collector, fed real OTLP captures over HTTP, emits one log record per
// trace carrying green assess's task JSON, the metrics that tally those
// records, and passes the spans on.

// coordbenchConfig is the documented connector pipeline.
const coordbenchConfig = "collector-coordbench.yaml"

func TestCoordbenchConfigValidates(t *testing.T) {
	bin := toolBinary(t, "otelcol", "otelcol")
	config := repoFile(t, coordbenchConfig)

	cmd := exec.Command(bin, "validate", "--config", config)
	cmd.Env = scrubbedEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("otelcol validate: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "deprecated") {
		t.Errorf("otelcol validate warns:\n%s", out)
	}

	// validate reaches the connector's own Validate: settings it refuses
	// are refused with its message, through the file's env variables.
	for env, want := range map[string]string{
		"COORDBENCH_QUIET=0s":                "quiet must be positive",
		"COORDBENCH_MAX_WAIT=1s":             "quiet (2s) must be shorter than max_wait (1s)",
		"COORDBENCH_METRICS_FLUSH=-1s":       "metrics_flush_interval must be positive",
		"COORDBENCH_QUIET=soon":              "quiet",
		"OTELCOL_DEBUG_VERBOSITY=everything": "verbosity",
	} {
		cmd := exec.Command(bin, "validate", "--config", config)
		cmd.Env = append(scrubbedEnv(), env)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("otelcol validate with %s: err %v, want an error naming %q:\n%s", env, err, want, out)
		}
	}
}

// otlpSink is an OTLP/HTTP backend for the test: it takes traces, metrics
// and logs (protobuf, gzip or not) as the Collector's otlphttp exporter
// sends them and keeps them decoded by pdata.
type otlpSink struct {
	mu      sync.Mutex
	traces  []ptrace.Traces
	metrics []pmetric.Metrics
	logs    []plog.Logs
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "content type "+ct+", want application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var resp interface{ MarshalProto() ([]byte, error) }
	switch r.URL.Path {
	case "/v1/traces":
		req := ptraceotlp.NewExportRequest()
		if err = req.UnmarshalProto(raw); err == nil {
			s.traces = append(s.traces, req.Traces())
		}
		resp = ptraceotlp.NewExportResponse()
	case "/v1/metrics":
		req := pmetricotlp.NewExportRequest()
		if err = req.UnmarshalProto(raw); err == nil {
			s.metrics = append(s.metrics, req.Metrics())
		}
		resp = pmetricotlp.NewExportResponse()
	case "/v1/logs":
		req := plogotlp.NewExportRequest()
		if err = req.UnmarshalProto(raw); err == nil {
			s.logs = append(s.logs, req.Logs())
		}
		resp = plogotlp.NewExportResponse()
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, _ := resp.MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// records are the log records received so far.
func (s *otlpSink) records() []plog.LogRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []plog.LogRecord
	for _, ld := range s.logs {
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

// spanCount is how many spans of the traces received so far have the
// given trace ids.
func (s *otlpSink) spanCount(ids map[pcommon.TraceID]int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, td := range s.traces {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			sss := td.ResourceSpans().At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					if _, ok := ids[spans.At(k).TraceID()]; ok {
						n++
					}
				}
			}
		}
	}
	return n
}

// lastSums is, for each sum metric named in names, its data points by
// their attributes (as JSON) in the latest export that has the metric:
// the metrics are cumulative, so the latest is the total.
func (s *otlpSink) lastSums(names ...string) map[string]map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]map[string]float64{}
	for _, md := range s.metrics {
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			rm := md.ResourceMetrics().At(i)
			for j := 0; j < rm.ScopeMetrics().Len(); j++ {
				ms := rm.ScopeMetrics().At(j).Metrics()
				for k := 0; k < ms.Len(); k++ {
					m := ms.At(k)
					if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+m.Name()+" ") || m.Type() != pmetric.MetricTypeSum {
						continue
					}
					points := map[string]float64{}
					dps := m.Sum().DataPoints()
					for p := 0; p < dps.Len(); p++ {
						dp := dps.At(p)
						key, _ := json.Marshal(dp.Attributes().AsRaw())
						v := dp.DoubleValue()
						if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
							v = float64(dp.IntValue())
						}
						points[string(key)] += v
					}
					out[m.Name()] = points
				}
			}
		}
	}
	return out
}

// resourceNames are the service.name values of the metrics' resources.
func (s *otlpSink) resourceNames() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	for _, md := range s.metrics {
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			v, _ := md.ResourceMetrics().At(i).Resource().Attributes().Get("service.name")
			out[v.AsString()] = true
		}
	}
	return out
}

func TestCoordbenchCollectorAssessesTraces(t *testing.T) {
	bin := toolBinary(t, "otelcol", "otelcol")

	// Two real captures of framework runs: A2A calls between agents in
	// separate processes.
	fixtures := []string{
		filepath.Join(repoRoot(t), "otelmap/assemble/testdata/frameworks/a2a-python-sdk.otlp.json"),
		filepath.Join(repoRoot(t), "otelmap/assemble/testdata/frameworks/google-adk-remote-a2a.otlp.json"),
	}
	var batches []ptrace.Traces
	spansOf := map[pcommon.TraceID]int{}
	for _, f := range fixtures {
		b, err := otlpdecode.ReadOTLPJSONFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, td := range b {
			for i := 0; i < td.ResourceSpans().Len(); i++ {
				sss := td.ResourceSpans().At(i).ScopeSpans()
				for j := 0; j < sss.Len(); j++ {
					spans := sss.At(j).Spans()
					for k := 0; k < spans.Len(); k++ {
						spansOf[spans.At(k).TraceID()]++
					}
				}
			}
		}
		batches = append(batches, b...)
	}
	totalSpans := 0
	for _, n := range spansOf {
		totalSpans += n
	}

	// What green assess says of the same files, with the evaluators the
	// connector runs (no LLM judge).
	want := map[string]report.TaskResult{}
	for _, f := range fixtures {
		res, err := green.AssessOTLPFiles(t.Context(), []string{f}, green.OfflineOptions{Evaluators: evals.NewRegistry(evals.Options{})})
		if err != nil {
			t.Fatalf("green assess %s: %v", f, err)
		}
		for _, tr := range res.Tasks {
			want[tr.TraceID] = tr
		}
	}

	sink := &otlpSink{}
	srv := httptest.NewServer(sink)
	t.Cleanup(srv.Close)

	// The documented file as it is, plus an overlay that adds an OTLP
	// exporter to the sink beside debug in the connector's pipelines (a
	// later --config merges into the earlier; lists are replaced).
	overlay := filepath.Join(t.TempDir(), "overlay.yaml")
	if err := os.WriteFile(overlay, []byte(`exporters:
  otlp_http/test:
    endpoint: `+srv.URL+`
service:
  pipelines:
    metrics/coordbench:
      exporters: [debug, otlp_http/test]
    logs/coordbench:
      exporters: [debug, otlp_http/test]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	httpURL := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	telemetryPort := strconv.Itoa(freePort(t))
	env := []string{
		"OTELCOL_GRPC_ENDPOINT=127.0.0.1:" + strconv.Itoa(freePort(t)),
		"OTELCOL_HTTP_ENDPOINT=" + strings.TrimPrefix(httpURL, "http://"),
		"OTELCOL_TELEMETRY_HOST=127.0.0.1",
		"OTELCOL_TELEMETRY_PORT=" + telemetryPort,
		"TRACES_OTLP_ENDPOINT=" + srv.URL,
		// Short waits so the test does not idle; the rule is the same.
		"COORDBENCH_QUIET=500ms",
		"COORDBENCH_MAX_WAIT=20s",
		"COORDBENCH_METRICS_FLUSH=1s",
	}
	proc := startProcess(t, "otelcol", bin, []string{"--config", repoFile(t, coordbenchConfig), "--config", overlay}, env, "")
	waitFor(t, "collector", 60*time.Second, proc, otlpReady(httpURL+"/v1/traces"))

	// The captures, sent as an SDK would: OTLP/HTTP protobuf, batch by batch.
	sendBatches(t, httpURL+"/v1/traces", batches)

	// One record per trace, each trace once.
	waitFor(t, "a log record per trace", 120*time.Second, proc, func(context.Context) error {
		if n := len(sink.records()); n < len(spansOf) {
			return fmt.Errorf("%d of %d records: %w", n, len(spansOf), errNotYet)
		}
		return nil
	})
	recs := sink.records()
	if len(recs) != len(spansOf) {
		t.Fatalf("%d log records for %d traces", len(recs), len(spansOf))
	}
	seen := map[pcommon.TraceID]bool{}
	tally := map[string]float64{} // coordbench.traces by its attributes, from the records
	compared := 0
	for _, rec := range recs {
		id := pcommon.TraceID(rec.TraceID())
		if _, ok := spansOf[id]; !ok || seen[id] {
			t.Fatalf("record for trace %s: sent %v, seen before %v", id, ok, seen[id])
		}
		seen[id] = true
		attrs := rec.Attributes().AsRaw()
		if rec.EventName() != "coordbench.trace.assessed" || attrs["coordbench.schema"] != report.Schema {
			t.Errorf("trace %s: event %q, attributes %v", id, rec.EventName(), attrs)
		}
		if got, _ := attrs["coordbench.trace.spans"].(int64); int(got) != spansOf[id] {
			t.Errorf("trace %s: record says %v spans, %d were sent (not whole)", id, attrs["coordbench.trace.spans"], spansOf[id])
		}
		key, _ := json.Marshal(map[string]any{
			"coordbench.graph.label":      attrs["coordbench.graph.label"],
			"coordbench.evidence.level":   attrs["coordbench.evidence.level"],
			"coordbench.trace.completion": attrs["coordbench.trace.completion"],
		})
		tally[string(key)]++

		var got report.TaskResult
		if err := json.Unmarshal([]byte(rec.Body().Str()), &got); err != nil {
			t.Fatalf("trace %s: body is not a task result: %v\n%s", id, err, rec.Body().Str())
		}
		if got.TraceID != id.String() {
			t.Errorf("record's trace id %s, body's %s", id, got.TraceID)
		}
		if attrs["coordbench.trace.completion"] != "settled" {
			t.Logf("trace %s: completion %v, not compared", id, attrs["coordbench.trace.completion"])
			continue
		}
		wantTask, ok := want[got.TraceID]
		if !ok {
			t.Fatalf("trace %s assessed by the collector, not by green assess", got.TraceID)
		}
		if strings.Contains(string(mustJSON(t, wantTask)), "ran as separate traces") {
			// A fragment of a conversation split across traces: green
			// assess sees the other fragments (docs/collector.md).
			t.Logf("trace %s: a fragment of a split conversation, not compared", id)
			continue
		}
		if g, w := mustJSON(t, got), mustJSON(t, wantTask); !bytes.Equal(g, w) {
			t.Errorf("trace %s: collector and green assess differ\ncollector: %s\ngreen:     %s", id, g, w)
		}
		compared++
	}
	if compared == 0 {
		t.Fatal("no trace settled and compared with green assess")
	}
	t.Logf("%d traces assessed, %d compared byte for byte with green assess", len(recs), compared)

	// The metrics tally the same traces; agent calls were counted.
	waitFor(t, "the traces counter", 60*time.Second, proc, func(context.Context) error {
		sums := sink.lastSums("coordbench.traces")
		total := 0.0
		for _, v := range sums["coordbench.traces"] {
			total += v
		}
		if total < float64(len(recs)) {
			return fmt.Errorf("coordbench.traces = %v of %d: %w", total, len(recs), errNotYet)
		}
		return nil
	})
	sums := sink.lastSums("coordbench.traces", "coordbench.agent.calls")
	if g, w := mustJSON(t, sums["coordbench.traces"]), mustJSON(t, tally); !bytes.Equal(g, w) {
		t.Errorf("coordbench.traces %s, the records tally %s", g, w)
	}
	calls := 0.0
	for series, v := range sums["coordbench.agent.calls"] {
		if !strings.Contains(series, `"coordbench.call.caller"`) || !strings.Contains(series, `"coordbench.call.callee"`) {
			t.Errorf("call series without caller and callee: %s", series)
		}
		calls += v
	}
	if calls == 0 {
		t.Errorf("no agent call counted in A2A captures: %v", sums["coordbench.agent.calls"])
	}
	if names := sink.resourceNames(); !names["coordbench"] {
		t.Errorf("metrics resources' service.name %v, want coordbench", names)
	}

	// The spans went on, unchanged in number, to the traces exporter.
	waitFor(t, "spans at the traces exporter", 60*time.Second, proc, func(context.Context) error {
		if n := sink.spanCount(spansOf); n < totalSpans {
			return fmt.Errorf("%d of %d spans: %w", n, totalSpans, errNotYet)
		}
		return nil
	})
	if n := sink.spanCount(spansOf); n != totalSpans {
		t.Errorf("%d spans passed on, %d sent", n, totalSpans)
	}

	// A sender that retries everything after the traces were assessed (an
	// exporter's retry, a replay) gets no second assessment: the spans are
	// counted late, and the records stay one per trace.
	sendBatches(t, httpURL+"/v1/traces", batches)
	metricsURL := "http://127.0.0.1:" + telemetryPort + "/metrics"
	waitFor(t, "the resent spans counted late", 60*time.Second, proc, func(ctx context.Context) error {
		late, err := promCounter(ctx, metricsURL, "otelcol_connector_coordbench_spans_late")
		if err != nil {
			return err
		}
		if late < float64(totalSpans) {
			return fmt.Errorf("%v of %d spans late: %w", late, totalSpans, errNotYet)
		}
		return nil
	})
	if n := len(sink.records()); n != len(spansOf) {
		t.Errorf("%d log records after a resend, want %d (one per trace)", n, len(spansOf))
	}
}

// sendBatches posts each batch to an OTLP/HTTP traces URL as protobuf.
func sendBatches(t *testing.T, url string, batches []ptrace.Traces) {
	t.Helper()
	for _, td := range batches {
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err != nil {
			t.Fatalf("send to the collector: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("send to the collector: %s", resp.Status)
		}
	}
}

// promCounter sums the samples of a counter (whatever suffixes and labels
// the Prometheus exporter gives it) on a Prometheus text endpoint.
func promCounter(ctx context.Context, url, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", url, err)
	}
	sum := 0.0
	for line := range strings.Lines(string(raw)) {
		if !strings.HasPrefix(line, name+"_total") && !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: sample %q: %w", url, line, err)
		}
		sum += v
	}
	return sum, nil
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
