package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/internal/tracegen"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
)

// The two-tier configuration of docs/collector.md ("Scaling out"), run for
// real: one first-tier bin/otelcol-router (collector-tier1.yaml, the contrib
// routing connector partitioning by trace id) in front of two second-tier
// bin/otelcol running the coordbench connector (collector-coordbench.yaml),
// and beside them a single bin/otelcol fed the same requests. The traces
// are real framework captures and the benchmark's generated teams, copied
// under fresh trace ids, each trace's spans split over several requests and
// interleaved with other traces'.

// tier1Config is the documented first tier.
const tier1Config = "collector-tier1.yaml"

func TestTier1ConfigValidates(t *testing.T) {
	bin := toolBinary(t, "otelcol-router", "otelcol-router")
	config := repoFile(t, tier1Config)
	out, err := scrubbedCommand(bin, "validate", "--config", config).CombinedOutput()
	if err != nil {
		t.Fatalf("otelcol-router validate: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "deprecated") {
		t.Errorf("otelcol-router validate warns:\n%s", out)
	}
	// The distribution is the manifest's: the routing connector from the
	// contrib module at the release tools/otelcol-router pins. (At v0.149.0
	// `components` omits factories that carry a deprecated alias, the OTLP
	// exporters among them; validate above shows they are built in.)
	out, err = scrubbedCommand(bin, "components").CombinedOutput()
	if err != nil {
		t.Fatalf("otelcol-router components: %v\n%s", err, out)
	}
	for _, want := range []string{
		"module: github.com/open-telemetry/opentelemetry-collector-contrib/connector/routingconnector v0.149.0",
		"module: go.opentelemetry.io/collector/receiver/otlpreceiver v0.149.0",
		"module: go.opentelemetry.io/collector/processor/batchprocessor v0.149.0",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("otelcol-router components lacks %q:\n%s", want, out)
		}
	}

	// The routing connector's own Validate is reached: a table without a
	// route is refused with its message.
	overlay := filepath.Join(t.TempDir(), "no-routes.yaml")
	if err := os.WriteFile(overlay, []byte("connectors:\n  routing:\n    table: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = scrubbedCommand(bin, "validate", "--config", config, "--config", overlay).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the routing table is empty") {
		t.Errorf("otelcol-router validate without routes: err %v, want the routing table refused:\n%s", err, out)
	}
}

// scrubbedCommand is bin with args, without the OTELCOL_ variables of the
// test's environment (collector-tier1.yaml reads them).
func scrubbedCommand(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = scrubbedEnv()
	return cmd
}

// tierTrace is one trace as the test sends it: its spans (each with its
// resource and scope) and how many distinct span ids the connector will
// hold of it.
type tierTrace struct {
	id     pcommon.TraceID
	source string // the capture file, or "generated"
	spans  ptrace.Traces
	count  int
}

// tierTraceTemplates are the traces of one copy of the input: every trace
// of every framework capture and live-corpus capture, and generated teams
// of several sizes, each under its original id.
func tierTraceTemplates(t *testing.T) []tierTrace {
	t.Helper()
	root := repoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "otelmap/assemble/testdata/frameworks/*.otlp.json"))
	if err != nil {
		t.Fatal(err)
	}
	live, err := filepath.Glob(filepath.Join(root, "otelmap/assemble/testdata/live/*/captures/*.otlp.json"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, live...)
	if len(files) < 50 {
		t.Fatalf("%d captures found; the corpus is missing", len(files))
	}
	var out []tierTrace
	for _, f := range files {
		batches, err := otlpdecode.ReadOTLPJSONFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		out = append(out, splitByTrace(rel, batches)...)
	}
	// The benchmark's generated teams (internal/tracegen), at sizes from a
	// single delegation to a wide fan-out.
	for i, size := range []int{2, 5, 9, 16, 30, 61} {
		// Request i of this shape is trace i, whole.
		shape := tracegen.Shape{Requests: i + 1, SpansPerRequest: size, SpansPerTrace: size, OpenTraces: 1}
		out = append(out, splitByTrace("generated", []ptrace.Traces{tracegen.Request(shape, i)})...)
	}
	return out
}

// splitByTrace regroups the spans of batches by trace, each span under a
// copy of its resource and scope. A span id seen twice in a trace keeps its
// first copy: which copy the connector keeps depends on arrival order, and
// this test compares two routes of the same spans, not the choice.
func splitByTrace(source string, batches []ptrace.Traces) []tierTrace {
	byID := map[pcommon.TraceID]*tierTrace{}
	var order []pcommon.TraceID
	seen := map[[24]byte]bool{}
	for _, td := range batches {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				for k := 0; k < ss.Spans().Len(); k++ {
					sp := ss.Spans().At(k)
					if sp.TraceID().IsEmpty() || sp.SpanID().IsEmpty() {
						continue
					}
					var key [24]byte
					tid, sid := sp.TraceID(), sp.SpanID()
					copy(key[:16], tid[:])
					copy(key[16:], sid[:])
					if seen[key] {
						continue
					}
					seen[key] = true
					tr := byID[tid]
					if tr == nil {
						tr = &tierTrace{id: tid, source: source, spans: ptrace.NewTraces()}
						byID[tid] = tr
						order = append(order, tid)
					}
					out := tr.spans.ResourceSpans().AppendEmpty()
					rs.Resource().CopyTo(out.Resource())
					out.SetSchemaUrl(rs.SchemaUrl())
					oss := out.ScopeSpans().AppendEmpty()
					ss.Scope().CopyTo(oss.Scope())
					oss.SetSchemaUrl(ss.SchemaUrl())
					sp.CopyTo(oss.Spans().AppendEmpty())
					tr.count++
				}
			}
		}
	}
	out := make([]tierTrace, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	return out
}

// freshCopies makes copies of every template, each copy under new random
// trace ids (links to another trace of the same copy follow it).
func freshCopies(rng *rand.Rand, templates []tierTrace, copies int) []tierTrace {
	used := map[pcommon.TraceID]bool{}
	var out []tierTrace
	for range copies {
		fresh := map[pcommon.TraceID]pcommon.TraceID{}
		for _, tmpl := range templates {
			var id pcommon.TraceID
			for id.IsEmpty() || used[id] {
				for i := range id {
					id[i] = byte(rng.UintN(256))
				}
			}
			used[id] = true
			fresh[tmpl.id] = id
		}
		for _, tmpl := range templates {
			c := tierTrace{id: fresh[tmpl.id], source: tmpl.source, spans: ptrace.NewTraces(), count: tmpl.count}
			tmpl.spans.CopyTo(c.spans)
			forEachSpan(c.spans, func(sp ptrace.Span) {
				sp.SetTraceID(c.id)
				for l := 0; l < sp.Links().Len(); l++ {
					if to, ok := fresh[sp.Links().At(l).TraceID()]; ok {
						sp.Links().At(l).SetTraceID(to)
					}
				}
			})
			out = append(out, c)
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func forEachSpan(td ptrace.Traces, f func(ptrace.Span)) {
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		sss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				f(spans.At(k))
			}
		}
	}
}

// interleave lays the traces out in export requests as concurrent agent
// sessions behind batching exporters send them: open traces at a time,
// each trace's spans in up to four parts (in an order of their own), a
// request taking the next part of each open trace until it holds
// spansPerRequest spans. Each request has at most one part of a trace, so
// a trace of more than one span arrives in more than one request. It
// returns the requests and, per trace, how many requests carry it.
func interleave(rng *rand.Rand, traces []tierTrace, open, spansPerRequest int) ([]ptrace.Traces, map[pcommon.TraceID]int) {
	type pending struct {
		id    pcommon.TraceID
		parts []ptrace.Traces
	}
	split := func(tr tierTrace) pending {
		n := tr.spans.ResourceSpans().Len() // one span per ResourceSpans
		parts := min(n, 2+rng.IntN(3))
		perm := rng.Perm(n)
		p := pending{id: tr.id, parts: make([]ptrace.Traces, parts)}
		for i := range p.parts {
			p.parts[i] = ptrace.NewTraces()
		}
		for i, at := range perm {
			tr.spans.ResourceSpans().At(at).CopyTo(p.parts[i%parts].ResourceSpans().AppendEmpty())
		}
		return p
	}
	var requests []ptrace.Traces
	carried := map[pcommon.TraceID]int{}
	next := 0
	var window []pending
	for next < len(traces) || len(window) > 0 {
		for len(window) < open && next < len(traces) {
			window = append(window, split(traces[next]))
			next++
		}
		req := ptrace.NewTraces()
		spans := 0
		kept := window[:0]
		for _, p := range window {
			if spans < spansPerRequest {
				part := p.parts[0]
				p.parts = p.parts[1:]
				spans += part.SpanCount()
				part.ResourceSpans().MoveAndAppendTo(req.ResourceSpans())
				carried[p.id]++
			}
			if len(p.parts) > 0 {
				kept = append(kept, p)
			}
		}
		window = kept
		requests = append(requests, req)
	}
	return requests, carried
}

// tierCollector is one collector running the connector (a second-tier one,
// or the single one of the reference), with the backend it exports its
// metrics and log records to.
type tierCollector struct {
	name      string
	proc      *process
	sink      *otlpSink
	grpc      string // host:port of its OTLP/gRPC receiver
	http      string // base URL of its OTLP/HTTP receiver
	telemetry string // its Prometheus endpoint
	// bin, args and env start it again on the same ports (restart).
	bin  string
	args []string
	env  []string
}

// startCoordbenchCollector runs bin/otelcol on collector-coordbench.yaml on
// loopback, its metrics and records to a new test backend, its spans to
// traces (a backend that drops them). Settings in extraEnv win over the
// defaults below.
func startCoordbenchCollector(t *testing.T, name, bin, traces string, extraEnv ...string) *tierCollector {
	t.Helper()
	c := &tierCollector{name: name, sink: &otlpSink{}}
	srv := httptest.NewServer(c.sink)
	t.Cleanup(srv.Close)
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
	c.grpc = "127.0.0.1:" + strconv.Itoa(freePort(t))
	c.http = "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	port := strconv.Itoa(freePort(t))
	c.telemetry = "http://127.0.0.1:" + port + "/metrics"
	env := []string{
		"OTELCOL_GRPC_ENDPOINT=" + c.grpc,
		"OTELCOL_HTTP_ENDPOINT=" + strings.TrimPrefix(c.http, "http://"),
		"OTELCOL_TELEMETRY_HOST=127.0.0.1",
		"OTELCOL_TELEMETRY_PORT=" + port,
		"TRACES_OTLP_ENDPOINT=" + traces,
		// quiet long enough that a trace's parts, however slowly a loaded
		// machine moves them through the first tier, arrive before its
		// verdict (a trace's parts are a few requests apart); max_wait,
		// counted from a trace's first span, what the traces whose calls
		// are never answered in their captures wait.
		"COORDBENCH_QUIET=10s",
		"COORDBENCH_MAX_WAIT=90s",
		"COORDBENCH_METRICS_FLUSH=1s",
		"OTELCOL_DEBUG_VERBOSITY=basic",
	}
	// os/exec keeps the last value of a variable given twice.
	c.bin, c.env = bin, append(env, extraEnv...)
	c.args = []string{"--config", repoFile(t, coordbenchConfig), "--config", overlay}
	c.proc = startProcess(t, name, bin, c.args, c.env, "")
	return c
}

// kill ends the collector with SIGKILL, as a crash or an OOM kill does:
// whatever it held is lost.
func (c *tierCollector) kill(t *testing.T) {
	t.Helper()
	if err := c.proc.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill %s: %v", c.name, err)
	}
	<-c.proc.done
}

// restart starts the collector again, on the same ports and backend.
func (c *tierCollector) restart(t *testing.T) {
	t.Helper()
	c.proc = startProcess(t, c.name, c.bin, c.args, c.env, "")
}

// tierSetup is the start both two-tier tests share: the two Collector
// binaries, the leak check (registered first, so that it runs after the
// processes are stopped and the test backends closed), and the random
// source that lays the requests out, seeded from TIER_TEST_SEED when set
// (stream tells the tests' sources apart).
func tierSetup(t *testing.T, stream uint64) (router, otelcol string, rng *rand.Rand) {
	t.Helper()
	router = toolBinary(t, "otelcol-router", "otelcol-router")
	otelcol = toolBinary(t, "otelcol", "otelcol")
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		testenv.CheckNoGoroutineLeak(t, before)
	})
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("TIER_TEST_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("TIER_TEST_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (TIER_TEST_SEED=%d lays the requests out again the same way)", seed, seed)
	return router, otelcol, rand.New(rand.NewPCG(seed, stream))
}

func TestTwoTierCollectorsAssessEachTraceOnce(t *testing.T) {
	began := time.Now()
	router, otelcol, rng := tierSetup(t, 0x24)

	// The input: about three thousand traces.
	templates := tierTraceTemplates(t)
	copies := max(1, (3000+len(templates)-1)/len(templates))
	traces := freshCopies(rng, templates, copies)
	requests, carried := interleave(rng, traces, 40, 200)
	sent := map[pcommon.TraceID]tierTrace{}
	totalSpans, generated := 0, 0
	for _, tr := range traces {
		sent[tr.id] = tr
		totalSpans += tr.count
		if tr.source == "generated" {
			generated++
		}
		if tr.count > 1 && carried[tr.id] < 2 {
			t.Fatalf("trace %s (%d spans) in %d request: not split", tr.id, tr.count, carried[tr.id])
		}
	}
	t.Logf("%d traces (%d copies of %d: %d from the captures, %d generated), %d spans, in %d requests",
		len(traces), copies, len(templates), len(templates)-generated/copies, generated/copies, totalSpans, len(requests))

	// Second tier: two collectors with the connector, and a single one for
	// the reference. Their spans go on to a backend that drops them.
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(drop.Close)
	a := startCoordbenchCollector(t, "tier2-a", otelcol, drop.URL)
	b := startCoordbenchCollector(t, "tier2-b", otelcol, drop.URL)
	single := startCoordbenchCollector(t, "single", otelcol, drop.URL)

	// First tier: the router, to a and b by gRPC.
	tier1HTTP := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	tier1Port := strconv.Itoa(freePort(t))
	tier1 := startProcess(t, "tier1", router, []string{"--config", repoFile(t, tier1Config)}, []string{
		"OTELCOL_GRPC_ENDPOINT=127.0.0.1:" + strconv.Itoa(freePort(t)),
		"OTELCOL_HTTP_ENDPOINT=" + strings.TrimPrefix(tier1HTTP, "http://"),
		"OTELCOL_TELEMETRY_HOST=127.0.0.1",
		"OTELCOL_TELEMETRY_PORT=" + tier1Port,
		"TIER2_A_ENDPOINT=" + a.grpc,
		"TIER2_B_ENDPOINT=" + b.grpc,
	}, "")
	for _, c := range []*tierCollector{a, b, single} {
		waitFor(t, c.name, 2*time.Minute, c.proc, otlpReady(c.http+"/v1/traces"))
	}
	waitFor(t, "tier1", 2*time.Minute, tier1, otlpReady(tier1HTTP+"/v1/traces"))

	// The same requests, in the same order, to the first tier and to the
	// single collector.
	bodies := make([][]byte, len(requests))
	for i, td := range requests {
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		bodies[i] = body
	}
	sendStart := time.Now()
	for _, body := range bodies {
		postOTLP(t, tier1HTTP+"/v1/traces", body)
		postOTLP(t, single.http+"/v1/traces", body)
	}
	t.Logf("sent in %v", time.Since(sendStart).Round(time.Millisecond))

	// Every trace assessed: as many records as traces; then, per collector,
	// nothing held, every trace it assessed (its own counter) delivered as
	// a record, and its latest cumulative metrics counting each of them, so
	// no record or series is still on its way when they are compared.
	waitFor(t, "a record per trace", 10*time.Minute, nil, func(context.Context) error {
		if n := len(a.sink.records()) + len(b.sink.records()); n < len(traces) {
			return fmt.Errorf("two tiers: %d of %d records: %w", n, len(traces), errNotYet)
		}
		if n := len(single.sink.records()); n < len(traces) {
			return fmt.Errorf("single: %d of %d records: %w", n, len(traces), errNotYet)
		}
		return nil
	})
	for _, c := range []*tierCollector{a, b, single} {
		waitFor(t, c.name+" done", 5*time.Minute, c.proc, func(ctx context.Context) error {
			held, err := promCounter(ctx, c.telemetry, "otelcol_connector_coordbench_traces_held")
			if err != nil {
				return err
			}
			assessed, err := promCounter(ctx, c.telemetry, "otelcol_connector_coordbench_traces_assessed")
			if err != nil {
				return err
			}
			records := len(c.sink.records())
			counted := 0.0
			for _, v := range c.sink.lastSums("coordbench.traces")["coordbench.traces"] {
				counted += v
			}
			if held > 0 || assessed != float64(records) || counted != float64(records) {
				return fmt.Errorf("%v traces held, %v assessed, %d records, coordbench.traces = %v: %w", held, assessed, records, counted, errNotYet)
			}
			return nil
		})
	}

	// (a) Exactly once and whole, across the two second-tier collectors;
	// the same verdict as the single collector's, byte for byte.
	reference := map[pcommon.TraceID]string{}
	for _, rec := range single.sink.records() {
		reference[pcommon.TraceID(rec.TraceID())] = rec.Body().Str()
	}
	assessedBy := map[pcommon.TraceID]string{}
	completions := map[string]int{}
	for _, c := range []*tierCollector{a, b} {
		for _, rec := range c.sink.records() {
			id := pcommon.TraceID(rec.TraceID())
			completion, _ := rec.Attributes().Get("coordbench.trace.completion")
			tr, ok := sent[id]
			if !ok {
				t.Errorf("%s assessed trace %s, which was not sent", c.name, id)
				continue
			}
			kind := "captured"
			if tr.source == "generated" {
				kind = "generated"
			}
			completions[kind+" "+completion.AsString()]++
			if by, twice := assessedBy[id]; twice {
				t.Errorf("trace %s assessed by %s and again by %s", id, by, c.name)
				continue
			}
			assessedBy[id] = c.name
			if got, _ := rec.Attributes().AsRaw()["coordbench.trace.spans"].(int64); int(got) != tr.count {
				t.Errorf("%s: trace %s (%s) assessed with %d spans, %d sent: not whole", c.name, id, tr.source, got, tr.count)
			}
			var body struct {
				TraceID string `json:"trace_id"`
			}
			if err := json.Unmarshal([]byte(rec.Body().Str()), &body); err != nil || body.TraceID != id.String() {
				t.Errorf("%s: trace %s: body's trace id %q (%v)", c.name, id, body.TraceID, err)
			}
			if want, ok := reference[id]; !ok {
				t.Errorf("trace %s assessed by %s, not by the single collector", id, c.name)
			} else if rec.Body().Str() != want {
				t.Errorf("trace %s (%s): %s's verdict differs from the single collector's\n%s: %s\nsingle: %s",
					id, tr.source, c.name, c.name, rec.Body().Str(), want)
			}
			// The partition collector-tier1.yaml documents: first hex digit
			// 0-7 to a, the rest to b.
			want := "tier2-b"
			if id.String()[0] <= '7' {
				want = "tier2-a"
			}
			if c.name != want {
				t.Errorf("trace %s assessed by %s, routed to %s by collector-tier1.yaml's partition", id, c.name, want)
			}
		}
	}
	for id, tr := range sent {
		if _, ok := assessedBy[id]; !ok {
			t.Errorf("trace %s (%s, %d spans) never assessed by the second tier", id, tr.source, tr.count)
		}
	}
	if n := len(single.sink.records()); n != len(traces) {
		t.Errorf("the single collector made %d records for %d traces", n, len(traces))
	}
	for _, c := range []*tierCollector{a, b, single} {
		for _, counter := range []string{"otelcol_connector_coordbench_spans_late", "otelcol_connector_coordbench_traces_evicted",
			"otelcol_connector_coordbench_spans_refused", "otelcol_connector_coordbench_spans_duplicate",
			"otelcol_connector_coordbench_emit_failed"} {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			v, err := promCounter(ctx, c.telemetry, counter)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if v != 0 {
				t.Errorf("%s: %s = %v, want 0", c.name, counter, v)
			}
		}
	}

	// (b) Both second-tier collectors took a share.
	na, nb := len(a.sink.records()), len(b.sink.records())
	t.Logf("split: tier2-a %d traces, tier2-b %d; completion %v", na, nb, completions)
	if na == 0 || nb == 0 {
		t.Errorf("one second-tier collector got nothing: a %d, b %d", na, nb)
	}

	// (c) The merged metrics of the two equal the single collector's.
	merged := mergeSeries(latestSeries(t, a.sink), latestSeries(t, b.sink))
	want := latestSeries(t, single.sink)
	compareSeries(t, merged, want)
	t.Logf("%d metric series compared; whole test %v", len(want), time.Since(began).Round(time.Second))
}

// postOTLP posts one OTLP/HTTP protobuf request; a collector that refuses
// it for now (memory_limiter: 429 or 503) gets it again, as an SDK's
// exporter would send it again.
func postOTLP(t *testing.T, url string, body []byte) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err != nil {
			t.Fatalf("post to %s: %v", url, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			return
		case (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && attempt < 60:
			time.Sleep(time.Second)
		default:
			t.Fatalf("post to %s: %s (attempt %d)", url, resp.Status, attempt)
		}
	}
}

// series is one metric data point's value, keyed by metric name and
// attributes: a sum's value, or a histogram's count, sum, min, max, bounds
// and bucket counts.
type series struct {
	kind     pmetric.MetricType
	value    int64
	count    uint64
	sum      float64
	min, max float64
	hasMin   bool
	bounds   []float64
	buckets  []uint64
}

// latestSeries is every series of the latest export of each metric
// (cumulative, so the latest is the total), resource attributes aside: they
// name the collector.
func latestSeries(t *testing.T, s *otlpSink) map[string]series {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	latest := map[string]map[string]series{}
	for _, md := range s.metrics {
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			sms := md.ResourceMetrics().At(i).ScopeMetrics()
			for j := 0; j < sms.Len(); j++ {
				ms := sms.At(j).Metrics()
				for k := 0; k < ms.Len(); k++ {
					m := ms.At(k)
					points := map[string]series{}
					key := func(attrs pcommon.Map) string {
						raw, _ := json.Marshal(attrs.AsRaw())
						return m.Name() + " " + string(raw)
					}
					switch m.Type() {
					case pmetric.MetricTypeSum:
						dps := m.Sum().DataPoints()
						for p := 0; p < dps.Len(); p++ {
							points[key(dps.At(p).Attributes())] = series{kind: m.Type(), value: dps.At(p).IntValue()}
						}
					case pmetric.MetricTypeHistogram:
						dps := m.Histogram().DataPoints()
						for p := 0; p < dps.Len(); p++ {
							dp := dps.At(p)
							points[key(dp.Attributes())] = series{kind: m.Type(), count: dp.Count(), sum: dp.Sum(),
								min: dp.Min(), max: dp.Max(), hasMin: dp.HasMin(),
								bounds: dp.ExplicitBounds().AsRaw(), buckets: dp.BucketCounts().AsRaw()}
						}
					default:
						t.Errorf("metric %s of type %v: not compared", m.Name(), m.Type())
					}
					latest[m.Name()] = points
				}
			}
		}
	}
	out := map[string]series{}
	for _, points := range latest {
		for k, v := range points {
			out[k] = v
		}
	}
	return out
}

// mergeSeries adds up the series of several collectors: sums and counts
// add, bucket by bucket; min and max are the extremes.
func mergeSeries(parts ...map[string]series) map[string]series {
	out := map[string]series{}
	for _, part := range parts {
		for k, s := range part {
			m, ok := out[k]
			if !ok {
				s.bounds = slices.Clone(s.bounds)
				s.buckets = slices.Clone(s.buckets)
				out[k] = s
				continue
			}
			m.value += s.value
			m.count += s.count
			m.sum += s.sum
			if s.hasMin {
				if !m.hasMin || s.min < m.min {
					m.min = s.min
				}
				if !m.hasMin || s.max > m.max {
					m.max = s.max
				}
				m.hasMin = true
			}
			if !slices.Equal(m.bounds, s.bounds) || len(m.buckets) != len(s.buckets) {
				m.buckets = nil // bounds that differ cannot be merged; compareSeries reports it
			} else {
				for i := range m.buckets {
					m.buckets[i] += s.buckets[i]
				}
			}
			out[k] = m
		}
	}
	return out
}

// compareSeries: the same series, the same counts and buckets, exactly; the
// histograms' sums to a relative 1e-9, the float additions having run in
// another order.
func compareSeries(t *testing.T, got, want map[string]series) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("series %s: in the single collector's metrics, not in the merged two", k)
			continue
		}
		same := g.kind == w.kind && g.value == w.value && g.count == w.count && g.hasMin == w.hasMin &&
			g.min == w.min && g.max == w.max && slices.Equal(g.bounds, w.bounds) && slices.Equal(g.buckets, w.buckets) &&
			math.Abs(g.sum-w.sum) <= 1e-9*math.Max(1, math.Abs(w.sum))
		if !same {
			t.Errorf("series %s: merged %+v, single %+v", k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("series %s: in the merged metrics, not in the single collector's", k)
		}
	}
	if len(want) == 0 {
		t.Error("the single collector exported no metrics")
	}
}
