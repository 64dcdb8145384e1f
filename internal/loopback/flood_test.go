package loopback

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/purple"
)

// Span admission end to end (issue 15, docs/span-admission.md): a flood of
// unsolicited spans cannot blind an assessment, and spans a task's trace
// was refused are reported with the task.

// admissionHarness is settleHarness with the store's limits.
func admissionHarness(t *testing.T, limits tracestore.Limits) *Harness {
	t.Helper()
	return testHarness(t, nil, limits)
}

// floodRequest is one OTLP/HTTP protobuf body of n spans, each in a trace
// of its own.
func floodRequest(t *testing.T, n int) []byte {
	t.Helper()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "flooder")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	spans.EnsureCapacity(n)
	base := pcommon.Timestamp(time.Now().UnixNano())
	for i := range n {
		sp := spans.AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{0xf1, 0x00, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i), 15: 1})
		sp.SetSpanID(pcommon.SpanID{0xf1, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i), 7: 1})
		sp.SetName("invoke_agent coordinator")
		sp.SetKind(ptrace.SpanKindServer)
		sp.SetStartTimestamp(base)
		sp.SetEndTimestamp(base + 1000)
	}
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// flood sends body to the green agent's receiver and returns the spans
// its answer says were rejected.
func flood(t *testing.T, h *Harness, body []byte) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(h.URL(), "/")+otlpreceiver.TracesPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", otlpdecode.ContentTypeProtobuf)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("flood: %v", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("flood: status %d, %q (%v)", resp.StatusCode, out, err)
	}
	er := ptraceotlp.NewExportResponse()
	if err := er.UnmarshalProto(out); err != nil {
		t.Fatal(err)
	}
	return er.PartialSuccess().RejectedSpans()
}

// TestSpanFloodDoesNotBlindAssessment is issue 15's reproduction: one
// request with 100,000 spans in 100,000 traces (ten times the store's
// trace limit). With the default limits the flood's source gets its quota
// (a quarter of the store); with the quota set to the whole store the
// flood fills the store, and the reservation alone must save the
// assessment. Either way a normal assessment afterwards sees every span of
// its participants, whose exports come from the same address as the
// flood, and scores on complete evidence.
func TestSpanFloodDoesNotBlindAssessment(t *testing.T) {
	const floodSpans, maxTraces = 100_000, tracestore.DefaultMaxTraces
	for _, tc := range []struct {
		name     string
		limits   tracestore.Limits
		admitted int
	}{
		{"default limits", tracestore.Limits{}, maxTraces / 4},
		{"quota of the whole store", tracestore.Limits{Admission: tracestore.AdmissionLimits{MaxTracesPerSource: maxTraces}}, maxTraces},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := admissionHarness(t, tc.limits)
			if rejected := flood(t, h, floodRequest(t, floodSpans)); rejected != int64(floodSpans-tc.admitted) {
				t.Fatalf("flood: %d spans rejected, want %d", rejected, floodSpans-tc.admitted)
			}
			if st := h.Green().Store().Stats(); st.Traces != tc.admitted || st.Admission.Unsolicited != tc.admitted {
				t.Fatalf("after the flood: %+v, want %d traces held", st, tc.admitted)
			}
			assessWholeTeam(t, h)
			st := h.Green().Store().Stats()
			if st.Admission.Reserved != 0 {
				t.Errorf("%d traces still reserved after the assessment", st.Admission.Reserved)
			}
			// The flood's traces are still there (they expire with MaxAge);
			// the assessment's spans were admitted beside them.
			if st.Admission.Unsolicited != tc.admitted {
				t.Errorf("unsolicited traces %d, want %d", st.Admission.Unsolicited, tc.admitted)
			}
		})
	}
}

// TestRefusedSpansAreReported: the store's span limit per trace is below
// what a task's trace holds, so the trace is refused spans although it is
// reserved. Each task counts them (refused_spans), its evidence is partial
// with the reason, and a warning says the verdicts were made without them.
func TestRefusedSpansAreReported(t *testing.T) {
	const perTrace = 4
	h := admissionHarness(t, tracestore.Limits{MaxSpansPerTrace: perTrace})
	team := fanOutTeam(t, h, func(o *purple.Options) { o.FlushOnResponse = true })
	res := settleAssess(t, h, team, map[string]any{"num_tasks": 1, "settle_max_wait_ms": 2000})
	if len(res.Tasks) != 1 {
		t.Fatalf("%d tasks, want 1", len(res.Tasks))
	}
	task := res.Tasks[0]
	if task.RefusedSpans == 0 {
		t.Fatalf("task %s: no refused spans counted (coverage %+v)", task.TaskID, task.Coverage)
	}
	v := verdictOf(t, task)
	want := fmt.Sprintf("the span store refused %d spans of this trace", task.RefusedSpans)
	if v.Evidence.Level == evals.EvidenceComplete || !slices.ContainsFunc(v.Evidence.Reasons, func(r string) bool { return strings.Contains(r, want) }) {
		t.Errorf("evidence %+v: want it not complete, with %q", v.Evidence, want)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "the span store refused") }) {
		t.Errorf("warnings %q: none reports the refused spans", res.Warnings)
	}
}

// assessWholeTeam runs a two-task assessment of a fan-out team of real
// purple agents that export OTLP, and requires every span to have counted:
// each task's 3 calls seen from both sides, nothing refused, complete
// evidence, no warnings.
func assessWholeTeam(t *testing.T, h *Harness) {
	t.Helper()
	team := fanOutTeam(t, h, func(o *purple.Options) { o.FlushOnResponse = true })
	res := settleAssess(t, h, team, map[string]any{"num_tasks": 2})
	if len(res.Tasks) != 2 || res.Score == nil {
		t.Fatalf("%d tasks, score %v", len(res.Tasks), res.Score)
	}
	for _, task := range res.Tasks {
		c := task.Coverage
		if c.Interactions != 3 || c.BothSides != 3 || task.RefusedSpans != 0 {
			t.Errorf("task %s: coverage %+v, %d refused spans: want 3 calls, all seen from both sides", task.TaskID, c, task.RefusedSpans)
		}
		if v := verdictOf(t, task); v.Evidence.Level != evals.EvidenceComplete {
			t.Errorf("task %s: evidence %+v, want complete", task.TaskID, v.Evidence)
		}
	}
	if len(res.Warnings) > 0 {
		t.Errorf("warnings: %q", res.Warnings)
	}
}
