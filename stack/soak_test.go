package stack

import (
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/internal/testenv"
)

// The connector under load for a long time (issue 31, docs/collector.md,
// "Under load for hours"): bin/otelcol on collector-coordbench.yaml, with
// small bounds, fed at a steady rate copies of every trace of the corpus
// and of the generated teams, a fifth of them traces that never settle
// (agent calls no server answers), for -soak (10 minutes under CI=true, 3
// otherwise). Nothing is timed; what is asserted is counts and bounds:
//
//   - the hold stays within max_traces and max_spans at every look, and
//     the traces that never settle are evicted, each eviction counted
//     (otelcol_connector_coordbench_traces_evicted equals the records whose
//     completion is "evicted");
//   - every trace sent gets exactly one log record, no trace two; every
//     span sent is in its trace's record or counted late (a span of a
//     trace already assessed), and the connector's counters, its
//     coordbench.traces metric and the records agree;
//   - the collector's peak RSS levels off: once the hold has turned over,
//     it grows by at most a quarter however long the load goes on.
//
// go test -run TestCollectorSoak -soak 2h . (in stack/) soaks for longer.

var soakFor = flag.Duration("soak", 0, "how long TestCollectorSoak sends traces (0: 10m under CI=true, else 3m)")

// The soak's bounds and load.
const (
	soakMaxTraces = 300
	soakMaxSpans  = 10_000
	// soakSpansPerSecond is the steady rate the spans are sent at.
	soakSpansPerSecond = 1000
	// soakGeneratedCopies: each round sends every template once and the
	// generated teams this many times over (five of the six never settle).
	soakGeneratedCopies = 12
	// soakTurnovers: the load goes on, past its duration if need be, until
	// this many times max_traces traces were evicted after the first.
	soakTurnovers = 4
	// soakStragglerDelay is how many requests later a straggler comes:
	// 16 requests of 200 spans are about 220 traces, and at most
	// max_traces more are held, fewer than the 2 × max_traces trace ids
	// the connector remembers.
	soakStragglerDelay = 16
)

func soakDuration() time.Duration {
	switch {
	case *soakFor > 0:
		return *soakFor
	case os.Getenv("CI") == "true":
		return 10 * time.Minute
	}
	return 3 * time.Minute
}

func TestCollectorSoak(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the collector's peak RSS from Linux's /proc")
	}
	otelcol := toolBinary(t, "otelcol", "otelcol")
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		testenv.CheckNoGoroutineLeak(t, before)
	})
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x50a4))
	templates := tierTraceTemplates(t)
	var generated []tierTrace
	for _, tr := range templates {
		if tr.source == "generated" {
			generated = append(generated, tr)
		}
	}

	sink := newSoakSink()
	srv := httptest.NewServer(sink)
	t.Cleanup(srv.Close)
	col := startSoakCollector(t, otelcol, srv.URL)
	waitFor(t, "collector", 2*time.Minute, col.proc, otlpReady(col.http+"/v1/traces"))
	pid := col.proc.cmd.Process.Pid

	// Send round after round at the steady rate, looking at the hold, the
	// evictions and the peak RSS between requests.
	duration := soakDuration()
	sent := map[pcommon.TraceID]int{}
	var looks []soakLook
	look := func() soakLook {
		l := soakLook{at: time.Now()}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var err error
		for _, m := range []struct {
			name string
			into *float64
		}{
			{"otelcol_connector_coordbench_traces_held", &l.traces},
			{"otelcol_connector_coordbench_spans_held", &l.spans},
			{"otelcol_connector_coordbench_traces_evicted", &l.evicted},
		} {
			if *m.into, err = promCounter(ctx, col.telemetry, m.name); err != nil {
				t.Fatalf("the collector's telemetry: %v", err)
			}
		}
		if l.hwm, l.rss, err = peakRSS(pid); err != nil {
			t.Fatal(err)
		}
		if l.traces > soakMaxTraces || l.spans > soakMaxSpans {
			t.Errorf("the hold holds %v traces and %v spans, past max_traces %d or max_spans %d", l.traces, l.spans, soakMaxTraces, soakMaxSpans)
		}
		looks = append(looks, l)
		return l
	}
	began := time.Now()
	spans, requests, rounds := 0, 0, 0
	var stragglers []straggler
	send := func(td ptrace.Traces) {
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		postOTLP(t, col.http+"/v1/traces", body)
		spans += td.SpanCount()
		requests++
		// The steady rate: no faster than soakSpansPerSecond.
		if ahead := time.Duration(float64(spans)/soakSpansPerSecond*float64(time.Second)) - time.Since(began); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	firstEvicted := -1.0
	for {
		l := look()
		if firstEvicted < 0 && l.evicted > 0 {
			firstEvicted = l.evicted
		}
		enough := firstEvicted >= 0 && l.evicted-firstEvicted >= soakTurnovers*soakMaxTraces
		if time.Since(began) >= duration && enough {
			break
		}
		if time.Since(began) >= 2*duration {
			t.Fatalf("after %v (%d spans sent) %v traces evicted: the load never turned the hold over %d times; the machine or the collector is slower than the soak allows for",
				time.Since(began).Round(time.Second), spans, l.evicted, soakTurnovers)
		}
		round := append(freshCopies(rng, templates, 1), freshCopies(rng, generated, soakGeneratedCopies)...)
		rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		reqs, _ := interleave(rng, round, 40, 200)
		for _, tr := range round {
			sent[tr.id] = tr.count
		}
		for i, td := range reqs {
			stragglers = append(stragglers, holdBack(rng, td, requests+i+soakStragglerDelay)...)
		}
		for _, td := range reqs {
			send(td)
			for len(stragglers) > 0 && stragglers[0].at <= requests {
				send(stragglers[0].part)
				stragglers = stragglers[1:]
			}
		}
		rounds++
	}
	for _, s := range stragglers {
		send(s.part)
	}
	sending := time.Since(began)

	// Drained: nothing held (the last traces waited max_wait at most), every
	// trace assessed and counted, the cumulative metrics up to date.
	drainCtx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var assessed float64
	for {
		held, err := promCounter(drainCtx, col.telemetry, "otelcol_connector_coordbench_traces_held")
		if err == nil {
			assessed, err = promCounter(drainCtx, col.telemetry, "otelcol_connector_coordbench_traces_assessed")
		}
		if err != nil {
			t.Fatalf("drain: %v", err)
		}
		if held == 0 && float64(sink.recordCount()) == assessed && sink.tracesCounted() == assessed {
			break
		}
		select {
		case <-drainCtx.Done():
			t.Fatalf("drain: %v traces held, %v assessed, %d records, coordbench.traces %v", held, assessed, sink.recordCount(), sink.tracesCounted())
		case <-time.After(500 * time.Millisecond):
		}
	}
	final := look()

	// Every trace once; every span in its record or late.
	counters := map[string]float64{}
	for _, name := range []string{"otelcol_connector_coordbench_spans_late", "otelcol_connector_coordbench_spans_refused",
		"otelcol_connector_coordbench_spans_duplicate", "otelcol_connector_coordbench_emit_failed"} {
		v, err := promCounter(drainCtx, col.telemetry, name)
		if err != nil {
			t.Fatal(err)
		}
		counters[name] = v
	}
	records := sink.snapshot()
	totalSent, inRecords, lateExpected := 0, 0, 0
	byCompletion := map[string]int{}
	for id, n := range sent {
		totalSent += n
		r, ok := records[id]
		switch {
		case !ok:
			t.Errorf("trace %s (%d spans) sent, never assessed", id, n)
			continue
		case r.count != 1:
			t.Errorf("trace %s assessed %d times", id, r.count)
		case r.spans > n || r.spans < 1:
			t.Errorf("trace %s: %d spans sent, its record says %d", id, n, r.spans)
		}
		inRecords += r.spans
		lateExpected += n - r.spans
		byCompletion[r.completion]++
	}
	for id := range records {
		if _, ok := sent[id]; !ok {
			t.Errorf("a record for trace %s, which was not sent", id)
		}
	}
	if got := counters["otelcol_connector_coordbench_spans_late"]; got != float64(lateExpected) {
		t.Errorf("%d spans sent are in no record, the connector counted %v late", lateExpected, got)
	}
	for _, name := range []string{"otelcol_connector_coordbench_spans_refused", "otelcol_connector_coordbench_spans_duplicate", "otelcol_connector_coordbench_emit_failed"} {
		if counters[name] != 0 {
			t.Errorf("%s = %v, want 0", name, counters[name])
		}
	}
	if float64(len(records)) != assessed || float64(len(sent)) != assessed {
		t.Errorf("%d traces sent, %d with a record, %v assessed by the connector's count", len(sent), len(records), assessed)
	}
	// Evictions: counted, and each an evicted record.
	if final.evicted < soakTurnovers*soakMaxTraces || float64(byCompletion["evicted"]) != final.evicted {
		t.Errorf("%v evictions counted, %d records evicted: want them equal and at least %d", final.evicted, byCompletion["evicted"], soakTurnovers*soakMaxTraces)
	}
	if byCompletion["settled"] == 0 {
		t.Errorf("no trace settled: %v", byCompletion)
	}

	// The peak RSS levels off: from the look at which the hold had turned
	// over once after the first eviction to the end of the load.
	midAt := slices.IndexFunc(looks, func(l soakLook) bool { return l.evicted-firstEvicted >= soakMaxTraces })
	if firstEvicted < 0 || midAt < 0 {
		t.Fatalf("the hold never turned over")
	}
	mid := looks[midAt]
	end := looks[len(looks)-1]
	if end.hwm > mid.hwm+mid.hwm/4 {
		t.Errorf("peak RSS %d MB once the hold had turned over, %d MB at the end: it does not level off", mid.hwm>>20, end.hwm>>20)
	}
	t.Logf("%v of load (%d rounds, %d requests, %d spans of %d traces, %.0f spans/s), drained in %v; records: %v; %d spans in records, %d late",
		sending.Round(time.Second), rounds, requests, totalSent, len(sent), float64(spans)/sending.Seconds(),
		time.Since(began.Add(sending)).Round(time.Second), byCompletion, inRecords, lateExpected)
	t.Logf("peak RSS: %d MB at the first turnover (%d looks in), %d MB at the end (%d looks); RSS now %d MB; evictions %v",
		mid.hwm>>20, midAt, end.hwm>>20, len(looks), final.rss>>20, final.evicted)
}

// straggler is a part of a trace held back: sent once at requests were.
type straggler struct {
	at   int
	part ptrace.Traces
}

// holdBack takes out of req, for about one trace in twenty of it, that
// trace's spans, to be sent at request at: stragglers, which come after
// their trace may have been evicted (then they are late) or settled (then
// it was assessed without them: late too). soakStragglerDelay requests
// later, fewer traces have been assessed since than the connector
// remembers (2 × max_traces), so a straggler is never a new trace.
func holdBack(rng *rand.Rand, req ptrace.Traces, at int) []straggler {
	var ids []pcommon.TraceID
	for _, rs := range req.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				if !slices.Contains(ids, sp.TraceID()) {
					ids = append(ids, sp.TraceID())
				}
			}
		}
	}
	var out []straggler
	for _, id := range ids {
		if rng.IntN(20) != 0 {
			continue
		}
		part := ptrace.NewTraces()
		req.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
			mine := false
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					mine = mine || sp.TraceID() == id
				}
			}
			if mine {
				rs.CopyTo(part.ResourceSpans().AppendEmpty())
			}
			return mine
		})
		out = append(out, straggler{at: at, part: part})
	}
	return out
}

// soakLook is what one look between requests saw.
type soakLook struct {
	at            time.Time
	traces, spans float64 // held
	evicted       float64
	hwm, rss      int64 // the collector's VmHWM and VmRSS, bytes
}

// peakRSS reads a process's VmHWM and VmRSS.
func peakRSS(pid int) (hwm, rss int64, err error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0, fmt.Errorf("peak RSS: %w", err)
	}
	for line := range strings.Lines(string(raw)) {
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != "VmHWM:" && f[0] != "VmRSS:") {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("peak RSS: %q: %w", line, err)
		}
		if f[0] == "VmHWM:" {
			hwm = kb << 10
		} else {
			rss = kb << 10
		}
	}
	return hwm, rss, nil
}

// soakCollector is the collector under soak.
type soakCollector struct {
	proc      *process
	http      string
	telemetry string
}

// startSoakCollector runs bin on collector-coordbench.yaml with the soak's
// bounds, its metrics and records to sink, its spans there too (dropped).
func startSoakCollector(t *testing.T, bin, sink string) *soakCollector {
	t.Helper()
	overlay := filepath.Join(t.TempDir(), "soak.yaml")
	if err := os.WriteFile(overlay, []byte(fmt.Sprintf(`connectors:
  coordbench:
    max_traces: %d
    max_spans: %d
exporters:
  otlp_http/test:
    endpoint: %s
service:
  pipelines:
    metrics/coordbench:
      exporters: [otlp_http/test]
    logs/coordbench:
      exporters: [otlp_http/test]
`, soakMaxTraces, soakMaxSpans, sink)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &soakCollector{http: "http://127.0.0.1:" + strconv.Itoa(freePort(t))}
	port := strconv.Itoa(freePort(t))
	c.telemetry = "http://127.0.0.1:" + port + "/metrics"
	env := []string{
		"OTELCOL_GRPC_ENDPOINT=127.0.0.1:" + strconv.Itoa(freePort(t)),
		"OTELCOL_HTTP_ENDPOINT=" + strings.TrimPrefix(c.http, "http://"),
		"OTELCOL_TELEMETRY_HOST=127.0.0.1",
		"OTELCOL_TELEMETRY_PORT=" + port,
		"TRACES_OTLP_ENDPOINT=" + sink,
		// max_wait long enough that the traces that never settle fill the
		// hold and are evicted, not only timed out.
		"COORDBENCH_QUIET=2s",
		"COORDBENCH_MAX_WAIT=60s",
		"COORDBENCH_METRICS_FLUSH=1s",
	}
	c.proc = startProcess(t, "otelcol-soak", bin, []string{"--config", repoFile(t, coordbenchConfig), "--config", overlay}, env, "")
	return c
}

// soakSink is the soak's OTLP/HTTP backend: of the log records it keeps
// each trace's count, spans and completion, of the metrics the latest
// coordbench.traces total, and it drops the spans; so that hours of load
// do not pile up in the test.
type soakSink struct {
	mu      sync.Mutex
	records map[pcommon.TraceID]soakRecord
	n       int
	traces  float64
}

type soakRecord struct {
	count, spans int
	completion   string
}

func newSoakSink() *soakSink { return &soakSink{records: map[pcommon.TraceID]soakRecord{}} }

func (s *soakSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	var resp interface{ MarshalProto() ([]byte, error) }
	switch r.URL.Path {
	case "/v1/traces":
		resp = ptraceotlp.NewExportResponse()
	case "/v1/logs":
		req := plogotlp.NewExportRequest()
		if err := req.UnmarshalProto(raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.addRecords(req)
		resp = plogotlp.NewExportResponse()
	case "/v1/metrics":
		req := pmetricotlp.NewExportRequest()
		if err := req.UnmarshalProto(raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.addMetrics(req.Metrics())
		resp = pmetricotlp.NewExportResponse()
	default:
		http.NotFound(w, r)
		return
	}
	out, _ := resp.MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (s *soakSink) addRecords(req plogotlp.ExportRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rl := range req.Logs().ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				rec := s.records[lr.TraceID()]
				rec.count++
				if v, ok := lr.Attributes().Get("coordbench.trace.spans"); ok {
					rec.spans = int(v.Int())
				}
				if v, ok := lr.Attributes().Get("coordbench.trace.completion"); ok {
					rec.completion = v.Str()
				}
				s.records[lr.TraceID()] = rec
				s.n++
			}
		}
	}
}

// addMetrics keeps the coordbench.traces total of the latest export that
// has it (cumulative: the latest is the total).
func (s *soakSink) addMetrics(md pmetric.Metrics) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != "coordbench.traces" || m.Type() != pmetric.MetricTypeSum {
					continue
				}
				total := 0.0
				for _, dp := range m.Sum().DataPoints().All() {
					total += float64(dp.IntValue())
				}
				s.traces = total
			}
		}
	}
}

func (s *soakSink) recordCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *soakSink) tracesCounted() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.traces
}

func (s *soakSink) snapshot() map[pcommon.TraceID]soakRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[pcommon.TraceID]soakRecord, len(s.records))
	for k, v := range s.records {
		out[k] = v
	}
	return out
}
