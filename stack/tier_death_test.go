package stack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// What docs/collector.md ("Scaling out") promises when a second-tier
// collector dies: the spans it held are lost, the first tier's exporter
// queues and retries the rest, and no trace whose spans were partly lost is
// reported as whole. The two tiers of TestTwoTierCollectorsAssessEachTraceOnce
// run the corpus and generated traces; one second-tier collector is killed
// (SIGKILL) while traces are under way, the rest is sent while it is down,
// it is started again on the same ports, and every record is checked.

// routedToA is collector-tier1.yaml's partition: trace ids whose first hex
// digit is 0-7 go to the first second-tier collector.
func routedToA(id pcommon.TraceID) bool { return id.String()[0] <= '7' }

func TestTwoTierCollectorDiesMidStream(t *testing.T) {
	began := time.Now()
	router, otelcol, rng := tierSetup(t, 0xdead)
	// Two copies of every template: about four hundred traces.
	traces := freshCopies(rng, tierTraceTemplates(t), 2)
	requests, _ := interleave(rng, traces, 40, 200)
	sent := map[pcommon.TraceID]tierTrace{}
	toA := 0
	for _, tr := range traces {
		sent[tr.id] = tr
		if routedToA(tr.id) {
			toA++
		}
	}
	t.Logf("%d traces (%d to tier2-a), in %d requests", len(traces), toA, len(requests))

	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(drop.Close)
	// max_wait shorter than the other test's: the traces cut by the kill
	// that lost their root wait it out, and it bounds the test's run.
	// tier2-a passes its spans on to a backend that keeps them: which
	// spans of a cut trace reached it after the restart.
	passedOn := &otlpSink{}
	passedOnSrv := httptest.NewServer(passedOn)
	t.Cleanup(passedOnSrv.Close)
	a := startCoordbenchCollector(t, "tier2-a", otelcol, passedOnSrv.URL, "COORDBENCH_MAX_WAIT=45s")
	b := startCoordbenchCollector(t, "tier2-b", otelcol, drop.URL, "COORDBENCH_MAX_WAIT=45s")
	tier1HTTP := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	tier1Telemetry := strconv.Itoa(freePort(t))
	tier1 := startProcess(t, "tier1", router, []string{"--config", repoFile(t, tier1Config)}, []string{
		"OTELCOL_GRPC_ENDPOINT=127.0.0.1:" + strconv.Itoa(freePort(t)),
		"OTELCOL_HTTP_ENDPOINT=" + strings.TrimPrefix(tier1HTTP, "http://"),
		"OTELCOL_TELEMETRY_HOST=127.0.0.1",
		"OTELCOL_TELEMETRY_PORT=" + tier1Telemetry,
		"TIER2_A_ENDPOINT=" + a.grpc,
		"TIER2_B_ENDPOINT=" + b.grpc,
	}, "")
	for _, c := range []*tierCollector{a, b} {
		waitFor(t, c.name, 2*time.Minute, c.proc, otlpReady(c.http+"/v1/traces"))
	}
	waitFor(t, "tier1", 2*time.Minute, tier1, otlpReady(tier1HTTP+"/v1/traces"))

	bodies := make([][]byte, len(requests))
	spansToA := make([]int, len(requests))
	for i, td := range requests {
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		bodies[i] = body
		forEachSpan(td, func(sp ptrace.Span) {
			if routedToA(sp.TraceID()) {
				spansToA[i]++
			}
		})
	}
	send := func(from, to int) {
		for _, body := range bodies[from:to] {
			postOTLP(t, tier1HTTP+"/v1/traces", body)
		}
	}

	// A third of the requests, and tier2-a has taken its share of them:
	// the traces under way (40 open at a time, their parts spread over
	// several requests) are held, part of their spans in it.
	third := len(requests) / 3
	send(0, third)
	want := 0
	for _, n := range spansToA[:third] {
		want += n
	}
	waitFor(t, "tier2-a took its share", 5*time.Minute, a.proc, func(ctx context.Context) error {
		got, err := promCounter(ctx, a.telemetry, "otelcol_receiver_accepted_spans")
		if err != nil {
			return err
		}
		if got < float64(want) {
			return fmt.Errorf("tier2-a accepted %v of %d spans: %w", got, want, errNotYet)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	heldAtKill, err := promCounter(ctx, a.telemetry, "otelcol_connector_coordbench_traces_held")
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	a.kill(t)
	recordsBefore := len(a.sink.records())
	passedOn.mu.Lock()
	passedBefore := len(passedOn.traces)
	passedOn.mu.Unlock()
	t.Logf("tier2-a killed holding %v traces, %d records out", heldAtKill, recordsBefore)

	// Another third while it is down (the first tier queues its share and
	// retries), then it starts again on the same ports, and the rest goes
	// at once: the sender does not wait for it.
	send(third, 2*third)
	a.restart(t)
	send(2*third, len(requests))
	waitFor(t, "tier2-a again", 2*time.Minute, a.proc, otlpReady(a.http+"/v1/traces"))

	// Done: the first tier delivered (or gave up on) every span it took;
	// each second-tier collector passed on every span it accepted (so its
	// connector has them), holds nothing, and delivered a record for each
	// trace it assessed since it started.
	waitFor(t, "the first tier delivered", 10*time.Minute, tier1, func(ctx context.Context) error {
		accepted, err := promCounter(ctx, "http://127.0.0.1:"+tier1Telemetry+"/metrics", "otelcol_receiver_accepted_spans")
		if err != nil {
			return err
		}
		delivered, err := promCounter(ctx, "http://127.0.0.1:"+tier1Telemetry+"/metrics", "otelcol_exporter_sent_spans")
		if err != nil {
			return err
		}
		failed, err := promCounter(ctx, "http://127.0.0.1:"+tier1Telemetry+"/metrics", "otelcol_exporter_send_failed_spans")
		if err != nil {
			return err
		}
		if delivered+failed < accepted {
			return fmt.Errorf("first tier: %v spans accepted, %v sent, %v failed: %w", accepted, delivered, failed, errNotYet)
		}
		return nil
	})
	for _, c := range []*tierCollector{a, b} {
		since := 0
		if c == a {
			since = recordsBefore
		}
		waitFor(t, c.name+" done", 10*time.Minute, c.proc, func(ctx context.Context) error {
			accepted, err := promCounter(ctx, c.telemetry, "otelcol_receiver_accepted_spans")
			if err != nil {
				return err
			}
			passed, err := promCounter(ctx, c.telemetry, "otelcol_exporter_sent_spans")
			if err != nil {
				return err
			}
			held, err := promCounter(ctx, c.telemetry, "otelcol_connector_coordbench_traces_held")
			if err != nil {
				return err
			}
			assessed, err := promCounter(ctx, c.telemetry, "otelcol_connector_coordbench_traces_assessed")
			if err != nil {
				return err
			}
			records := len(c.sink.records()) - since
			if passed < accepted || held > 0 || assessed != float64(records) {
				return fmt.Errorf("%v spans accepted, %v passed on, %v traces held, %v assessed, %d records: %w",
					accepted, passed, held, assessed, records, errNotYet)
			}
			return nil
		})
	}

	// Every record: of a trace sent, by the collector the partition names;
	// whole (the spans sent), or saying it is not.
	type verdict struct{ whole, cut int }
	leavesOnly := 0
	byTrace := map[pcommon.TraceID]*verdict{}
	for _, c := range []*tierCollector{a, b} {
		for _, rec := range c.sink.records() {
			id := pcommon.TraceID(rec.TraceID())
			tr, ok := sent[id]
			if !ok {
				t.Errorf("%s assessed trace %s, which was not sent", c.name, id)
				continue
			}
			if routedToA(id) != (c == a) {
				t.Errorf("trace %s assessed by %s, routed elsewhere by collector-tier1.yaml's partition", id, c.name)
			}
			attrs := rec.Attributes().AsRaw()
			spans, _ := attrs["coordbench.trace.spans"].(int64)
			completion, _ := attrs["coordbench.trace.completion"].(string)
			level, _ := attrs["coordbench.evidence.level"].(string)
			v := byTrace[id]
			if v == nil {
				v = &verdict{}
				byTrace[id] = v
			}
			if int(spans) == tr.count {
				v.whole++
				continue
			}
			v.cut++
			if c == b {
				t.Errorf("tier2-b (not killed): trace %s (%s) assessed with %d of %d spans", id, tr.source, spans, tr.count)
			}
			if completion == "settled" && level == "complete" {
				// What no rule on the spans can see (docs/collector.md): the
				// spans lost were leaves only, the root held and no held
				// span's parent lost. Counted; anything else fails.
				if onlyLeavesLost(tr, passedOn, passedBefore) {
					leavesOnly++
					t.Logf("%s: trace %s (%s) assessed with %d of its %d spans and reported whole: only leaves were lost (the limit)",
						c.name, id, tr.source, spans, tr.count)
					continue
				}
				t.Errorf("%s: trace %s (%s) assessed with %d of its %d spans, reported whole (completion %s, evidence %s)",
					c.name, id, tr.source, spans, tr.count, completion, level)
			}
		}
	}
	var lost, cut, whole, twice int
	for id, tr := range sent {
		v := byTrace[id]
		switch {
		case !routedToA(id):
			if v == nil || v.whole+v.cut != 1 {
				t.Errorf("tier2-b (not killed): trace %s (%s) assessed %v times, want once", id, tr.source, v)
			}
		case v == nil:
			lost++
		case v.whole > 0:
			whole++
		default:
			cut++
		}
		if routedToA(id) && v != nil && v.whole+v.cut > 1 {
			twice++
		}
	}
	t.Logf("tier2-a's %d traces: %d lost (no record), %d cut (%d of them reported whole, having lost leaves only), %d whole; %d assessed twice (before and after the kill); tier2-b's %d whole, once each; %v",
		toA, lost, cut, leavesOnly, whole, twice, len(traces)-toA, time.Since(began).Round(time.Second))
	if lost+cut == 0 {
		t.Errorf("the kill cut no trace: the test did not test the rule")
	}
}

// onlyLeavesLost tells whether the spans of tr that reached the restarted
// collector (those its traces exporter passed on after the first skip
// batches) lack only leaves of tr: the root held, and no held span's
// parent among the lost.
func onlyLeavesLost(tr tierTrace, passedOn *otlpSink, skip int) bool {
	held := map[pcommon.SpanID]bool{}
	passedOn.mu.Lock()
	for _, td := range passedOn.traces[skip:] {
		forEachSpan(td, func(sp ptrace.Span) {
			if sp.TraceID() == tr.id {
				held[sp.SpanID()] = true
			}
		})
	}
	passedOn.mu.Unlock()
	leaves := true
	forEachSpan(tr.spans, func(sp ptrace.Span) {
		if !held[sp.SpanID()] && sp.ParentSpanID().IsEmpty() {
			leaves = false // the root lost
		}
		if held[sp.SpanID()] && !sp.ParentSpanID().IsEmpty() && !held[sp.ParentSpanID()] {
			leaves = false // a held span's parent lost
		}
	})
	return leaves
}
