package stack

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
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
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/protobuf/encoding/protowire"

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
	soakMaxTraces = 200
	soakMaxSpans  = 5_000
	// soakSpansPerSecond is the steady rate the spans are sent at.
	soakSpansPerSecond = 500
	// soakGeneratedCopies: each round sends every template once and the
	// generated teams this many times over (five of the six never settle).
	soakGeneratedCopies = 24
	// soakTurnovers: the load goes on, past its duration if need be, until
	// this many times max_traces traces were evicted after the first.
	soakTurnovers = 4
	// soakStragglerDelay is how many requests later a straggler comes:
	// 10 requests of 200 spans are fewer than 130 traces, and at most
	// max_traces more are held: fewer than the 2 × max_traces trace ids
	// the connector remembers.
	soakStragglerDelay = 10
)

func soakDuration() time.Duration {
	switch {
	case *soakFor > 0:
		return *soakFor
	case testenv.CI():
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
	// One round of the load is built and encoded once; every round sends
	// its bytes under fresh trace ids.
	round := newSoakRound(t, rng, append(freshCopies(rng, templates, 1), freshCopies(rng, generated, soakGeneratedCopies)...))
	t.Logf("a round: %d traces, %d spans, %d requests and %d stragglers", len(round.counts), round.spans, round.regular, len(round.bodies)-round.regular)
	began := time.Now()
	spans, requests, rounds := 0, 0, 0
	send := func(body []byte, n int) {
		postOTLP(t, col.http+"/v1/traces", body)
		spans += n
		requests++
		// The steady rate: no faster than soakSpansPerSecond.
		if ahead := time.Duration(float64(spans)/soakSpansPerSecond*float64(time.Second)) - time.Since(began); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	type due struct {
		at    int // after the round's regular request at, counted over all rounds
		body  []byte
		spans int
	}
	var stragglers []due
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
		if time.Since(began) >= 3*duration {
			t.Fatalf("after %v (%d spans sent) %v traces evicted: the load never turned the hold over %d times; the machine or the collector is slower than the soak allows for",
				time.Since(began).Round(time.Second), spans, l.evicted, soakTurnovers)
		}
		ids := make([]pcommon.TraceID, len(round.counts))
		for k := range ids {
			for ids[k].IsEmpty() || sent[ids[k]] > 0 {
				for i := range ids[k] {
					ids[k][i] = byte(rng.UintN(256))
				}
			}
			sent[ids[k]] = round.counts[k]
		}
		base := rounds * round.regular
		for _, b := range round.bodies[round.regular:] {
			stragglers = append(stragglers, due{at: base + b.after, body: b.with(ids), spans: b.spans})
		}
		slices.SortStableFunc(stragglers, func(a, b due) int { return a.at - b.at })
		for i, b := range round.bodies[:round.regular] {
			send(b.with(ids), b.spans)
			for len(stragglers) > 0 && stragglers[0].at <= base+i {
				send(stragglers[0].body, stragglers[0].spans)
				stragglers = stragglers[1:]
			}
		}
		rounds++
	}
	for _, s := range stragglers {
		send(s.body, s.spans)
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

// soakRound is one round of the load, encoded once: its requests, then
// its stragglers, each with where in its bytes every trace id sits, so
// that each round goes out under fresh trace ids without building and
// encoding its spans again (in the race-built test held to a tenth of a
// core, that was most of the soak's time).
type soakRound struct {
	bodies  []soakBody
	regular int   // bodies[:regular] are the requests, the rest stragglers
	counts  []int // the spans of each trace, by its index
	spans   int
}

type soakBody struct {
	raw   []byte
	ids   []idAt
	spans int
	// after (a straggler): sent after the round's request of this index,
	// which may be past the round's end (then in the next round).
	after int
}

// idAt is a trace id in a body: where, and which trace.
type idAt struct{ off, trace int }

// with returns the body's bytes with every trace id k replaced by ids[k].
func (b soakBody) with(ids []pcommon.TraceID) []byte {
	out := slices.Clone(b.raw)
	for _, at := range b.ids {
		copy(out[at.off:], ids[at.trace][:])
	}
	return out
}

// newSoakRound lays traces out as interleave does and holds back, for
// about one trace in twenty of a request, that trace's spans of the
// request, to be sent soakStragglerDelay requests later: stragglers, which
// often come after their trace was evicted (then they are late) or settled
// (assessed without them: late too). By then fewer traces have been
// assessed than the 2 × max_traces ids the connector remembers, so a
// straggler is never a new trace.
func newSoakRound(t *testing.T, rng *rand.Rand, traces []tierTrace) soakRound {
	t.Helper()
	rng.Shuffle(len(traces), func(i, j int) { traces[i], traces[j] = traces[j], traces[i] })
	index := map[pcommon.TraceID]int{}
	r := soakRound{counts: make([]int, len(traces))}
	for k, tr := range traces {
		index[tr.id] = k
		r.counts[k] = tr.count
		r.spans += tr.count
	}
	reqs, _ := interleave(rng, traces, 40, 200)
	type held struct {
		after int
		part  ptrace.Traces
	}
	var later []held
	for i, req := range reqs {
		var inReq []pcommon.TraceID
		forEachSpan(req, func(sp ptrace.Span) {
			if !slices.Contains(inReq, sp.TraceID()) {
				inReq = append(inReq, sp.TraceID())
			}
		})
		for _, id := range inReq {
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
			later = append(later, held{after: i + soakStragglerDelay, part: part})
		}
	}
	encode := func(td ptrace.Traces, after int) soakBody {
		raw, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		b := soakBody{raw: raw, spans: td.SpanCount(), after: after}
		// Every trace id of the round in the bytes: the spans' and their
		// links' (which name traces of the same copy). Ids are random 16
		// bytes: they occur nowhere else.
		for id, k := range index {
			for from := 0; ; {
				at := bytes.Index(raw[from:], id[:])
				if at < 0 {
					break
				}
				b.ids = append(b.ids, idAt{off: from + at, trace: k})
				from += at + len(id)
			}
		}
		return b
	}
	for _, req := range reqs {
		if req.SpanCount() > 0 {
			r.bodies = append(r.bodies, encode(req, 0))
		}
	}
	r.regular = len(r.bodies)
	for _, h := range later {
		r.bodies = append(r.bodies, encode(h.part, min(h.after, r.regular+soakStragglerDelay)))
	}
	return r
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
    max_spans_per_trace: %d
exporters:
  otlp_http/test:
    endpoint: %s
    compression: none
service:
  pipelines:
    metrics/coordbench:
      exporters: [otlp_http/test]
    logs/coordbench:
      exporters: [otlp_http/test]
`, soakMaxTraces, soakMaxSpans, soakMaxSpans, sink)), 0o644); err != nil {
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
	if r.URL.Path == "/v1/traces" { // the spans passed on: dropped unread
		_, _ = io.Copy(io.Discard, r.Body)
		out, _ := ptraceotlp.NewExportResponse().MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
		return
	}
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
	case "/v1/logs":
		if err := s.addRecords(raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
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

// addRecords tallies the log records of an OTLP logs request: their
// trace ids and their coordbench.trace.spans and .completion attributes,
// read from the protobuf without decoding the rest (the bodies, 5 to 20 KB
// of task JSON each, which pdata would copy: in the race-built test that
// was much of the soak's time). TestSoakSinkReadsRecords holds it to
// pdata's decoding.
func (s *soakSink) addRecords(raw []byte) error {
	var recs []soakLogRecord
	err := eachField(raw, func(num protowire.Number, v []byte) error { // ExportLogsServiceRequest
		if num != 1 {
			return nil
		}
		return eachField(v, func(num protowire.Number, v []byte) error { // ResourceLogs
			if num != 2 {
				return nil
			}
			return eachField(v, func(num protowire.Number, v []byte) error { // ScopeLogs
				if num != 2 {
					return nil
				}
				rec, err := readLogRecord(v)
				recs = append(recs, rec)
				return err
			})
		})
	})
	if err != nil {
		return fmt.Errorf("logs request: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		rec := s.records[r.trace]
		rec.count++
		rec.spans, rec.completion = r.spans, r.completion
		s.records[r.trace] = rec
		s.n++
	}
	return nil
}

type soakLogRecord struct {
	trace      pcommon.TraceID
	spans      int
	completion string
}

// readLogRecord reads a LogRecord's trace id (field 9) and, among its
// attributes (field 6, KeyValue: key 1, value 2, an AnyValue: string 1,
// int 3), coordbench.trace.spans and coordbench.trace.completion.
func readLogRecord(raw []byte) (soakLogRecord, error) {
	var r soakLogRecord
	err := eachField(raw, func(num protowire.Number, v []byte) error {
		switch num {
		case 9:
			if len(v) != len(r.trace) {
				return fmt.Errorf("trace id of %d bytes", len(v))
			}
			copy(r.trace[:], v)
		case 6:
			var key string
			var str []byte
			var n uint64
			err := eachField(v, func(num protowire.Number, v []byte) error {
				switch num {
				case 1:
					key = string(v)
				case 2:
					return eachField(v, func(num protowire.Number, v []byte) error {
						switch num {
						case 1:
							str = v
						case 3:
							var k int
							if n, k = protowire.ConsumeVarint(v); k < 0 {
								return protowire.ParseError(k)
							}
						}
						return nil
					})
				}
				return nil
			})
			switch key {
			case "coordbench.trace.spans":
				r.spans = int(n)
			case "coordbench.trace.completion":
				r.completion = string(str)
			}
			return err
		}
		return nil
	})
	return r, err
}

// eachField calls fn with each field of a protobuf message: its number and
// its bytes (a length-delimited field's contents; a varint's encoding).
func eachField(raw []byte, fn func(num protowire.Number, v []byte) error) error {
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return protowire.ParseError(n)
		}
		raw = raw[n:]
		var v []byte
		switch typ {
		case protowire.BytesType:
			b, m := protowire.ConsumeBytes(raw)
			if m < 0 {
				return protowire.ParseError(m)
			}
			v, n = b, m
		default:
			n = protowire.ConsumeFieldValue(num, typ, raw)
			if n < 0 {
				return protowire.ParseError(n)
			}
			v = raw[:n]
		}
		raw = raw[n:]
		if err := fn(num, v); err != nil {
			return err
		}
	}
	return nil
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

// TestSoakSinkReadsRecords: the soak's sink reads from a logs request the
// trace ids, spans and completions pdata decodes, from records shaped as
// the connector's (a large body, attributes of several types, the ones it
// reads among them, in any order) and from records without them.
func TestSoakSinkReadsRecords(t *testing.T) {
	ld := plog.NewLogs()
	want := map[pcommon.TraceID]soakRecord{}
	for r := range 3 {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", "coordbench")
		rl.Resource().Attributes().PutInt("coordbench.trace.spans", 999) // not a record's
		for s := range 2 {
			sl := rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName("scope")
			for k := range 4 {
				rec := sl.LogRecords().AppendEmpty()
				id := pcommon.TraceID{byte(r), byte(s), byte(k), 0xab}
				rec.SetTraceID(id)
				rec.SetSpanID(pcommon.SpanID{1})
				rec.SetTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + k))
				rec.Body().SetStr(strings.Repeat(`{"steps":[]}`, 1000*k))
				a := rec.Attributes()
				if k == 3 {
					a.PutStr("other", "no spans or completion")
					want[id] = soakRecord{count: 1}
					continue
				}
				completion := []string{"settled", "evicted", "max_wait"}[k]
				if k%2 == 0 {
					a.PutStr("coordbench.trace.completion", completion)
				}
				a.PutStr("coordbench.schema", "coordbench.result/v2")
				a.PutDouble("a.double", 0.5)
				a.PutEmptySlice("a.slice").AppendEmpty().SetInt(7)
				a.PutInt("coordbench.trace.spans", int64(10*k+r+1))
				if k%2 == 1 {
					a.PutStr("coordbench.trace.completion", completion)
				}
				want[id] = soakRecord{count: 1, spans: 10*k + r + 1, completion: completion}
			}
		}
	}
	raw, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	s := newSoakSink()
	if err := s.addRecords(raw); err != nil {
		t.Fatal(err)
	}
	if got := s.snapshot(); !maps.Equal(got, want) || s.recordCount() != len(want) {
		t.Errorf("the sink read %v (%d records), want %v", got, s.recordCount(), want)
	}
	if err := s.addRecords(raw[:len(raw)-3]); err == nil {
		t.Errorf("a cut request read without an error")
	}
}
