package otlpreceiver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// admExport sends td as one protobuf request with client, with an ingest
// token when token is not empty, and returns the spans the answer says
// were rejected and its message.
func admExport(t *testing.T, c *http.Client, srv *httptest.Server, td ptrace.Traces, token string) (rejected int64, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+TracesPath, bytes.NewReader(otlptest.Proto(t, td)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", otlpdecode.ContentTypeProtobuf)
	if token != "" {
		req.Header.Set(otelmap.IngestTokenHeader, token)
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
	st, rcv, srv := rcvServer(t, tracestore.Limits{MaxTraces: maxTraces, Admission: tracestore.AdmissionLimits{MaxTracesPerSource: maxTraces}}, ReceiverLimits{})
	c := otlptest.ClientFrom(t, "127.0.0.1")
	task := otlptest.AdmissionTraceID(1 << 20)
	if err := st.Reserve(task, ""); err != nil {
		t.Fatal(err)
	}

	flood := otlptest.AdmissionIDs(0, 3*maxTraces)
	rejected, msg := admExport(t, c, srv, otlptest.AdmissionTraces(flood, 1, 0x01), "")
	if rejected != 2*maxTraces || !strings.Contains(msg, "trace limit reached") {
		t.Fatalf("flood: %d rejected (%q), want %d for the trace limit", rejected, msg, 2*maxTraces)
	}
	if rejected, msg := admExport(t, c, srv, otlptest.AdmissionTraces([]trace.TraceID{task}, 50, 0x02), ""); rejected != 0 {
		t.Fatalf("reserved trace after the flood: %d spans rejected: %s", rejected, msg)
	}
	if n := len(st.Spans(task)); n != 50 {
		t.Fatalf("reserved trace holds %d spans, want 50", n)
	}
	// Still no room for anyone else.
	if rejected, _ := admExport(t, c, srv, otlptest.AdmissionTraces(otlptest.AdmissionIDs(1<<19, 1), 1, 0x03), ""); rejected != 1 {
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
	st, rcv, srv := rcvServer(t, tracestore.Limits{MaxTraces: 1000, Admission: tracestore.AdmissionLimits{MaxTracesPerSource: quota}}, ReceiverLimits{})
	a, b := otlptest.ClientFrom(t, "127.0.0.1"), otlptest.ClientFrom(t, "127.0.0.2")
	rejected, msg := admExport(t, a, srv, otlptest.AdmissionTraces(otlptest.AdmissionIDs(0, 500), 2, 0x01), "")
	if rejected != 2*200 || !strings.Contains(msg, "trace quota of the source reached") || !strings.Contains(msg, "ip:127.0.0.1") {
		t.Fatalf("source A: %d rejected (%q), want 400 for its quota", rejected, msg)
	}
	// Spans of A's traces already held still come in.
	if rejected, msg := admExport(t, a, srv, otlptest.AdmissionTraces(otlptest.AdmissionIDs(0, 10), 1, 0x02), ""); rejected != 0 {
		t.Fatalf("source A, its own traces: %d rejected: %s", rejected, msg)
	}
	c, err := b.Get(srv.URL + "/")
	if err != nil {
		t.Skipf("no second loopback address here: %v", err)
	}
	c.Body.Close()
	rejected, _ = admExport(t, b, srv, otlptest.AdmissionTraces(otlptest.AdmissionIDs(1000, 500), 1, 0x01), "")
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
	st.MarkAssessed(otlptest.AdmissionTraceID(0))
	if rejected, _ := admExport(t, a, srv, otlptest.AdmissionTraces(otlptest.AdmissionIDs(2000, 2), 1, 0x01), ""); rejected != 1 {
		t.Fatalf("source A after one trace was assessed: %d rejected, want 1", rejected)
	}
}

// TestAdmissionRefusedSpansCounted: spans a reserved trace is refused for
// its span limit are counted with the trace.
func TestAdmissionRefusedSpansCounted(t *testing.T) {
	st, _, srv := rcvServer(t, tracestore.Limits{MaxSpansPerTrace: 5}, ReceiverLimits{})
	task := otlptest.AdmissionTraceID(7)
	if err := st.Reserve(task, ""); err != nil {
		t.Fatal(err)
	}
	if rejected, _ := admExport(t, otlptest.ClientFrom(t, "127.0.0.1"), srv, otlptest.AdmissionTraces([]trace.TraceID{task}, 8, 1), ""); rejected != 3 {
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
		st, rcv, srv := rcvServer(t, tracestore.Limits{Admission: tracestore.AdmissionLimits{StrictIngest: strict}}, ReceiverLimits{})
		c := otlptest.ClientFrom(t, "127.0.0.1")
		mine, theirs, other := otlptest.AdmissionTraceID(1), otlptest.AdmissionTraceID(2), otlptest.AdmissionTraceID(3)
		if err := st.Reserve(mine, "token-A"); err != nil {
			t.Fatal(err)
		}
		if err := st.Reserve(theirs, "token-B"); err != nil {
			t.Fatal(err)
		}
		// Token A: its trace in, B's trace and an unreserved one out.
		rejected, msg := admExport(t, c, srv, otlptest.AdmissionTraces([]trace.TraceID{mine, theirs, other}, 2, 1), "token-A")
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
			rejected, msg = admExport(t, c, srv, otlptest.AdmissionTraces([]trace.TraceID{theirs, other}, 1, byte(2+i)), tok)
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
		if err := st.Reserve(otlptest.AdmissionTraceID(4), "token-A"); err != nil {
			t.Fatal(err)
		}
		if rejected, msg := admExport(t, c, srv, otlptest.AdmissionTraces([]trace.TraceID{mine}, 1, 9), "token-A"); rejected != 0 {
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
