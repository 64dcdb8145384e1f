package otelmap

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/trace"
)

// Span admission (admission.go, ingest.go), over real OTLP/HTTP requests
// on loopback.

// admTraceID is trace n of a test: distinct from otlpTestTraces' ids
// (which start 0xc0).
func admTraceID(n int) trace.TraceID {
	return trace.TraceID{0xad, byte(n >> 16), byte(n >> 8), byte(n), 15: 1}
}

// admTraces builds perTrace spans for each trace id; salt keeps the span
// ids of two batches for one trace apart.
func admTraces(ids []trace.TraceID, perTrace int, salt byte) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "reviewer")
	ss := rs.ScopeSpans().AppendEmpty().Spans()
	ss.EnsureCapacity(len(ids) * perTrace)
	base := pcommon.Timestamp(1_700_000_000_000_000_000)
	for n, id := range ids {
		for i := range perTrace {
			sp := ss.AppendEmpty()
			sp.SetTraceID(pcommon.TraceID(id))
			sp.SetSpanID(pcommon.SpanID{salt, byte(n >> 16), byte(n >> 8), byte(n), byte(i >> 8), byte(i), 0, 1})
			sp.SetName("invoke_agent reviewer")
			sp.SetKind(ptrace.SpanKindServer)
			sp.SetStartTimestamp(base)
			sp.SetEndTimestamp(base + 500)
		}
	}
	return td
}

func admIDs(first, n int) []trace.TraceID {
	ids := make([]trace.TraceID, n)
	for i := range ids {
		ids[i] = admTraceID(first + i)
	}
	return ids
}

// admClient is an HTTP client whose connections come from local address
// ip (a loopback address: a source of its own).
func admClient(t *testing.T, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 30 * time.Second}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 2 * time.Minute}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// admExport sends td as one protobuf request with client, with an ingest
// token when token is not empty, and returns the spans the answer says
// were rejected and its message.
func admExport(t *testing.T, c *http.Client, srv *httptest.Server, td ptrace.Traces, token string) (rejected int64, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+TracesPath, bytes.NewReader(rcvProto(t, td)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ContentTypeProtobuf)
	if token != "" {
		req.Header.Set(IngestTokenHeader, token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	er := rcvExportResponse(t, resp, body)
	return er.PartialSuccess().RejectedSpans(), er.PartialSuccess().ErrorMessage()
}

// TestAdmissionFloodCannotCrowdOutReservedTrace is issue 15's
// reproduction at the store: one request fills MaxTraces with traces
// nobody asked for, and a reserved trace still gets every span.
func TestAdmissionFloodCannotCrowdOutReservedTrace(t *testing.T) {
	const maxTraces = 2000
	st, rcv, srv := rcvServer(t, Limits{MaxTraces: maxTraces, Admission: AdmissionLimits{MaxTracesPerSource: maxTraces}}, ReceiverLimits{})
	c := admClient(t, "127.0.0.1")
	task := admTraceID(1 << 20)
	if err := st.Reserve(task, ""); err != nil {
		t.Fatal(err)
	}

	flood := admIDs(0, 3*maxTraces)
	rejected, msg := admExport(t, c, srv, admTraces(flood, 1, 0x01), "")
	if rejected != 2*maxTraces || !strings.Contains(msg, "trace limit reached") {
		t.Fatalf("flood: %d rejected (%q), want %d for the trace limit", rejected, msg, 2*maxTraces)
	}
	if rejected, msg := admExport(t, c, srv, admTraces([]trace.TraceID{task}, 50, 0x02), ""); rejected != 0 {
		t.Fatalf("reserved trace after the flood: %d spans rejected: %s", rejected, msg)
	}
	if n := len(st.Spans(task)); n != 50 {
		t.Fatalf("reserved trace holds %d spans, want 50", n)
	}
	// Still no room for anyone else.
	if rejected, _ := admExport(t, c, srv, admTraces(admIDs(1<<19, 1), 1, 0x03), ""); rejected != 1 {
		t.Fatalf("new unsolicited trace after the flood: %d rejected, want 1", rejected)
	}
	stats := st.Stats()
	if stats.Admission.Reserved != 1 || stats.Admission.Unsolicited != maxTraces || stats.RejectedMaxTraces != 2*maxTraces+1 {
		t.Fatalf("stats %+v", stats)
	}
	if got := rcv.Stats().SpansRejected; got != 2*maxTraces+1 {
		t.Fatalf("receiver counted %d rejected spans, want %d", got, 2*maxTraces+1)
	}
	if n := st.RefusedSpans(task); n != 0 {
		t.Fatalf("reserved trace refused %d spans", n)
	}
	// Assessing the trace ends its reservation.
	st.MarkAssessed(task)
	if r := st.Stats().Admission.Reserved; r != 0 {
		t.Fatalf("%d reservations after MarkAssessed", r)
	}
}

// TestAdmissionQuotaPerSource: two exporters on two loopback addresses;
// each may hold its quota of unsolicited traces, and one that spent its
// quota leaves the other its room.
func TestAdmissionQuotaPerSource(t *testing.T) {
	const quota = 300
	st, rcv, srv := rcvServer(t, Limits{MaxTraces: 1000, Admission: AdmissionLimits{MaxTracesPerSource: quota}}, ReceiverLimits{})
	a, b := admClient(t, "127.0.0.1"), admClient(t, "127.0.0.2")
	rejected, msg := admExport(t, a, srv, admTraces(admIDs(0, 500), 2, 0x01), "")
	if rejected != 2*200 || !strings.Contains(msg, "trace quota of the source reached") || !strings.Contains(msg, "ip:127.0.0.1") {
		t.Fatalf("source A: %d rejected (%q), want 400 for its quota", rejected, msg)
	}
	// Spans of A's traces already held still come in.
	if rejected, msg := admExport(t, a, srv, admTraces(admIDs(0, 10), 1, 0x02), ""); rejected != 0 {
		t.Fatalf("source A, its own traces: %d rejected: %s", rejected, msg)
	}
	c, err := b.Get(srv.URL + "/")
	if err != nil {
		t.Skipf("no second loopback address here: %v", err)
	}
	c.Body.Close()
	rejected, _ = admExport(t, b, srv, admTraces(admIDs(1000, 500), 1, 0x01), "")
	if rejected != 200 {
		t.Fatalf("source B: %d rejected, want 200", rejected)
	}
	stats := st.Stats()
	if stats.Traces != 2*quota || stats.Admission.Sources != 2 || stats.Admission.RefusedQuota != 600 {
		t.Fatalf("stats %+v", stats)
	}
	if got := rcv.Stats().SpansRejected; got != 600 {
		t.Fatalf("receiver counted %d rejected spans, want 600", got)
	}
	// A trace forgotten frees its source's room.
	st.MarkAssessed(admTraceID(0))
	if rejected, _ := admExport(t, a, srv, admTraces(admIDs(2000, 2), 1, 0x01), ""); rejected != 1 {
		t.Fatalf("source A after one trace was assessed: %d rejected, want 1", rejected)
	}
}

// TestAdmissionReservationLifecycle: reservations are bounded, released
// after the task, and a released trace counts as unsolicited again.
func TestAdmissionReservationLifecycle(t *testing.T) {
	st := NewStore(Limits{MaxTraces: 2, Admission: AdmissionLimits{MaxReserved: 2}})
	r1, r2, r3 := admTraceID(1), admTraceID(2), admTraceID(3)
	if err := st.Reserve(r1, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := st.Reserve(r2, ""); err != nil {
		t.Fatal(err)
	}
	if err := st.Reserve(r3, ""); !errors.Is(err, ErrReservationsFull) {
		t.Fatalf("third reservation: %v, want ErrReservationsFull", err)
	}
	spans := func(id trace.TraceID, salt byte) []Span {
		sp, _ := SpansFromTraces(admTraces([]trace.TraceID{id}, 1, salt), SourceOTLP)
		return sp
	}
	// Two unsolicited traces fill MaxTraces; the reserved ones still come in.
	for _, id := range []trace.TraceID{admTraceID(10), admTraceID(11), r1, r2} {
		if res := st.AddFrom("", spans(id, 1)); res.Accepted != 1 {
			t.Fatalf("trace %s: %+v", id, res)
		}
	}
	st.Release(r1)
	st.Release(r1) // harmless
	st.MarkAssessed(r2)
	stats := st.Stats().Admission
	if stats.Reserved != 0 || stats.Unsolicited != 3 || stats.ReservationsRefused != 1 {
		t.Fatalf("after release: %+v", stats)
	}
	// The released trace is held as an unsolicited one now, over the limit
	// until it expires; a new one is refused.
	if res := st.AddFrom("", spans(admTraceID(12), 1)); res.Rejected != 1 {
		t.Fatalf("new trace over the limit: %+v", res)
	}
	if err := st.Reserve(r3, ""); err != nil {
		t.Fatalf("reservation after release: %v", err)
	}
}

// TestAdmissionRefusedSpansCounted: spans a reserved trace is refused for
// its span limit are counted with the trace.
func TestAdmissionRefusedSpansCounted(t *testing.T) {
	st, _, srv := rcvServer(t, Limits{MaxSpansPerTrace: 5}, ReceiverLimits{})
	task := admTraceID(7)
	if err := st.Reserve(task, ""); err != nil {
		t.Fatal(err)
	}
	if rejected, _ := admExport(t, admClient(t, "127.0.0.1"), srv, admTraces([]trace.TraceID{task}, 8, 1), ""); rejected != 3 {
		t.Fatalf("%d rejected, want 3", rejected)
	}
	if n := st.RefusedSpans(task); n != 3 {
		t.Fatalf("RefusedSpans %d, want 3", n)
	}
	st.MarkAssessed(task)
	if n := st.RefusedSpans(task); n != 0 {
		t.Fatalf("RefusedSpans after MarkAssessed %d, want 0", n)
	}
}

// TestIngestToken: a request with an assessment's token adds spans to
// that assessment's traces only; one without keeps working unless the
// store is strict; a token nobody holds counts as none.
func TestIngestToken(t *testing.T) {
	for _, strict := range []bool{false, true} {
		st, rcv, srv := rcvServer(t, Limits{Admission: AdmissionLimits{StrictIngest: strict}}, ReceiverLimits{})
		c := admClient(t, "127.0.0.1")
		mine, theirs, other := admTraceID(1), admTraceID(2), admTraceID(3)
		if err := st.Reserve(mine, "token-A"); err != nil {
			t.Fatal(err)
		}
		if err := st.Reserve(theirs, "token-B"); err != nil {
			t.Fatal(err)
		}
		// Token A: its trace in, B's trace and an unreserved one out.
		rejected, msg := admExport(t, c, srv, admTraces([]trace.TraceID{mine, theirs, other}, 2, 1), "token-A")
		if rejected != 4 || !strings.Contains(msg, "ingest token does not open") {
			t.Fatalf("strict=%v, token A: %d rejected (%q), want 4", strict, rejected, msg)
		}
		if len(st.Spans(mine)) != 2 || len(st.Spans(theirs)) != 0 || len(st.Spans(other)) != 0 {
			t.Fatalf("strict=%v: held %d/%d/%d spans", strict, len(st.Spans(mine)), len(st.Spans(theirs)), len(st.Spans(other)))
		}
		if st.RefusedSpans(theirs) != 2 || st.RefusedSpans(mine) != 0 {
			t.Fatalf("strict=%v: refused %d (theirs), %d (mine)", strict, st.RefusedSpans(theirs), st.RefusedSpans(mine))
		}
		// No token, and an unknown token: admitted unless strict.
		for i, tok := range []string{"", "token-unknown"} {
			rejected, msg = admExport(t, c, srv, admTraces([]trace.TraceID{theirs, other}, 1, byte(2+i)), tok)
			want := int64(0)
			if strict {
				want = 1
			}
			if rejected != want {
				t.Fatalf("strict=%v, token %q: %d rejected (%q), want %d", strict, tok, rejected, msg, want)
			}
			if strict && !strings.Contains(msg, "strict ingest") {
				t.Fatalf("strict refusal message %q", msg)
			}
		}
		// Late spans of an assessed trace pass the token rule and are counted late.
		st.MarkAssessed(mine)
		if err := st.Reserve(admTraceID(4), "token-A"); err != nil {
			t.Fatal(err)
		}
		if rejected, msg := admExport(t, c, srv, admTraces([]trace.TraceID{mine}, 1, 9), "token-A"); rejected != 0 {
			t.Fatalf("strict=%v, late span with token: %d rejected (%q)", strict, rejected, msg)
		}
		if st.LateSpans(mine) != 1 {
			t.Fatalf("strict=%v: %d late spans, want 1", strict, st.LateSpans(mine))
		}
		adm := st.Stats().Admission
		wantStrict := uint64(0)
		if strict {
			wantStrict = 2
		}
		if adm.RefusedToken != 4 || adm.RefusedStrict != wantStrict {
			t.Fatalf("strict=%v: stats %+v", strict, adm)
		}
		if rcv.Stats().SpansRejected != 4+wantStrict {
			t.Fatalf("strict=%v: receiver rejected %d", strict, rcv.Stats().SpansRejected)
		}
	}
}
